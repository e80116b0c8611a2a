"""The bulk reader's flow pairing (trace/formats/xspace/arrows.py: its walks in C, and in
their Python) gives the arrows of the whole-array pairing the protobuf-message path uses
(read.pair_flows_numpy), on dense and sparse flow ids, both directions, self-flows and
planes without endpoints; and a hand-made case."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.trace.formats.xspace.arrows import arrows
from stepscope.trace.formats.xspace.read import pair_flows_numpy
from stepscope.trace.formats.xspace.schema import FLOW_IN, FLOW_IN_OUT, FLOW_OUT, encode_flow
from tests.support.kernels import python_kernels


def both(parts: list[int], counts: list[int], rows: list[int], encoded: list[int]) -> tuple:
    """(the C walks' arrows, the whole-array pairing's); the walks' Python gives the C's."""
    bounds = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    row = np.asarray(rows, dtype=np.int64)
    values = np.asarray(encoded, dtype=np.uint64)
    fast = arrows(np.asarray(parts, dtype=np.int32), bounds, row, values)
    with python_kernels():
        walked = arrows(np.asarray(parts, dtype=np.int32), bounds, row, values)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(fast, walked))
    slow = pair_flows_numpy(np.repeat(np.asarray(parts, dtype=np.int32), counts), row, values)
    return fast, slow


def test_an_arrow_goes_from_the_first_out_endpoint_to_each_in_endpoint_but_not_to_itself():
    # Plane 2: event 0 out of flow 7, event 1 in of 7; plane 5: event 0 in-out of 7 (an arrow
    # from plane 2's event 0), event 3 out of 9 then event 3 in of 9 (itself: none), event 4
    # in of 8 (no out: none).
    encoded = [
        encode_flow(7, FLOW_OUT),
        encode_flow(7, FLOW_IN),
        encode_flow(7, FLOW_IN_OUT),
        encode_flow(9, FLOW_OUT),
        encode_flow(9, FLOW_IN),
        encode_flow(8, FLOW_IN),
    ]
    fast, slow = both([2, 5], [2, 4], [0, 1, 0, 3, 3, 4], encoded)
    expected = ([7, 7], [2, 2], [0, 0], [2, 5], [1, 0])  # (flow id, from plane, from event, to plane, to event)
    assert [column.tolist() for column in fast] == [list(column) for column in expected]
    assert [column.dtype for column in fast] == [np.int64, np.int32, np.int64, np.int32, np.int64]
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(fast, slow))


@st.composite
def endpoints(draw: st.DrawFn) -> tuple[list[int], list[int], list[int], list[int]]:
    counts = draw(st.lists(st.integers(1, 12), min_size=1, max_size=4))
    parts = sorted(draw(st.lists(st.integers(0, 9), min_size=len(counts), max_size=len(counts), unique=True)))
    total = sum(counts)
    # Small ids go through the table, ids past 2**40 through the dense renumbering.
    ids = st.one_of(st.integers(0, 5), st.integers(0, 3).map(lambda i: (i << 40) + 1))
    encoded = draw(st.lists(st.tuples(ids, st.integers(0, 3)).map(lambda f: encode_flow(*f)), min_size=total, max_size=total))
    rows = draw(st.lists(st.integers(0, 3), min_size=total, max_size=total))
    return parts, counts, rows, encoded


@settings(max_examples=300, deadline=None)
@given(case=endpoints())
def test_the_walks_give_the_whole_array_pairing(case: tuple[list[int], list[int], list[int], list[int]]):
    fast, slow = both(*case)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype
        assert a.tolist() == b.tolist()
