"""The host tracer: stepscope's own annotations (``trace``, ``step``) from every thread.

Annotation times are ``perf_counter_ns`` (cheap and monotonic); the tracer pins that clock
to UNIX time once at start, so its events line up with the frameworks' on one clock.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time

import numpy as np

from stepscope.capture import annotations
from stepscope.capture.options import ProfilerOptions
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, finish_plane
from stepscope.trace.model import EventMetadata, Line, Plane, Profile
from stepscope.trace.stats import TypedStats, stat_from_python


class EpochClock:
    """perf_counter_ns -> UNIX ns, pinned when made."""

    def __init__(self) -> None:
        before = time.perf_counter_ns()
        epoch = time.time_ns()
        after = time.perf_counter_ns()
        self.offset = epoch - (before + after) // 2

    def epoch(self, perf_ns: int) -> int:
        return perf_ns + self.offset


def events_plane(
    name: str,
    records: list[tuple[str, int, int, int, dict | None]],
    clock: EpochClock,
    start_ns: int,
    thread_names: dict[int, str] | None = None,
) -> Plane:
    """A plane of (name, start perf ns, end perf ns, thread id, args) records: one line per
    thread, times relative to ``start_ns`` (UNIX)."""
    thread_names = {**{thread.native_id: thread.name for thread in threading.enumerate()}, **(thread_names or {})}
    thread_ids = sorted({record[3] for record in records})
    line_of = {tid: index for index, tid in enumerate(thread_ids)}
    lines = [Line(id=tid & 0x7FFFFFFF, name=thread_names.get(tid, f"thread {tid}")) for tid in thread_ids]
    metadata_names: dict[str, int] = {}
    metadata_ids = np.asarray([metadata_names.setdefault(r[0], len(metadata_names)) for r in records], dtype=np.int32)
    offset_ps = (clock.offset - start_ns) * 1000
    starts = np.asarray([r[1] for r in records], dtype=np.int64) * 1000 + offset_ps
    ends = np.asarray([r[2] for r in records], dtype=np.int64) * 1000 + offset_ps
    entries = [
        (row, key, stat.kind, stat.value)
        for row, record in enumerate(records)
        if record[4]
        for key, value in record[4].items()
        for stat in (stat_from_python(key, value),)
    ]
    count = len(records)
    step_num = np.full(count, -1, dtype=np.int64)
    for row, key, _, value in entries:
        if key == names.STEP_NUM and isinstance(value, int):
            step_num[row] = value
    keys = sorted({key for _, key, _, _ in entries})
    stats = TypedStats(
        np.asarray([e[0] for e in entries], dtype=np.int64),
        np.asarray([keys.index(e[1]) for e in entries], dtype=np.int32),
        np.asarray([int(e[2]) for e in entries], dtype=np.int8),
        [e[3] for e in entries],
        keys,
        np.arange(count, dtype=np.int64),
    )
    meta_count = len(metadata_names)
    raw = RawPlane(
        id=0,
        name=name,
        lines=lines,
        metadata=EventMetadata(list(metadata_names), [""] * meta_count, [""] * meta_count, [[] for _ in range(meta_count)], [b""] * meta_count),
        start_ps=starts,
        duration_ps=np.maximum(ends - starts, 0),
        metadata_id=metadata_ids,
        line=np.asarray([line_of[r[3]] for r in records], dtype=np.int32),
        stats=stats,
        ids={"step_num": step_num},
    )
    return finish_plane(raw, 0)[0]


class HostTracer:
    """Records stepscope's annotations (host level >= 1)."""

    name = "host"

    def __init__(self) -> None:
        self._recording: annotations.Recording | None = None
        self._spool = ""
        self._clock = EpochClock()

    def is_available(self) -> bool:
        return True

    def start(self, options: ProfilerOptions) -> None:
        if options.host_tracer_level < 1:
            return
        self._clock = EpochClock()
        self._spool = tempfile.mkdtemp(prefix="stepscope-spool-")
        self._recording = annotations.Recording(options.host_tracer_level, self._spool)
        annotations.set_recording(self._recording)

    def stop(self) -> list[Profile]:
        recording, self._recording = self._recording, None
        annotations.set_recording(None)
        if recording is None:
            return []
        records = list(recording.events)
        threads = dict(recording.threads)
        # Worker processes' events: their threads become lines named after the process.
        for pid, worker_records, worker_threads in annotations.read_spools(self._spool):
            for thread, name in worker_threads.items():
                threads[_worker_key(pid, thread)] = f"process {pid} / {name}"
            records += [(r[0], r[1], r[2], _worker_key(pid, r[3]), r[4]) for r in worker_records]
        shutil.rmtree(self._spool, ignore_errors=True)
        if not records:
            return []
        start_ns = self._clock.epoch(min(r[1] for r in records)) // 1000 * 1000
        plane = events_plane(names.HOST_PLANE, records, self._clock, start_ns, threads)
        return [Profile(planes=[plane], start_ns=start_ns, host="", source="stepscope annotations", format="stepscope")]


def _worker_key(pid: int, thread: int) -> int:
    """A line key for a worker process's thread, apart from the parent's threads."""
    return (pid << 32) ^ (thread & 0xFFFFFFFF)
