"""finish_presorted gives the Plane builder.finish_plane gives: the same columns, nesting
(depths, parents, the stack walk of lines where a child outlasts its parent) and stats."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.trace.builder import RawPlane, finish_plane, nesting
from stepscope.trace.model import EVENT_COLUMNS, EventMetadata, Line
from stepscope.trace.presorted import finish_presorted, is_sorted
from stepscope.trace.presorted import nesting as fast_nesting
from stepscope.trace.stat_types import StatKind
from stepscope.trace.stats import TypedStats
from tests.support.kernels import python_kernels

INT64_MAX = 2**63 - 1


@st.composite
def raw_planes(draw) -> RawPlane:
    count = draw(st.integers(0, 40))
    lines = draw(st.integers(1, 3))
    times = st.integers(0, 30) if draw(st.booleans()) else st.sampled_from((0, 1, 2, 10, 2**62))
    line = np.asarray(draw(st.lists(st.integers(0, lines - 1), min_size=count, max_size=count)), dtype=np.int32)
    start = np.asarray(draw(st.lists(times, min_size=count, max_size=count)), dtype=np.int64)
    duration = np.asarray(draw(st.lists(st.sampled_from((0, 0, 1, 2, 3, 5, 8, 20)), min_size=count, max_size=count)), dtype=np.int64)
    if draw(st.booleans()):  # in order, as XSpace lines mostly are
        order = np.lexsort((-duration, start, line))
        line, start, duration = line[order], start[order], duration[order]
    ids = {}
    if draw(st.booleans()):
        ids["correlation_id"] = np.arange(count, dtype=np.int64) * 3
    stats = TypedStats(
        np.arange(count, dtype=np.int64),
        np.zeros(count, dtype=np.int32),
        np.full(count, int(StatKind.INT64), dtype=np.int8),
        list(range(count)),
        ["row"],
        np.arange(count, dtype=np.int64),
    )
    return RawPlane(
        id=1,
        name="/host:CPU",
        lines=[Line(i, f"thread {i}") for i in range(lines)],
        metadata=EventMetadata(["op"], [""], [""], [[]], [b""]),
        start_ps=start,
        duration_ps=duration,
        metadata_id=np.zeros(count, dtype=np.int32),
        line=line,
        stats=stats,
        ids=ids,
    )


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(raw=raw_planes(), zero=st.sampled_from((0, 1000)), frozen=st.booleans())
def test_finish_presorted_is_finish_plane(raw: RawPlane, zero: int, frozen: bool):
    given_start = raw.start_ps.copy()
    raw.start_ps.flags.writeable = not frozen
    expected, expected_order = finish_plane(raw, zero)
    got, order = finish_presorted(raw, zero)
    # A plane kept in order takes the raw start column, rebased in place where it can be;
    # a read-only one, or a plane out of order, leaves the raw plane as it was.
    assert np.array_equal(raw.start_ps, given_start - zero if order is None and not frozen else given_start)
    if order is None:
        assert np.array_equal(expected_order, np.arange(len(raw)))
    else:
        assert np.array_equal(order, expected_order)
    for column, dtype in EVENT_COLUMNS.items():
        mine, theirs = getattr(got.events, column), getattr(expected.events, column)
        assert mine.dtype == theirs.dtype == dtype and np.array_equal(mine, theirs), column
    assert [got.stats.stats(row) for row in range(len(raw))] == [expected.stats.stats(row) for row in range(len(raw))]


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(raw=raw_planes())
def test_the_nesting_kernel_is_builder_nesting(raw: RawPlane):
    """The heap walk, in C and in its Python, nests as the builder's whole-array nesting."""
    order = np.lexsort((-raw.duration_ps, raw.start_ps, raw.line))
    line, start, duration = raw.line[order], raw.start_ps[order], raw.duration_ps[order]
    assert is_sorted(line, start, duration)
    depth, parent = nesting(line, start, duration)
    with python_kernels():
        walked = fast_nesting(line, start, duration)
    for fast_depth, fast_parent in (fast_nesting(line, start, duration), walked):
        assert np.array_equal(depth, fast_depth) and depth.dtype == fast_depth.dtype
        assert np.array_equal(parent, fast_parent) and parent.dtype == fast_parent.dtype


def test_order_check():
    line = np.asarray([0, 0, 0, 1], dtype=np.int32)
    assert is_sorted(line, np.asarray([1, 2, 2, 0]), np.asarray([5, 3, 3, 1]))
    assert not is_sorted(line, np.asarray([1, 2, 2, 0]), np.asarray([5, 3, 4, 1]))  # shorter first at a tie
    assert not is_sorted(line, np.asarray([2, 1, 3, 0]), np.asarray([1, 1, 1, 1]))
    assert not is_sorted(np.asarray([0, 1, 0], dtype=np.int32), np.asarray([0, 0, 1]), np.asarray([1, 1, 1]))
    assert is_sorted(line, np.asarray([-(2**63), 0, INT64_MAX, 0]), np.asarray([0, 0, 0, 0]))


def test_partial_overlaps_take_the_stack_walk():
    """b starts inside a but ends after it: siblings, as builder's stack walk makes them."""
    line = np.zeros(3, dtype=np.int32)
    start, duration = np.asarray([0, 5, 6]), np.asarray([10, 10, 1])
    assert [a.tolist() for a in fast_nesting(line, start, duration)] == [a.tolist() for a in nesting(line, start, duration)]
    assert fast_nesting(line, start, duration)[1].tolist() == [-1, -1, 1]
    with python_kernels():
        assert fast_nesting(line, start, duration)[1].tolist() == [-1, -1, 1]
