"""The column coders' shortcuts give what the plain definitions give.

- ``_KeyCoder`` codes (phase, name, category, pid, tid) as one key per event; each field
  must come out as that field coded on its own: codes in first-seen order of the field's
  values, equal values (1, 1.0, True) one code, unhashable values by their JSON text.
  Reference: a dict per field, filled in order by hand.
- ``first_seen`` renumbers codes as ``factorize`` numbers the values they stand for.
- ``unique_codes`` counts where np.unique sorts; reference: a dict walk of the codes.
- ``_exact_units`` takes JSON integer timestamps as they are; reference:
  ``decimal_units`` reading the same numbers' digits.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import msgspec
import numpy as np

from stepscope.trace.formats.chrome import columns
from stepscope.trace.stat_types import INT64_MAX

FIELDS = ("ph", "name", "cat", "pid", "tid")
VALUES = ["X", "i", "a", "b", 1, 1.0, True, 0, False, None, 2**70, [1, 2], {"k": 1}, "[1, 2]", "7", 7, 7.5]


def _reference(values: list) -> tuple[list[int], list]:
    index: dict = {}
    codes = []
    for value in values:
        key = msgspec.json.encode(value).decode() if isinstance(value, (list, dict)) else value
        codes.append(index.setdefault(key, len(index)))
    return codes, list(index)


def test_fields_coded_together_come_out_as_each_coded_alone():
    rng = random.Random(4)
    events = [SimpleNamespace(**{f: rng.choice(VALUES[: rng.randint(2, len(VALUES))]) for f in FIELDS}) for _ in range(3000)]
    coder = columns._KeyCoder(FIELDS)
    for lo in range(0, len(events), 256):  # batches: keys and values first seen in later ones too
        coder.add(events[lo : lo + 256])
    coded = coder.finish({})
    for name in FIELDS:
        codes, values = _reference([getattr(e, name) for e in events])
        assert coded[name].codes.tolist() == codes, name
        assert [(type(v), v) for v in coded[name].values] == [(type(v), v) for v in values], name


def test_nan_values_get_codes_as_alone():
    # Three NaN objects (as a decoder makes them) are three values, NaN != NaN; one object
    # twice is one value (a dict finds it by identity).
    shared = float("nan")
    names = [float("nan"), float("nan"), shared, shared, math.inf]
    coder = columns._KeyCoder(FIELDS)
    coder.add([SimpleNamespace(ph="X", name=name, cat="c", pid=1, tid=1) for name in names])
    assert coder.finish({})["name"].codes.tolist() == _reference(names)[0] == [0, 1, 2, 2, 3]


def test_integer_timestamps_are_the_units_their_digits_give():
    bound = (INT64_MAX - 1000) // 1000
    values = [2**43, 1623212388426902, bound, bound + 1, -(2**45), 2**53 + 1, 10**16]
    texts = [msgspec.Raw(str(v).encode()) for v in values]
    rows = np.arange(len(values))
    got, got_valid = columns._exact_units(values, texts, rows)
    expected, expected_valid = columns.decimal_units(texts, 0, 1000)
    assert got_valid.tolist() == expected_valid.tolist() == [True, True, True, False, False, True, False]
    assert got[got_valid].tolist() == expected[expected_valid].tolist()
    assert got[2] == bound * 1000  # hand check: the largest kept


def test_integers_past_int64_are_read_from_their_digits():
    values = [2**43, 2**64]
    texts = [msgspec.Raw(str(v).encode()) for v in values]
    got, valid = columns._exact_units(values, texts, np.arange(2))
    assert valid.tolist() == [True, False] and got[0] == 2**43 * 1000


def test_first_seen_renumbers_codes_as_factorize_numbers_their_values():
    # Codes standing for the values "c", "a", "c", "z", "a", "q", "z" (table index 2, 0, ...):
    # factorize of those values gives 0, 1, 0, 2, 1, 3, 2 and the values c, a, z, q.
    table = ["a", "b", "c", "q", "z"]
    codes = np.array([2, 0, 2, 4, 0, 3, 4])
    renumbered, used = columns.first_seen(codes)
    expected_codes, expected_values = _reference([table[c] for c in codes.tolist()])
    assert renumbered.tolist() == expected_codes == [0, 1, 0, 2, 1, 3, 2]
    assert [table[c] for c in used.tolist()] == expected_values == ["c", "a", "z", "q"]
    empty, none_used = columns.first_seen(np.zeros(0, dtype=np.int64))
    assert empty.tolist() == [] and none_used.tolist() == []


def _unique_by_hand(codes: list[int]) -> tuple[list[int], list[int], list[int]]:
    first: dict[int, int] = {}
    for row, code in enumerate(codes):
        first.setdefault(code, row)
    used = sorted(first)
    rank = {code: index for index, code in enumerate(used)}
    return used, [first[code] for code in used], [rank[code] for code in codes]


def test_unique_codes_by_counting_and_by_sorting_is_the_walk_by_hand():
    # Counted: a range of 50 for 2,000 codes; sorted: a range of 10**12 for 300 (past
    # 4 per code plus the floor); one code; none.
    rng = random.Random(5)
    cases = [
        ([rng.randrange(50) for _ in range(2000)], 50),
        ([rng.randrange(10**12) for _ in range(300)] + [7, 7], 10**12),
        ([3], 4),
        ([], 9),
    ]
    for values, size in cases:
        used, first, inverse = columns.unique_codes(np.asarray(values, dtype=np.int64), size)
        assert (used.tolist(), first.tolist(), inverse.tolist()) == _unique_by_hand(values)
        assert used.dtype == np.int64 and inverse.ndim == 1
    # The hand-checked case: codes 5, 2, 5, 9 -> used 2, 5, 9 first seen at 1, 0, 3.
    used, first, inverse = columns.unique_codes(np.array([5, 2, 5, 9]), 10)
    assert used.tolist() == [2, 5, 9] and first.tolist() == [1, 0, 3] and inverse.tolist() == [1, 0, 1, 2]


def test_int64_mask_and_or_agree_with_is_int64_value_by_value():
    # Reference: is_int64 of each value on its own (an int within [-2**63, 2**63 - 1]; not
    # None, bool, str or float); int64_or then keeps those and puts the default elsewhere.
    cases = [
        [1, None, 3],  # ints and None: the shortcut
        [None, 2**63, None, -(2**63)],  # 2**63 is one past int64's top; -2**63 its bottom
        [7, 8],
        [None],
        [],
        [1, True, "7", 5.0, 2**70, None],  # any other type: value by value
    ]
    for values in cases:
        expected = [type(v) is int and -(2**63) <= v <= 2**63 - 1 for v in values]
        assert columns.int64_mask(values).tolist() == expected
        kept = columns.int64_or(values, -5)
        assert kept.tolist() == [v if ok else -5 for v, ok in zip(values, expected)]
