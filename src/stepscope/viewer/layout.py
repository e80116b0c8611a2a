"""Where each event is drawn: the order of sections and tracks, and each event's lane.

A track is one line of one plane (a thread, a GPU stream, ``XLA Ops``...); a lane is one
row of a track, its display depth. The level-of-detail queries rely on one property of a
lane: its events do not overlap (each starts at or after the previous one ends), so in a
lane both starts and ends are sorted and a time range is one contiguous slice.

The model's nesting depth gives that property for properly nested events. Real traces
also hold events that start inside another and end after it (rounding in Kineto, async
spans in XSpace); the model makes them siblings at one depth, where they overlap. Only
the lines where that happens are laid out again, with a sequential greedy pass
(:func:`assign_lanes`), which moves an overlapping event one lane down, as Perfetto and
Chrome's viewer draw overlapping slices.
"""

from __future__ import annotations

import re
from typing import Final

import numpy as np

from stepscope.trace import names
from stepscope.trace.model import Plane, Profile

_ORDINAL = re.compile(r"^(.*?)(\d+)$")

# Planes the timeline leaves out. Kineto's own spans (the profiler's recording window
# "PyTorch Profiler (0)", which is the profile's whole extent, and two zero-length window
# markers at its very ends) say nothing about the workload: drawn, they were a section of
# one bar across everything and two tracks that look empty. XProf's trace viewer does not
# show them either. The profile keeps the plane (other viewers get it on export).
HIDDEN_PLANES: Final = frozenset({names.TRACE_SPANS_PLANE})


def plane_order(profile: Profile) -> list[int]:
    """Indices of the planes the timeline shows, in display order: devices by kind and
    ordinal (``/device:GPU:2`` before ``/device:GPU:10``), then host planes (``/host:CPU``
    first), then the rest; :data:`HIDDEN_PLANES` are left out. Devices first, as XProf
    has them: on a TPU host the device tracks would otherwise sit below a hundred host
    threads."""

    def key(index: int) -> tuple:
        name = profile.planes[index].name
        if names.is_device_plane(name):
            match = _ORDINAL.match(name)
            if match:
                return (0, 0, match.group(1), int(match.group(2)), index)
            return (0, 1, name, 0, index)
        if name.startswith(names.HOST_PLANE_PREFIX):
            return (1, name != names.HOST_PLANE, name, 0, index)
        return (2, 0, name, 0, index)

    shown = [index for index, plane in enumerate(profile.planes) if plane.name not in HIDDEN_PLANES]
    return sorted(shown, key=key)


def overlapping_lines(plane: Plane, depth: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Lines of ``plane`` where two events of one depth overlap; ``order`` sorts the plane's
    events by (line, depth) keeping their start order."""
    events = plane.events
    line = events.line[order]
    same_lane = (line[1:] == line[:-1]) & (depth[order][1:] == depth[order][:-1])
    start = events.start_ps[order]
    end = start + events.duration_ps[order]
    bad = same_lane & (start[1:] < end[:-1])
    return np.unique(line[1:][bad])


def lane_order(line: np.ndarray, depth: np.ndarray, max_depth: int) -> np.ndarray:
    """A stable permutation sorting events by (line, depth): within a lane the events stay
    in the plane's start order. A narrow key lets numpy use its radix sort."""
    key = line.astype(np.int64) * (max_depth + 1) + depth
    if len(key) and key.max() < 2**15:
        key = key.astype(np.int16)
    elif len(key) and key.max() < 2**31:
        key = key.astype(np.int32)
    return np.argsort(key, kind="stable")


def assign_lanes(start: np.ndarray, end: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Lanes for events sorted by start (longest first among equal starts) such that no two
    events of one lane overlap.

    Each event takes the first lane below its parent's (``parent`` holds positions in
    these arrays, -1 for none) whose last event has ended by its start. Sequential, so
    it only runs on the few lines that need it.
    """
    lanes = np.zeros(len(start), dtype=np.int32)
    lane_end: list[int] = []
    parents = parent.tolist()
    for position, (event_start, event_end) in enumerate(zip(start.tolist(), end.tolist())):
        up = parents[position]
        lane = int(lanes[up]) + 1 if up >= 0 else 0
        while lane < len(lane_end) and lane_end[lane] > event_start:
            lane += 1
        if lane == len(lane_end):
            lane_end.append(event_end)
        else:
            lane_end[lane] = event_end
        lanes[position] = lane
    return lanes


def display_depths(plane: Plane) -> np.ndarray:
    """Each event's lane within its line: the model's depth, except on lines where events
    of one depth overlap, which are laid out again by :func:`assign_lanes`."""
    events = plane.events
    depth = events.depth.astype(np.int32, copy=True)
    if not len(depth):
        return depth
    order = lane_order(events.line, depth, int(depth.max()))
    for bad_line in overlapping_lines(plane, depth, order).tolist():
        rows = plane.line_slice(int(bad_line))
        start = events.start_ps[rows]
        parent = events.parent[rows]
        local_parent = np.where(parent >= 0, parent - rows.start, -1)
        depth[rows] = assign_lanes(start, start + events.duration_ps[rows], local_parent)
    return depth
