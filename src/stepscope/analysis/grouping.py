"""Group-by over numpy columns: integer codes for strings, groups numbered in first-seen order,
and exact integer sums, minima and maxima per group.

The tables (kernel_stats, framework_op_stats, the overview's top kernels) group up to
millions of events by a few strings each. A Python dict keyed by a tuple per event cost
seconds on a 1M-event profile; here each string column becomes integer codes once (a dict
over the distinct strings, or over a small lookup table such as the plane's event
metadata), the codes are combined into one integer key per event, and numpy does the rest.

Groups are numbered in the order their first member appears, as a dict's insertion order
would number them, so a stable sort that breaks ties by "first seen first" gives the same
rows as the per-event loops did. Sums over integer picoseconds stay int64 (exact), never
float weights.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import cast

import numpy as np
import numpy.typing as npt


def factorize(values: Sequence[Hashable], table: dict[Hashable, int] | None = None) -> tuple[npt.NDArray[np.int64], dict[Hashable, int]]:
    """Each value's code in ``table`` (value -> code, extended in first-seen order; a new
    dict when None): equal values share a code, as dict keys do. ``values`` a list (a
    numpy object array's ``tolist()``: iterating the array itself is several times slower)."""
    found: dict[Hashable, int] = {} if table is None else table
    setdefault = found.setdefault
    codes = np.asarray([setdefault(value, len(found)) for value in values], dtype=np.int64)
    return codes, found


@dataclass(frozen=True)
class Coded:
    """A string (or other hashable) column as codes: ``values[codes[i]]`` is entry ``i``;
    ``values`` are distinct, in first-seen order."""

    codes: npt.NDArray[np.int64]
    values: list[str]

    @cached_property
    def _table(self) -> npt.NDArray[np.object_]:
        table: npt.NDArray[np.object_] = np.empty(len(self.values), dtype=object)
        table[:] = self.values
        return table

    def at(self, rows: np.ndarray | slice) -> npt.NDArray[np.object_]:
        """The values of entries ``rows``, as an object array."""
        column: npt.NDArray[np.object_] = self._table[self.codes[rows]]
        return column


class Labels:
    """A string column being built as codes into a growing table of distinct values, where
    values come per event type (a plane's metadata: a few hundred strings for a million
    events) or per row; ``column`` gives the object array the tables show, ``coded`` the
    codes the group-bys read, so nobody hashes a string per event to get them back."""

    def __init__(self, size: int) -> None:
        self.codes = np.zeros(size, dtype=np.int64)
        self.table: dict[Hashable, int] = {}

    @classmethod
    def per_kind(cls, kind_values: Sequence[Hashable], kinds: np.ndarray) -> Labels:
        """Event ``i`` gets ``kind_values[kinds[i]]``."""
        labels = cls(len(kinds))
        labels.assign_kinds(np.arange(len(kinds)), kind_values, kinds)
        return labels

    def assign_kinds(self, rows: np.ndarray, kind_values: Sequence[Hashable], kinds: np.ndarray) -> None:
        """Rows ``rows`` get ``kind_values[kinds[j]]`` (``kinds`` one per row)."""
        if len(rows):
            self.codes[rows] = factorize(kind_values, self.table)[0][kinds]

    def assign(self, rows: np.ndarray, values: Sequence[Hashable]) -> None:
        """Row ``rows[j]`` gets ``values[j]``."""
        if len(rows):
            self.codes[rows] = factorize(values, self.table)[0]

    def values(self) -> list[str]:
        return cast(list[str], list(self.table))


@dataclass(frozen=True)
class Groups:
    """``group[i]`` is member ``i``'s group (0 .. count-1, numbered by first appearance);
    ``first[g]`` the index of group ``g``'s first member; ``size[g]`` its member count."""

    group: npt.NDArray[np.int64]
    first: npt.NDArray[np.int64]
    size: npt.NDArray[np.int64]

    @classmethod
    def of(cls, *keys: npt.NDArray[np.int64]) -> Groups:
        """Members with equal codes in every key column form one group."""
        if not keys or not len(keys[0]):
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty)
        key = _combined([np.asarray(column, dtype=np.int64) for column in keys])
        size = len(key)
        if key.dtype == np.int64 and int(key.max()) < max(4 * size, 1 << 16):
            # Few possible keys: each key's first member by a scatter-min, no sort of members.
            first_of_key = np.full(int(key.max()) + 1, size, dtype=np.int64)
            np.minimum.at(first_of_key, key, np.arange(size, dtype=np.int64))
            present = np.flatnonzero(first_of_key < size)
            by_first = present[np.argsort(first_of_key[present], kind="stable")]
            rank = np.full(len(first_of_key), -1, dtype=np.int64)
            rank[by_first] = np.arange(len(by_first), dtype=np.int64)
            group = rank[key]
            first = first_of_key[by_first]
        else:
            _, first_sorted, inverse = np.unique(key, return_index=True, return_inverse=True)
            # np.unique numbers groups by key order; renumber them by first appearance.
            order = np.argsort(first_sorted, kind="stable")
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order), dtype=np.int64)
            group = rank[inverse.reshape(-1)]
            first = first_sorted[order].astype(np.int64)
        return cls(group, first, np.bincount(group, minlength=len(first)).astype(np.int64))

    def __len__(self) -> int:
        return len(self.first)

    @cached_property
    def _order(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Members sorted by group, and where each group starts in that order."""
        starts = np.concatenate(([0], np.cumsum(self.size)[:-1])).astype(np.int64)
        # A stable sort of 16-bit codes is a radix sort: linear, several times faster.
        group = self.group.astype(np.uint16) if len(self) <= 1 << 16 else self.group
        return np.argsort(group, kind="stable"), starts

    def _sorted(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order, starts = self._order
        return np.asarray(values)[order], starts

    def sum(self, values: np.ndarray) -> npt.NDArray[np.int64]:
        """Per group, the exact int64 sum of ``values`` (integers)."""
        if not len(self):
            return np.zeros(0, dtype=np.int64)
        ordered, starts = self._sorted(np.asarray(values, dtype=np.int64))
        return np.add.reduceat(ordered, starts)

    def min(self, values: np.ndarray) -> np.ndarray:
        if not len(self):
            return np.zeros(0, dtype=np.asarray(values).dtype)
        ordered, starts = self._sorted(values)
        return np.minimum.reduceat(ordered, starts)

    def max(self, values: np.ndarray) -> np.ndarray:
        if not len(self):
            return np.zeros(0, dtype=np.asarray(values).dtype)
        ordered, starts = self._sorted(values)
        return np.maximum.reduceat(ordered, starts)


@dataclass(frozen=True)
class KeyTable:
    """An int -> int dict as two arrays (``keys`` sorted and distinct, ``values`` beside
    them), looked up a whole column at a time: the external id -> launching op maps were
    dicts built and read one event at a time, 0.1 s of a 1M-event profile's tools."""

    keys: npt.NDArray[np.int64]
    values: npt.NDArray[np.int64]

    @classmethod
    def last_of(cls, keys: np.ndarray, values: np.ndarray) -> KeyTable:
        """Each distinct key with the value of its last occurrence, as
        ``dict(zip(keys, values))`` keeps it."""
        keys, values = np.asarray(keys, dtype=np.int64), np.asarray(values, dtype=np.int64)
        # np.unique's index is a key's first place (its sort is stable): in the reversed
        # column, that is the last occurrence.
        distinct, first_reversed = np.unique(keys[::-1], return_index=True)
        return cls(distinct, values[::-1][first_reversed])

    @classmethod
    def empty(cls) -> KeyTable:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.keys)

    def get(self, queries: np.ndarray, missing: int) -> npt.NDArray[np.int64]:
        """Per query, its key's value, or ``missing`` where the key is absent."""
        queries = np.asarray(queries, dtype=np.int64)
        if not len(self.keys):
            return np.full(len(queries), missing, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.keys, queries), len(self.keys) - 1)
        return np.where(self.keys[at] == queries, self.values[at], missing)


def _combined(keys: list[npt.NDArray[np.int64]]) -> np.ndarray:
    """One int64 per member that is equal exactly where all its codes are (mixed radix);
    rows of codes (unique over axis 1) where the radix product would overflow."""
    combined = np.zeros(len(keys[0]), dtype=np.int64)
    scale = 1
    for key in reversed(keys):
        if len(key) and int(key.min()) < 0:
            break
        radix = int(key.max()) + 1 if len(key) else 1
        if scale * radix >= 2**62:
            break
        combined += key * scale
        scale *= radix
    else:
        return combined
    rows = np.ascontiguousarray(np.stack(keys, axis=1))
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).reshape(-1)


def take(table: Sequence[object], codes: np.ndarray) -> list[object]:
    """``[table[c] for c in codes]``, for the few places that need the values back."""
    return [table[code] for code in codes.tolist()]
