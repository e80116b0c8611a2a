"""Per-plane work of a reader on threads, results in plane order.

The XSpace reader's per-plane work is compiled loops (:mod:`stepscope.trace.kernels`, C
that releases the GIL) and large numpy operations, which release it too, so the planes of
one file decode side by side on threads. The gain is more than the cores': most of a large read's time on a VM is the
kernel mapping fresh pages (a 10M-event XSpace touches ~2 GB), which threads overlap too
(measured on the 2-core VM, the 10M-event profile's decode: 1.9-2.6 s on one thread,
0.5-1.5 s on two).

The results and the errors are those of the planes taken one by one: results come back
in plane order, and when planes fail the first failing plane's error is raised (the
others' work is dropped). Shared state the planes change (the reader's count budget)
must take its own lock. ``STEPSCOPE_READ_THREADS`` caps the threads (1: one by one, as
a shared machine may want).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from stepscope.errors import StepscopeError

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")

# At most this many threads, whatever the cores: past it a read gains little (the planes
# of a file are few and uneven) and each thread's malloc arena holds memory of its own.
MAX_THREADS = 8
THREAD_PREFIX = "stepscope-read"
THREADS_SETTING = "STEPSCOPE_READ_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its affinity where the OS says, else all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def read_threads() -> int:
    """The threads a read may use: ``STEPSCOPE_READ_THREADS`` when set, else the available
    cores; at most MAX_THREADS."""
    setting = os.environ.get(THREADS_SETTING, "").strip()
    if not setting:
        return min(available_cores(), MAX_THREADS)
    if not (setting.isascii() and setting.isdigit()) or int(setting) < 1:
        raise StepscopeError(f"{THREADS_SETTING} must be a whole number of threads, at least 1 (it is {setting!r})")
    return min(int(setting), MAX_THREADS)


def map_planes(work: Callable[[_Item], _Result], items: Sequence[_Item], threads: bool = True) -> list[_Result]:
    """``[work(item) for item in items]``, on up to ``read_threads()`` threads; one item,
    one thread or ``threads`` False (work that holds the GIL) runs here."""
    count = min(len(items), read_threads()) if threads else 1
    if count <= 1:
        return [work(item) for item in items]
    pool = ThreadPoolExecutor(count, thread_name_prefix=THREAD_PREFIX)
    try:
        return list(pool.map(work, items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # (after an error: the planes not started yet never start)
