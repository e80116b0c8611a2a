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
from stepscope.trace.model import END_PIECE, Plane, Profile

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

    def key(index: int) -> tuple[int, int, str, int, int]:
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


def overlapping_lines(plane: Plane, order: np.ndarray, lane_key: np.ndarray) -> np.ndarray:
    """Lines of ``plane`` where two events of one depth overlap; ``order`` and ``lane_key``
    are :func:`lane_order`'s. Looked at in pieces of a million rows (each piece's first
    event against the previous piece's last): the whole-plane starts, ends and flags were
    18 bytes of fresh pages per event, 180 MB at 10M events."""
    events = plane.events
    found = []
    for lo in range(1, len(order), END_PIECE):
        rows = order[lo - 1 : lo + END_PIECE]  # (one row of overlap)
        start = events.start_ps[rows]
        end = events.duration_ps[rows]
        end += start
        keys = lane_key[lo - 1 : lo + END_PIECE]
        bad = keys[1:] == keys[:-1]
        bad &= start[1:] < end[:-1]
        found.append(events.line[rows[1:][bad]])
    return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=events.line.dtype)


def lane_order(line: np.ndarray, depth: np.ndarray, max_depth: int, line_count: int) -> tuple[np.ndarray, np.ndarray]:
    """A stable permutation sorting events by (line, depth), and their sorted keys
    ``line * (max_depth + 1) + depth`` (events of one lane share a key): within a lane
    the events stay in the plane's start order. The key is as narrow as its range allows
    (and built in place), so numpy sorts it by radix and touches a quarter of the memory
    an int64 key would."""
    top = line_count * (max_depth + 1)
    dtype = np.int16 if top < 2**15 else np.int32 if top < 2**31 else np.int64
    key: np.ndarray = line.astype(dtype)
    key *= max_depth + 1
    np.add(key, depth, out=key, casting="unsafe")
    order = np.argsort(key, kind="stable")
    return order, key[order]


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


def display_depths(plane: Plane) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each event's lane within its line: the model's depth, except on lines where events
    of one depth overlap, which are laid out again by :func:`assign_lanes`; with the
    events' :func:`lane_order` by those lanes (both are needed to find the bad lines, so
    the layout sorts once where no line is bad). The model's depth column is returned
    as it is (not copied) where no line is bad: read it, don't write it."""
    events = plane.events
    depth = events.depth
    if not len(depth):
        return depth, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int16)
    order, key = lane_order(events.line, depth, int(depth.max()), len(plane.lines))
    bad_lines = overlapping_lines(plane, order, key).tolist()
    if not bad_lines:
        return depth, order, key
    depth = depth.astype(np.int32, copy=True)
    for bad_line in bad_lines:
        rows = plane.line_slice(int(bad_line))
        start = events.start_ps[rows]
        parent = events.parent[rows]
        local_parent = np.where(parent >= 0, parent - rows.start, -1)
        depth[rows] = assign_lanes(start, start + events.duration_ps[rows], local_parent)
    order, key = lane_order(events.line, depth, int(depth.max()), len(plane.lines))
    return depth, order, key
