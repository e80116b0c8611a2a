"""How much a per-step figure changed between two runs, and whether that is more than noise.

Step times vary from step to step (a garbage collection, a page fault, another process on
the core), so two runs of the same code never read the same mean. A change is reported
with a confidence interval from the per-step samples: the percentile bootstrap of the
difference of the means. Each run's steady-state steps (``step_outliers``) are resampled
with replacement ``RESAMPLES`` times, independently (the runs are two samples, not pairs:
step 7 of one run did not see the same noise as step 7 of the other), and the middle
``CONFIDENCE`` of the resampled differences (and ratios, for the percentages) is the
interval. The change is significant when the interval excludes 0.

Why the bootstrap and not a t-test or Mann-Whitney: step times are skewed (a slow tail),
so a normal interval is wrong on them, and scipy is not a dependency; the bootstrap needs
only numpy and says the same thing in the units the user reads. The generator has a
fixed seed, so the same two profiles always give the same interval and the same verdict
(a CI gate must not flip on a rerun).

With fewer than ``MIN_SAMPLES`` steps in either run there is no spread to measure: the
interval is null and ``significant`` is null (unknown); the gate treats that as a real
change, since a profile of one step cannot show it is noise.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np
import numpy.typing as npt

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0
MIN_SAMPLES = 2
# Resamples drawn per batch: bounds the index array at CHUNK x steps (a profile of 10,000
# steps needs 16 MB per batch rather than 160 MB at once).
CHUNK = 200


class Point(TypedDict):
    """One figure of both runs and its change (``change_percent``: null when base is 0)."""

    base: float
    new: float
    change: float  # new - base
    change_percent: float | None  # 100 * (new - base) / base


class Change(Point):
    """A mean over steps and its change, with the bootstrap interval (null: too few steps)."""

    ci_low: float | None  # of the change, in the figure's unit
    ci_high: float | None
    ci_low_percent: float | None  # of the change relative to the base mean
    ci_high_percent: float | None
    significant: bool | None  # the interval excludes 0; null: too few steps to tell


def relative(change: float, base: float) -> float | None:
    """100 * change / base; None when the base is 0 (no percentage of nothing)."""
    return 100.0 * change / base if base else None


def point(base: float, new: float) -> Point:
    return Point(base=base, new=new, change=new - base, change_percent=relative(new - base, base))


def _resampled_means(samples: npt.NDArray[np.float64], rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """``RESAMPLES`` means of ``samples`` resampled with replacement."""
    count = len(samples)
    means = np.empty(RESAMPLES, dtype=np.float64)
    for first in range(0, RESAMPLES, CHUNK):
        size = min(CHUNK, RESAMPLES - first)
        means[first : first + size] = samples[rng.integers(0, count, (size, count))].mean(axis=1)
    return means


def mean_change(base_samples: npt.ArrayLike, new_samples: npt.ArrayLike) -> Change:
    """The change of the mean from ``base_samples`` to ``new_samples`` (see the module
    docstring). An empty side reads 0 and has no interval."""
    base = np.asarray(base_samples, dtype=np.float64)
    new = np.asarray(new_samples, dtype=np.float64)
    base_mean = float(base.mean()) if len(base) else 0.0
    new_mean = float(new.mean()) if len(new) else 0.0
    middle = point(base_mean, new_mean)
    if len(base) < MIN_SAMPLES or len(new) < MIN_SAMPLES:
        return Change(**middle, ci_low=None, ci_high=None, ci_low_percent=None, ci_high_percent=None, significant=None)
    rng = np.random.default_rng(SEED)
    base_means = _resampled_means(base, rng)
    new_means = _resampled_means(new, rng)
    tails = [50 * (1 - CONFIDENCE), 100 - 50 * (1 - CONFIDENCE)]
    low, high = (float(value) for value in np.percentile(new_means - base_means, tails))
    if base_mean > 0 and (base_means > 0).all():
        low_percent, high_percent = (float(value) for value in np.percentile(100 * (new_means / base_means - 1), tails))
        ci_percent: tuple[float | None, float | None] = (low_percent, high_percent)
    else:
        ci_percent = (None, None)
    return Change(
        **middle,
        ci_low=low,
        ci_high=high,
        ci_low_percent=ci_percent[0],
        ci_high_percent=ci_percent[1],
        significant=bool(low > 0 or high < 0),
    )
