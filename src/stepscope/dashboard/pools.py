"""The dashboard's worker processes: started with spawn, stopped for good.

spawn, not fork: the server has threads (uvicorn, capture jobs) that a fork would copy in
whatever state they are in.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def stop_pool(pool: ProcessPoolExecutor | None) -> None:
    """Ends a pool's worker processes now, busy or not. ``shutdown(wait=False)`` alone
    leaves a busy worker running after the server exits (and holding its output open);
    the executor has no public way to stop one, hence its ``_processes``."""
    if pool is None:
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=5)
