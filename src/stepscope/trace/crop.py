"""A time range of a profile as a profile of its own: what "export this range" writes.

Kept: every event that overlaps ``[start_ps, end_ps)`` (whole, not clipped, so a kernel
that straddles the edge keeps its real duration), with its stats; parents that were cut
away become NO_ID (the event is then top-level in the crop); flows whose both ends are kept.
Times stay relative to the same ``start_ns``, so the crop lines up with the original.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stepscope.trace.model import (
    EVENT_COLUMNS,
    NO_ID,
    EventTable,
    FlowTable,
    Plane,
    Profile,
)


def _crop_plane(plane: Plane, start_ps: int, end_ps: int) -> tuple[Plane, np.ndarray]:
    """The cropped plane and, for each old row, its new row (or NO_ID)."""
    events = plane.events
    ends = events.end_ps
    # An instant at the start is inside; an event ending exactly at start is not.
    keep = (events.start_ps < end_ps) & ((ends > start_ps) | ((events.duration_ps == 0) & (events.start_ps >= start_ps)))
    rows = np.flatnonzero(keep)
    new_row = np.full(len(events), NO_ID, dtype=np.int64)
    new_row[rows] = np.arange(len(rows))
    columns = {name: getattr(events, name)[rows] for name in EVENT_COLUMNS}
    parents = columns["parent"]
    columns["parent"] = np.where(parents == NO_ID, NO_ID, new_row[np.where(parents == NO_ID, 0, parents)])
    table = EventTable(**columns)
    return dataclasses.replace(plane, events=table, stats=plane.stats.take(rows)), new_row


def _crop_flows(flows: FlowTable, new_rows: list[np.ndarray]) -> FlowTable:
    if not len(flows):
        return flows
    src = np.asarray([new_rows[p][e] for p, e in zip(flows.src_plane.tolist(), flows.src_event.tolist())], dtype=np.int64)
    dst = np.asarray([new_rows[p][e] for p, e in zip(flows.dst_plane.tolist(), flows.dst_event.tolist())], dtype=np.int64)
    keep = (src != NO_ID) & (dst != NO_ID)
    return FlowTable(flows.flow_id[keep], flows.category[keep], flows.src_plane[keep], src[keep], flows.dst_plane[keep], dst[keep], flows.categories)


def crop(profile: Profile, start_ps: int, end_ps: int) -> Profile:
    if end_ps < start_ps:
        raise ValueError(f"the range ends ({end_ps} ps) before it starts ({start_ps} ps)")
    cropped = [_crop_plane(plane, start_ps, end_ps) for plane in profile.planes]
    planes = [plane for plane, _ in cropped]
    flows = _crop_flows(profile.flows, [rows for _, rows in cropped])
    return dataclasses.replace(profile, planes=planes, flows=flows)
