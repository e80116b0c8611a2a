"""The trace viewer's query answer computed the way it was before the compiled loop
(:mod:`stepscope.viewer.lod_loop`): whole-array numpy passes per chunk of lanes for the
level of detail, every column converted to a temporary and copied for the encoding.

Kept as the reference the fast path is compared with, byte for byte
(tests/viewer/test_lod_reference.py). It shares with the viewer only what the change left
alone: the window, the lanes' slices (``range_slices``) and the event views.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.viewer.encoding import _PREAMBLE, _TYPES, LAYOUT, MAGIC, VERSION, _align
from stepscope.viewer.lod import LaneEvents, Window, gather, range_slices
from stepscope.viewer.selection import events_view, window

_EMPTY = np.zeros(0, dtype=np.int64)
# Events (sparse lanes) or pixel edges (dense lanes) handled in one vectorised pass.
CHUNK_ITEMS = 1 << 21


def reference_query(index, start_ps: int, end_ps: int, width_px: int, tracks=None, name_filter: str | None = None, chunk_items: int = CHUNK_ITEMS) -> bytes:
    """What ``stepscope.viewer.query`` answered before the compiled loop."""
    frame = window(start_ps, end_ps, width_px)
    view = events_view(index, name_filter)
    lod = level_of_detail(view, index.track_lanes(tracks), frame, chunk_items)
    return _encode_lod(index, frame, view, lod, name_filter)


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


def level_of_detail(view: LaneEvents, lanes: np.ndarray, window: Window, chunk_items: int = CHUNK_ITEMS) -> Lod:
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
    for chunk in _chunks(counts[sparse], chunk_items):
        picked = sparse[chunk]
        _sparse(view, lanes[picked], first[picked], counts[picked], window, parts)
    dense = np.flatnonzero(dense)
    for chunk in _chunks(np.full(len(dense), window.width_px + 1), chunk_items):
        picked = dense[chunk]
        _dense(view, lanes[picked], first[picked], stop[picked], window, parts)
    return _assemble(parts, overlapping)


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


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """np.unique of an already sorted array, in one pass."""
    if not len(values):
        return values
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def _encode_lod(index, frame: Window, view: LaneEvents, lod: Lod, name_filter: str | None) -> bytes:
    event_ids = view.index_ids(lod.event_pos)
    name_ids = np.asarray(index.name_id)[event_ids]
    distinct_names = np.flatnonzero(np.bincount(name_ids)) if len(name_ids) else name_ids
    lane_tracks = np.asarray(index.lane_track)[lod.lanes]
    span = lod.run_end - lod.run_start
    busy = np.divide(lod.run_busy, span, out=np.zeros(len(span)), where=span > 0)
    header = {
        "start_ps": frame.start_ps,
        "end_ps": frame.end_ps,
        "width_px": frame.width_px,
        "pixel_ps": frame.pixel_ps,
        "min_event_ps": frame.min_event_ps,
        "profile_start_ns": index.start_ns,
        "span_ps": index.span_ps,
        "name_filter": name_filter or None,
        "counts": {
            "lanes": len(lod.lanes),
            "events": len(lod.event_pos),
            "runs": len(lod.run_start),
            "overlapping": lod.overlapping,
        },
        "tracks": [index.tracks[track].to_json() for track in _distinct_sorted(np.sort(lane_tracks)).tolist()],
        "names": {str(name): index.names[name] for name in distinct_names.tolist()},
    }
    arrays = {
        "lane_track": lane_tracks,
        "lane_depth": np.asarray(index.lane_depth)[lod.lanes],
        "lane_events": np.concatenate(([0], np.cumsum(lod.lane_events))),
        "lane_runs": np.concatenate(([0], np.cumsum(lod.lane_runs))),
        "event_start": lod.event_start - frame.start_ps,
        "event_duration": lod.event_duration,
        "event_id": event_ids,
        "event_name": name_ids,
        "run_start": lod.run_start - frame.start_ps,
        "run_end": lod.run_end - frame.start_ps,
        "run_count": lod.run_count,
        "run_busy": busy,
    }
    return _encode(header, arrays)


def _encode(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    """The buffer for ``header`` (without "arrays"/"version", added here) and the arrays
    named in LAYOUT, converted to their wire types."""
    converted = [(name, kind, np.asarray(arrays[name])) for name, kind in LAYOUT]
    # The offsets depend on the header's length, which depends on the offsets' digits:
    # lay out with a guess, then again until the header's length stops changing. Only the
    # small "arrays" list is re-encoded.
    fixed = json.dumps({"version": VERSION, **header}, separators=(",", ":"), ensure_ascii=False)[:-1]
    descriptors: list[dict[str, Any]] = []
    text = b""
    header_room = len(fixed)
    while True:
        offset = _align(_PREAMBLE.size + header_room)
        descriptors = []
        for name, kind, array in converted:
            descriptors.append({"name": name, "type": kind, "offset": offset, "length": len(array)})
            offset = _align(offset + len(array) * _TYPES[kind].itemsize)
        text = (fixed + ',"arrays":' + json.dumps(descriptors, separators=(",", ":")) + "}").encode()
        if _align(_PREAMBLE.size + len(text)) == _align(_PREAMBLE.size + header_room):
            break
        header_room = len(text)
    last = descriptors[-1]
    buffer = bytearray(_align(last["offset"] + last["length"] * _TYPES[last["type"]].itemsize))
    _PREAMBLE.pack_into(buffer, 0, MAGIC, VERSION, len(text), 0)
    buffer[_PREAMBLE.size : _PREAMBLE.size + len(text)] = text
    for descriptor, (_, kind, array) in zip(descriptors, converted):
        # Converted to the wire type while copied into place (one pass).
        np.frombuffer(buffer, dtype=_TYPES[kind], count=len(array), offset=descriptor["offset"])[:] = array
    return bytes(buffer)
