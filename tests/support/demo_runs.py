"""``stepscope demo --no-serve`` run in a child process, as a user runs it: the demo test
checks what it prints and writes, and the dashboard's logdir holds its two runs."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEMO_STEPS = 8


@dataclass(frozen=True)
class DemoRun:
    logdir: Path
    returncode: int
    stdout: str
    stderr: str


def run_demo(logdir: Path) -> DemoRun:
    command = [sys.executable, "-m", "stepscope.cli", "demo", "--no-serve", "--logdir", str(logdir), "--steps", str(DEMO_STEPS)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return DemoRun(logdir, done.returncode, done.stdout, done.stderr)
