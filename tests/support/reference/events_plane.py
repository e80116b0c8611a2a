"""``events_plane`` (capture/tracers/host.py) as it was before it built its columns in bulk:
a Python comprehension per record and ``stat_from_python`` per arg. Kept only to check the
bulk version against (tests/trace/test_events_plane.py).
"""

from __future__ import annotations

import threading

import numpy as np

from stepscope.capture.tracers.host import EpochClock
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, finish_plane
from stepscope.trace.model import EventMetadata, Line, Plane
from stepscope.trace.stat_types import stat_from_python
from stepscope.trace.stats import TypedStats


def reference_events_plane(
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
