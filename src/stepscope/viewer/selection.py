"""What a trace viewer request selects: the time window it asks for, validated, and the
index's events it looks at (all of them, or those whose name contains a filter text).

Shared by the queries (:mod:`stepscope.viewer.query`) and the selection summary
(:func:`stepscope.viewer.details.summarize`). Arguments come from HTTP requests: a bad one
raises ``ValueError`` with a message fit for a 400.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stepscope.viewer.index import TraceIndex
from stepscope.viewer.lod import LaneEvents, Window

MAX_WIDTH_PX = 16384
# Times past this (53 days in ps) are refused: no profile is that long, and the pixel
# arithmetic stays far from int64 overflow.
MAX_TIME_PS = 2**62
# Name-filtered views kept per index (each is a copy of the matching events' columns).
FILTER_CACHE_SIZE = 4


def as_integer(name: str, value: Any) -> int:
    """A request argument as an int (an integral float too); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ValueError(f"{name} must be an integer, not {value!r}")


def window(start_ps: Any, end_ps: Any, width_px: Any) -> Window:
    """A validated query window; ValueError says what is wrong with the request."""
    start, end, width = as_integer("start_ps", start_ps), as_integer("end_ps", end_ps), as_integer("width_px", width_px)
    if start < 0 or end < 0:
        raise ValueError(f"times must not be negative (start_ps={start}, end_ps={end})")
    if end < start:
        raise ValueError(f"end_ps ({end}) is before start_ps ({start})")
    if end > MAX_TIME_PS:
        raise ValueError(f"end_ps ({end}) is past the largest time a profile can have ({MAX_TIME_PS} ps)")
    if width < 1:
        raise ValueError(f"width_px must be at least 1 (got {width})")
    return Window(start, end, min(width, MAX_WIDTH_PX))


def events_view(index: TraceIndex, name_filter: str | None = None) -> LaneEvents:
    """The index's events, or those whose name contains ``name_filter`` (case-insensitive)."""
    base = index.cache.get("view")
    if base is None:
        # Plain ndarray views of the memory maps: indexing a np.memmap goes through its
        # Python-level __getitem__, which costs more than the gather itself.
        base = index.cache["view"] = LaneEvents(
            key=np.asarray(index.key),
            duration=np.asarray(index.duration_ps),
            busy_before=np.asarray(index.busy_before),
            lane_offset=np.asarray(index.lane_offset),
            lane_shift=np.asarray(index.lane_shift),
            lane_min=np.asarray(index.lane_min),
            lane_max=np.asarray(index.lane_max),
            keyed=index.keyed,
        )
    if not name_filter:
        return base
    text = name_filter.casefold()
    filters: dict[str, LaneEvents] = index.cache.setdefault("filters", {})
    view = filters.pop(text, None)
    if view is None:
        matching = matching_names(index, text)
        if matching.all():
            view = base
        else:
            view = base.subset(np.flatnonzero(matching[index.name_id]))
    filters[text] = view  # most recently used last
    while len(filters) > FILTER_CACHE_SIZE:
        filters.pop(next(iter(filters)))
    return view


def matching_names(index: TraceIndex, folded_text: str) -> np.ndarray:
    """Which names of the index contain the (case-folded) text."""
    folded = index.cache.get("folded_names")
    if folded is None:
        folded = index.cache["folded_names"] = [name.casefold() for name in index.names]
    return np.fromiter((folded_text in name for name in folded), dtype=bool, count=len(folded))
