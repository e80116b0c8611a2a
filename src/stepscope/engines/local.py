"""The ``local`` engine: the map in this process (one worker) or on a process pool.

A profile's analysis is Python and numpy under one GIL, so the pool is of processes, not
threads. Results are put back in task order whatever order the workers finish in, so one
worker and many give identical results.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from stepscope.engines.tasks import Outcome, RankTask, analyse_rank
from stepscope.errors import StepscopeError

# "spawn": a fresh interpreter per worker. Forking a process that may hold threads (the
# dashboard's server, tqdm's monitor) can deadlock a child on a lock held at fork time.
START_METHOD = "spawn"


def default_workers(tasks: int) -> int:
    """One per core, at most one per rank."""
    return max(1, min(tasks, os.cpu_count() or 1))


def local_engine(tasks: Sequence[RankTask], workers: int | None, progress: Callable[[], object]) -> list[Outcome]:
    """``workers`` processes (None: ``default_workers``); one: in this process."""
    if workers is None:
        workers = default_workers(len(tasks))
    if workers <= 1 or len(tasks) <= 1:
        outcomes = []
        for task in tasks:
            outcomes.append(analyse_rank(task))
            progress()
        return outcomes
    results: dict[int, Outcome] = {}
    try:
        with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=multiprocessing.get_context(START_METHOD)) as pool:
            futures = {pool.submit(analyse_rank, task): index for index, task in enumerate(tasks)}
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                progress()
    except BrokenProcessPool:
        # A worker killed (out of memory), or one that could not start (a __main__ that a
        # fresh interpreter cannot import, such as a script read from stdin).
        raise StepscopeError(f"the local engine's worker processes died ({len(results)} of {len(tasks)} ranks done); try fewer --workers, or 1") from None
    return [results[index] for index in range(len(tasks))]
