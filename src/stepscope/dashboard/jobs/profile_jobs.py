"""Work that needs a loaded Profile after the analysis: an event's details and flows,
"export this range", a flame graph file, and a tool run with options other than its
defaults. It runs in a separate process that keeps the last few profiles loaded (with
their ``OpStats``, which the tools share), so the first click on a big profile pays the
load and the next ones do not, while the server process never holds a profile (only the
memory-mapped trace index).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar, TypeVarTuple

from stepscope.dashboard.api_errors import JobFailed
from stepscope.dashboard.jobs.pools import WorkerFailed, WorkerPool, default_memory_limit, default_time_limit, spawn_pool, stop_pool

R = TypeVar("R")
Ts = TypeVarTuple("Ts")

# Profiles kept loaded in the worker process (a 10M-event profile holds a few GB).
KEPT_PROFILES = 2

_profiles: OrderedDict[str, Any] = OrderedDict()


def _stats(path: str) -> Any:
    """In the worker process: the ``OpStats`` of the profile at ``path``, loaded once (LRU)."""
    from stepscope.analysis.opstats import OpStats
    from stepscope.trace.store import load_profile

    stats = _profiles.pop(path, None) or OpStats(load_profile(path))
    _profiles[path] = stats
    while len(_profiles) > KEPT_PROFILES:
        _profiles.popitem(last=False)
    return stats


def _profile(path: str) -> Any:
    return _stats(path).profile


def tool_run(profile_path: str, tool: str, options: dict[str, Any]) -> tuple[bytes, bytes]:
    """A ``TABLES`` tool's JSON and tables documents for ``options`` (see ``ToolRuns``)."""
    from stepscope.analysis import spec
    from stepscope.dashboard.jobs.worker import tool_documents as documents

    return documents(spec(tool), _stats(profile_path), **options)


def rank_tables_job(profile_path: str) -> Any:
    """The profile's ``RankTables`` (the distributed view's map step), for a cache folder
    written before the analysis worker left them (``worker.RANK_FILE``)."""
    from stepscope.analysis.distributed import rank_tables_of

    return rank_tables_of(_stats(profile_path), "")


def event_json(profile_path: str, index_folder: str, event_id: int) -> dict[str, Any]:
    from stepscope.viewer import TraceIndex, details, flows_for

    index = TraceIndex.load(index_folder)
    if not 0 <= event_id < index.event_count:
        raise ValueError(f"no event {event_id} (the profile has {index.event_count})")
    profile = _profile(profile_path)
    ref = index.ref(event_id)
    return {"id": event_id, "details": details(profile, ref, index), "flows": flows_for(profile, ref, index)}


def export_range(profile_path: str, start_ps: int, end_ps: int, target: str) -> str:
    """Writes the range as ``target`` (atomically: ``save`` renames a finished temporary
    file into place), unless another request already did."""
    from stepscope.trace.crop import crop
    from stepscope.trace.writers import save

    if not Path(target).exists():
        save(crop(_profile(profile_path), start_ps, end_ps), Path(target))
    return target


def flame_file(profile_path: str, form: str, options: dict[str, Any]) -> bytes:
    """The flame graph tool's stacks for ``options`` (thread, step, window) as a file in
    ``form`` (``render.flame.FLAME_FORMATS``); StepscopeError names a bad option or a
    window with nothing to draw."""
    from stepscope.analysis.tools.flame_graph import window
    from stepscope.errors import StepscopeError
    from stepscope.render.flame import FLAME_FORMATS

    stats = _stats(profile_path)
    chosen = window(stats, **options)
    if not chosen.threads:
        raise StepscopeError(f"flame_graph: no thread with timed events to draw in {Path(profile_path).name} (pick another thread)")
    return FLAME_FORMATS[form](stats.profile, chosen, Path(profile_path).name)


class ProfileJobs:
    """The server's side: one worker process, created on first use and replaced when it
    dies or runs past its time limit (``pools.WorkerPool``); ``memory_limit`` and
    ``time_limit`` as there (None: the defaults); ``confine``: the folder its worker reads
    profiles from (None: anywhere); ``stores``: the folder of the profile stores it shares
    with the analysis workers (``trace.store``; None: it reads each profile's file)."""

    def __init__(self, memory_limit: int | None = None, time_limit: float | None = None, confine: Path | None = None, stores: Path | None = None) -> None:
        self._confine = None if confine is None else str(confine)
        self._stores = None if stores is None else str(stores)
        self._lock = threading.Lock()
        self._memory_limit = default_memory_limit() if memory_limit is None else memory_limit or None
        self._time_limit = default_time_limit() if time_limit is None else time_limit or None
        self._pool: WorkerPool | None = None

    def submit(self, function: Callable[[*Ts], R], *args: *Ts) -> Future[R]:
        with self._lock:
            if self._pool is None:
                self._pool = spawn_pool(1, self._memory_limit, time_limit=self._time_limit, confine=self._confine, stores=self._stores)
            return self._pool.submit(function, *args)

    def run(self, what: str, function: Callable[[*Ts], R], *args: *Ts) -> R:
        """Runs a job and waits for it (call from a worker thread, not the event loop).
        ``what`` names the work in the error when the worker dies: "export of <file>"."""
        try:
            return self.submit(function, *args).result()
        except WorkerFailed as error:
            raise JobFailed(f"{what} stopped: {error}") from None

    def close(self) -> None:
        with self._lock:
            stop_pool(self._pool)
            self._pool = None
