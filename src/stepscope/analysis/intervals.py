"""Interval arithmetic on integer picosecond timelines, vectorised.

Busy time, the step-time breakdown and device idle time are all measures of unions of
intervals; computing them as exact integer set operations (not by summing durations,
which double-counts overlaps) is what makes the parts add up to the whole, to the
picosecond.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Union:
    """Disjoint, sorted intervals [start, end)."""

    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]

    @classmethod
    def of(cls, start: np.ndarray, end: np.ndarray) -> Union:
        """The union of possibly overlapping intervals; empty ones are dropped."""
        start = np.asarray(start, dtype=np.int64)
        end = np.asarray(end, dtype=np.int64)
        keep = end > start
        if not keep.all():
            start, end = start[keep], end[keep]
        if not len(start):
            return cls(start, end)
        if not (start[1:] >= start[:-1]).all():  # one line's events come sorted: no sort
            order = np.argsort(start, kind="stable")
            start, end = start[order], end[order]
        reach = np.maximum.accumulate(end)
        # A new interval begins where the next start is past everything so far.
        breaks = np.flatnonzero(start[1:] > reach[:-1]) + 1
        first = np.concatenate(([0], breaks))
        last = np.concatenate((breaks - 1, [len(start) - 1]))
        return cls(start[first], reach[last])

    @classmethod
    def empty(cls) -> Union:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))

    def __or__(self, other: Union) -> Union:
        return Union.of(np.concatenate((self.start, other.start)), np.concatenate((self.end, other.end)))

    @property
    def total(self) -> int:
        return int((self.end - self.start).sum())

    def covered(self, lo: npt.ArrayLike, hi: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """For each window [lo[i], hi[i]), how much of it the union covers (int64 ps)."""
        return self._cumulative(np.asarray(hi, dtype=np.int64)) - self._cumulative(np.asarray(lo, dtype=np.int64))

    def _cumulative(self, t: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Covered length in (-inf, t)."""
        if not len(self.start):
            return np.zeros(len(t), dtype=np.int64)
        lengths = self.end - self.start
        before = np.concatenate(([0], np.cumsum(lengths)))  # covered by intervals [0, k)
        k = np.searchsorted(self.start, t, "right")  # intervals starting at or before t
        inside = np.where(k > 0, np.clip(t - self.start[np.maximum(k - 1, 0)], 0, lengths[np.maximum(k - 1, 0)]), 0)
        return before[np.maximum(k - 1, 0)] * (k > 0) + inside
