"""The trace viewer's queries: a time range at a pixel width, search by name, details.

``query`` answers the page's one hot request (pan, zoom, resize) in the binary form of
:mod:`encoding`; it validates its arguments and raises ``ValueError`` with a message fit
for an HTTP 400. A name filter keeps only events whose name contains the text (case-
insensitive) before merging, so a search shows the matches alone; the filtered subset is
cached on the index, so panning with a filter costs what panning without one does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.viewer.details import details, flows_for, summarize
from stepscope.viewer.encoding import decode, encode
from stepscope.viewer.index import TraceIndex
from stepscope.viewer.lod import LaneEvents, Lod, Window, level_of_detail
from stepscope.viewer.selection import FILTER_CACHE_SIZE, MAX_WIDTH_PX, as_integer, events_view, window

__all__ = ["MAX_WIDTH_PX", "Match", "decode", "details", "events_view", "find", "flows_for", "query", "query_lod", "summarize", "window"]


def query_lod(
    index: TraceIndex,
    start_ps: Any,
    end_ps: Any,
    width_px: Any,
    tracks: list[int] | None = None,
    name_filter: str | None = None,
) -> tuple[Window, LaneEvents, Lod]:
    """``query`` before encoding."""
    frame = window(start_ps, end_ps, width_px)
    lanes = index.track_lanes(tracks)
    view = events_view(index, name_filter)
    return frame, view, level_of_detail(view, lanes, frame)


def query(
    index: TraceIndex,
    start_ps: Any,
    end_ps: Any,
    width_px: Any,
    tracks: list[int] | None = None,
    name_filter: str | None = None,
) -> bytes:
    """The events of ``[start_ps, end_ps)`` for ``width_px`` pixels, encoded (see
    :mod:`stepscope.viewer.encoding` for the layout and :mod:`stepscope.viewer.lod` for
    what is merged). ``tracks``: track ids to answer for (all when None)."""
    frame, view, lod = query_lod(index, start_ps, end_ps, width_px, tracks, name_filter)
    return encode_lod(index, frame, view, lod, name_filter)


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """np.unique of an already sorted array, in one pass."""
    if not len(values):
        return values
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def encode_lod(index: TraceIndex, frame: Window, view: LaneEvents, lod: Lod, name_filter: str | None) -> bytes:
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
    return encode(header, arrays)


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


@dataclass(frozen=True, eq=False)
class _TimeOrder:
    """A filter's matches sorted by (start, id)."""

    start: np.ndarray
    ids: np.ndarray
    lanes: np.ndarray


def _time_order(index: TraceIndex, text: str) -> _TimeOrder:
    orders: dict[str, _TimeOrder] = index.cache.setdefault("find", {})
    found = orders.pop(text, None)
    if found is None:
        view = events_view(index, text)
        lanes = np.repeat(np.arange(len(view.lane_offset) - 1), np.diff(view.lane_offset))
        positions = np.arange(len(view), dtype=np.int64)
        starts = view.starts(positions, lanes)
        order = np.argsort(starts, kind="stable")  # ids ascend with positions: ties by id
        found = _TimeOrder(starts[order], view.index_ids(positions)[order], lanes[order])
    orders[text] = found
    while len(orders) > FILTER_CACHE_SIZE:
        orders.pop(next(iter(orders)))
    return found


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
    order = _time_order(index, text.casefold())
    total = len(order.start)
    if after_id is not None:
        after_id = as_integer("after_id", after_id)
        if not 0 <= after_id < index.event_count:
            raise ValueError(f"no event {after_id} in this index")
        start = int(index.starts(np.asarray([after_id]))[0])
        lo, hi = np.searchsorted(order.start, [start, start + 1], "left")
        at = int(lo + np.searchsorted(order.ids[lo:hi], after_id, "left"))
        hit = at < hi and int(order.ids[at]) == after_id
        ordinal = at - 1 if before else (at + 1 if hit else at)
    elif after_ps is not None:
        after_ps = as_integer("after_ps", after_ps)
        side = "left" if before else "right"
        at = int(np.searchsorted(order.start, after_ps, side))
        ordinal = at - 1 if before else at
    else:
        ordinal = total - 1 if before else 0
    if not 0 <= ordinal < total:
        return None
    event_id = int(order.ids[ordinal])
    lane = int(order.lanes[ordinal])
    return Match(
        id=event_id,
        track=int(index.lane_track[lane]),
        depth=int(index.lane_depth[lane]),
        start_ps=int(order.start[ordinal]),
        duration_ps=int(index.duration_ps[event_id]),
        name=index.names[int(index.name_id[event_id])],
        ref=index.ref(event_id),
        ordinal=ordinal,
        total=total,
    )
