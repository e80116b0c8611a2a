"""The bulk reader's hot id columns (trace/formats/xspace/hot_ids.py: its scatter in C, and
in its Python) are the columns numpy's mask-and-assign gives (read._hot_id_column, the
message path's): the last int64 stat of the key per event, or uint64 one that fits an
int64, NO_ID elsewhere, and None when the key has no such stat."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.trace.formats.xspace.hot_ids import hot_id_column
from stepscope.trace.formats.xspace.read import _hot_id_column
from stepscope.trace.model import NO_ID
from stepscope.trace.stat_types import StatKind
from tests.support.kernels import python_kernels

INT64, UINT64, DOUBLE = int(StatKind.INT64), int(StatKind.UINT64), int(StatKind.DOUBLE)


def columns(stats: list[tuple[int, int, int, int]]) -> tuple[np.ndarray, ...]:
    """(event, key, kind, bits) columns of stats given as such tuples."""
    event, key, kind, bits = zip(*stats) if stats else ((), (), (), ())
    return np.asarray(event, dtype=np.int64), np.asarray(key, dtype=np.int32), np.asarray(kind, dtype=np.int8), np.asarray(bits, dtype=np.int64)


def all_three(count: int, stats: list[tuple[int, int, int, int]], code: int) -> list[np.ndarray | None]:
    arrays = columns(stats)
    with python_kernels():
        walked = hot_id_column(count, *arrays, code)
    return [hot_id_column(count, *arrays, code), walked, _hot_id_column(count, *arrays, code)]


def test_the_last_integer_that_fits_wins():
    # Event 0: key 1 int64 5, then key 1 uint64 7 -> 7. Event 1: key 1 uint64 -1 (2**64 - 1,
    # past an int64) -> none. Event 2: key 2 int64 9 (another key) -> none; key 1 double -> none.
    # Event 3: key 1 int64 -4 -> -4.
    stats = [(0, 1, INT64, 5), (0, 1, UINT64, 7), (1, 1, UINT64, -1), (2, 2, INT64, 9), (2, 1, DOUBLE, 3), (3, 1, INT64, -4)]
    for column in all_three(4, stats, code=1):
        assert column is not None and column.tolist() == [7, NO_ID, NO_ID, -4]
    assert all_three(4, stats, code=3) == [None, None, None]  # no stat of key 3


@st.composite
def stat_columns(draw) -> tuple[int, list[tuple[int, int, int, int]]]:
    count = draw(st.integers(1, 30))
    stat = st.tuples(st.integers(0, count - 1), st.integers(0, 3), st.sampled_from((INT64, UINT64, DOUBLE, 3)), st.integers(-(2**63), 2**63 - 1))
    stats = sorted(draw(st.lists(stat, max_size=60)), key=lambda s: s[0])  # (stats come in event order)
    return count, stats


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(case=stat_columns(), code=st.integers(0, 3))
def test_the_scatter_gives_numpy_s_columns(case: tuple[int, list[tuple[int, int, int, int]]], code: int):
    count, stats = case
    fast, walked, numpy = all_three(count, stats, code)
    if numpy is None:
        assert fast is None and walked is None
    else:
        assert fast is not None and walked is not None
        assert fast.tolist() == walked.tolist() == numpy.tolist()
