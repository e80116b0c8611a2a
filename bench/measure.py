"""What the benchmarks share: a process's memory figures and a warm page cache."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

MB = 1024 * 1024


def _proc_status_kb(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_bytes() -> int:
    """This process's resident memory now."""
    return (_proc_status_kb("VmRSS") or 0) * 1024


def peak_bytes() -> int:
    """This process's peak resident memory (VmHWM; ru_maxrss where /proc is missing)."""
    kb = _proc_status_kb("VmHWM")
    if kb is None:  # not Linux: ru_maxrss is kB on Linux, bytes on macOS
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return maxrss if sys.platform == "darwin" else maxrss * 1024
    return kb * 1024


def warm_page_cache(path: Path) -> None:
    """Reads the file once so that no measured run pays for the first, cold read."""
    with path.open("rb") as fh:
        while fh.read(16 * MB):
            pass


def run_marked(command: list[str], mark: str, root: Path, timeout: float) -> dict:
    """Runs a benchmark's child (``root``'s src/ and bench/ on its path, in ``root``) and
    returns the JSON it printed after ``mark``, or ``{"error": ...}`` with its last lines."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root / "bench"), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=root)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in done.stdout.splitlines():
        if line.startswith(mark):
            result: dict = json.loads(line[len(mark) :])
            return result
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {"error": f"exit {done.returncode}: " + " | ".join(tail)}
