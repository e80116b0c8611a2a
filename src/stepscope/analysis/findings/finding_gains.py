"""What fixing each overview finding would buy: the ``critical_path`` what-if that matches
the finding, re-scheduled on this profile's dependency graph (docs/tools/critical_path.md).

- input-bound -> input free (the input waits take 0);
- kernel-launch bound -> launch calls halved (what CUDA graphs do to launch cost);
- waiting on collectives -> collectives overlapped (hidden behind compute);
- host-bound -> host compute 2x faster;
- device-bound -> kernels 2x faster.

The measured and predicted steps are the means over the overview's kept steps (the ones
its verdict reads; all steps where none is kept), so "input free: 222 -> 151 ms, -32%"
starts from the overview's own mean step time. The graph is built on the first finding
that asks, once per overview; a profile without an anchor for its steps predicts nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.findings.finding import COLLECTIVES, DEVICE, HOST, INPUT, KERNEL_LAUNCH, PredictedGain
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.paths.what_if import COLLECTIVES_OVERLAPPED, FASTER, INPUT_FREE, LAUNCH_HALVED, changes, predicted_steps

PS_PER_MS = 1e9
# How much faster the "faster" what-ifs of the host- and device-bound findings make the work.
FACTOR = 2


@dataclass(frozen=True)
class FindingChange:
    """The what-if of a finding: its change, the work it makes faster, and its short name."""

    change: str
    label: str
    faster: str = "kernel"


FINDING_CHANGES: dict[str, FindingChange] = {
    INPUT: FindingChange(INPUT_FREE, "input free"),
    KERNEL_LAUNCH: FindingChange(LAUNCH_HALVED, "launch calls halved"),
    COLLECTIVES: FindingChange(COLLECTIVES_OVERLAPPED, "collectives overlapped"),
    HOST: FindingChange(FASTER, f"host compute {FACTOR}x faster", "host_compute"),
    DEVICE: FindingChange(FASTER, f"kernels {FACTOR}x faster", "kernel"),
}


def milliseconds(ps: float) -> str:
    """Three significant figures, no exponent: 222 ms, 15.1 ms, 0.512 ms."""
    ms = ps / PS_PER_MS
    decimals = 0 if ms >= 100 else 1 if ms >= 10 else 2 if ms >= 1 else 3
    return f"{ms:,.{decimals}f}"


def gain_text(label: str, step_ps: float, predicted_ps: float) -> str:
    """'input free: 222 -> 151 ms, -32.0%' (a longer prediction reads +)."""
    gain = 100 * (step_ps - predicted_ps) / step_ps if step_ps else 0.0
    return f"{label}: {milliseconds(step_ps)} -> {milliseconds(predicted_ps)} ms, {'-' if gain >= 0 else '+'}{abs(gain):.1f}%"


def predicted_gain(stats: OpStats, finding: str) -> PredictedGain | None:
    """The finding's what-if on this profile, or None (no matching what-if, no steps,
    nothing to anchor them on). The graph is ``stats.step_graph``: built once, shared with
    the critical_path tool."""
    wanted = FINDING_CHANGES.get(finding)
    built = stats.step_graph
    if wanted is None or built is None:
        return None
    (change,) = [change for change in changes(wanted.faster, FACTOR) if change.name == wanted.change]
    predicted = predicted_steps(built.graph, built.bind, change.durations(built.graph, built.names))
    kept = stats.set_aside.kept
    if not kept.any():
        kept = np.ones(len(kept), dtype=bool)
    step_ps = float(stats.steps.duration_ps[kept].mean())
    predicted_ps = float(predicted[kept].mean())
    return PredictedGain(
        change=change.name,
        description=change.description,
        step_ps=round(step_ps),
        predicted_step_ps=round(predicted_ps),
        gain_percent=100 * (step_ps - predicted_ps) / step_ps if step_ps else 0.0,
        text=gain_text(wanted.label, step_ps, predicted_ps),
    )


def gain_predictor(stats: OpStats) -> Callable[[str], PredictedGain | None]:
    return functools.partial(predicted_gain, stats)
