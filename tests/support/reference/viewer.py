"""Test helpers: random profiles shaped to hit the index's corner cases, and the expected
answer of a query computed the slow, obvious way from the Profile's own arrays.

Nothing here uses stepscope.viewer: the reference reads ``plane.events`` directly and
loops in Python, so a shared mistake with the index is unlikely.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from stepscope.trace.builder import RawPlane, earliest_start, finish_plane
from stepscope.trace.model import NO_ID, EventMetadata, FlowTable, Line, Profile
from stepscope.trace.names import TRACE_SPANS_PLANE
from stepscope.trace.stats import EmptyStats

# The planes the timeline does not draw, stated here apart from the viewer's own list:
# Kineto's own spans (the profiler's window and its two markers), as XProf's viewer.
NOT_DRAWN = frozenset({TRACE_SPANS_PLANE})

NAMES = ["Alpha", "beta", "GAMMA", "alphabet", "cudaLaunchKernel", "kernel_gemm", "ProfilerStep#1", "ProfilerStep#2", "delta"]


def _line_events(rng: np.random.Generator, count: int, span: int) -> list[tuple[int, int]]:
    """(start, duration) of a line: nested trees, plus instants, repeated starts and a few
    partial overlaps (which the model cannot nest)."""
    events: list[tuple[int, int]] = []

    def tree(start: int, duration: int, depth: int) -> None:
        events.append((start, duration))
        if depth >= 4 or duration < 8 or len(events) >= count:
            return
        for _ in range(int(rng.integers(0, 4))):
            child_start = start + int(rng.integers(0, max(duration, 1)))
            child_duration = int(rng.integers(0, start + duration - child_start + 1))
            tree(child_start, child_duration, depth + 1)

    while len(events) < count:
        start = int(rng.integers(0, span))
        tree(start, int(rng.integers(0, span // 20 + 2)), 0)
    kinds = rng.random(len(events))
    extra = []
    for (start, duration), kind in zip(events, kinds):
        if kind < 0.05:
            extra.append((start, 0))  # an instant at a slice's start
        elif kind < 0.08:
            extra.append((start + duration // 2, duration))  # starts inside, ends after
        elif kind < 0.1:
            extra.append((start, duration))  # an exact duplicate
    return events + extra


def random_profile(seed: int, events_per_line: int = 120, span: int = 1_000_000, overlaps: bool = True) -> Profile:
    """Planes in a scrambled order (GPU:1 before GPU:0, a python-tracer host plane last),
    lines of random nested events, ``ProfilerStep#N`` steps on the host's first line."""
    rng = np.random.default_rng(seed)
    meta = EventMetadata(NAMES, [""] * len(NAMES), [""] * len(NAMES), [[] for _ in NAMES], [b""] * len(NAMES))
    layout = [("/device:GPU:1", 2), ("/host:CPU", 3), ("/device:GPU:0", 1), ("/host:python-tracer", 1), ("/host:metadata", 0)]
    raws = []
    for plane_id, (name, line_count) in enumerate(layout):
        starts, durations, lines, names = [], [], [], []
        for line in range(line_count):
            found = _line_events(rng, events_per_line, span)
            if not overlaps:
                found = [(s, d) for s, d in found if d > 0]
                found = _drop_overlaps(found)
            for start, duration in found:
                starts.append(start)
                durations.append(duration)
                lines.append(line)
                names.append(int(rng.integers(0, len(NAMES))))
        if name == "/host:CPU":  # two steps on a line of their own
            for number, (start, duration) in enumerate(((0, span // 2), (span // 2, span // 2)), start=1):
                starts.append(start)
                durations.append(duration)
                lines.append(line_count)
                names.append(NAMES.index(f"ProfilerStep#{number}"))
            line_count += 1
        raws.append(
            RawPlane(
                plane_id,
                name,
                [Line(i, f"line {i}", f"{name} line {i}") for i in range(line_count)],
                meta,
                np.asarray(starts, dtype=np.int64) + 10_000,
                np.asarray(durations, dtype=np.int64),
                np.asarray(names, dtype=np.int32),
                np.asarray(lines, dtype=np.int32),
                EmptyStats(len(starts)),
            )
        )
    zero = earliest_start(raws) or 0
    planes = [finish_plane(raw, zero)[0] for raw in raws]
    return Profile(planes, 1_700_000_000_000_000_000, "testhost", f"random-{seed}", "test", FlowTable.empty())


def _drop_overlaps(events: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Keeps a properly nested subset (every pair disjoint or one inside the other)."""
    kept: list[tuple[int, int]] = []
    for start, duration in sorted(set(events), key=lambda e: (e[0], -e[1])):
        end = start + duration
        if all(end <= s or start >= s + d or (s <= start and end <= s + d) for s, d in kept):
            kept.append((start, duration))
    return kept


# --- the reference answer ------------------------------------------------------------------


def edges(start: int, end: int, width: int) -> list[int]:
    return [start + (j * (end - start)) // width for j in range(width + 1)]


def overlaps(event_start: int, event_end: int, start: int, end: int) -> bool:
    """A slice overlaps [start, end) when it starts before end and ends after start; an
    instant when start <= time < end."""
    if event_start == event_end:
        return start <= event_start < end
    return event_start < end and event_end > start


@dataclass
class TrackAnswer:
    count: int = 0
    wide: set[tuple[int, int]] = field(default_factory=set)
    # depth -> pixel -> [count, first start, last end, busy]
    runs: dict[int, dict[int, list[int]]] = field(default_factory=lambda: defaultdict(dict))


def overlapping_depths(profile: Profile) -> set[tuple[int, int]]:
    """(plane, line) where two events of one model depth overlap: their lanes may differ
    from the model's depths, so only per-track totals are compared there."""
    found = set()
    for plane_index, plane in enumerate(profile.planes):
        events = plane.events
        last_end: dict[tuple[int, int], int] = {}
        for row in range(len(events)):
            key = (int(events.line[row]), int(events.depth[row]))
            start, end = int(events.start_ps[row]), int(events.start_ps[row] + events.duration_ps[row])
            if key in last_end and start < last_end[key]:
                found.add((plane_index, key[0]))
            last_end[key] = max(last_end.get(key, start), end)
    return found


def line_lanes(profile: Profile) -> dict[tuple[int, int], list[list[int]]]:
    """(plane, line) of each drawn line with events -> its lanes, each the plane rows it
    holds in the plane's (start) order: lane = the model's depth, except on a line where
    two events of one depth overlap (:func:`overlapping_depths`), where each event, in
    the plane's order, takes the first lane below its parent's whose last event has
    ended by its start (a lane past the last is a new one)."""
    bad = overlapping_depths(profile)
    answer: dict[tuple[int, int], list[list[int]]] = {}
    for plane_index, plane in enumerate(profile.planes):
        if plane.name in NOT_DRAWN:
            continue
        events = plane.events
        lane_of: dict[int, int] = {}
        lane_ends: dict[int, list[int]] = defaultdict(list)
        for row in range(len(events)):
            line = int(events.line[row])
            if (plane_index, line) in bad:
                parent, start = int(events.parent[row]), int(events.start_ps[row])
                ends = lane_ends[line]
                lane = lane_of[parent] + 1 if parent >= 0 else 0
                while lane < len(ends) and ends[lane] > start:
                    lane += 1
                if lane == len(ends):
                    ends.append(0)
                ends[lane] = start + int(events.duration_ps[row])
            else:
                lane = int(events.depth[row])
            lane_of[row] = lane
            lanes = answer.setdefault((plane_index, line), [])
            lanes.extend([] for _ in range(lane + 1 - len(lanes)))
            lanes[lane].append(row)
    return answer


def expected(profile: Profile, start: int, end: int, width: int, name_filter: str | None = None) -> dict[tuple[int, int], TrackAnswer]:
    """(plane, line) -> what a query must return for that track."""
    grid = edges(start, end, width)
    minimum = -(-(end - start) // width)
    answers: dict[tuple[int, int], TrackAnswer] = defaultdict(TrackAnswer)
    for plane_index, plane in enumerate(profile.planes):
        if plane.name in NOT_DRAWN:
            continue
        events = plane.events
        for row in range(len(events)):
            name = plane.event_name(row)
            if name_filter and name_filter.lower() not in name.lower():
                continue
            a = int(events.start_ps[row])
            b = a + int(events.duration_ps[row])
            if not overlaps(a, b, start, end):
                continue
            answer = answers[(plane_index, int(events.line[row]))]
            answer.count += 1
            if b - a >= minimum:
                answer.wide.add((plane_index, row))
                continue
            pixel = min(max(bisect.bisect_right(grid, a) - 1, 0), width - 1)
            run = answer.runs[int(events.depth[row])].get(pixel)
            if run is None:
                answer.runs[int(events.depth[row])][pixel] = [1, a, b, b - a]
            else:
                run[0] += 1
                run[1] = min(run[1], a)
                run[2] = max(run[2], b)
                run[3] += b - a
    return answers


def pixel_of(start: int, end: int, width: int, time: int) -> int:
    return min(max(bisect.bisect_right(edges(start, end, width), time) - 1, 0), width - 1)


__all__ = ["NO_ID", "TrackAnswer", "edges", "expected", "line_lanes", "overlapping_depths", "overlaps", "pixel_of", "random_profile"]


def one_line_profile(events: list[tuple[int, int, str]]) -> Profile:
    """A profile of one host line holding ``events`` ((start, duration, name) in ps)."""
    texts = sorted({name for _, _, name in events})
    meta = EventMetadata(texts, [""] * len(texts), [""] * len(texts), [[] for _ in texts], [b""] * len(texts))
    raw = RawPlane(
        0,
        "/host:CPU",
        [Line(0, "main")],
        meta,
        np.asarray([e[0] for e in events], dtype=np.int64),
        np.asarray([e[1] for e in events], dtype=np.int64),
        np.asarray([texts.index(e[2]) for e in events], dtype=np.int32),
        np.zeros(len(events), dtype=np.int32),
        EmptyStats(len(events)),
    )
    plane, _ = finish_plane(raw, 0)
    return Profile([plane], 0, "h", "hand", "test")


# One lane (all at depth 0, none overlapping), in ps:
#   A   [0, 600)                       begins before the range, 600 wide
#   p0  10 events [600+30k, +10)       k = 0..9, inside pixel 0
#   p1  50 events [1000+10k, +5)       k = 0..49, inside pixel 1
#   p3  5 events [2000+10k, +5)        k = 0..4, inside pixel 3, then
#   C   [2100, 2600)                   in pixel 3 too, exactly one pixel (500) wide
#   D   [2600, 3100)                   starts in pixel 4, exactly one pixel (500) wide
#   E   [3100, 3100)                   an instant at the range's end: outside
HAND = (
    [(0, 600, "A")]
    + [(600 + 30 * k, 10, "p0") for k in range(10)]
    + [(1000 + 10 * k, 5, "p1") for k in range(50)]
    + [(2000 + 10 * k, 5, "p3") for k in range(5)]
    + [(2100, 500, "C"), (2600, 500, "D"), (3100, 0, "E")]
)

# Back to back, durations cycling 5, 10, 20, 40 ps (75 ps a cycle): at 10, 20 or 40 ps a
# pixel many events are exactly one pixel wide, at a pixel's first and last place.
GRID = [(75 * (k // 4) + (0, 5, 15, 35)[k % 4], (5, 10, 20, 40)[k % 4], "g") for k in range(4000)]


# A range of ~3e18 ps on 997 pixels where pixel 269 starts at EDGE_269, and a time one ps
# before it (so in pixel 268) that a float64 guess of its pixel, time * 997 / range, rounds
# up to 269 (found by trying random ranges; the edges are exact integers, lod.Window.edges).
FAR_RANGE, EDGE_269 = 2_973_771_138_962_123_133, 802_351_490_853_371_236
FAR = [(0, 1, "f"), (EDGE_269 - 1, 1, "f"), (EDGE_269, 1, "f")]
