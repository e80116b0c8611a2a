"""Finishing a plane whose events come already sorted, without sorting them again.

:func:`stepscope.trace.builder.finish_plane` sorts a plane's events by (line, start,
longest first) and nests them with whole-array operations: two lexsorts, of the events and
of their 2n start and end points, which at millions of events take most of a load. XSpace
lines mostly hold their events in time order already (TSL writes them so, and so does
stepscope). :func:`finish_presorted` checks that in one pass and then keeps the order as
it is and nests with a heap walk (``_nest``, a kernel: :mod:`stepscope.trace.kernels`, the
C of ``src/stepscope/kernels/nest.c``); a plane out of order goes to ``finish_plane``.
Both give the same Plane (tests/trace/test_presorted.py compares them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.trace.builder import _ID_COLUMNS, RawPlane, finish_plane
from stepscope.trace.kernels import kernel
from stepscope.trace.model import EVENT_COLUMNS, NO_ID, EventTable, Plane


def finish_presorted(raw: RawPlane, zero_ps: int) -> tuple[Plane, np.ndarray | None]:
    """What ``finish_plane(raw, zero_ps)`` returns, faster when ``raw`` is in order; then
    the order returned is None (the identity) and the plane keeps ``raw``'s stats store.

    Id columns the plane lacks are one read-only NO_ID broadcast over the rows (no memory:
    a filled column was 8 bytes of fresh pages per event; they are never written to, and
    a write would raise rather than change another column). A plane kept in order
    takes ``raw``'s start column, rebased in place where it is writable (readers let the
    raw plane go once finished; a rebased copy is 80 MB of fresh pages at 10M events)."""
    start = np.asarray(raw.start_ps, dtype=np.int64)
    duration = np.asarray(raw.duration_ps, dtype=np.int64)
    line = np.asarray(raw.line, dtype=np.int32)
    if not is_sorted(line, start, duration):
        return finish_plane(raw, zero_ps)
    count = len(start)
    if start.flags.writeable:
        start -= np.int64(zero_ps)
    else:
        start = start - np.int64(zero_ps)
    depth, parent = nesting(line, start, duration)
    columns: dict[str, npt.NDArray[np.integer[Any]]] = {
        "start_ps": start,
        "duration_ps": duration,
        "metadata_id": np.asarray(raw.metadata_id, dtype=np.int32),
        "line": line,
        "depth": depth,
        "parent": parent,
    }
    absent: np.ndarray | None = None
    for name in _ID_COLUMNS:
        values = raw.ids.get(name)
        if values is None:
            if absent is None:
                absent = np.broadcast_to(np.int64(NO_ID), (count,))
            columns[name] = absent
        else:
            columns[name] = np.asarray(values, dtype=np.int64)
    table = EventTable(**{name: columns[name].astype(dtype, copy=False) for name, dtype in EVENT_COLUMNS.items()})
    plane = Plane(
        id=raw.id,
        name=raw.name,
        lines=raw.lines,
        metadata=raw.metadata,
        events=table,
        stats=raw.stats,
        plane_stats=raw.plane_stats,
    )
    return plane, None


def is_sorted(line: np.ndarray, start: np.ndarray, duration: np.ndarray) -> bool:
    """Whether the events are in (line, start, longest first) order, ties kept in place."""
    if len(line) < 2:
        return True
    if np.any(line[1:] < line[:-1]):
        return False
    same_line = line[1:] == line[:-1]
    if np.any(same_line & (start[1:] < start[:-1])):
        return False
    return not np.any(same_line & (start[1:] == start[:-1]) & (duration[1:] > duration[:-1]))


def nesting(line: np.ndarray, start: np.ndarray, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``builder.nesting`` of sorted events (same depths and parents), by ``_nest``."""
    depth = np.zeros(len(start), dtype=np.int32)
    parent = np.full(len(start), -1, dtype=np.int64)
    if len(start):
        _nest(line, start, duration, depth, parent)
    return depth, parent


@kernel("nest")
def _nest(
    line: npt.NDArray[np.int32],
    start: npt.NDArray[np.int64],
    duration: npt.NDArray[np.int64],
    depth: npt.NDArray[np.int32],
    parent: npt.NDArray[np.int64],
) -> None:
    """Fills ``depth`` (zeros) and ``parent`` (-1) as ``builder.nesting`` defines them.

    An event's depth is the number of earlier events on its line still open when it
    starts: a min-heap holds their ends, an event of some duration ending at that very time
    counting as closed, an instant at that time as open (end-point order (time, flag), flag
    0 for an event with a duration, 1 for an instant, against a start's (time, 1)). Its
    parent is the latest earlier event on the line one level up. A line where a child
    outlasts its parent is walked again as ``builder._stack_nesting`` walks it.
    """
    count = len(start)
    longest = 0  # the most events on one line: what the heap and the stack may hold
    first = 0
    for row in range(1, count + 1):
        if row == count or line[row] != line[first]:
            longest = max(longest, row - first)
            first = row
    heap_end = np.empty(longest, dtype=np.int64)
    heap_flag = np.empty(longest, dtype=np.int8)
    latest = np.empty(longest + 1, dtype=np.int64)  # latest row at each depth
    size = 0
    for row in range(count):
        if row > 0 and line[row] != line[row - 1]:
            size = 0
        time = start[row]
        while size > 0 and (heap_end[0] < time or (heap_end[0] == time and heap_flag[0] == 0)):
            size -= 1  # pop: move the last leaf to the root and sift it down
            end, flag = heap_end[size], heap_flag[size]
            at = 0
            while True:
                child = 2 * at + 1
                if child >= size:
                    break
                if child + 1 < size and (
                    heap_end[child + 1] < heap_end[child] or (heap_end[child + 1] == heap_end[child] and heap_flag[child + 1] < heap_flag[child])
                ):
                    child += 1
                if heap_end[child] < end or (heap_end[child] == end and heap_flag[child] < flag):
                    heap_end[at] = heap_end[child]
                    heap_flag[at] = heap_flag[child]
                    at = child
                else:
                    break
            heap_end[at] = end
            heap_flag[at] = flag
        depth[row] = size
        if size > 0:
            parent[row] = latest[size - 1]
        latest[size] = row
        end = time + duration[row]
        flag = 0 if duration[row] > 0 else 1
        at = size  # push: sift the new leaf up
        size += 1
        while at > 0:
            up = (at - 1) // 2
            if end < heap_end[up] or (end == heap_end[up] and flag < heap_flag[up]):
                heap_end[at] = heap_end[up]
                heap_flag[at] = heap_flag[up]
                at = up
            else:
                break
        heap_end[at] = end
        heap_flag[at] = flag
    # Lines where an event ends after its parent: the exact stack walk.
    stack = heap_end  # reused
    row = 0
    while row < count:
        first = row
        broken = False
        while row < count and line[row] == line[first]:
            if parent[row] >= 0 and start[parent[row]] + duration[parent[row]] < start[row] + duration[row]:
                broken = True
            row += 1
        if not broken:
            continue
        size = 0
        for event in range(first, row):
            event_start = start[event]
            event_end = event_start + duration[event]
            while size > 0:
                top = stack[size - 1]
                top_end = start[top] + duration[top]
                if top_end <= event_start and not (top_end == event_start and start[top] == event_start):
                    size -= 1
                else:
                    break
            while size > 0 and start[stack[size - 1]] + duration[stack[size - 1]] < event_end:
                size -= 1
            depth[event] = size
            parent[event] = stack[size - 1] if size > 0 else -1
            stack[size] = event
            size += 1
