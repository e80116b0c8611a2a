"""Level of detail: the events of a time range cut to what a given pixel width can show.

For a range ``[start, end)`` drawn on ``width`` pixels, pixel ``j`` covers
``[edge[j], edge[j+1])`` with ``edge[j] = start + floor(j * (end - start) / width)``,
and an event is *wide* when its duration is at least one pixel,
``duration >= ceil((end - start) / width)`` ps (the smallest integer not below a pixel).
An event overlaps the range when it starts before ``end`` and ends after ``start``, an
instant when ``start <= time < end``. Per lane:

- every wide overlapping event is returned on its own;
- the other overlapping events are merged per pixel, by the pixel their start falls in
  (an event that began before the range counts in pixel 0), into a *run*: the first
  start, the last end, how many events, their busy picoseconds.

So merged counts plus wide events are exactly the events overlapping the range, and a lane
yields at most one run per pixel plus at most one wide event per pixel (two in pixel 0).

Why no pyramid is needed: a lane's events do not overlap (see :mod:`layout`). A wide event
that starts in pixel ``j`` ends at or past ``edge[j+1]``, so it is the last event starting
in that pixel, and only the first event of pixel 0 (begun before the range) can be wide
besides it. A lane with more events in range than pixels is therefore summarised from
``width + 1`` binary searches of the pixel edges, the first and last event of each pixel,
and the running sum of durations: O(width log n) whatever the lane holds. A lane with
fewer events is read event by event, O(events). A query costs O(lanes x width), nearly
independent of the profile's size.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)
# Events (sparse lanes) or pixel edges (dense lanes) handled in one vectorised pass.
CHUNK_ITEMS = 1 << 21


@dataclass(frozen=True, eq=False)
class LaneEvents:
    """Events sorted by (lane, start), lanes free of overlaps: a whole index, or the subset
    of it that a name filter keeps (same lanes, same keys).

    ``ids`` maps a position here to the index row (None: the same).
    """

    key: np.ndarray
    duration: np.ndarray
    busy_before: np.ndarray
    lane_offset: np.ndarray
    lane_shift: np.ndarray
    lane_min: np.ndarray
    lane_max: np.ndarray
    keyed: bool
    ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.key)

    def subset(self, positions: np.ndarray) -> LaneEvents:
        """The events at ``positions`` (ascending) only."""
        duration = np.asarray(self.duration[positions])
        busy = np.zeros(len(positions) + 1, dtype=np.int64)
        np.cumsum(duration, out=busy[1:])
        return LaneEvents(
            key=np.asarray(self.key[positions]),
            duration=duration,
            busy_before=busy,
            lane_offset=np.searchsorted(positions, self.lane_offset, "left").astype(np.int64),
            lane_shift=self.lane_shift,
            lane_min=self.lane_min,
            lane_max=self.lane_max,
            keyed=self.keyed,
            ids=self.index_ids(positions),
        )

    def index_ids(self, positions: np.ndarray) -> np.ndarray:
        return positions if self.ids is None else self.ids[positions]

    def starts(self, positions: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        return self.key[positions] - self.lane_shift[lanes]

    def search(self, lanes: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Per (lane, time): the position of the lane's first event starting at or after
        the time (the lane's end if none)."""
        if not self.keyed:
            return self._search_by_lane(lanes, times)
        clipped = np.clip(times, self.lane_min[lanes], self.lane_max[lanes] + 1)
        return np.searchsorted(self.key, clipped + self.lane_shift[lanes], "left")

    def _search_by_lane(self, lanes: np.ndarray, times: np.ndarray) -> np.ndarray:
        result = np.empty(len(lanes), dtype=np.int64)
        order = np.argsort(lanes, kind="stable")
        sorted_lanes = lanes[order]
        bounds = np.flatnonzero(np.diff(sorted_lanes)) + 1
        for group in np.split(order, bounds):
            if not len(group):
                continue
            lane = int(lanes[group[0]])
            lo, hi = int(self.lane_offset[lane]), int(self.lane_offset[lane + 1])
            result[group] = lo + np.searchsorted(self.key[lo:hi], times[group], "left")
        return result


@dataclass(frozen=True)
class Window:
    """A query's time range and pixel grid (see the module docstring)."""

    start_ps: int
    end_ps: int
    width_px: int

    @property
    def min_event_ps(self) -> int:
        """The shortest duration drawn on its own: one pixel, rounded up."""
        return -(-(self.end_ps - self.start_ps) // self.width_px)

    @property
    def pixel_ps(self) -> float:
        return (self.end_ps - self.start_ps) / self.width_px

    def edges(self) -> np.ndarray:
        """The ``width + 1`` pixel edges, exact in integers (no overflow: the products are
        split into quotient and remainder of the range by the width)."""
        steps = np.arange(self.width_px + 1, dtype=np.int64)
        quotient, remainder = divmod(self.end_ps - self.start_ps, self.width_px)
        return self.start_ps + steps * quotient + (steps * remainder) // self.width_px


@dataclass(frozen=True, eq=False)
class Lod:
    """A query's answer before encoding; times in ps from the profile start.

    Grouped by lane: ``lanes[k]`` owns the next ``lane_events[k]`` wide events and the next
    ``lane_runs[k]`` merged runs, each group sorted by start. Lanes come in the order they
    were computed (ascending within the sparse lanes, then within the dense ones) and only
    lanes with something to draw are listed. ``event_pos`` are positions in the
    LaneEvents queried.
    """

    lanes: np.ndarray
    lane_events: np.ndarray
    lane_runs: np.ndarray
    event_pos: np.ndarray
    event_start: np.ndarray
    event_duration: np.ndarray
    run_start: np.ndarray
    run_end: np.ndarray
    run_count: np.ndarray
    run_busy: np.ndarray
    overlapping: int  # events overlapping the range in the lanes queried

    @classmethod
    def empty(cls) -> Lod:
        return cls(*([_EMPTY] * 10), overlapping=0)

    @property
    def event_lane(self) -> np.ndarray:
        return np.repeat(self.lanes, self.lane_events)

    @property
    def run_lane(self) -> np.ndarray:
        return np.repeat(self.lanes, self.lane_runs)


@dataclass
class _Parts:
    """Pieces of the answer, one per chunk of lanes: (lanes, events per lane, runs per
    lane), events as (position, start, duration), runs as (start, end, count, busy)."""

    lanes: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    events: list[tuple[np.ndarray, ...]]
    runs: list[tuple[np.ndarray, ...]]


def level_of_detail(view: LaneEvents, lanes: np.ndarray, window: Window) -> Lod:
    """The wide events and merged runs of ``lanes`` in ``window`` (module docstring)."""
    lanes, first, stop = range_slices(view, lanes, window.start_ps, window.end_ps)
    if not len(lanes):
        return Lod.empty()
    counts = stop - first
    overlapping = int(counts.sum())
    dense = counts > window.width_px
    parts = _Parts([], [], [])
    # Chunks bound the temporaries (a chunk reads at most CHUNK_ITEMS events or edges).
    sparse = np.flatnonzero(~dense)
    for chunk in _chunks(counts[sparse], CHUNK_ITEMS):
        picked = sparse[chunk]
        _sparse(view, lanes[picked], first[picked], counts[picked], window, parts)
    dense = np.flatnonzero(dense)
    for chunk in _chunks(np.full(len(dense), window.width_px + 1), CHUNK_ITEMS):
        picked = dense[chunk]
        _dense(view, lanes[picked], first[picked], stop[picked], window, parts)
    return _assemble(parts, overlapping)


def range_slices(view: LaneEvents, lanes: np.ndarray, start: int, end: int) -> tuple[np.ndarray, ...]:
    """The lanes with events overlapping ``[start, end)``, and for each the positions
    ``first:stop`` of those events (one slice per lane, since a lane does not overlap
    itself)."""
    lanes = lanes[view.lane_offset[lanes + 1] > view.lane_offset[lanes]]
    if end <= start or not len(lanes):
        return _EMPTY, _EMPTY, _EMPTY
    first_at = view.search(lanes, np.full(len(lanes), start, dtype=np.int64))
    stop = view.search(lanes, np.full(len(lanes), end, dtype=np.int64))
    # Of the events starting before ``start`` only the last can reach past it.
    before = np.maximum(first_at - 1, 0)
    straddles = (first_at > view.lane_offset[lanes]) & (view.starts(before, lanes) + view.duration[before] > start)
    first = np.where(straddles, first_at - 1, first_at)
    keep = stop > first
    return lanes[keep], first[keep], stop[keep]


def gather(first: np.ndarray, stop: np.ndarray, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the slices ``first[k]:stop[k]`` concatenated, and the lane of each."""
    counts = stop - first
    total = int(counts.sum())
    positions = np.arange(total, dtype=np.int64) + np.repeat(first - (np.cumsum(counts) - counts), counts)
    return positions, np.repeat(lanes, counts)


def _chunks(sizes: np.ndarray, limit: int) -> list[slice]:
    """Consecutive slices of ``sizes`` each summing to about ``limit`` (at least one item)."""
    if not len(sizes):
        return []
    group = np.cumsum(sizes) // limit
    bounds = np.flatnonzero(np.diff(group)) + 1
    edges = np.concatenate(([0], bounds, [len(sizes)]))
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(edges) if b > a]


def _pixels(window: Window, edges: np.ndarray, times: np.ndarray) -> np.ndarray:
    """The pixel each time falls in (0 before the range): estimated in floating point,
    then corrected by one against the exact integer edges."""
    width = window.width_px
    estimate = ((times - window.start_ps) * (width / (window.end_ps - window.start_ps))).astype(np.int64)
    estimate = np.clip(estimate, 0, width - 1)
    estimate -= times < edges[estimate]
    estimate += times >= edges[estimate + 1]
    return np.clip(estimate, 0, width - 1)


def _sparse(view: LaneEvents, lanes, first, counts, window: Window, parts: _Parts) -> None:
    """Lanes with few events in range: every event is read."""
    positions, lane = gather(first, first + counts, lanes)
    local = np.repeat(np.arange(len(lanes)), counts)
    start = view.starts(positions, lane)
    duration = view.duration[positions]
    wide = duration >= window.min_event_ps
    parts.events.append((positions[wide], start[wide], duration[wide]))
    wide_per_lane = np.bincount(local[wide], minlength=len(lanes))
    narrow = ~wide
    local, start, duration = local[narrow], start[narrow], duration[narrow]
    pixel = _pixels(window, window.edges(), start)
    # Events are sorted by (lane, start), so a run is a stretch of equal (lane, pixel).
    change = np.flatnonzero((local[1:] != local[:-1]) | (pixel[1:] != pixel[:-1])) + 1
    heads = np.concatenate(([0], change)) if len(local) else _EMPTY
    if len(heads):
        parts.runs.append(
            (
                start[heads],
                np.maximum.reduceat(start + duration, heads),
                np.diff(np.append(heads, len(local))),
                np.add.reduceat(duration, heads),
            )
        )
    parts.lanes.append((lanes, wide_per_lane, np.bincount(local[heads], minlength=len(lanes))))


def _dense(view: LaneEvents, lanes, first, stop, window: Window, parts: _Parts) -> None:
    """Lanes with more events in range than pixels: summarised from the pixel edges.

    Pixel ``j`` holds positions ``bounds[j]:bounds[j+1]``; its first event is at
    ``bounds[j]`` and its last just before ``bounds[j+1]``, so every column is gathered
    once at the edges and once just before them (gathers dominate: each is a cache miss
    in a big index).
    """
    width = window.width_px
    count = len(lanes)
    bounds = view.search(np.repeat(lanes, width + 1), np.tile(window.edges(), count)).reshape(count, width + 1)
    bounds[:, 0] = first  # pixel 0 also holds the event begun before the range
    bounds[:, width] = stop
    last = len(view) - 1
    at, before = np.minimum(bounds, last), np.maximum(bounds - 1, 0)
    shift = view.lane_shift[lanes][:, None]
    head_start = (view.key[at] - shift)[:, :-1]
    head_duration = view.duration[at][:, :-1]
    tail_duration = view.duration[before][:, 1:]
    tail_end = (view.key[before] - shift)[:, 1:] + tail_duration
    busy = np.diff(view.busy_before[bounds], axis=1)
    events_in = np.diff(bounds, axis=1)
    filled = events_in > 0
    minimum = window.min_event_ps
    head_wide = filled & (head_duration >= minimum)
    tail_wide = (events_in > 1) & (tail_duration >= minimum)  # a pixel's only event is its head
    # Wide events as (lane, pixel, head before tail): sorted by start within each lane.
    wide = np.stack((head_wide, tail_wide), axis=2)
    parts.events.append(
        (
            np.stack((bounds[:, :-1], bounds[:, 1:] - 1), axis=2)[wide],
            np.stack((head_start, tail_end - tail_duration), axis=2)[wide],
            np.stack((head_duration, tail_duration), axis=2)[wide],
        )
    )
    merged = events_in - head_wide - tail_wide
    has_run = merged > 0
    busy = busy - np.where(head_wide, head_duration, 0) - np.where(tail_wide, tail_duration, 0)
    run_start = head_start
    run_end = tail_end
    # Where the first (last) event is wide, the run starts (ends) at its neighbour: rare.
    lane = np.broadcast_to(lanes[:, None], head_start.shape)
    fix = head_wide & has_run
    if fix.any():
        run_start = head_start.copy()
        run_start[fix] = view.starts(bounds[:, :-1][fix] + 1, lane[fix])
    fix = tail_wide & has_run
    if fix.any():
        previous = bounds[:, 1:][fix] - 2
        run_end = tail_end.copy()
        run_end[fix] = view.starts(previous, lane[fix]) + view.duration[previous]
    # Ends are sorted within a lane, so the last narrow event ends last.
    parts.runs.append((run_start[has_run], run_end[has_run], merged[has_run], busy[has_run]))
    parts.lanes.append((lanes, wide.sum(axis=(1, 2)), has_run.sum(axis=1)))


def _assemble(parts: _Parts, overlapping: int) -> Lod:
    """Joins the chunks (each grouped by lane already) and drops lanes left empty."""

    def joined(pieces: list[tuple[np.ndarray, ...]], width: int) -> list[np.ndarray]:
        if not pieces:
            return [_EMPTY] * width
        return [np.concatenate([np.asarray(piece[i], dtype=np.int64) for piece in pieces]) for i in range(width)]

    lanes, lane_events, lane_runs = joined(parts.lanes, 3)
    used = (lane_events > 0) | (lane_runs > 0)
    event_pos, event_start, event_duration = joined(parts.events, 3)
    run_start, run_end, run_count, run_busy = joined(parts.runs, 4)
    return Lod(
        lanes[used], lane_events[used], lane_runs[used],
        event_pos, event_start, event_duration,
        run_start, run_end, run_count, run_busy,
        overlapping,
    )  # fmt: skip
