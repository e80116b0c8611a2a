"""Steps that are not the steady state: warm-up steps that compiled, and one-off outliers.

A profile that starts at the first call of a jitted function holds its compilation: on a
JAX CPU capture step 0 took 357 ms where the next 18 took 1.8 ms each, so the mean step
read 19.6 ms and the verdict "compile 52.7%". The user asks about the steady state, so
summary statistics, the breakdown and the verdict leave such steps out by default; the
steps stay listed, flagged with the reason, and the verdict says what was left out.

The rule compares each step with the median of the *other* steps (its baseline; with two
steps, the other one), so one slow step cannot move its own yardstick:
- ``compile``: the step compiled (its breakdown has compile time) and took more than
  ``COMPILE_FACTOR`` times its baseline;
- ``outlier``: it took more than ``OUTLIER_FACTOR`` times its baseline (a one-time code
  load, a checkpoint, a pause).
At most half of the steps can be set aside: when the rule would take more than half there
is no steady state to compare with, and nothing is set aside. Below ``MIN_STEPS`` (3) steps
nothing is: with two, "the other step" is no steady state (a real MI250 profile's two steps
were 9.29 ms, holding all the device work, and 49 us of nothing; setting the first aside
left a headline of "step 49 us, idle 100%, host-bound"). Nor is anything set aside when the
steps kept would hold no activity at all (every ps of them idle) while those set aside
hold some: the summary must rest on steps where something ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import numpy.typing as npt

from stepscope.analysis.steps.steps import Steps
from stepscope.analysis.tables import ps_to_us

COMPILED = "compile"
OUTLIER = "outlier"
KEPT = ""
COMPILE_FACTOR = 1.5
OUTLIER_FACTOR = 3.0
MIN_STEPS = 3


@dataclass(frozen=True)
class SetAside:
    """Per step: why it is left out of the summary (``KEPT`` if it is not) and its baseline."""

    reason: npt.NDArray[np.object_]  # of str
    baseline_ps: npt.NDArray[np.float64]  # the median of the other steps' durations

    @property
    def kept(self) -> npt.NDArray[np.bool_]:
        kept: npt.NDArray[np.bool_] = self.reason == KEPT  # (== of an object array is untyped)
        return kept

    def __len__(self) -> int:
        return len(self.reason)


def leave_one_out_median(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """For each i, the median of ``values`` without element i (NaN for a single value)."""
    values = np.asarray(values, dtype=np.float64)
    count = len(values)
    if count < 2:
        return np.full(count, np.nan)
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    rank = np.empty(count, dtype=np.int64)
    rank[order] = np.arange(count)
    others = count - 1

    def without(position: int) -> npt.NDArray[np.float64]:
        """The element at ``position`` of the sorted values once each step's own is removed."""
        shifted = np.where(position < rank, position, position + 1)
        return ranked[shifted]

    if others % 2:
        return without(others // 2)
    return (without(others // 2 - 1) + without(others // 2)) / 2


def set_aside(duration_ps: np.ndarray, compile_ps: np.ndarray, idle_ps: np.ndarray | None = None) -> SetAside:
    """Which steps to leave out of the summary, and why (see the module docstring);
    ``idle_ps``: each step's idle time (None: every step has activity)."""
    duration = np.asarray(duration_ps, dtype=np.float64)
    baseline = leave_one_out_median(duration)
    reason = np.full(len(duration), KEPT, dtype=object)
    if len(duration) < MIN_STEPS:
        return SetAside(reason, baseline)
    compiled = (np.asarray(compile_ps) > 0) & (duration > COMPILE_FACTOR * baseline)
    outlier = ~compiled & (duration > OUTLIER_FACTOR * baseline)
    aside = compiled | outlier
    active = duration > np.asarray(idle_ps, dtype=np.float64) if idle_ps is not None else np.ones(len(duration), dtype=bool)
    if 2 * int(aside.sum()) > len(duration) or (active[aside].any() and not active[~aside].any()):
        return SetAside(reason, baseline)
    reason[compiled] = COMPILED
    reason[outlier] = OUTLIER
    return SetAside(reason, baseline)


class SetAsideStep(TypedDict):
    step: int
    reason: str  # "compile" | "outlier"
    step_time_us: float
    compile_us: float
    baseline_us: float  # the median of the other steps


def set_aside_rows(steps: Steps, aside: SetAside, parts: dict[str, np.ndarray]) -> list[SetAsideStep]:
    """The JSON rows of the steps set aside (``parts``: the step breakdown, for compile time)."""
    return [
        SetAsideStep(
            step=int(steps.number[index]),
            reason=str(aside.reason[index]),
            step_time_us=ps_to_us(int(steps.duration_ps[index])),
            compile_us=ps_to_us(int(parts["compile"][index])),
            baseline_us=ps_to_us(float(aside.baseline_ps[index])),
        )
        for index in np.flatnonzero(~aside.kept).tolist()
    ]


def set_aside_note(rows: list[SetAsideStep]) -> str:
    """The sentence the verdicts end with: "Set aside from the statistics: step 0 compiled
    for 357.0 ms; step 9 took 5.2x the other steps' median." ("" when none was)."""
    if not rows:
        return ""
    parts = [
        f"step {row['step']} compiled for {row['compile_us'] / 1000:,.1f} ms"
        if row["reason"] == COMPILED
        else f"step {row['step']} took {row['step_time_us'] / row['baseline_us']:,.1f}x the other steps' median"
        for row in rows
    ]
    return "Set aside from the statistics: " + "; ".join(parts) + "."
