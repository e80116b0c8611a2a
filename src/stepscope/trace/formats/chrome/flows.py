"""Binding Chrome-format flow events (s / t / f) to slices and pairing them into arrows.

The Trace Event Format binds a flow point to the slice on its thread that encloses its
timestamp; a flow end without ``"bp": "e"`` binds to the next slice that starts at or
after it. Points are resolved per line with sorted searches and a walk up the ``parent``
column, never by scanning events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.trace.formats.chrome.columns import first_seen, int64_or
from stepscope.trace.model import EventTable, FlowTable, Plane, distinct_indices


@dataclass(frozen=True)
class FlowPoints:
    """Flow events already placed on lines. Their keys (category, id) are codes into the
    trace's tables of distinct values, as the columns hold them: no Python value per point
    (listing and re-coding them was a tenth of loading the V100 ns trace)."""

    starts: np.ndarray  # bool: phase 's'
    steps: np.ndarray  # bool: phase 't' (the rest are ends, 'f')
    category: np.ndarray  # codes into categories
    categories: list[str]  # distinct category texts
    flow_key: np.ndarray  # codes into flow_keys
    flow_keys: list[Any]  # distinct flow ids (canonical: 7, 7.0 and "7" are one)
    plane: np.ndarray  # plane index, -1 where the thread has no line
    line: np.ndarray
    time_ps: np.ndarray  # float: NaN where the timestamp is missing
    binds_enclosing: np.ndarray  # bool


def bind_points(plane: Plane, lines: np.ndarray, times: np.ndarray, enclosing: np.ndarray, flow_ids: np.ndarray | None = None) -> np.ndarray:
    """Event rows for points (line index, time in ps): the innermost enclosing slice where
    ``enclosing``, else the first slice starting at or after the time; -1 where none.

    Where ``flow_ids`` is given and an enclosing slice further out carries that id as its
    correlation id, that slice wins: Kineto numbers launch flows by correlation id, and
    with microsecond timestamps two zero-length runtime calls can share one instant.
    """
    events = plane.events
    offsets = plane.line_offsets
    result = np.full(len(times), -1, dtype=np.int64)
    starts = events.start_ps
    ends = events.end_ps
    for line in distinct_indices(lines):
        mask = lines == line
        line_lo, line_hi = int(offsets[line]), int(offsets[line + 1])
        line_starts = starts[line_lo:line_hi]
        point_times = times[mask]
        last_before = np.searchsorted(line_starts, point_times, "right") - 1 + line_lo
        first_after = np.searchsorted(line_starts, point_times, "left") + line_lo
        candidate = np.where(enclosing[mask], last_before, first_after)
        candidate = np.where((candidate >= line_lo) & (candidate < line_hi), candidate, -1)
        # Walk up from the last slice starting before the point until one encloses it.
        walk = enclosing[mask] & (candidate >= 0)
        while walk.any():
            current = candidate[walk]
            outside = ends[current] < point_times[walk]
            if not outside.any():
                break
            positions = np.flatnonzero(walk)[outside]
            candidate[positions] = events.parent[candidate[positions]]
            walk = walk & (candidate >= 0)
        if flow_ids is not None:
            candidate = _prefer_correlated(events, candidate, flow_ids[mask], point_times)
        result[mask] = candidate
    return result


def _prefer_correlated(events: EventTable, candidate: np.ndarray, flow_ids: np.ndarray, times: np.ndarray) -> np.ndarray:
    chosen = candidate.copy()
    current = candidate.copy()
    searching = (current >= 0) & (events.correlation_id[np.maximum(current, 0)] != flow_ids)
    while searching.any():
        current[searching] = events.parent[current[searching]]
        searching &= current >= 0
        hit = searching & (events.correlation_id[np.maximum(current, 0)] == flow_ids)
        chosen[hit] = current[hit]
        searching &= ~hit
    return chosen


def build_flows(points: FlowPoints, planes: list[Plane]) -> tuple[FlowTable, int]:
    """Arrows from each flow's start through its steps to its ends.

    Returns the table and the number of points that fell on no slice. A flow with ends but
    no start draws nothing and is dropped silently (Kineto writes such ends for runtime
    calls that launched no device work).
    """
    count = len(points.plane)
    bound = np.full(count, -1, dtype=np.int64)
    valid = (points.plane >= 0) & np.isfinite(points.time_ps) & (np.abs(points.time_ps) < 2.0**62)
    # Integer flow ids, for the correlation tie-break; a string id matches no correlation.
    no_match = np.iinfo(np.int64).min
    ids = int64_or(points.flow_keys, no_match)[points.flow_key] if points.flow_keys else np.full(count, no_match)
    for plane_index in distinct_indices(points.plane[valid]):
        mask = valid & (points.plane == plane_index)
        bound[mask] = bind_points(
            planes[plane_index],
            points.line[mask],
            points.time_ps[mask].astype(np.int64),
            points.binds_enclosing[mask],
            ids[mask],
        )
    unbound = int(np.count_nonzero(bound < 0))

    # Order the bound points by flow, then time, a start before anything at its time; each
    # step or end then links from the latest start or step before it in the same flow.
    # Keys coded afresh over the bound points, in the order they first appear.
    kept = np.flatnonzero(bound >= 0)
    category_codes, category_used = first_seen(points.category[kept])
    key_codes, key_used = first_seen(points.flow_key[kept])
    categories = [points.categories[c] for c in category_used.tolist()]
    flow_keys = [points.flow_keys[k] for k in key_used.tolist()]
    group = category_codes * max(len(flow_keys), 1) + key_codes
    starts = points.starts[kept]
    order = np.lexsort((~starts, points.time_ps[kept], group))
    kept, group, starts, key_codes = kept[order], group[order], starts[order], key_codes[order]
    anchor = np.where(starts | points.steps[kept], np.arange(len(kept)), -1)
    previous = np.concatenate(([-1], np.maximum.accumulate(anchor)[:-1])) if len(kept) else anchor
    linked = ~starts & (previous >= 0)
    linked &= group[np.maximum(previous, 0)] == group
    src, dst = kept[previous[linked]], kept[linked]
    distinct = (points.plane[src] != points.plane[dst]) | (bound[src] != bound[dst])
    src, dst = src[distinct], dst[distinct]
    # Integer ids are kept; other ids (strings) get negative numbers of their own.
    numeric = int64_or(flow_keys, -1 - np.arange(len(flow_keys), dtype=np.int64))
    table = FlowTable(
        flow_id=numeric[key_codes[linked][distinct]] if len(flow_keys) else np.zeros(0, dtype=np.int64),
        category=category_codes[order][linked][distinct].astype(np.int32),
        src_plane=points.plane[src].astype(np.int32),
        src_event=bound[src],
        dst_plane=points.plane[dst].astype(np.int32),
        dst_event=bound[dst],
        categories=categories,
    )
    return table, unbound
