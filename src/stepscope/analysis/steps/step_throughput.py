"""Per step: model FLOP utilisation (MFU) where the profile's FLOPs are known, and tokens/s
and samples/s where the user said what a step processed (the overview's ``throughput``).

FLOPs of a step
    The ops the roofline plots (``OpStats.roofline_ops``): XLA's cost analysis per HLO op
    execution where the profile has XLA ops, else the PyTorch ops' estimates from their
    recorded shapes (``torch_costs``). An op counts for the step whose window holds its
    start (a PyTorch op's host start: the step that launched its kernels). Ops without a
    count add nothing; a step none of whose ops has one has no FLOPs. ``flop_assumptions``
    counts the PyTorch estimates in some step that took a value for an argument the profile
    did not record (an attention whose ``is_causal`` is not recorded counts as full, so the
    MFU may be overstated, up to twice that attention's share).
MFU
    FLOPs in the step / (step time x the summed peak FLOP/s of the devices that ran the
    ops), the peaks from ``chips`` (the profile's plane stats, else the known-chips table);
    null where any of those devices' peak is unknown. The summary figure over the kept
    steps (warm-up and outliers set aside) is their FLOPs over their time, not a mean of
    ratios.
Tokens and samples
    The ``tokens`` / ``samples`` stats of the step's markers (``stepscope.step(n,
    tokens=..., samples=...)``), summed per step; per second of the step's time. Over the
    kept steps: their counts over their time.
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np

from stepscope.analysis.ops.chips import device_peaks
from stepscope.analysis.ops.torch_costs import Assumption, count_assumptions
from stepscope.analysis.opstats import OpStats
from stepscope.trace import names
from stepscope.trace.model import NO_ID, distinct_indices

XLA, SHAPES = "xla", "shapes"


class StepThroughput(TypedDict):
    step: int
    step_time_ps: int
    flops: float | None
    mfu_percent: float | None
    tokens: float | None
    tokens_per_second: float | None
    samples: float | None
    samples_per_second: float | None


class Throughput(TypedDict):
    flops_source: str  # "xla" | "shapes" | "" (no FLOP counts)
    flop_assumptions: list[Assumption]  # what the shape estimates in steps assumed
    peak_tflops_per_second: float | None  # the devices' peaks summed
    devices: list[str]  # the devices whose peaks are summed
    mfu_percent: float | None  # over the kept steps
    tokens_per_second: float | None
    samples_per_second: float | None
    steps: list[StepThroughput]


def _step_index(starts: np.ndarray, ends: np.ndarray, when: np.ndarray) -> np.ndarray:
    index = np.searchsorted(starts, when, "right") - 1
    inside = (index >= 0) & (when < ends[np.maximum(index, 0)])
    return np.where(inside, index, -1)


def _step_flops(stats: OpStats, count: int) -> tuple[np.ndarray, str, list[Assumption]]:
    """FLOPs per step (NaN where none is known), where they came from, and what the
    estimates counted in them assumed."""
    ops = stats.roofline_ops
    from_shapes = ops is not stats.xla_ops
    known = np.isfinite(ops.flops)
    if not known.any():
        return np.full(count, np.nan), "", []
    if from_shapes:
        start = stats.shape_costs.start_ps
    else:
        start = np.zeros(len(ops), dtype=np.int64)
        for plane_index in distinct_indices(ops.plane):
            here = ops.plane == plane_index
            start[here] = stats.profile.planes[plane_index].events.start_ps[ops.row[here]]
    steps = stats.steps
    index = _step_index(steps.start_ps, steps.end_ps, start)
    chosen = known & (index >= 0)
    sums = np.bincount(index[chosen], weights=ops.flops[chosen], minlength=count)
    has = np.bincount(index[chosen], minlength=count) > 0
    if not from_shapes:
        return np.where(has, sums, np.nan), XLA, []
    return np.where(has, sums, np.nan), SHAPES, count_assumptions(stats.shape_costs.assumed[chosen])


def _step_counts(stats: OpStats, stat: str, count: int) -> np.ndarray:
    """A step-marker stat summed per step (NaN where no marker of the step carries it)."""
    host = stats.profile.plane(names.HOST_PLANE)
    totals = np.full(count, np.nan)
    if host is None:
        return totals
    steps = stats.steps
    position = {int(number): i for i, number in enumerate(steps.number.tolist())}
    rows = np.flatnonzero(host.events.step_num != NO_ID)
    for row in rows.tolist():
        value = host.stats.value(row, stat, host.event_name(row))
        at = position.get(int(host.events.step_num[row]))
        if at is None or not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            continue
        totals[at] = (0.0 if math.isnan(totals[at]) else totals[at]) + float(value)
    return totals


def _per_second(amount: np.ndarray, time_ps: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(time_ps > 0, amount / (time_ps / 1e12), np.nan)


def _over(amount: np.ndarray, time_ps: np.ndarray, kept: np.ndarray) -> float | None:
    chosen = kept & np.isfinite(amount)
    seconds = time_ps[chosen].sum() / 1e12
    return float(amount[chosen].sum() / seconds) if chosen.any() and seconds > 0 else None


def _known(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def throughput(stats: OpStats) -> Throughput:
    steps = stats.steps
    count = len(steps)
    time = steps.duration_ps
    flops, source, assumptions = _step_flops(stats, count)
    ops = stats.roofline_ops
    planes = [stats.profile.planes[i] for i in distinct_indices(ops.plane[np.isfinite(ops.flops)])] if source else []
    peaks = [device_peaks(stats.profile, plane).peak_tflops for plane in planes]
    peak = float(sum(p for p in peaks if p is not None)) if planes and all(p is not None for p in peaks) else None
    mfu = _per_second(flops, time) / (peak * 1e12) * 100 if peak else np.full(count, np.nan)
    tokens, samples = _step_counts(stats, names.STEP_TOKENS, count), _step_counts(stats, names.STEP_SAMPLES, count)
    token_rate, sample_rate = _per_second(tokens, time), _per_second(samples, time)
    kept = stats.set_aside.kept
    kept_rate = _over(flops, time, kept)
    rows = [
        StepThroughput(
            step=int(steps.number[i]),
            step_time_ps=int(time[i]),
            flops=_known(flops[i]),
            mfu_percent=_known(mfu[i]),
            tokens=_known(tokens[i]),
            tokens_per_second=_known(token_rate[i]),
            samples=_known(samples[i]),
            samples_per_second=_known(sample_rate[i]),
        )
        for i in range(count)
    ]
    return Throughput(
        flops_source=source,
        flop_assumptions=assumptions,
        peak_tflops_per_second=peak,
        devices=[plane.name for plane in planes],
        mfu_percent=kept_rate / (peak * 1e12) * 100 if kept_rate is not None and peak else None,
        tokens_per_second=_over(tokens, time, kept),
        samples_per_second=_over(samples, time, kept),
        steps=rows,
    )
