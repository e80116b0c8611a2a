"""Work that needs a loaded Profile after the analysis: an event's details and flows, and
"export this range". It runs in a separate process that keeps the last few profiles
loaded, so the first click on a big profile pays the load and the next ones do not,
while the server process never holds a profile (only the memory-mapped trace index).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from stepscope.dashboard.pools import spawn_pool, stop_pool
from stepscope.errors import StepscopeError

# Profiles kept loaded in the worker process (a 10M-event profile holds a few GB).
KEPT_PROFILES = 2

_profiles: OrderedDict[str, Any] = OrderedDict()


def _profile(path: str) -> Any:
    """In the worker process: the profile at ``path``, loaded once (LRU)."""
    from stepscope.trace.readers import load

    profile = _profiles.pop(path, None) or load(path)
    _profiles[path] = profile
    while len(_profiles) > KEPT_PROFILES:
        _profiles.popitem(last=False)
    return profile


def event_json(profile_path: str, index_folder: str, event_id: int) -> dict[str, Any]:
    from stepscope.render.formats import json_safe
    from stepscope.viewer import TraceIndex, details, flows_for

    index = TraceIndex.load(index_folder)
    if not 0 <= event_id < index.event_count:
        raise ValueError(f"no event {event_id} (the profile has {index.event_count})")
    profile = _profile(profile_path)
    ref = index.ref(event_id)
    return json_safe({"id": event_id, "details": details(profile, ref, index), "flows": flows_for(profile, ref, index)})


def export_range(profile_path: str, start_ps: int, end_ps: int, target: str) -> str:
    from stepscope.trace.crop import crop
    from stepscope.trace.writers import save

    if not Path(target).exists():
        save(crop(_profile(profile_path), start_ps, end_ps), Path(target))
    return target


class ProfileJobs:
    """The server's side: one worker process, created on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, function, *args) -> Future:
        with self._lock:
            if self._pool is None:
                self._pool = spawn_pool(1)
            try:
                return self._pool.submit(function, *args)
            except BrokenProcessPool:
                self._pool = spawn_pool(1)
                return self._pool.submit(function, *args)

    def run(self, function, *args) -> Any:
        """Runs a job and waits for it (call from a worker thread, not the event loop)."""
        try:
            return self.submit(function, *args).result()
        except BrokenProcessPool:
            with self._lock:
                self._pool = None
            raise StepscopeError("the profile worker died (out of memory?); try again") from None

    def close(self) -> None:
        with self._lock:
            stop_pool(self._pool)
            self._pool = None
