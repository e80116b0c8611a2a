"""An independent reference for interval unions, for tests that check stepscope's busy
times (``analysis/intervals.Union``) against the raw events: a plain sweep in start order."""

from __future__ import annotations

from collections.abc import Iterable


def union_length(intervals: Iterable[tuple[float, float]]) -> float:
    """The length of a union of [start, end) intervals (0 for none; an int for ints)."""
    total: float = 0
    reach: float | None = None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total, reach = total + end - start, end
        elif end > reach:
            total, reach = total + end - reach, end
    return total
