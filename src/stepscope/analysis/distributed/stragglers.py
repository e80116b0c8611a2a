"""Stragglers: a rank whose step (or whose wait in collectives) is far above the other
ranks' for the same step, and the stage that made it so.

The rule, per step number and signal, over the ranks that have the step (at least
``MIN_RANKS``; with two ranks a median cannot tell which one is off): with ``median`` and
``MAD`` (median absolute deviation) of the signal over those ranks, and ``sigma = 1.4826 *
MAD`` (the MAD scaled to a normal distribution's standard deviation), a rank is a straggler
when both
- ``value - median > K_SIGMA * sigma`` (far outside the ranks' spread), and
- ``value - median > MIN_EXCESS_FRACTION * median step time`` of that step (big enough to
  matter: 1 us above identical ranks is not a straggler).
The MAD, unlike a standard deviation, is not dragged up by the straggler itself, so one
slow rank among 128 identical ones stands out however slow it is.

The stage is the breakdown category (the overview's: device compute, collectives, copies,
input, compile, kernel launch, host compute, idle) whose time in that step exceeds the
median of the other ranks' by the most.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

K_SIGMA = 3.0
MAD_TO_SIGMA = 1.4826
MIN_EXCESS_FRACTION = 0.05
MIN_RANKS = 3


@dataclass(frozen=True)
class Rule:
    k_sigma: float = K_SIGMA
    min_excess_fraction: float = MIN_EXCESS_FRACTION
    min_ranks: int = MIN_RANKS


DEFAULT_RULE = Rule()


@dataclass(frozen=True)
class Outlier:
    position: int  # index into the values given
    median: float
    threshold: float  # the excess over the median a value had to pass


def outliers(values: np.ndarray, step_median: float, rule: Rule) -> list[Outlier]:
    """The values (one per rank) that the rule calls stragglers; ``step_median`` is the
    median step time of the step, which the relative floor is a fraction of."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < rule.min_ranks:
        return []
    median = float(np.median(values))
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(values - median)))
    threshold = max(rule.k_sigma * sigma, rule.min_excess_fraction * step_median)
    return [Outlier(int(position), median, threshold) for position in np.flatnonzero(values - median > threshold).tolist()]


def late_stage(own: dict[str, int], others: list[dict[str, int]], categories: tuple[str, ...]) -> tuple[str, float]:
    """The category whose time exceeds the other ranks' median by the most, and by how much
    (ps); ties go to the earlier category in the breakdown's order."""
    best, excess = categories[0], -np.inf
    for category in categories:
        over = own[category] - float(np.median([step[category] for step in others])) if others else float(own[category])
        if over > excess:
            best, excess = category, over
    return best, float(excess)
