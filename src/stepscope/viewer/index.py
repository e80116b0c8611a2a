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
- ``ref_plane``/``ref_row`` (N): the event's plane index and row in the Profile, for the
  details pane (``STEPS_PLANE`` and the step's index for the Steps track); and back,
  ``plane_offset`` (planes+1) and ``position`` (every plane event's row here, -1 for the
  events of a plane the timeline does not show: ``layout.HIDDEN_PLANES``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stepscope.trace.model import Profile
from stepscope.viewer.layout import (
    HIDDEN_PLANES,
    assign_lanes,
    display_depths,
    lane_order,
    plane_order,
)
from stepscope.viewer.storage import load_index, save_index

STEPS_PLANE = -1  # ref_plane of the synthetic Steps track's events; ref_row is the step index
STEPS_SECTION = "Steps"
STEPS_TRACK = "Steps"
# Past this total of lane spans, keys would overflow int64 and searches go lane by lane.
KEY_LIMIT = 2**62

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
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getattr__(self, name: str) -> np.ndarray:
        arrays = self.__dict__.get("arrays")
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
        return self.key[ids] - self.lane_shift[lanes]

    def ref(self, event_id: int) -> tuple[int, int]:
        """(plane index, row) in the Profile of index row ``event_id``."""
        if not 0 <= event_id < self.event_count:
            raise ValueError(f"no event {event_id} in this index ({self.event_count} events)")
        return int(self.ref_plane[event_id]), int(self.ref_row[event_id])

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
        real = np.asarray(self.ref_plane) >= 0
        plane_offset = np.asarray(self.plane_offset)
        flat = plane_offset[self.ref_plane[real]] + self.ref_row[real]
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

    def save(self, folder) -> None:
        manifest = {
            "keyed": self.keyed,
            "start_ns": self.start_ns,
            "span_ps": self.span_ps,
            "source": self.source,
            "host": self.host,
            "plane_names": self.plane_names,
            "sections": self.sections,
            "tracks": [track.to_json() for track in self.tracks],
            "event_count": self.event_count,
            "lane_count": self.lane_count,
        }
        save_index(folder, manifest, self.arrays, self.names)

    @classmethod
    def load(cls, folder) -> TraceIndex:
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
        )


# --- building ------------------------------------------------------------------------------


@dataclass
class _LaneSet:
    """One track's events ordered by (lane, start), before they are placed in the index."""

    track: Track
    start: np.ndarray
    duration: np.ndarray
    name_id: np.ndarray
    ref_plane: int
    ref_row: np.ndarray
    lane_counts: np.ndarray  # events per lane of the track


class _Names:
    """One string table for the whole index."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def table(self, texts: list[str]) -> np.ndarray:
        ids = self.ids
        return np.asarray([ids.setdefault(text, len(ids)) for text in texts], dtype=np.int32)

    def names(self) -> list[str]:
        return list(self.ids)


def _steps_laneset(profile: Profile, table: _Names) -> _LaneSet | None:
    from stepscope.analysis.steps import find_steps

    steps = find_steps(profile)
    if steps.inferred or not len(steps):
        return None
    order = np.lexsort((-(steps.end_ps - steps.start_ps), steps.start_ps))
    start = steps.start_ps[order].astype(np.int64)
    duration = (steps.end_ps[order] - steps.start_ps[order]).astype(np.int64)
    depth = assign_lanes(start, start + duration, np.full(len(start), -1, dtype=np.int64))
    lane_sort = np.argsort(depth, kind="stable")
    max_depth = int(depth.max())
    name_ids = table.table([f"Step {int(number)}" for number in steps.number[order].tolist()])
    track = Track(0, STEPS_SECTION, STEPS_TRACK, STEPS_PLANE, -1, len(start), max_depth, 0)
    return _LaneSet(
        track,
        start[lane_sort],
        duration[lane_sort],
        name_ids[lane_sort],
        STEPS_PLANE,
        order[lane_sort].astype(np.int64),
        np.bincount(depth, minlength=max_depth + 1),
    )


def _plane_lanesets(profile: Profile, plane_index: int, table: _Names) -> list[_LaneSet]:
    """The plane's tracks (lines with events), each with its rows ordered by (lane, start)."""
    plane = profile.planes[plane_index]
    events = plane.events
    if not len(events):
        return []
    depth = display_depths(plane)
    order = lane_order(events.line, depth, int(depth.max()))
    plane_names = table.table(plane.metadata.names)
    offsets = plane.line_offsets
    sets: list[_LaneSet] = []
    for line in np.flatnonzero(np.diff(offsets) > 0).tolist():
        lo, hi = int(offsets[line]), int(offsets[line + 1])
        rows = order[lo:hi]  # lines are contiguous in the plane and in `order`
        line_depth = depth[rows]
        max_depth = int(line_depth[-1])  # sorted by depth within the line
        track = Track(0, plane.name, plane.lines[line].label, plane_index, line, hi - lo, max_depth, 0)
        sets.append(
            _LaneSet(
                track,
                events.start_ps[rows],
                events.duration_ps[rows],
                plane_names[events.metadata_id[rows]],
                plane_index,
                rows,
                np.bincount(line_depth, minlength=max_depth + 1),
            )
        )
    return sets


def per_row(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each lane's value over its rows (lane ``i`` holds rows ``offsets[i]:offsets[i + 1]``):
    ``np.repeat(values, np.diff(offsets))``, as the cumulative sum of the changes at the
    first rows of the lanes that have rows. At 10M rows np.repeat with counts took 0.3-0.6 s,
    this 0.01 s (int64 sums wrap, so the values come back exactly)."""
    nonempty = np.flatnonzero(offsets[1:] > offsets[:-1])
    changes = np.zeros(int(offsets[-1]) if len(offsets) else 0, dtype=np.int64)
    changes[offsets[nonempty]] = np.diff(values[nonempty].astype(np.int64), prepend=np.int64(0))
    return np.cumsum(changes, out=changes)


def build_index(profile: Profile, progress: Progress | None = None) -> TraceIndex:
    """Lays out every event of ``profile`` for the viewer (see the module docstring).

    Vectorised per plane; the only per-event Python work is the re-layout of lines whose
    events overlap at one depth. ``progress`` is called with the number of events placed.
    """
    table = _Names()
    lanesets: list[_LaneSet] = []
    steps = _steps_laneset(profile, table)
    if steps is not None:
        lanesets.append(steps)
    for plane_index in plane_order(profile):
        lanesets.extend(_plane_lanesets(profile, plane_index, table))

    total = sum(len(s.start) for s in lanesets)
    lane_total = sum(len(s.lane_counts) for s in lanesets)
    arrays = {
        "lane_track": np.zeros(lane_total, dtype=np.int32),
        "lane_depth": np.zeros(lane_total, dtype=np.int32),
        "lane_offset": np.zeros(lane_total + 1, dtype=np.int64),
        "lane_shift": np.zeros(lane_total, dtype=np.int64),
        "lane_min": np.zeros(lane_total, dtype=np.int64),
        "lane_max": np.zeros(lane_total, dtype=np.int64),
        "key": np.zeros(total, dtype=np.int64),
        "duration_ps": np.zeros(total, dtype=np.int64),
        "busy_before": np.zeros(total + 1, dtype=np.int64),
        "name_id": np.zeros(total, dtype=np.int32),
        "ref_plane": np.zeros(total, dtype=np.int32),
        "ref_row": np.zeros(total, dtype=np.int64),
    }
    plane_sizes = [len(plane.events) for plane in profile.planes]
    plane_offset = np.concatenate(([0], np.cumsum(plane_sizes))).astype(np.int64)
    position = np.full(int(plane_offset[-1]), -1, dtype=np.int64)

    tracks: list[Track] = []
    sections: list[str] = []
    lane = 0
    row = 0
    for laneset in lanesets:
        count = len(laneset.start)
        lanes = len(laneset.lane_counts)
        track = Track(
            len(tracks),
            laneset.track.section,
            laneset.track.name,
            laneset.track.plane,
            laneset.track.line,
            count,
            laneset.track.max_depth,
            lane,
        )
        tracks.append(track)
        if track.section not in sections:
            sections.append(track.section)
        lane_slice = slice(lane, lane + lanes)
        arrays["lane_track"][lane_slice] = track.id
        arrays["lane_depth"][lane_slice] = np.arange(lanes)
        ends = np.cumsum(laneset.lane_counts)
        arrays["lane_offset"][lane + 1 : lane + lanes + 1] = row + ends
        firsts = row + ends - laneset.lane_counts
        nonempty = laneset.lane_counts > 0
        lane_min = np.zeros(lanes, dtype=np.int64)
        lane_max = np.zeros(lanes, dtype=np.int64)
        lane_min[nonempty] = laneset.start[(firsts - row)[nonempty]]
        lane_max[nonempty] = laneset.start[(ends - 1)[nonempty]]
        arrays["lane_min"][lane_slice] = lane_min
        arrays["lane_max"][lane_slice] = lane_max
        rows = slice(row, row + count)
        arrays["duration_ps"][rows] = laneset.duration
        arrays["name_id"][rows] = laneset.name_id
        arrays["ref_plane"][rows] = laneset.ref_plane
        arrays["ref_row"][rows] = laneset.ref_row
        arrays["key"][rows] = laneset.start  # shifted below, once all lanes are known
        if laneset.ref_plane != STEPS_PLANE:
            position[plane_offset[laneset.ref_plane] + laneset.ref_row] = np.arange(row, row + count)
        lane += lanes
        row += count
        if progress is not None:
            progress(row)

    # Keys: each lane's starts moved into a band of its own, bands in lane order.
    extents = arrays["lane_max"] - arrays["lane_min"] + 2
    base = np.concatenate(([0], np.cumsum(extents)[:-1])) if lane_total else np.zeros(0, dtype=np.int64)
    keyed = bool(lane_total == 0 or int(extents.astype(object).sum()) < KEY_LIMIT)
    if keyed:
        arrays["lane_shift"][:] = base - arrays["lane_min"]
        arrays["key"] += per_row(arrays["lane_shift"], arrays["lane_offset"])
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
    )
