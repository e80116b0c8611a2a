"""The trace viewer's index of a profile: every event sorted per lane, ready for range queries.

Built once per profile (:func:`build_index`), saved as ``.npy`` files plus a JSON manifest
(:mod:`stepscope.viewer.storage`) and memory-mapped when loaded, so a 10M-event index
opens at once and server processes share its pages.

Layout, all numpy arrays (``L`` lanes, ``N`` events):

- tracks (one per plane line with events, plus a synthetic ``Steps`` track on top when
  the profile has steps) are :class:`Track` records; a track owns the consecutive lanes
  ``first_lane .. first_lane + max_depth``;
- ``lane_track``, ``lane_depth`` (L); ``lane_offset`` (L+1): lane ``l``'s events are rows
  ``lane_offset[l]:lane_offset[l+1]`` of the event arrays, sorted by start, and (the
  property the queries rely on, see :mod:`layout`) they do not overlap, so their ends
  are sorted too;
- ``key`` (N): the event's start plus ``lane_shift[lane]``: one int64 array sorted across
  all lanes, so a single ``np.searchsorted`` finds a time in many lanes at once. Lane
  ``l``'s keys lie in ``[base_l, base_l + lane_max[l] - lane_min[l]]`` with a gap of one
  before the next lane's base; a time is clipped to ``[lane_min, lane_max + 1]`` first.
  When the lanes' spans add up past 2**62 (a profile of weeks with many lanes), ``keyed``
  is False, ``key`` is the plain start and searches go lane by lane;
- ``duration_ps`` (N), ``busy_before`` (N+1, the running sum of durations: the busy time of
  any slice of a lane is one subtraction), ``name_id`` (N, into ``names``);
- ``ref_row`` (N): the event's row in the Profile's plane of its track, for the details
  pane (the step's index for the Steps track, whose plane is ``STEPS_PLANE``); and back,
  ``plane_offset`` (planes+1) and ``position`` (every plane event's row here, -1 for the
  events of a plane the timeline does not show: ``layout.HIDDEN_PLANES``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from stepscope.errors import ProfileFormatError
from stepscope.trace.model import Profile
from stepscope.viewer.layout import (
    HIDDEN_PLANES,
    assign_lanes,
    display_depths,
    plane_order,
)
from stepscope.viewer.storage import load_index, save_index

STEPS_PLANE = -1  # the synthetic Steps track's plane; its events' ref_row is the step index
STEPS_SECTION = "Steps"
STEPS_TRACK = "Steps"
# Past this total of lane spans, keys would overflow int64 and searches go lane by lane.
KEY_LIMIT = 2**62
# Rows and positions are int32 (half the pages of int64 at 10M events): the most events an
# index holds. Far past what the readers admit by default (trace.limits' 20M events).
MAX_EVENTS = 2**31 - 1

Progress = Callable[[int], None]


@dataclass(frozen=True)
class Track:
    """One timeline row group of the viewer: a thread, a stream, a line like ``XLA Ops``."""

    id: int
    section: str  # the plane's name, or "Steps"
    name: str  # the line's display name
    plane: int  # profile plane index, STEPS_PLANE for the Steps track
    line: int  # line index in the plane, -1 for the Steps track
    event_count: int
    max_depth: int  # deepest lane, 0-based
    first_lane: int

    @property
    def lanes(self) -> range:
        return range(self.first_lane, self.first_lane + self.max_depth + 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "section": self.section,
            "name": self.name,
            "plane": self.plane,
            "line": self.line,
            "event_count": self.event_count,
            "max_depth": self.max_depth,
            "first_lane": self.first_lane,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Track:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


@dataclass(eq=False)
class TraceIndex:
    """A profile's events laid out for the trace viewer; immutable once built.

    ``cache`` holds derived views (name-filtered event subsets) made by queries; it is
    not saved.
    """

    sections: list[str]
    tracks: list[Track]
    names: list[str]
    arrays: dict[str, np.ndarray]
    keyed: bool
    start_ns: int
    span_ps: int
    source: str
    host: str
    plane_names: list[str]
    # name id -> the event name the label shortens (XLA's whole HLO text beside `copy-done.2`;
    # the first one met where ops of several programs share a label): hovered in the range
    # summary. Only labels that differ from their name are here.
    full_names: dict[int, str] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getattr__(self, name: str) -> np.ndarray:
        arrays: dict[str, np.ndarray] | None = self.__dict__.get("arrays")
        if arrays is not None and name in arrays:
            return arrays[name]
        raise AttributeError(name)

    @property
    def event_count(self) -> int:
        return len(self.arrays["key"])

    @property
    def lane_count(self) -> int:
        return len(self.arrays["lane_track"])

    def track_lanes(self, track_ids: list[int] | None) -> np.ndarray:
        """The lanes of the given tracks (all lanes for None), ascending; ValueError for an
        unknown track id."""
        if track_ids is None:
            return np.arange(self.lane_count, dtype=np.int64)
        lanes: list[range] = []
        for track_id in track_ids:
            if isinstance(track_id, bool) or not isinstance(track_id, (int, np.integer)):
                raise ValueError(f"track ids are integers, not {track_id!r}")
            if not 0 <= track_id < len(self.tracks):
                raise ValueError(f"no track {track_id} (the profile has tracks 0..{len(self.tracks) - 1})")
            lanes.append(self.tracks[int(track_id)].lanes)
        if not lanes:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate([np.arange(r.start, r.stop, dtype=np.int64) for r in lanes]))

    def lane_of(self, ids: np.ndarray) -> np.ndarray:
        """The lane of index rows ``ids``."""
        return np.searchsorted(self.lane_offset, ids, "right") - 1

    def starts(self, ids: np.ndarray, lanes: np.ndarray | None = None) -> np.ndarray:
        """Start (ps from the profile start) of index rows ``ids``."""
        ids = np.asarray(ids, dtype=np.int64)
        lanes = self.lane_of(ids) if lanes is None else lanes
        starts: np.ndarray = self.key[ids] - self.lane_shift[lanes]
        return starts

    def ref(self, event_id: int) -> tuple[int, int]:
        """(plane index, row) in the Profile of index row ``event_id``."""
        if not 0 <= event_id < self.event_count:
            raise ValueError(f"no event {event_id} in this index ({self.event_count} events)")
        return int(self.ref_planes(np.asarray([event_id]))[0]), int(self.ref_row[event_id])

    def ref_planes(self, ids: np.ndarray) -> np.ndarray:
        """The Profile plane of index rows ``ids`` (``STEPS_PLANE`` for the Steps track's):
        their tracks' planes, which the index does not repeat per row."""
        track_plane = np.asarray([track.plane for track in self.tracks], dtype=np.int64)
        planes: np.ndarray = track_plane[self.lane_track[self.lane_of(ids)]]
        return planes

    def id_of(self, plane: int, row: int) -> int | None:
        """Index row of a Profile event (None for an event the index does not hold)."""
        if plane == STEPS_PLANE:
            track = self.tracks[0] if self.tracks and self.tracks[0].plane == STEPS_PLANE else None
            if track is None or not 0 <= row < track.event_count:
                return None
            lanes = track.lanes
            ids = np.arange(int(self.lane_offset[lanes.start]), int(self.lane_offset[lanes.stop]))
            found = ids[self.ref_row[ids] == row]
            return int(found[0]) if len(found) else None
        if not 0 <= plane < len(self.plane_offset) - 1:
            return None
        lo, hi = int(self.plane_offset[plane]), int(self.plane_offset[plane + 1])
        if not 0 <= row < hi - lo:
            return None
        found = int(self.position[lo + row])
        return found if found >= 0 else None

    def event(self, event_id: int) -> dict[str, Any]:
        """What the index knows about one event: where it is drawn, when, its name."""
        plane, row = self.ref(event_id)
        lane = int(self.lane_of(np.asarray([event_id]))[0])
        start = int(self.starts(np.asarray([event_id]), np.asarray([lane]))[0])
        return {
            "id": int(event_id),
            "track": int(self.lane_track[lane]),
            "depth": int(self.lane_depth[lane]),
            "start_ps": start,
            "duration_ps": int(self.duration_ps[event_id]),
            "name": self.names[int(self.name_id[event_id])],
            "ref": [plane, row],
        }

    def matches(self, profile: Profile) -> bool:
        """Whether ``profile`` is the one this index was built from (same planes, same
        event counts, same start): refs into it are then valid."""
        sizes = np.diff(self.plane_offset).tolist()
        return (
            [plane.name for plane in profile.planes] == self.plane_names
            and [len(plane.events) for plane in profile.planes] == sizes
            and profile.start_ns == self.start_ns
        )

    def validate(self) -> None:
        """Checks the invariants the queries rely on; raises ValueError naming the first
        broken one (tests call it; a damaged cache folder fails here, not with a wrong
        picture):

        - tracks own consecutive lanes, lanes own consecutive events, in order;
        - within a lane events are sorted by start and do not overlap;
        - keys are sorted across the whole index (one search serves every lane);
        - busy_before is the running sum of durations;
        - every event of a shown plane is in the index once, no event of a hidden one
          (``layout.HIDDEN_PLANES``), and ``position`` inverts the refs.
        """
        lane_offset, lane_track = np.asarray(self.lane_offset), np.asarray(self.lane_track)
        if lane_offset[0] != 0 or lane_offset[-1] != self.event_count or np.any(np.diff(lane_offset) < 0):
            raise ValueError("lane offsets do not cover the events in order")
        expected_track = np.repeat([t.id for t in self.tracks], [t.max_depth + 1 for t in self.tracks])
        if not np.array_equal(lane_track, expected_track):
            raise ValueError("tracks do not own consecutive lanes")
        lane = self.lane_of(np.arange(self.event_count))
        start = self.starts(np.arange(self.event_count), lane)
        end = start + self.duration_ps
        same_lane = lane[1:] == lane[:-1]
        if np.any(same_lane & (start[1:] < end[:-1])):
            raise ValueError("events of one lane overlap or are out of order")
        if self.keyed and np.any(np.diff(self.key) < 0):
            raise ValueError("keys are not sorted across lanes")
        if self.busy_before[0] != 0 or np.any(np.diff(self.busy_before) != self.duration_ps):
            raise ValueError("busy_before is not the running sum of durations")
        ref_plane = self.ref_planes(np.arange(self.event_count))
        real = ref_plane >= 0
        plane_offset = np.asarray(self.plane_offset)
        flat = plane_offset[ref_plane[real]] + self.ref_row[real]
        shown = [np.arange(plane_offset[p], plane_offset[p + 1]) for p, name in enumerate(self.plane_names) if name not in HIDDEN_PLANES]
        placed = np.concatenate(shown) if shown else np.zeros(0, dtype=np.int64)
        if not np.array_equal(np.sort(flat), placed) or not np.array_equal(np.flatnonzero(np.asarray(self.position) >= 0), placed):
            raise ValueError("the shown planes' events and index rows do not correspond one to one")
        if not np.array_equal(self.position[flat], np.flatnonzero(real)):
            raise ValueError("profile events and index rows do not correspond one to one")

    def tracks_json(self) -> dict[str, Any]:
        """The page's first request: sections, tracks and the profile's extent."""
        return {
            "source": self.source,
            "host": self.host,
            "start_ns": self.start_ns,
            "span_ps": self.span_ps,
            "event_count": self.event_count,
            "sections": self.sections,
            "tracks": [track.to_json() for track in self.tracks],
        }

    def save(self, folder: str | os.PathLike[str]) -> None:
        manifest = {
            "keyed": self.keyed,
            "start_ns": self.start_ns,
            "span_ps": self.span_ps,
            "source": self.source,
            "host": self.host,
            "plane_names": self.plane_names,
            "full_names": {str(name_id): text for name_id, text in self.full_names.items()},
            "sections": self.sections,
            "tracks": [track.to_json() for track in self.tracks],
            "event_count": self.event_count,
            "lane_count": self.lane_count,
        }
        save_index(folder, manifest, self.arrays, self.names)

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> TraceIndex:
        manifest, arrays, names = load_index(folder)
        return cls(
            sections=manifest["sections"],
            tracks=[Track.from_json(track) for track in manifest["tracks"]],
            names=names,
            arrays=arrays,
            keyed=manifest["keyed"],
            start_ns=manifest["start_ns"],
            span_ps=manifest["span_ps"],
            source=manifest["source"],
            host=manifest["host"],
            plane_names=manifest["plane_names"],
            full_names={int(name_id): text for name_id, text in manifest["full_names"].items()},
        )


# --- building ------------------------------------------------------------------------------


@dataclass
class _Block:
    """One plane's events (or the steps) as consecutive rows of the index, before they
    are written: row ``i`` of the block is the source's row ``order[i]``, ordered by
    (track, lane, start)."""

    plane: int  # profile plane index, STEPS_PLANE for the steps
    order: np.ndarray
    start: np.ndarray  # the source's columns, in its own row order
    duration: np.ndarray
    metadata_id: np.ndarray  # per source row, into ``names``
    names: np.ndarray  # the source's name ids -> the index's
    tracks: list[Track]  # id and first_lane set when placed
    lane_counts: list[np.ndarray]  # per track: events per lane


class _Names:
    """One string table for the whole index."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.full: dict[int, str] = {}

    def table(self, texts: list[str]) -> np.ndarray:
        ids = self.ids
        return np.asarray([ids.setdefault(text, len(ids)) for text in texts], dtype=np.int32)

    def labelled(self, labels: list[str], names: list[str]) -> np.ndarray:
        """The ids of a plane's labels (``table``), each label that shortens its name
        remembered with the first name it shortens (``TraceIndex.full_names``)."""
        ids = self.table(labels)
        for name_id, label, name in zip(ids.tolist(), labels, names):
            if label != name:
                self.full.setdefault(name_id, name)
        return ids

    def names(self) -> list[str]:
        return list(self.ids)


def _steps_block(profile: Profile, table: _Names) -> _Block | None:
    from stepscope.analysis.steps.steps import find_steps

    steps = find_steps(profile)
    if steps.inferred or not len(steps):
        return None
    start = steps.start_ps.astype(np.int64)
    duration = (steps.end_ps - steps.start_ps).astype(np.int64)
    by_start = np.lexsort((-duration, start))
    depth = assign_lanes(start[by_start], start[by_start] + duration[by_start], np.full(len(start), -1, dtype=np.int64))
    lane_sort = np.argsort(depth, kind="stable")
    max_depth = int(depth.max())
    names = np.zeros(len(start), dtype=np.int32)
    names[by_start] = table.table([f"Step {int(number)}" for number in steps.number[by_start].tolist()])
    track = Track(0, STEPS_SECTION, STEPS_TRACK, STEPS_PLANE, -1, len(start), max_depth, 0)
    counts = np.bincount(depth, minlength=max_depth + 1)
    return _Block(STEPS_PLANE, by_start[lane_sort], start, duration, np.arange(len(start)), names, [track], [counts])


def _plane_block(profile: Profile, plane_index: int, table: _Names) -> _Block | None:
    """The plane's tracks (lines with events), its rows ordered by (line, lane, start)."""
    plane = profile.planes[plane_index]
    events = plane.events
    if not len(events):
        return None
    depth, order, key = display_depths(plane)
    depth_span = int(depth.max()) + 1  # the key's line multiplier (layout.lane_order)
    offsets = plane.line_offsets
    tracks: list[Track] = []
    lane_counts: list[np.ndarray] = []
    for line in np.flatnonzero(np.diff(offsets) > 0).tolist():
        lo, hi = int(offsets[line]), int(offsets[line + 1])
        # lines are contiguous in the plane and in `order`; within a line keys are sorted
        first = int(line) * depth_span
        lane_keys = key[lo:hi]
        max_depth = int(lane_keys[-1]) - first
        counts = np.diff(np.searchsorted(lane_keys, first + np.arange(max_depth + 2)))
        tracks.append(Track(0, plane.name, plane.lines[line].label, plane_index, line, hi - lo, max_depth, 0))
        lane_counts.append(counts)
    return _Block(
        plane_index,
        order,
        events.start_ps,
        events.duration_ps,
        events.metadata_id,
        table.labelled(plane.metadata.labels, plane.metadata.names),
        tracks,
        lane_counts,
    )


def build_index(profile: Profile, progress: Progress | None = None) -> TraceIndex:
    """Lays out every event of ``profile`` for the viewer (see the module docstring).

    Vectorised per plane: each column of a plane is gathered once, in index order,
    straight into the index's array (``np.take(..., out=)``), as each lane's shift is
    added in place, because at 10M events the fresh pages of per-line copies and
    per-row temporaries cost more than the arithmetic. The only per-event Python work
    is the re-layout of lines whose events overlap at one depth. ``progress`` is called
    with the number of events placed.
    """
    table = _Names()
    blocks = [_steps_block(profile, table)] + [_plane_block(profile, plane_index, table) for plane_index in plane_order(profile)]
    placed = [block for block in blocks if block is not None]
    total = sum(len(block.order) for block in placed)
    if total > MAX_EVENTS:
        raise ProfileFormatError(profile.source, f"{total:,} events to show, more than the trace viewer holds ({MAX_EVENTS:,})")
    lane_counts = np.concatenate([counts for block in placed for counts in block.lane_counts] or [np.zeros(0, dtype=np.int64)])
    lane_total = len(lane_counts)
    arrays: dict[str, np.ndarray] = {
        "lane_track": np.zeros(lane_total, dtype=np.int32),
        "lane_depth": np.zeros(lane_total, dtype=np.int32),
        "lane_offset": np.concatenate(([0], np.cumsum(lane_counts))).astype(np.int64),
        "key": np.empty(total, dtype=np.int64),
        "duration_ps": np.empty(total, dtype=np.int64),
        "busy_before": np.empty(total + 1, dtype=np.int64),
        "name_id": np.empty(total, dtype=np.int32),
        "ref_row": np.empty(total, dtype=np.int32),
    }
    plane_sizes = [len(plane.events) for plane in profile.planes]
    plane_offset = np.concatenate(([0], np.cumsum(plane_sizes))).astype(np.int64)
    position = np.full(int(plane_offset[-1]), -1, dtype=np.int32)

    tracks: list[Track] = []
    sections: list[str] = []
    lane = 0
    row = 0
    for block in placed:
        for track in block.tracks:
            track = replace(track, id=len(tracks), first_lane=lane)
            tracks.append(track)
            if track.section not in sections:
                sections.append(track.section)
            arrays["lane_track"][track.lanes.start : track.lanes.stop] = track.id
            arrays["lane_depth"][track.lanes.start : track.lanes.stop] = np.arange(track.max_depth + 1)
            lane = track.lanes.stop
        count = len(block.order)
        rows = slice(row, row + count)
        # (mode "clip": the rows are in range, and numpy buffers the output of a checked take)
        np.take(block.start, block.order, out=arrays["key"][rows], mode="clip")  # shifted below, once all lanes are known
        np.take(block.duration, block.order, out=arrays["duration_ps"][rows], mode="clip")
        np.take(block.names, np.take(block.metadata_id, block.order), out=arrays["name_id"][rows], mode="clip")
        arrays["ref_row"][rows] = block.order
        if block.plane != STEPS_PLANE:
            position[plane_offset[block.plane] : plane_offset[block.plane + 1]][block.order] = np.arange(row, row + count, dtype=np.int32)
        row += count
        if progress is not None:
            progress(row)

    # Keys: each lane's starts moved into a band of its own, bands in lane order.
    key, lane_offset = arrays["key"], arrays["lane_offset"]
    nonempty = lane_counts > 0
    lane_min = np.zeros(lane_total, dtype=np.int64)
    lane_max = np.zeros(lane_total, dtype=np.int64)
    lane_min[nonempty] = key[lane_offset[:-1][nonempty]]
    lane_max[nonempty] = key[lane_offset[1:][nonempty] - 1]
    extents = lane_max - lane_min + 2
    base = np.concatenate(([0], np.cumsum(extents)[:-1])) if lane_total else np.zeros(0, dtype=np.int64)
    keyed = bool(lane_total == 0 or int(extents.astype(object).sum()) < KEY_LIMIT)
    lane_shift = (base - lane_min) if keyed else np.zeros(lane_total, dtype=np.int64)
    if keyed:
        bounds = lane_offset.tolist()
        for lane_index, shift in enumerate(lane_shift.tolist()):
            if shift and bounds[lane_index] < bounds[lane_index + 1]:
                key[bounds[lane_index] : bounds[lane_index + 1]] += shift
    arrays.update(lane_shift=lane_shift, lane_min=lane_min, lane_max=lane_max)
    arrays["busy_before"][0] = 0
    np.cumsum(arrays["duration_ps"], out=arrays["busy_before"][1:])
    arrays["plane_offset"] = plane_offset
    arrays["position"] = position
    return TraceIndex(
        sections=sections,
        tracks=tracks,
        names=table.names(),
        arrays=arrays,
        keyed=keyed,
        start_ns=profile.start_ns,
        span_ps=profile.span_ps,
        source=profile.source,
        host=profile.host,
        plane_names=[plane.name for plane in profile.planes],
        full_names=table.full,
    )
