"""Nesting, sorting and the model's invariants, on hand-built planes."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.errors import ProfileInvariantError
from stepscope.trace import builder, kernels
from stepscope.trace.builder import RawPlane, finish_plane, nesting
from stepscope.trace.model import NO_ID, EventMetadata, Line, Profile
from stepscope.trace.stats import EmptyStats


def nest(events: list[tuple[int, int, int]]) -> tuple[list[int], list[int]]:
    """(line, start, duration) already sorted by (line, start, longest first)."""
    line = np.asarray([e[0] for e in events], dtype=np.int32)
    start = np.asarray([e[1] for e in events], dtype=np.int64)
    duration = np.asarray([e[2] for e in events], dtype=np.int64)
    depth, parent = nesting(line, start, duration)
    return depth.tolist(), parent.tolist()


def test_properly_nested_events_get_depth_and_parent():
    # 0: [0,100)  1: [10,40) inside 0  2: [15,20) inside 1  3: [40,60) inside 0, after 1
    # ends at 40 (back-to-back with 1, so a sibling of 1, not its child)  4: [100,110) top.
    depth, parent = nest([(0, 0, 100), (0, 10, 30), (0, 15, 5), (0, 40, 20), (0, 100, 10)])
    assert depth == [0, 1, 2, 1, 0]
    assert parent == [-1, 0, 1, 0, -1]


def test_lines_nest_independently():
    # Line 1's event starts inside line 0's event but is not its child.
    depth, parent = nest([(0, 0, 100), (0, 5, 5), (1, 1, 10), (1, 2, 3)])
    assert depth == [0, 1, 0, 1]
    assert parent == [-1, 0, -1, 2]


def test_instants_nest_inside_the_slice_that_encloses_them():
    # An instant at 50 inside [0,100); an instant at exactly 100 is after the slice ends;
    # an instant at 0 (same start as the slice, sorted after it) is inside it.
    depth, parent = nest([(0, 0, 100), (0, 0, 0), (0, 50, 0), (0, 100, 0)])
    assert depth == [0, 1, 1, 0]
    assert parent == [-1, 0, 0, -1]


def test_partial_overlap_becomes_a_sibling_not_a_child():
    # 0: [0,100); 1: [50,150) starts inside 0 but ends after it, so 0 cannot be its
    # parent; 2: [120,130) starts after 0 ended and lies inside 1.
    depth, parent = nest([(0, 0, 100), (0, 50, 100), (0, 120, 10)])
    assert parent == [-1, -1, 1]
    assert depth == [0, 0, 1]


def test_deep_chain():
    # Ten events each starting 1 later and ending 1 earlier than the previous one.
    events = [(0, i, 100 - 2 * i) for i in range(10)]
    depth, parent = nest(events)
    assert depth == list(range(10))
    assert parent == [-1, *range(9)]


def _raw(starts, durations, lines, names=("a",)) -> RawPlane:
    return RawPlane(
        id=1,
        name="/host:CPU",
        lines=[Line(id=10 + i, name=f"t{i}") for i in range(max(lines) + 1)],
        metadata=EventMetadata(list(names), [""] * len(names), [""] * len(names), [[] for _ in names], [b""] * len(names)),
        start_ps=np.asarray(starts, dtype=np.int64),
        duration_ps=np.asarray(durations, dtype=np.int64),
        metadata_id=np.zeros(len(starts), dtype=np.int32),
        line=np.asarray(lines, dtype=np.int32),
        stats=EmptyStats(len(starts)),
        ids={"correlation_id": np.arange(len(starts), dtype=np.int64)},
    )


def test_finish_plane_sorts_rebases_and_permutes_columns():
    # Given out of order on two lines; absolute times 1000..; zero at 1000.
    raw = _raw(starts=[1500, 1000, 1200, 1000], durations=[10, 300, 50, 5], lines=[0, 0, 0, 1])
    plane, order = finish_plane(raw, 1000)
    # Sorted by (line, start, longest first): raw rows 1 (0ps), 2 (200), 0 (500), then line 1.
    assert order.tolist() == [1, 2, 0, 3]
    assert plane.events.start_ps.tolist() == [0, 200, 500, 0]
    assert plane.events.duration_ps.tolist() == [300, 50, 10, 5]
    # correlation ids travel with their events; absent ids default to NO_ID.
    assert plane.events.correlation_id.tolist() == [1, 2, 0, 3]
    assert plane.events.group_id.tolist() == [NO_ID] * 4
    # [200,250) lies in [0,300); [500,510) starts after it ends.
    assert plane.events.parent.tolist() == [-1, 0, -1, -1]
    assert plane.line_event_counts().tolist() == [3, 1]


@pytest.mark.parametrize("compiled", [True, False])
def test_finish_plane_nests_shuffled_lines_by_the_definition(compiled: bool, monkeypatch: pytest.MonkeyPatch):
    """finish_plane's nesting (the compiled heap walk where built, else ``nesting``) on a
    shuffled plane: each event's depth is the events of its line that contain its start
    and its whole span (brute force below), its parent the innermost of them."""
    if not compiled:
        monkeypatch.setattr(kernels, "native", None)
    elif kernels.native is None:
        pytest.fail("the kernels are not built (make venv builds them)")
    rng = np.random.default_rng(7)
    # Three lines of properly nested events (each child inside its parent, starts in steps
    # of 10 so that no two events of a line tie) plus instants, shuffled together.
    starts, durations, lines = [], [], []
    for line in range(3):
        time = 0
        for _ in range(40):
            outer = int(rng.integers(5, 20)) * 10
            starts.append(time)
            durations.append(outer)
            lines.append(line)
            inner_start = time + 10
            while inner_start + 10 < time + outer and rng.random() < 0.7:
                inner = int(rng.integers(0, (time + outer - inner_start) // 10)) * 10
                starts.append(inner_start)
                durations.append(inner)  # 0: an instant
                lines.append(line)
                if inner >= 30:  # a grandchild: a slice, or an instant, inside it
                    starts.append(inner_start + 10)
                    durations.append(10 * int(rng.integers(0, 2)))
                    lines.append(line)
                inner_start += inner + 10
            time += outer + 10 * int(rng.integers(0, 3))
    shuffle = rng.permutation(len(starts))
    raw = _raw([starts[i] for i in shuffle], [durations[i] for i in shuffle], [lines[i] for i in shuffle])
    plane, _ = finish_plane(raw, 0)
    start, end, line_of = plane.events.start_ps.tolist(), (plane.events.start_ps + plane.events.duration_ps).tolist(), plane.events.line.tolist()
    expected_depth, expected_parent = [], []
    for row in range(len(start)):
        # Earlier rows of the line enclosing this one: a slice [s, e) holds the start t of a
        # later event when s <= t < e; an event is nested no deeper than one level per slice.
        enclosing = [j for j in range(row) if line_of[j] == line_of[row] and start[j] <= start[row] < end[j] and end[row] <= end[j]]
        expected_depth.append(len(enclosing))
        expected_parent.append(enclosing[-1] if enclosing else -1)
    assert plane.events.depth.tolist() == expected_depth
    assert plane.events.parent.tolist() == expected_parent
    assert max(expected_depth) >= 2  # (the plane nests)


def test_sorted_nesting_is_nesting_where_compiled():
    """The compiled walk and the whole-array reference agree on a 20,000-event plane."""
    rng = np.random.default_rng(3)
    line = np.sort(rng.integers(0, 5, 20_000)).astype(np.int32)
    start = rng.integers(0, 100_000, 20_000)
    duration = rng.integers(0, 400, 20_000) * (rng.random(20_000) < 0.9)
    order = np.lexsort((-duration, start, line))
    line, start, duration = line[order], start[order].astype(np.int64), duration[order].astype(np.int64)
    depth, parent = builder.sorted_nesting(line, start, duration)
    reference_depth, reference_parent = nesting(line, start, duration)
    assert depth.tolist() == reference_depth.tolist()
    assert parent.tolist() == reference_parent.tolist()
    assert depth.dtype == np.int32 and parent.dtype == np.int64


def _profile(plane) -> Profile:
    return Profile(planes=[plane], start_ns=0, host="h", source="test", format="test")


def test_validate_accepts_a_built_plane_and_rejects_broken_ones():
    plane, _ = finish_plane(_raw([0, 10], [100, 20], [0, 0]), 0)
    _profile(plane).validate()

    # A child that ends after its parent.
    plane.events.duration_ps[1] = 200
    with pytest.raises(ProfileInvariantError, match="not inside its parent"):
        _profile(plane).validate()
    plane.events.duration_ps[1] = 20

    # Unsorted starts within a line.
    plane.events.start_ps[:] = [10, 0]
    with pytest.raises(ProfileInvariantError, match="not sorted"):
        _profile(plane).validate()
    plane.events.start_ps[:] = [0, 10]

    # Metadata id out of range.
    plane.events.metadata_id[0] = 5
    with pytest.raises(ProfileInvariantError, match="missing metadata"):
        _profile(plane).validate()
