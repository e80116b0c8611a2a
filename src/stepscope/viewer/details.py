"""What the details pane shows: one event's facts and stats, its flow arrows, and the
aggregates of a drag-selected range.

Details and flows read the Profile (stats are decoded one event at a time, only when
asked); an index, when given, adds where each event is drawn (its id, track and depth).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from stepscope.jsonform import trace_value
from stepscope.trace import names
from stepscope.trace.model import NO_ID, Profile
from stepscope.trace.stat_messages import readable
from stepscope.viewer.index import STEPS_PLANE
from stepscope.viewer.lod import gather, range_slices
from stepscope.viewer.selection import events_view, window

if TYPE_CHECKING:
    from stepscope.viewer.index import TraceIndex

# At most this many arrows for one event (a kernel launched by one call has one; a
# collective can fan out widely).
MAX_FLOWS = 1000
CORRELATION_FLOW = "correlation"
_ID_COLUMNS = ("correlation_id", "external_id", "group_id", "step_num")


def _ref(profile: Profile, ref: Any) -> tuple[int, int]:
    try:
        plane, row = (int(value) for value in ref)
    except (TypeError, ValueError):
        raise ValueError(f"an event reference is (plane, row), not {ref!r}") from None
    if plane == STEPS_PLANE:
        return plane, row
    if not 0 <= plane < len(profile.planes):
        raise ValueError(f"no plane {plane} in this profile")
    if not 0 <= row < len(profile.planes[plane].events):
        raise ValueError(f"no event {row} on plane {plane} ({profile.planes[plane].name})")
    return plane, row


def _placed(record: dict[str, Any], plane: int, row: int, index: TraceIndex | None) -> dict[str, Any]:
    if index is not None:
        event_id = index.id_of(plane, row)
        if event_id is not None:
            placed = index.event(event_id)
            record.update(id=event_id, track=placed["track"], depth=placed["depth"])
    return record


def _endpoint(profile: Profile, plane: int, row: int, index: TraceIndex | None) -> dict[str, Any]:
    source = profile.planes[plane]
    events = source.events
    record = {
        "ref": [plane, row],
        "name": source.metadata.labels[int(events.metadata_id[row])],
        "plane": source.name,
        "line": source.lines[int(events.line[row])].label,
        "start_ps": int(events.start_ps[row]),
        "duration_ps": int(events.duration_ps[row]),
    }
    return _placed(record, plane, row, index)


def _step_details(profile: Profile, row: int, index: TraceIndex | None) -> dict[str, Any]:
    from stepscope.analysis.steps.steps import find_steps

    steps = find_steps(profile)
    if not 0 <= row < len(steps):
        raise ValueError(f"no step {row} in this profile ({len(steps)} steps)")
    start, end = int(steps.start_ps[row]), int(steps.end_ps[row])
    record = {
        "ref": [STEPS_PLANE, row],
        "name": f"Step {int(steps.number[row])}",
        "plane": "Steps",
        "line": "Steps",
        "start_ps": start,
        "duration_ps": end - start,
        "end_ps": end,
        "start_ns": profile.start_ns + start // 1000,
        "depth": 0,
        "category": "",
        "ids": {"step_num": int(steps.number[row])},
        "stats": [{"name": "source", "value": steps.source}],
        "parent": None,
    }
    return _placed(record, STEPS_PLANE, row, index)


def details(profile: Profile, ref: Any, index: TraceIndex | None = None) -> dict[str, Any]:
    """One event's name, times, line, ids and stats (metadata stats first, then its own),
    as JSON-ready values; ValueError for a reference to no event."""
    plane, row = _ref(profile, ref)
    if plane == STEPS_PLANE:
        return _step_details(profile, row, index)
    source = profile.planes[plane]
    events = source.events
    metadata_id = int(events.metadata_id[row])
    record = _endpoint(profile, plane, row, index)
    start = record["start_ps"]
    parent = int(events.parent[row])
    record.update(
        full_name=source.metadata.names[metadata_id],
        display_name=source.metadata.display_names[metadata_id],
        category=source.metadata.categories[metadata_id],
        end_ps=start + record["duration_ps"],
        start_ns=profile.start_ns + start // 1000,
        depth=int(events.depth[row]),
        ids={column: int(getattr(events, column)[row]) for column in _ID_COLUMNS if int(getattr(events, column)[row]) != NO_ID},
        stats=[{"name": stat.name, "value": trace_value(readable(stat.name, stat.value))} for stat in source.event_stats(row)],
        parent=[plane, parent] if parent != NO_ID else None,
    )
    return record


def flows_for(profile: Profile, ref: Any, index: TraceIndex | None = None) -> list[dict[str, Any]]:
    """The arrows touching one event: ``{"id", "category", "from", "to"}`` with endpoint
    records (ref, name, plane, line, start, duration; id/track/depth with an index).

    From the profile's flow table (Kineto's ac2g/fwdbwd flows, XSpace's ``flow`` stats),
    plus, for an event with a correlation id, the events of the other side (host <-> device)
    that carry the same id and are not already linked: a launch and its kernel, in either
    direction of selection.
    """
    plane, row = _ref(profile, ref)
    if plane == STEPS_PLANE:
        return []
    flows = profile.flows
    touching = np.flatnonzero(((flows.src_plane == plane) & (flows.src_event == row)) | ((flows.dst_plane == plane) & (flows.dst_event == row)))[:MAX_FLOWS]
    arrows = []
    linked: set[tuple[int, int, int, int]] = set()
    for flow in touching.tolist():
        ends = (int(flows.src_plane[flow]), int(flows.src_event[flow]), int(flows.dst_plane[flow]), int(flows.dst_event[flow]))
        linked.add(ends)
        arrows.append(
            {
                "id": int(flows.flow_id[flow]),
                "category": flows.categories[int(flows.category[flow])] if flows.categories else "",
                "from": _endpoint(profile, ends[0], ends[1], index),
                "to": _endpoint(profile, ends[2], ends[3], index),
            }
        )
    correlation = int(profile.planes[plane].events.correlation_id[row])
    if correlation == NO_ID:
        return arrows
    on_device = profile.planes[plane].is_device
    for other_index, other in enumerate(profile.planes):
        if other_index == plane or other.is_device == on_device or not other.name.startswith((names.HOST_PLANE_PREFIX, names.DEVICE_PLANE_PREFIX)):
            continue
        for other_row in np.flatnonzero(other.events.correlation_id == correlation).tolist():
            if len(arrows) >= MAX_FLOWS:
                return arrows
            ends = (other_index, other_row, plane, row) if on_device else (plane, row, other_index, other_row)
            if ends in linked:
                continue
            linked.add(ends)
            arrows.append(
                {
                    "id": correlation,
                    "category": CORRELATION_FLOW,
                    "from": _endpoint(profile, ends[0], ends[1], index),
                    "to": _endpoint(profile, ends[2], ends[3], index),
                }
            )
    return arrows


def summarize(
    index: TraceIndex,
    start_ps: int,
    end_ps: int,
    tracks: list[int] | None = None,
    name_filter: str | None = None,
    limit: int = 100,
) -> dict[str, Any]:
    """Aggregates of a selection: the events overlapping ``[start_ps, end_ps)`` in the
    given tracks, grouped by name: count, total and longest duration, and the time they
    spend inside the selection. Sorted by total duration, ``limit`` names at most; a name
    that shortens the event's own (XLA's ``copy-done.2``) comes with it as ``full_name``."""
    frame = window(start_ps, end_ps, 1)
    view = events_view(index, name_filter)
    lanes, first, stop = range_slices(view, index.track_lanes(tracks), frame.start_ps, frame.end_ps)
    positions, lane = gather(first, stop, lanes)
    total = len(positions)
    if not total:
        return {"start_ps": frame.start_ps, "end_ps": frame.end_ps, "events": 0, "names": []}
    starts = view.starts(positions, lane)
    durations = np.asarray(view.duration[positions])
    inside = np.minimum(starts + durations, frame.end_ps) - np.maximum(starts, frame.start_ps)
    name_ids = np.asarray(index.name_id[view.index_ids(positions)])
    distinct, inverse = np.unique(name_ids, return_inverse=True)
    count = np.bincount(inverse)
    total_ps = np.bincount(inverse, weights=durations)
    inside_ps = np.bincount(inverse, weights=np.maximum(inside, 0))
    longest = np.zeros(len(distinct), dtype=np.int64)
    np.maximum.at(longest, inverse, durations)
    order = np.argsort(-total_ps, kind="stable")[:limit]
    return {
        "start_ps": frame.start_ps,
        "end_ps": frame.end_ps,
        "events": total,
        "names": [
            {
                "name": index.names[int(distinct[i])],
                **({"full_name": index.full_names[int(distinct[i])]} if int(distinct[i]) in index.full_names else {}),
                "count": int(count[i]),
                "total_ps": int(total_ps[i]),
                "selected_ps": int(inside_ps[i]),
                "max_ps": int(longest[i]),
            }
            for i in order.tolist()
        ],
    }
