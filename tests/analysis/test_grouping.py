"""The column helpers that replaced per-event dicts and sorts: ``KeyTable`` (an int -> int
dict as two arrays), ``launchers`` (external id -> the launching op), ``distinct_indices``
and ``Union.of``'s path for presorted intervals. Each against a plain Python reference
written here or numbers worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.analysis.grouping import KeyTable
from stepscope.analysis.intervals import Union
from stepscope.analysis.ops.ops import launchers
from stepscope.trace.model import EVENT_COLUMNS, NO_ID, EventTable, distinct_indices
from tests.support.intervals import union_length


def test_key_table_keeps_the_last_value_of_a_key_as_a_dict_does():
    # Keys 5, -3, 5, 7, -3, 5 with values 0..5: a dict keeps 5 -> 5, -3 -> 4, 7 -> 3.
    table = KeyTable.last_of(np.array([5, -3, 5, 7, -3, 5]), np.arange(6))
    assert table.keys.tolist() == [-3, 5, 7]
    assert table.values.tolist() == [4, 5, 3]
    assert table.get(np.array([7, 6, -3, 5, 8, -4]), -99).tolist() == [3, -99, 4, 5, -99, -99]


@pytest.mark.parametrize("seed", range(5))
def test_key_table_is_the_dict_of_random_columns(seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(-50, 50, size=400)
    values = rng.integers(0, 1 << 40, size=400)
    reference = dict(zip(keys.tolist(), values.tolist()))
    table = KeyTable.last_of(keys, values)
    assert dict(zip(table.keys.tolist(), table.values.tolist())) == reference
    queries = rng.integers(-60, 60, size=300)
    assert table.get(queries, -1).tolist() == [reference.get(q, -1) for q in queries.tolist()]


def test_an_empty_key_table_answers_missing():
    table = KeyTable.last_of(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert len(table) == len(KeyTable.empty()) == 0
    assert KeyTable.empty().get(np.array([1]), -5).tolist() == [-5]
    assert table.get(np.array([0, 3]), NO_ID).tolist() == [NO_ID, NO_ID]


def test_the_launcher_of_an_id_is_the_deepest_op_then_the_last_row():
    # Rows (external id, depth): 0 (10, 0), 1 (10, 1), 2 (11, 1), 3 (11, 1), 4 (12, 0),
    # 5 (none, 2), 6 (13, 2), 7 (13, 0). Id 10: row 1 is deeper than row 0; id 11: rows 2
    # and 3 equally deep, the last (3) wins; id 12: row 4 alone; id 13: row 6, deeper than
    # the later row 7; row 5 carries no id. Without row 1 on offer, id 10 is row 0's.
    columns = {name: np.zeros(8, dtype=dtype) for name, dtype in EVENT_COLUMNS.items()}
    columns.update(depth=np.array([0, 1, 1, 1, 0, 2, 2, 0], dtype=np.int32), external_id=np.array([10, 10, 11, 11, 12, NO_ID, 13, 13]))
    events = EventTable(**columns)
    every = launchers(events, np.arange(8))
    assert dict(zip(every.keys.tolist(), every.values.tolist())) == {10: 1, 11: 3, 12: 4, 13: 6}
    without_row_1 = launchers(events, np.array([0, 2, 3, 4, 5, 6, 7]))
    assert without_row_1.get(np.array([10]), NO_ID).tolist() == [0]


def test_distinct_indices_are_the_sorted_set():
    column = np.array([7, 0, 3, 3, 7, 0, 12])
    assert distinct_indices(column) == sorted(set(column.tolist())) == [0, 3, 7, 12]
    assert distinct_indices(np.zeros(0, dtype=np.int64)) == []


def test_presorted_and_shuffled_intervals_give_one_union():
    # [0, 5) [3, 8) [8, 9) [10, 12) [10, 10) (empty) [11, 20): touching [3, 8) and [8, 9)
    # join, so the union is [0, 9) and [10, 20), 19 ps.
    start = np.array([0, 3, 8, 10, 10, 11])
    end = np.array([5, 8, 9, 12, 10, 20])
    for order in (np.arange(6), np.array([5, 2, 0, 4, 3, 1])):
        union = Union.of(start[order], end[order])
        assert union.start.tolist() == [0, 10]
        assert union.end.tolist() == [9, 20]
        assert union.total == 19


@pytest.mark.parametrize("presorted", [True, False])
def test_random_unions_match_a_sweep(presorted):
    rng = np.random.default_rng(1 if presorted else 2)
    start = rng.integers(0, 10_000, size=2_000)
    end = start + rng.integers(0, 40, size=2_000)
    if presorted:
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
    union = Union.of(start, end)
    assert union.total == union_length(zip(start.tolist(), end.tolist()))
    assert (union.start[1:] > union.end[:-1]).all()  # disjoint, sorted, none touching
