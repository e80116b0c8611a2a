"""The level of detail's loop: one pass over the lanes of a query, writing the answer's
columns directly (:func:`stepscope.viewer.lod.level_of_detail` calls it).

The whole-array version it replaced built a dozen temporaries per lane chunk (positions,
pixels, stacked head/tail columns) and searched every pixel edge of every dense lane in the
whole index: 105 ms for the full view of the 10M-event profile (4,081 lanes, 168 dense),
where this loop reads each sparse event once and finds a dense lane's edges by galloping
from the previous one inside the lane's own slice. The rules are :mod:`lod`'s, unchanged;
tests/support/reference/lod.py keeps the whole-array version and the tests compare the
two answers byte for byte.

``lod_lanes`` is a kernel (:mod:`stepscope.trace.kernels`): the C of
``src/stepscope/kernels/lod.c`` runs in its place where it was built, and releases the GIL,
so the parts of a large query run side by side (``lod_lanes_in_parts``). Its figures in
the docstrings below were measured with numba, which compiled it before; the C answers the
same queries as fast (bench/README.md).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from stepscope.trace.kernels import kernel
from stepscope.trace.planes_in_parallel import available_cores

if TYPE_CHECKING:
    from stepscope.viewer.lod import Window

# The answer's columns (Scratch.columns): the event columns, the run columns, lane_counts.
Columns = tuple[np.ndarray, ...]
# The events' columns lod_lanes reads: key, duration, busy_before, lane_shift, ids, name_id.
Inputs = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _first_at_or_after(key: np.ndarray, shift: int, target: int, lo: int, stop: int) -> int:
    """The first position in ``lo:stop`` whose start (``key - shift``) is at least
    ``target`` (``stop`` if none); starts ascend. Gallops from ``lo``, then halves the last
    step: a dense lane's next pixel edge is usually a few events on. (Searches started
    from an even spread's guess, each apart, measured slower: 29 against 17 ms for the
    dense lanes of the 10M-event full view; the lanes come in bursts.)"""
    if lo >= stop or key[lo] - shift >= target:
        return lo
    below, step = lo, 1  # below: a position starting before target
    above = below + step
    while above < stop and key[above] - shift < target:
        below = above
        step *= 2
        above = below + step
    above = min(above, stop)
    while above - below > 1:
        middle = (below + above) >> 1
        if key[middle] - shift < target:
            below = middle
        else:
            above = middle
    return above


def _pixel_of(edges: np.ndarray, time: int, lowest: int, scale: float) -> int:
    """The last pixel ``j`` (of ``len(edges) - 1``) with ``edges[j] <= time``, given that
    ``lowest`` is one: guessed from ``scale`` (pixels per ps) in floating point, then
    moved against the exact edges (the guess can be one too far: a range of ~3e18 ps).
    A sparse lane's events are far apart in pixels: walking the edges one by one from
    each event to the next took 5.9M steps for the 0.5M events of the 10M-event full
    view's 3,913 sparse lanes (those lanes: 11 ms, 7 ms with the guess)."""
    last = len(edges) - 2
    pixel = min(max(int((time - edges[0]) * scale), lowest), last)
    while pixel > lowest and edges[pixel] > time:
        pixel -= 1
    while pixel < last and edges[pixel + 1] <= time:
        pixel += 1
    return pixel


def _put_event(out: Columns, k: int, position: int, ids: np.ndarray, name_id: np.ndarray, start: int, duration: int) -> None:
    """Writes event ``k`` of the answer: index position ``position`` (mapped through
    ``ids`` unless empty), ``start`` relative to the window."""
    row = ids[position] if len(ids) else position
    out[0][k] = start
    out[1][k] = duration
    out[2][k] = row
    out[3][k] = name_id[row]


def _put_run(out: Columns, k: int, begin: int, end: int, count: int, busy: int) -> None:
    """Writes run ``k``: ``begin`` and ``end`` relative to the window, ``busy`` ps."""
    out[4][k] = begin
    out[5][k] = end
    out[6][k] = count
    out[7][k] = busy / (end - begin) if end > begin else 0.0


@kernel("lod_lanes")
def lod_lanes(
    key: np.ndarray,
    duration: np.ndarray,
    busy_before: np.ndarray,
    lane_shift: np.ndarray,
    ids: np.ndarray,
    name_id: np.ndarray,
    lanes: np.ndarray,
    first: np.ndarray,
    stop: np.ndarray,
    edges: np.ndarray,
    min_event: int,
    out: Columns,
) -> tuple[int, int]:
    """Fills ``out`` (see :func:`stepscope.viewer.lod.level_of_detail`, which sizes it) for
    ``lanes`` in the order given: per lane its wide events and merged runs, in the wire
    types of :mod:`stepscope.viewer.encoding`, times relative to ``edges[0]``, and how
    many of each (``lane_counts`` rows 0 and 1). ``ids`` maps a position to its index row
    (empty: the same). Returns (events written, runs written).
    """
    lane_counts = out[8]
    width = len(edges) - 1
    origin = edges[0]
    scale = width / max(edges[width] - origin, 1)
    events = 0
    runs = 0
    for k in range(len(lanes)):
        shift = lane_shift[lanes[k]]
        lo, hi = first[k], stop[k]
        events_before, runs_before = events, runs
        if hi - lo <= width:
            # Sparse: every event; narrow ones merge while they share a pixel.
            pixel = 0
            run_pixel = -1
            first_start = last_end = merged = busy = 0
            for p in range(lo, hi):
                s = key[p] - shift
                d = duration[p]
                if d >= min_event:
                    _put_event(out, events, p, ids, name_id, s - origin, d)
                    events += 1
                    continue
                if pixel < width - 1 and edges[pixel + 1] <= s:
                    pixel = _pixel_of(edges, s, pixel + 1, scale)
                if pixel == run_pixel:
                    merged += 1
                    busy += d
                    last_end = s + d  # ends ascend in a lane: the latest is the last
                    continue
                if merged:
                    _put_run(out, runs, first_start - origin, last_end - origin, merged, busy)
                    runs += 1
                run_pixel, first_start, last_end, merged, busy = pixel, s, s + d, 1, d
            if merged:
                _put_run(out, runs, first_start - origin, last_end - origin, merged, busy)
                runs += 1
        else:
            # Dense: pixel j holds positions a:b between its edges' searches; its first
            # event (a) and its last (b - 1) are the only ones that can be wide.
            a = lo
            for j in range(width):
                b = hi if j == width - 1 else _first_at_or_after(key, shift, edges[j + 1], a, hi)
                n = b - a
                if n > 0:
                    head_start = key[a] - shift
                    head_duration = duration[a]
                    tail_duration = duration[b - 1]
                    tail_start = key[b - 1] - shift
                    head_wide = head_duration >= min_event
                    tail_wide = n > 1 and tail_duration >= min_event
                    busy = busy_before[b] - busy_before[a]
                    merged = n
                    if head_wide:
                        _put_event(out, events, a, ids, name_id, head_start - origin, head_duration)
                        events += 1
                        merged -= 1
                        busy -= head_duration
                    if tail_wide:
                        _put_event(out, events, b - 1, ids, name_id, tail_start - origin, tail_duration)
                        events += 1
                        merged -= 1
                        busy -= tail_duration
                    if merged > 0:
                        # Ends ascend within a lane: the last narrow event ends last.
                        begin = key[a + 1] - shift if head_wide else head_start
                        end = key[b - 2] - shift + duration[b - 2] if tail_wide else tail_start + tail_duration
                        _put_run(out, runs, begin - origin, end - origin, merged, busy)
                        runs += 1
                a = b
        lane_counts[0, k] = events - events_before
        lane_counts[1, k] = runs - runs_before
    return events, runs


# A query whose lanes cost more than this (events of sparse lanes, plus DENSE_COST per pixel
# of a dense lane) is split into parts computed on threads; the loop releases the GIL.
PARALLEL_COST = 200_000
DENSE_COST = 3  # a dense lane's pixel: a gallop and a few reads, against one read per sparse event
MAX_PARTS = 4
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def lod_lanes_in_parts(
    inputs: Inputs, lanes: np.ndarray, first: np.ndarray, stop: np.ndarray, dense: np.ndarray, width: int, window: Window, out: Columns
) -> tuple[int, int]:
    """:func:`lod_lanes` over the lanes, split into consecutive parts of about equal cost
    computed side by side when the query is large (the full view of the 10M-event profile,
    4,081 lanes: p50 28 ms on one thread, 19 ms on two, on the 2-core VM), with the same
    answer: each part writes its own
    stretch of ``out``'s columns (a lane's room, as ``level_of_detail`` sized them), then
    the parts' rows are moved up against each other, in lane order."""
    edges, min_event = window.edges(), window.min_event_ps
    counts = stop - first
    cost = np.cumsum(np.where(dense, DENSE_COST * width, counts))
    parts = min(MAX_PARTS, available_cores(), int(cost[-1]) // PARALLEL_COST + 1) if len(cost) else 1
    if parts <= 1:
        return lod_lanes(*inputs, lanes, first, stop, edges, min_event, out)
    bounds = [0, *np.searchsorted(cost, cost[-1] * np.arange(1, parts) / parts, "right").tolist(), len(lanes)]
    event_room = np.concatenate(([0], np.cumsum(np.where(dense, 2 * width, counts))))
    run_room = np.concatenate(([0], np.cumsum(np.where(dense, width, counts))))
    *columns, lane_counts = out

    def part(k: int) -> tuple[int, int, np.ndarray]:
        a, b = bounds[k], bounds[k + 1]
        e, r = event_room[a], run_room[a]
        stretch = (*(c[e : event_room[b]] for c in columns[:4]), *(c[r : run_room[b]] for c in columns[4:]), np.zeros((2, b - a), dtype=np.int64))
        events, runs = lod_lanes(*inputs, lanes[a:b], first[a:b], stop[a:b], edges, min_event, stretch)
        return events, runs, stretch[-1]

    results = list(_pool().map(part, range(parts)))
    events = runs = 0
    for k, (part_events, part_runs, part_counts) in enumerate(results):
        e, r = event_room[bounds[k]], run_room[bounds[k]]
        if k:  # (moved towards the start: numpy copies overlapping ranges as it should)
            for column in columns[:4]:
                column[events : events + part_events] = column[e : e + part_events]
            for column in columns[4:]:
                column[runs : runs + part_runs] = column[r : r + part_runs]
        lane_counts[:, bounds[k] : bounds[k + 1]] = part_counts
        events, runs = events + part_events, runs + part_runs
    return events, runs


def _pool() -> ThreadPoolExecutor:
    """The threads of split queries, made at the first one and kept (a query is tens of ms)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(MAX_PARTS, thread_name_prefix="stepscope-lod")
        return _POOL


# Column dtypes of the output, events then runs (the answer's wire types).
_EVENT_TYPES = (np.float64, np.float64, np.int32, np.int32)
_RUN_TYPES = (np.float32, np.float32, np.uint32, np.float32)
# Scratch kept between queries only up to this many events or runs (~24 bytes each).
SCRATCH_LIMIT = 1 << 22


class Scratch:
    """Output columns reused from one query to the next.

    Fresh columns cost a page fault per 4 KiB written: ~3,000 for the full view of the
    10M-event profile (a 12 MB answer), 10-15 ms of a 40 ms query on this machine. One
    set is kept per process and lent to one query at a time; a query that finds it lent
    out, or needs more than SCRATCH_LIMIT rows, gets fresh columns.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: tuple[np.ndarray, ...] = tuple(np.zeros(0, dtype) for dtype in _EVENT_TYPES)
        self._runs: tuple[np.ndarray, ...] = tuple(np.zeros(0, dtype) for dtype in _RUN_TYPES)

    @contextlib.contextmanager
    def columns(self, event_room: int, run_room: int, lane_count: int) -> Iterator[tuple[np.ndarray, ...]]:
        """Output columns for :func:`lod_lanes` with room for that many events and runs,
        valid inside the ``with`` block."""
        lane_counts = np.zeros((2, lane_count), dtype=np.int64)
        if max(event_room, run_room) > SCRATCH_LIMIT or not self._lock.acquire(blocking=False):
            yield (*_fresh(_EVENT_TYPES, event_room), *_fresh(_RUN_TYPES, run_room), lane_counts)
            return
        try:
            if len(self._events[0]) < event_room:
                self._events = _fresh(_EVENT_TYPES, event_room)
            if len(self._runs[0]) < run_room:
                self._runs = _fresh(_RUN_TYPES, run_room)
            yield (*(c[:event_room] for c in self._events), *(c[:run_room] for c in self._runs), lane_counts)
        finally:
            self._lock.release()


def _fresh(dtypes: tuple[type, ...], room: int) -> tuple[np.ndarray, ...]:
    return tuple(np.empty(room, dtype=dtype) for dtype in dtypes)


SCRATCH = Scratch()
