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

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from stepscope.viewer import lod_loop

_EMPTY = np.zeros(0, dtype=np.int64)


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
        if self.ids is None:
            return positions
        ids: np.ndarray = self.ids[positions]
        return ids

    def starts(self, positions: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        starts: np.ndarray = self.key[positions] - self.lane_shift[lanes]
        return starts

    def search(self, lanes: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Per (lane, time): the position of the lane's first event starting at or after
        the time (the lane's end if none)."""
        if not self.keyed:
            return self._search_by_lane(lanes, times)
        clipped: np.ndarray = np.clip(times, self.lane_min[lanes], self.lane_max[lanes] + 1)
        positions: np.ndarray = np.searchsorted(self.key, clipped + self.lane_shift[lanes], "left")
        return positions

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


# The Lod columns that go into the answer as they are.
WIRE_COLUMNS = ("event_start", "event_duration", "event_id", "event_name", "run_start", "run_end", "run_count", "run_busy")


@dataclass(frozen=True, eq=False)
class Lod:
    """A query's answer before its header: the columns in the answer's wire types
    (:mod:`stepscope.viewer.encoding`), times in ps relative to the window's start.

    Grouped by lane: ``lanes[k]`` owns the next ``lane_events[k]`` wide events and the next
    ``lane_runs[k]`` merged runs, each group sorted by start. Lanes come in the order they
    were computed (ascending within the sparse lanes, then within the dense ones) and only
    lanes with something to draw are listed. ``event_id`` are index rows.
    """

    lanes: np.ndarray
    lane_events: np.ndarray
    lane_runs: np.ndarray
    event_start: np.ndarray  # float64
    event_duration: np.ndarray  # float64
    event_id: np.ndarray  # int32
    event_name: np.ndarray  # int32, ids into the index's names
    run_start: np.ndarray  # float32
    run_end: np.ndarray  # float32
    run_count: np.ndarray  # uint32
    run_busy: np.ndarray  # float32: busy ps / (run_end - run_start), 0 for instants
    overlapping: int  # events overlapping the range in the lanes queried


@contextlib.contextmanager
def level_of_detail(view: LaneEvents, lanes: np.ndarray, window: Window, name_id: np.ndarray) -> Iterator[Lod]:
    """The wide events and merged runs of ``lanes`` in ``window`` (module docstring);
    ``name_id`` is the index's column of name ids. The Lod's columns are scratch reused by
    the next query (``lod_loop.Scratch``): valid inside the ``with`` block only."""
    lanes, first, stop = range_slices(view, lanes, window.start_ps, window.end_ps)
    counts = stop - first
    width = window.width_px
    dense = counts > width
    # Sparse lanes first, then dense ones, each ascending (the order the answer lists them).
    order = np.concatenate((np.flatnonzero(~dense), np.flatnonzero(dense)))
    lanes, first, stop, counts, dense = lanes[order], first[order], stop[order], counts[order], dense[order]
    # Room: a sparse lane yields at most one event or run per event, a dense one at most two
    # wide events and one run per pixel.
    event_room = int(np.where(dense, 2 * width, counts).sum())
    run_room = int(np.where(dense, width, counts).sum())
    ids = _EMPTY if view.ids is None else view.ids
    inputs = (view.key, view.duration, view.busy_before, view.lane_shift, ids, name_id)
    with lod_loop.SCRATCH.columns(event_room, run_room, len(lanes)) as out:
        events, runs = lod_loop.lod_lanes_in_parts(inputs, lanes, first, stop, dense, width, window, out)
        *columns, lane_counts = out
        used = (lane_counts[0] > 0) | (lane_counts[1] > 0)
        event_start, event_duration, event_id, event_name = (column[:events] for column in columns[:4])
        run_start, run_end, run_count, run_busy = (column[:runs] for column in columns[4:])
        yield Lod(
            lanes[used],
            lane_counts[0][used],
            lane_counts[1][used],
            event_start,
            event_duration,
            event_id,
            event_name,
            run_start,
            run_end,
            run_count,
            run_busy,
            int(counts.sum()),
        )


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
