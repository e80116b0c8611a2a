"""The trace viewer's queries: a time range at a pixel width, search by name, details.

``query`` answers the page's one hot request (pan, zoom, resize) in the binary form of
:mod:`encoding`; it validates its arguments and raises ``ValueError`` with a message fit
for an HTTP 400. A name filter keeps only events whose name contains the text (case-
insensitive) before merging, so a search shows the matches alone; the filtered subset is
cached on the index, so panning with a filter costs what panning without one does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.viewer.details import details, flows_for, summarize
from stepscope.viewer.encoding import RawJson, allocate, decode
from stepscope.viewer.index import TraceIndex
from stepscope.viewer.lod import WIRE_COLUMNS, LaneEvents, Lod, Window, gather, level_of_detail
from stepscope.viewer.selection import MAX_WIDTH_PX, as_integer, events_view, window

__all__ = ["MAX_WIDTH_PX", "Match", "decode", "details", "events_view", "find", "flows_for", "query", "summarize", "window"]


def query(
    index: TraceIndex,
    start_ps: Any,
    end_ps: Any,
    width_px: Any,
    tracks: list[int] | None = None,
    name_filter: str | None = None,
) -> memoryview:
    """The events of ``[start_ps, end_ps)`` for ``width_px`` pixels, encoded (see
    :mod:`stepscope.viewer.encoding` for the layout and :mod:`stepscope.viewer.lod` for
    what is merged), as a read-only view of the answer's buffer. ``tracks``: track ids to
    answer for (all when None)."""
    frame = window(start_ps, end_ps, width_px)
    lanes = index.track_lanes(tracks)
    view = events_view(index, name_filter)
    with level_of_detail(view, lanes, frame, np.asarray(index.name_id)) as lod:
        return encode_lod(index, frame, lod, name_filter)


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """np.unique of an already sorted array, in one pass."""
    if not len(values):
        return values
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def encode_lod(index: TraceIndex, frame: Window, lod: Lod, name_filter: str | None) -> memoryview:
    distinct_names = np.flatnonzero(np.bincount(lod.event_name)) if len(lod.event_name) else lod.event_name
    lane_tracks = np.asarray(index.lane_track)[lod.lanes]
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
            "events": len(lod.event_id),
            "runs": len(lod.run_start),
            "overlapping": lod.overlapping,
        },
        "tracks": _tracks_json(index, _distinct_sorted(np.sort(lane_tracks)).tolist()),
        "names": {str(name): index.names[name] for name in distinct_names.tolist()},
    }
    columns = {
        "lane_track": lane_tracks,
        "lane_depth": np.asarray(index.lane_depth)[lod.lanes],
        "lane_events": np.concatenate(([0], np.cumsum(lod.lane_events))),
        "lane_runs": np.concatenate(([0], np.cumsum(lod.lane_runs))),
        **{name: getattr(lod, name) for name in WIRE_COLUMNS},
    }
    buffer, views = allocate(header, {name: len(column) for name, column in columns.items()})
    for name, view in views.items():
        view[:] = columns[name]  # a copy: the Lod's columns are scratch (in the wire types already)
    # No copy into a bytes object: for a 12 MB answer that cost more than the query.
    return memoryview(buffer).toreadonly()


def _tracks_json(index: TraceIndex, track_ids: list[int]) -> RawJson:
    """The header's track list: each track's JSON text is made once per index."""
    texts = index.cache.get("track_json")
    if texts is None:
        texts = index.cache["track_json"] = [json.dumps(track.to_json(), separators=(",", ":"), ensure_ascii=False) for track in index.tracks]
    return RawJson("[" + ",".join([texts[track] for track in track_ids]) + "]")


# --- search by name --------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """One event found by :func:`find`; ``ordinal`` is its place among the ``total``
    matches in time order (ties by track order)."""

    id: int
    track: int
    depth: int
    start_ps: int
    duration_ps: int
    name: str
    ref: tuple[int, int]
    ordinal: int
    total: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "track": self.track,
            "depth": self.depth,
            "start_ps": self.start_ps,
            "duration_ps": self.duration_ps,
            "name": self.name,
            "ref": list(self.ref),
            "ordinal": self.ordinal,
            "total": self.total,
        }


def _neighbour(view: LaneEvents, start: int, cursor_id: int | None, before: bool) -> tuple[int, int | None, int]:
    """The match next after (``before``: last before) the cursor ``(start, cursor_id)`` in
    (start, id) order, as (its ordinal among all matches, its position in ``view``, its
    lane), the position None when there is none. ``cursor_id`` None stands for the cursor's whole
    instant: after it, or before it.

    Per lane, not over one time-sorted list of the matches: a lane's matches are sorted
    by start already, ids ascending among equal starts, so each lane's split point is a
    binary search, and the answer is the nearest of the lanes' candidates. Sorting the
    matches instead (once per filter) took 120-400 ms for the 2.9M launches of the
    10M-event profile; this is one search per lane, every call.
    """
    lanes = np.flatnonzero(np.diff(view.lane_offset) > 0)
    lo, hi = view.lane_offset[lanes], view.lane_offset[lanes + 1]
    at = view.search(lanes, np.full(len(lanes), start, dtype=np.int64))
    if cursor_id is None:
        split = at if before else view.search(lanes, np.full(len(lanes), start + 1, dtype=np.int64))
    else:
        past = view.search(lanes, np.full(len(lanes), start + 1, dtype=np.int64))
        positions, owner = gather(at, past, np.arange(len(lanes)))
        ids = view.index_ids(positions)
        earlier = ids < cursor_id if before else ids <= cursor_id
        split = at + np.bincount(owner[earlier], minlength=len(lanes))
    ordinal = int((split - lo).sum())
    if before:
        ordinal -= 1
        keep = split > lo
        candidates = split[keep] - 1
    else:
        keep = split < hi
        candidates = split[keep]
    if not len(candidates):
        return ordinal, None, -1
    owners = lanes[keep]
    # Nearest by (start, id): the candidates' ids are distinct.
    best = np.lexsort((view.index_ids(candidates), view.starts(candidates, owners)))
    pick = best[-1] if before else best[0]
    return ordinal, int(candidates[pick]), int(owners[pick])


def find(
    index: TraceIndex,
    text: str,
    after_ps: int | None = None,
    before: bool = False,
    after_id: int | None = None,
) -> Match | None:
    """The next (``before``: previous) event whose name contains ``text`` (case-insensitive).

    The cursor is ``after_id`` (the id of the match shown now: steps through events that
    start at the same time one by one), else ``after_ps`` (the next match starts strictly
    after it, the previous strictly before), else none (the first, or the last, match).
    None when there is no such event.
    """
    if not text:
        raise ValueError("search text is empty")
    view = events_view(index, text)
    if after_id is not None:
        after_id = as_integer("after_id", after_id)
        if not 0 <= after_id < index.event_count:
            raise ValueError(f"no event {after_id} in this index")
        ordinal, position, lane = _neighbour(view, int(index.starts(np.asarray([after_id]))[0]), after_id, before)
    elif after_ps is not None:
        ordinal, position, lane = _neighbour(view, as_integer("after_ps", after_ps), None, before)
    else:  # before every start, or after every start
        ordinal, position, lane = _neighbour(view, index.span_ps + 1 if before else -1, None, before)
    if position is None:
        return None
    event_id = int(view.index_ids(np.asarray([position]))[0])
    return Match(
        id=event_id,
        track=int(index.lane_track[lane]),
        depth=int(index.lane_depth[lane]),
        start_ps=int(view.starts(np.asarray([position]), np.asarray([lane]))[0]),
        duration_ps=int(index.duration_ps[event_id]),
        name=index.names[int(index.name_id[event_id])],
        ref=index.ref(event_id),
        ordinal=ordinal,
        total=len(view),
    )
