"""Builds immutable planes from the raw columns a reader collected.

A reader gathers, per plane, arrays of start / duration / metadata id / line (in any
order, absolute times in picoseconds since the epoch) plus a stats store in the same
order. :func:`finish_plane` sorts them, shifts times to the profile start and computes
nesting (depth, parent) with the compiled heap walk where it was built, else with
whole-array operations, so no reader walks its events in Python to do it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stepscope.trace import kernels
from stepscope.trace.model import EVENT_COLUMNS, NO_ID, EventMetadata, EventTable, Line, Plane
from stepscope.trace.stat_types import Stat
from stepscope.trace.stats import StatStore

_ID_COLUMNS = ("correlation_id", "external_id", "group_id", "step_num")
# Up to this many nesting levels, parents are found level by level (cheaper than a sort).
_LEVELS_SEARCHED_ONE_BY_ONE = 16


@dataclass
class RawPlane:
    """A plane's events as a reader collected them; absolute times in epoch picoseconds."""

    id: int
    name: str
    lines: list[Line]
    metadata: EventMetadata
    start_ps: np.ndarray  # int64, absolute (epoch ps) or any common base
    duration_ps: np.ndarray
    metadata_id: np.ndarray
    line: np.ndarray
    stats: StatStore
    ids: dict[str, np.ndarray] = field(default_factory=dict)  # subset of _ID_COLUMNS
    plane_stats: list[Stat] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.start_ps)


def earliest_start(planes: list[RawPlane]) -> int | None:
    starts = [int(plane.start_ps.min()) for plane in planes if len(plane)]
    return min(starts, default=None)


def finish_plane(raw: RawPlane, zero_ps: int) -> tuple[Plane, np.ndarray]:
    """Sorts, rebases to ``zero_ps`` and nests ``raw``'s events.

    Returns the plane and the permutation applied (``order[i]`` is the raw row that
    became row ``i``), which readers use to remap references such as flow endpoints.
    """
    count = len(raw)
    start = np.asarray(raw.start_ps, dtype=np.int64) - np.int64(zero_ps)
    duration = np.asarray(raw.duration_ps, dtype=np.int64)
    line = np.asarray(raw.line, dtype=np.int32)
    # Longest first among equal starts, so that a parent precedes its children.
    order = np.lexsort((-duration, start, line))
    start, duration, line = start[order], duration[order], line[order]
    depth, parent = sorted_nesting(line, start, duration)
    columns = {
        "start_ps": start,
        "duration_ps": duration,
        "metadata_id": np.asarray(raw.metadata_id, dtype=np.int32)[order],
        "line": line,
        "depth": depth,
        "parent": parent,
    }
    for name in _ID_COLUMNS:
        values = raw.ids.get(name)
        columns[name] = np.full(count, NO_ID, dtype=np.int64) if values is None else np.asarray(values, dtype=np.int64)[order]
    table = EventTable(**{name: columns[name].astype(dtype, copy=False) for name, dtype in EVENT_COLUMNS.items()})
    plane = Plane(
        id=raw.id,
        name=raw.name,
        lines=raw.lines,
        metadata=raw.metadata,
        events=table,
        stats=raw.stats.take(order),
        plane_stats=raw.plane_stats,
    )
    return plane, order


def sorted_nesting(line: np.ndarray, start: np.ndarray, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``nesting`` of sorted events by the compiled heap walk (the ``nest`` kernel of
    ``presorted``, held to ``nesting`` by tests/trace/test_presorted.py) where it was built:
    one pass, no temporaries. ``nesting``'s lexsort of the 2n start and end points was
    1.3 s of loading the 10M-event JSON of bench/scale.py, against 0.07 s, and ~6n int64
    at the peak. Else ``nesting`` (the kernel's Python is 50-600x slower than numpy here)."""
    native = kernels.native
    if native is None:
        return nesting(line, start, duration)
    depth = np.zeros(len(start), dtype=np.int32)
    parent = np.full(len(start), -1, dtype=np.int64)
    if len(start):
        native.nest(line, start, duration, depth, parent)
    return depth, parent


def nesting(line: np.ndarray, start: np.ndarray, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth and parent of events sorted by (line, start, longest first).

    An event's depth is the number of earlier events on its line still open when it
    starts, counting an event that ends exactly at that time as closed (back-to-back
    events are siblings) and an instant as open for events at the same time after it.
    Its parent is the nearest earlier event on the line one level up. Computed with one
    sort of the 2n start/end points and searches by depth: n log n at any depth.
    """
    count = len(start)
    if count == 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
    end = start + duration
    rows = np.arange(count, dtype=np.int64)
    # Points: ends of events with a duration (kind 0), starts (kind 1), ends of instants
    # (kind 2), ordered by (line, time, kind, row): the sort is stable and a kind's points
    # lie in row order, so the row needs no key. Only what a step needs is kept past it:
    # the transient arrays of a plane of n events were ~16n int64, the peak of loading the
    # V100 traces; now ~6n.
    point_kind = np.concatenate((np.ones(count, dtype=np.int8), np.where(duration > 0, 0, 2).astype(np.int8)))
    order = np.lexsort((point_kind, np.concatenate((start, end)), np.concatenate((line, line))))
    is_end = point_kind[order] != 1
    del point_kind
    ends_through = np.cumsum(is_end, dtype=np.int64)
    sorted_line = np.concatenate((line, line))[order]
    # At each start point: the ends seen before it on its own line (the count through the
    # point, less the count at the line's first point).
    start_points = np.flatnonzero(~is_end)
    del is_end
    line_first = np.searchsorted(sorted_line, sorted_line[start_points], "left")
    del sorted_line
    ends_before_line = np.where(line_first > 0, ends_through[line_first - 1], 0)
    closed = np.empty(count, dtype=np.int64)
    closed[order[start_points]] = ends_through[start_points] - ends_before_line
    del order, ends_through, start_points, line_first, ends_before_line
    first_of_line = np.searchsorted(line, line, "left")
    depth = (rows - first_of_line - closed).astype(np.int32)

    # Parents: the latest earlier row one level up. Depth rises by at most one from a row to
    # the next and is 0 at a line's first row, so that row is on the child's line. A search
    # per level while the levels are few; beyond, where a loop per level would be quadratic
    # (identical events nest n deep), one search of all rows ordered by (depth, row).
    parent = np.full(count, -1, dtype=np.int64)
    levels = int(depth.max())
    if levels <= _LEVELS_SEARCHED_ONE_BY_ONE:
        for level in range(1, levels + 1):
            children = np.flatnonzero(depth == level)
            candidates = np.flatnonzero(depth == level - 1)
            parent[children] = candidates[np.searchsorted(candidates, children, "left") - 1]
    else:
        children = np.flatnonzero(depth > 0)
        key = depth.astype(np.int64) * count + rows  # < count**2: no overflow below 3e9 events
        by_level = np.sort(key)
        found = np.searchsorted(by_level, key[children] - count, "left") - 1
        parent[children] = by_level[found] % count

    # Events that start inside another but end after it (rounding in the source, or
    # overlapping async spans) are not its children. Such lines are rare and get the
    # exact stack walk: an event is the child of the innermost open event that contains
    # it whole, else a top-level event; partial overlaps become siblings, as in XProf.
    nested = parent >= 0
    broken = np.flatnonzero(nested & (end[np.where(nested, parent, 0)] < end))
    for bad_line in np.unique(line[broken]) if len(broken) else ():
        lo, hi = np.searchsorted(line, [bad_line, bad_line + 1], "left")
        depth[lo:hi], parent[lo:hi] = _stack_nesting(start[lo:hi], end[lo:hi], lo)
    return depth, parent


def _stack_nesting(start: np.ndarray, end: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    depth = np.zeros(len(start), dtype=np.int32)
    parent = np.full(len(start), -1, dtype=np.int64)
    stack: list[int] = []
    starts, ends = start.tolist(), end.tolist()
    for row, (event_start, event_end) in enumerate(zip(starts, ends)):
        while stack and ends[stack[-1]] <= event_start and not (ends[stack[-1]] == event_start == starts[stack[-1]]):
            stack.pop()
        while stack and ends[stack[-1]] < event_end:
            stack.pop()
        if stack:
            parent[row] = stack[-1] + offset
            depth[row] = len(stack)
        stack.append(row)
    return depth, parent
