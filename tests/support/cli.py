"""What the CLI's answer to bad input must look like, and how a test runs it as a user does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys


def assert_one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit status 2, exactly one stderr line ``stepscope: error: ...`` holding ``fragments``."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("stepscope: error: "), line
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


def run_stepscope(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``stepscope ARGS`` in a child process, as a user runs it (``env``: added to this one's)."""
    return subprocess.run([sys.executable, "-m", "stepscope.cli", *args], capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def as_in_a_terminal() -> None:
    """A ``preexec_fn``: Ctrl-C's default action in the child, as a command typed in a
    terminal has it. A shell that starts the suite in the background (``make test &``,
    nohup) ignores SIGINT for it, a child inherits that, and Python then installs no
    KeyboardInterrupt handler: a test's SIGINT would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
