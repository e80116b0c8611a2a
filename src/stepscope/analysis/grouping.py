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

    @classmethod
    def of(cls, column: np.ndarray) -> Coded:
        codes, table = factorize(column.tolist())
        return cls(codes, cast(list[str], list(table)))


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

    def column(self, rows: np.ndarray) -> npt.NDArray[np.object_]:
        """The rows' values as an object array."""
        table: npt.NDArray[np.object_] = np.empty(len(self.table), dtype=object)
        table[:] = self.values()
        column: npt.NDArray[np.object_] = table[self.codes[rows]]
        return column


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
