"""TypedStats keeps its values in typed columns (int64 bits, strings in a blob) and behaves
exactly as the store of Python values it replaced (kept below as ``ListStats``): the same
stats, values, JSON, columns and reordering, from Python values and from decoded columns."""

from __future__ import annotations

import math
import struct

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.jsonform import trace_value as _jsonable
from stepscope.trace.readers import load
from stepscope.trace.stat_types import INT64_MAX, Stat, StatKind
from stepscope.trace.stats import JsonStats, TextValues, TypedStats, _first, stats_of
from tests.support.traces import shared

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"

KEYS = ["correlation_id", "flops", "tf_op", "kernel_details", "bytes", "ratio"]


class ListStats:
    """The store before typed columns: values as a Python list (the reference)."""

    def __init__(self, event, key, kind, values, key_names, rows) -> None:
        order = np.argsort(event, kind="stable")
        self._event, self._key, self._kind = event[order], key[order], kind[order]
        self._values = [values[i] for i in order.tolist()]
        self._key_names = list(key_names)
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def stats(self, row: int) -> list[Stat]:
        source = self._rows[row]
        lo = int(np.searchsorted(self._event, source, "left"))
        hi = int(np.searchsorted(self._event, source, "right"))
        return [Stat(self._key_names[self._key[i]], StatKind(int(self._kind[i])), self._values[i]) for i in range(lo, hi)]

    def raw(self, row: int) -> bytes:
        return msgspec.json.encode({s.name: _jsonable(s.value) for s in self.stats(row)})

    def value(self, row: int, stat: str):
        return _first(self.stats(row), stat)

    def column(self, name: str):
        if name not in self._key_names:
            return np.zeros(0, dtype=np.int64), []
        entries = np.flatnonzero(self._key == self._key_names.index(name))
        position = np.full(int(self._rows.max()) + 1 if len(self._rows) else 0, -1, dtype=np.int64)
        position[self._rows] = np.arange(len(self._rows))
        sources = self._event[entries]
        inside = sources < len(position)
        rows = np.where(inside, position[np.minimum(sources, max(len(position) - 1, 0))], -1)
        keep = np.flatnonzero(rows >= 0)
        return rows[keep], [self._values[int(entries[i])] for i in keep.tolist()]

    def take(self, rows: np.ndarray) -> ListStats:
        clone = object.__new__(ListStats)
        clone.__dict__.update(self.__dict__)
        clone._rows = self._rows[rows]
        return clone


def same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, Stat):
        return a.name == b.name and a.kind == b.kind and same(a.value, b.value)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


VALUE_OF_KIND = {
    StatKind.INT64: st.integers(-(2**63), 2**63 - 1),
    StatKind.UINT64: st.sampled_from((0, 2**63, 2**64 - 1)) | st.integers(0, 2**64 - 1),
    StatKind.DOUBLE: st.floats() | st.sampled_from((math.nan, -0.0, math.inf)),
    StatKind.STR: st.text(max_size=6),
    StatKind.BYTES: st.binary(max_size=6),
}


@st.composite
def entries(draw, consistent: bool = True):
    count = draw(st.integers(0, 8))
    rows = []
    for _ in range(draw(st.integers(0, 20))):
        kind = draw(st.sampled_from(list(StatKind)))
        value = draw(VALUE_OF_KIND[kind]) if consistent or draw(st.booleans()) else draw(st.one_of(*VALUE_OF_KIND.values()))
        rows.append((draw(st.integers(0, max(count - 1, 0))), draw(st.integers(0, len(KEYS) - 1)), int(kind), value))
    if count == 0:
        rows = []
    return count, rows


def both(count: int, rows: list) -> tuple[TypedStats, ListStats]:
    event = np.asarray([r[0] for r in rows], dtype=np.int64)
    key = np.asarray([r[1] for r in rows], dtype=np.int32)
    kind = np.asarray([r[2] for r in rows], dtype=np.int8)
    values = [r[3] for r in rows]
    order = np.arange(count, dtype=np.int64)
    return TypedStats(event, key, kind, values, KEYS, order), ListStats(event, key, kind, values, KEYS, order)


def assert_same_store(new, old, count: int) -> None:
    assert len(new) == len(old) == count
    for row in range(count):
        assert same(new.stats(row), old.stats(row))
        assert new.raw(row) == old.raw(row)
        for name in KEYS:
            assert same(new.value(row, name), old.value(row, name))
    # Many rows' raw stats in one JSON array (memory_profile's bulk read), in any order.
    picked = np.random.default_rng(count).permutation(count)
    assert msgspec.json.decode(new.raw_array(picked)) == [msgspec.json.decode(old.raw(row)) for row in picked.tolist()]
    # Many rows' stats in one pass, in any order, a row twice, rows with no stats among them.
    twice = np.concatenate((picked, picked[:1]))
    assert same(new.stats_of(twice), [old.stats(row) for row in twice.tolist()])
    assert new.stats_of(np.zeros(0, dtype=np.int64)) == []
    some = {"tf_op", "ratio", "absent"}
    assert same(new.stats_of(twice, some), [[stat for stat in old.stats(row) if stat.name in some] for row in twice.tolist()])
    for name in [*KEYS, "absent"]:
        new_rows, new_values = new.column(name)
        old_rows, old_values = old.column(name)
        assert same(new_rows, old_rows) and same(new_values, old_values), name


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(data=entries(), permutation_seed=st.integers(0, 2**32 - 1))
def test_typed_columns_behave_as_a_list_of_values(data, permutation_seed: int):
    count, rows = data
    new, old = both(count, rows)
    assert_same_store(new, old, count)
    permutation = np.random.default_rng(permutation_seed).permutation(count)
    assert_same_store(new.take(permutation), old.take(permutation), count)
    if count:
        picked = permutation[: max(1, count // 2)]
        assert_same_store(new.take(picked).take(np.arange(len(picked))[::-1]), old.take(picked).take(np.arange(len(picked))[::-1]), len(picked))


@settings(max_examples=100, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=entries(consistent=False))
def test_a_value_its_kind_cannot_hold_is_given_back_as_it_was(data):
    """A caller's mistake (a str under INT64, an int past int64...) is kept, not mangled."""
    count, rows = data
    new, old = both(count, rows)
    assert_same_store(new, old, count)


def test_from_columns_matches_python_values():
    """The reader's columns (bits, a text blob, ref names as extra texts, identity rows)."""
    values = [5, -1, 2**64 - 1, 1.5, "é", b"\x00\xff", "ref name"]
    kinds = [StatKind.INT64, StatKind.INT64, StatKind.UINT64, StatKind.DOUBLE, StatKind.STR, StatKind.BYTES, StatKind.STR]
    event = np.asarray([0, 0, 1, 1, 2, 2, 3], dtype=np.int64)
    key = np.asarray([0, 1, 1, 5, 2, 4, 2], dtype=np.int32)
    bits = np.asarray([5, -1, -1, struct.unpack("<q", struct.pack("<d", 1.5))[0], 0, 1, 2], dtype=np.int64)
    texts = TextValues("é".encode() + b"\x00\xff", np.asarray([0, 2, 4], dtype=np.int64)).with_extra(["ref name"])
    fast = TypedStats.from_columns(event, key, np.asarray(kinds, dtype=np.int8), bits, texts, KEYS, 5)
    _, old = both(5, [(int(e), int(k), int(kind), v) for e, k, kind, v in zip(event, key, kinds, values)])
    assert_same_store(fast, old, 5)
    permutation = np.asarray([4, 2, 0, 3, 1])
    assert_same_store(fast.take(permutation), old.take(permutation), 5)
    assert fast.nbytes < 200


def test_bulk_reads_of_a_hand_built_store():
    """stats_of and column over strings, bytes, ints, floats, shared (extra) texts and rows
    without stats, against values written out by hand."""
    # Rows 0..4: row 0 an int and a string, row 1 nothing, row 2 a double and bytes, row 3
    # a shared text (extra value 3 = the blob's 3 texts + 0), row 4 a string and a uint64.
    event = np.asarray([0, 0, 2, 2, 3, 4, 4], dtype=np.int64)
    key = np.asarray([0, 2, 5, 4, 2, 2, 1], dtype=np.int32)
    kinds = [StatKind.INT64, StatKind.STR, StatKind.DOUBLE, StatKind.BYTES, StatKind.STR, StatKind.STR, StatKind.UINT64]
    bits = np.asarray([7, 0, struct.unpack("<q", struct.pack("<d", 0.25))[0], 1, 3, 2, -2], dtype=np.int64)
    texts = TextValues(b"ab" + b"\x01" + "ü".encode(), np.asarray([0, 2, 3, 5], dtype=np.int64)).with_extra(["shared"])
    store = TypedStats.from_columns(event, key, np.asarray(kinds, dtype=np.int8), bits, texts, KEYS, 5)
    expected = [
        [Stat("correlation_id", StatKind.INT64, 7), Stat("tf_op", StatKind.STR, "ab")],
        [],
        [Stat("ratio", StatKind.DOUBLE, 0.25), Stat("bytes", StatKind.BYTES, b"\x01")],
        [Stat("tf_op", StatKind.STR, "shared")],
        [Stat("tf_op", StatKind.STR, "ü"), Stat("flops", StatKind.UINT64, 2**64 - 2)],
    ]
    assert same([store.stats(row) for row in range(5)], expected)
    assert same(store.stats_of(np.asarray([4, 1, 0, 3, 2, 4])), [expected[i] for i in (4, 1, 0, 3, 2, 4)])
    # Only the stats asked for: row 2 keeps its bytes, rows 0 and 4 lose their int and uint64.
    assert same(store.stats_of(np.asarray([0, 1, 2, 4]), {"tf_op", "bytes"}), [[expected[0][1]], [], [expected[2][1]], [expected[4][0]]])
    rows, values = store.column("tf_op")
    assert rows.tolist() == [0, 3, 4] and values == ["ab", "shared", "ü"]
    # Reordered: row i of the view is row [3, 0, 1][i] of the store.
    view = store.take(np.asarray([3, 0, 1]))
    assert same(view.stats_of(np.asarray([0, 1, 2])), [expected[3], expected[0], expected[1]])
    assert view.column("tf_op")[0].tolist() == [1, 0] and view.column("tf_op")[1] == ["ab", "shared"]
    assert texts.get_many(np.asarray([3, 1, 0]), StatKind.BYTES) == ["shared", b"\x01", b"ab"]


def test_stats_of_a_json_store_reads_row_by_row():
    """The module's stats_of over a store of JSON args (no typed columns): each row's args
    translated, only the keys asked for, a row without args empty."""
    blob = b'{"a": 1, "b": "x"}{"b": 2.5}'
    store = JsonStats(blob, np.asarray([0, 18, 18]), np.asarray([18, 18, 28]))
    assert same(
        stats_of(store, np.asarray([2, 0, 1]), ["n2", "n0", "n1"]),
        [[Stat("b", StatKind.DOUBLE, 2.5)], [Stat("a", StatKind.INT64, 1), Stat("b", StatKind.STR, "x")], []],
    )
    assert same(stats_of(store, np.asarray([0, 2]), ["n0", "n2"], {"a"}), [[Stat("a", StatKind.INT64, 1)], []])


def test_bulk_stats_of_every_plane_of_the_shared_xspace():
    """On the real TPU profile, each plane's stats of all its rows in one pass (reversed,
    so the searches are not merely sequential) equal its per-row stats."""
    profile = load(shared(TPU))
    checked = 0
    for plane in profile.planes:
        if not isinstance(plane.stats, TypedStats):
            continue
        rows = np.arange(len(plane.stats))[::-1].copy()
        assert same(plane.stats.stats_of(rows), [plane.stats.stats(row) for row in rows.tolist()]), plane.name
        checked += plane.stats.entry_count
    assert checked > 0


def test_uint64_values_keep_their_64_bits():
    new, _ = both(1, [(0, 1, int(StatKind.UINT64), 2**64 - 1), (0, 0, int(StatKind.UINT64), INT64_MAX + 1)])
    assert [s.value for s in new.stats(0)] == [2**64 - 1, INT64_MAX + 1]
