"""Fake jobs for the dashboard's worker pool, in a module of their own so a spawned worker
imports them without importing a test module (and pytest with it).

Each one records that it started in ``<folder>/<name>.<attempt>`` when given a folder, so a
test can count the workers a job landed on.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from stepscope.analysis import tool_names
from stepscope.dashboard.jobs.worker import TABLES_SUFFIX, TOOL_SUFFIX, write_checksums

KILLED_BY = signal.SIGKILL
# Where the fake warm-ups record themselves (a spawned worker inherits the environment).
WARM_FOLDER = "STEPSCOPE_TEST_WARM_FOLDER"


def _attempt(folder: str | None, name: str) -> int:
    """Records a start of job ``name``; returns how many there were before this one."""
    if folder is None:
        return 0
    done = len(list(Path(folder).glob(f"{name}.*")))
    Path(folder, f"{name}.{done}").write_text(str(os.getpid()))
    return done


def warm() -> None:
    """A warm-up: records the worker's pid and the time, then takes a moment."""
    written = Path(os.environ[WARM_FOLDER], ".warm.writing")
    written.write_text(json.dumps({"pid": os.getpid(), "at": time.time()}))
    written.replace(written.with_name("warm"))  # whole once it exists: the test reads it then
    time.sleep(0.3)


def failing_warm() -> None:
    _attempt(os.environ[WARM_FOLDER], "warm")
    raise RuntimeError("the warm-up failed")


def healthy(value: int, folder: str | None = None, seconds: float = 0.0) -> tuple[int, int]:
    _attempt(folder, f"healthy{value}")
    time.sleep(seconds)
    return value, os.getpid()


def started_at() -> tuple[int, float]:
    return os.getpid(), time.time()


def kill_worker(folder: str | None = None) -> None:
    """Kills the process it runs in, every time (what the kernel's OOM killer does)."""
    _attempt(folder, "kill")
    time.sleep(0.2)  # let the jobs behind it queue up, and the other workers get busy
    os.kill(os.getpid(), KILLED_BY)


def exit_worker(status: int, folder: str | None = None) -> None:
    """A hard exit, no cleanup, as a crash in native code leaves the process."""
    _attempt(folder, "exit")
    os._exit(status)


def kill_first_worker(folder: str) -> str:
    """Kills its first worker only: a worker lost to bad luck, not to the job."""
    if _attempt(folder, "unlucky") == 0:
        os.kill(os.getpid(), KILLED_BY)
    return "second time lucky"


def allocate(size: int) -> int:
    """Holds ``size`` bytes at once (past the worker's cap: MemoryError)."""
    block = bytearray(size)
    return len(block)


def address_space() -> int:
    """The worker's address space now, in bytes (what RLIMIT_AS caps)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def memory_cap() -> int | None:
    """The worker's soft RLIMIT_AS (None: unlimited)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def past_the_cap() -> None:
    """Allocates more than the worker's cap (64 GiB when it has none)."""
    allocate(memory_cap() or 64 << 30)


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def fail(message: str) -> None:
    raise ValueError(message)


def analyse_or_crash(profile_path: str, folder: str, progress_path: str) -> None:
    """``worker.analyse``'s stand-in: a profile whose file name says "crash" kills the
    worker, "hog" allocates past the worker's cap, "loop" never ends (a tool in an endless
    loop: what a heap simulation sharing a buffer with itself did); any other profile gets
    ``{"fake": <file name>}`` as every tool's JSON, without being read."""
    name = Path(profile_path).name
    time.sleep(0.2)
    if "crash" in name:
        os.kill(os.getpid(), KILLED_BY)
    if "hog" in name:
        past_the_cap()
    while "loop" in name:
        pass
    target = Path(folder)
    staging = target.with_name(f".{target.name}.fake")
    staging.mkdir()
    for tool in tool_names(None):
        (staging / f"{tool}{TOOL_SUFFIX}").write_text(json.dumps({"fake": name}))
        (staging / f"{tool}{TABLES_SUFFIX}").write_text(json.dumps({"tables": []}))
    write_checksums(staging)
    os.replace(staging, target)


def slow_start() -> None:
    """A warm-up longer than the time limit of the test that uses it (1 s): a worker that
    starts as slowly as a fresh one on a loaded machine (imports of seconds)."""
    time.sleep(3.0)
