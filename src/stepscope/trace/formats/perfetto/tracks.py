"""Tracks for a plane's events: one per line, more where a line's events overlap without
nesting, which a Perfetto track (one stack of slices) cannot show.

A line whose slices nest properly (any two are nested or apart) is one track, found with
whole-array operations. Only the slices of a line that does not are
placed one by one: each on the first track of its line where it nests, in the order of
the plane (start, longest first); instants stay on the line's first track, where they do
not take part in the stack.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.trace.builder import nesting
from stepscope.trace.model import Plane


@dataclass(frozen=True)
class PlaneTracks:
    """``lane[i]``: which of its line's tracks event ``i`` goes on (0: the first);
    ``lanes[line]``: how many tracks the line has."""

    lane: np.ndarray
    lanes: list[int]


def plane_tracks(plane: Plane, slices: np.ndarray) -> PlaneTracks:
    """``slices``: bool per event, True for the events drawn as slices (not instants)."""
    events = plane.events
    lane = np.zeros(len(events), dtype=np.int64)
    lanes = [1] * len(plane.lines)
    rows = np.flatnonzero(slices)
    if not len(rows):
        return PlaneTracks(lane, lanes)
    line, start, duration = events.line[rows], events.start_ps[rows], events.duration_ps[rows]
    _, parent = nesting(line, start, duration)
    end = start + duration
    # Nested properly (laminar) when each slice ends within its parent and starts at or
    # after the end of its previous sibling (the builder makes overlapping slices siblings).
    inside = parent >= 0
    broken = np.zeros(len(rows), dtype=bool)
    broken[inside] = end[inside] > end[parent[inside]]
    order = np.lexsort((np.arange(len(rows)), parent, line))
    same = (line[order][1:] == line[order][:-1]) & (parent[order][1:] == parent[order][:-1])
    broken[order[1:][same & (start[order][1:] < end[order][:-1])]] = True
    for bad_line in np.unique(line[broken]).tolist():
        members = np.flatnonzero(line == bad_line)
        assigned = _spread(start[members].tolist(), end[members].tolist())
        lane[rows[members]] = assigned
        lanes[bad_line] = max(assigned) + 1
    return PlaneTracks(lane, lanes)


def _spread(starts: list[int], ends: list[int]) -> list[int]:
    """Each slice's track: the first whose open slices it nests in (a slice that ended at
    or before its start, except a zero-length one at the same time, is closed)."""
    stacks: list[list[tuple[int, int]]] = []  # per track: (end, start) of the open slices
    result = []
    for start, end in zip(starts, ends):
        chosen = -1
        for index, stack in enumerate(stacks):
            while stack and (stack[-1][0] < start or (stack[-1][0] == start and stack[-1][1] < start)):
                stack.pop()
            if not stack or end <= stack[-1][0]:
                chosen = index
                break
        if chosen < 0:
            chosen = len(stacks)
            stacks.append([])
        stacks[chosen].append((end, start))
        result.append(chosen)
    return result
