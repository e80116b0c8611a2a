"""The verdict's rules, one class each: its name, when it fires (on the ``Figures``), the
finding it makes, and where that finding goes among the others (``Placement``).

``RULES`` is the registry ``verdict`` runs, in order. Every rule that fires gives its
finding (a step can be input-bound *and* wait for collectives), and the first finding is
the summary:
- no step found (``Shares.steps_known`` False: the whole profile is one window) stands
  alone: a bound is a share of the step time, and a window that holds compilation,
  warm-up and the gaps between calls is no step. XProf's overview says the same ("No step
  time measured...", bottleneck "unknown");
- input comes first when it holds, as in XProf (the input pipeline is the first thing to
  fix);
- then kernel launch, collectives and host, largest share first (ties in registry order);
- device-bound only when no other rule fires: the device computes for most of the step.

Each sentence says which figure it quotes, because the overview's breakdown below it is of
the kept steps' summed time (a long step weighs more) and differs from a per-step mean or
median: "on average ... of a step" (mean), "in the median step" (median). The device-bound
sentence decides nothing by threshold and quotes the breakdown's own device compute share,
so it is the number shown beside it.

Each finding points at the rows that support it (``finding``): input at the input pipeline
analyzer's steps, the most input-bound first; kernel launch at the kernels launched most
often; collectives at the framework op of the largest collective (``classify.COLLECTIVE``)
by self time, else the trace viewer; host at the host op with the most self time; device
at the device op with the most self time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import ClassVar

from stepscope.analysis.findings.figures import Figures
from stepscope.analysis.findings.finding import (
    COLLECTIVES,
    DEVICE,
    HOST,
    INPUT,
    INPUT_SORT,
    INPUT_STEPS_TABLE,
    INPUT_TOOL,
    KERNEL_LAUNCH,
    KERNELS_SORT,
    KERNELS_TABLE,
    KERNELS_TOOL,
    OPS_SORT,
    OPS_TABLE,
    OPS_TOOL,
    TRACE_TOOL,
    UNKNOWN,
    Finding,
)
from stepscope.analysis.findings.input_advice import input_advice

# XProf's input-bound thresholds: share of step time spent waiting for input.
INPUT_MODERATE_PERCENT = 5.0
INPUT_HIGH_PERCENT = 20.0
KERNEL_LAUNCH_BOUND_PERCENT = 10.0
COLLECTIVES_BOUND_PERCENT = 10.0
HOST_BOUND_PERCENT = 50.0

HIGHLY, MODERATELY, NOT = "highly", "moderately", "not"

# The rules' names.
NO_STEP = "no_step"
INPUT_BOUND = "input_bound"
KERNEL_LAUNCH_BOUND = "kernel_launch_bound"
COLLECTIVES_BOUND = "collectives_bound"
HOST_BOUND = "host_bound"
HOST_ONLY = "host_only"
DEVICE_BOUND = "device_bound"


def input_bound_verdict(input_percent: float) -> str:
    """XProf's classification of a mean input share (percent of step time)."""
    if input_percent >= INPUT_HIGH_PERCENT:
        return HIGHLY
    if input_percent >= INPUT_MODERATE_PERCENT:
        return MODERATELY
    return NOT


class Placement(Enum):
    """Where a rule's finding goes among the others'."""

    ALONE = "alone"  # the only finding when it fires: the other rules' figures mean nothing
    FIRST = "first"  # ahead of the ranked findings, in registry order
    RANKED = "ranked"  # after the first ones, the largest share first
    FALLBACK = "fallback"  # only when no other rule fires


class Rule(ABC):
    """A verdict rule: ``fires`` says whether it holds on the figures, ``finding`` what it
    concludes (called only when it fires)."""

    name: ClassVar[str]
    placement: ClassVar[Placement] = Placement.RANKED

    @abstractmethod
    def fires(self, figures: Figures) -> bool: ...

    @abstractmethod
    def finding(self, figures: Figures) -> Finding: ...


class NoStepRule(Rule):
    """No step marker: the whole profiled window is one step, so no share is of a step."""

    name = NO_STEP
    placement = Placement.ALONE

    def fires(self, figures: Figures) -> bool:
        return not figures.shares.steps_known

    def finding(self, figures: Figures) -> Finding:
        return Finding(
            kind=UNKNOWN,
            share=0.0,
            summary="No step was found (no step marker), so stepscope cannot tell what bounds a step; the breakdown shows where the profiled time went.",
            evidence="no step marker: the whole profiled window is one step",
            tool=TRACE_TOOL,
            advice=(
                "Mark the steps (stepscope.step(), torch.profiler's schedule with prof.step(), "
                "jax.profiler.StepTraceAnnotation, tf.profiler.experimental.Trace(step_num=...)) and profile again.",
            ),
        )


class InputBoundRule(Rule):
    """The mean input share >= ``INPUT_MODERATE_PERCENT`` (moderately) or
    ``INPUT_HIGH_PERCENT`` (highly input-bound); the advice starts from the DataLoader's
    settings (``input_advice``)."""

    name = INPUT_BOUND
    placement = Placement.FIRST

    def fires(self, figures: Figures) -> bool:
        return input_bound_verdict(figures.shares.input) != NOT

    def finding(self, figures: Figures) -> Finding:
        shares, loader = figures.shares, figures.loader
        return Finding(
            kind=INPUT,
            share=shares.input,
            summary=f"Your program is {input_bound_verdict(shares.input)} input-bound: on average {shares.input:.1f}% of a step's time is spent waiting for input.",
            evidence=f"input wait is {shares.input:.1f}% of the step time (mean of the per-step shares {figures.over})"
            + (f"; the DataLoader has {loader.described()} (from {loader.source})" if loader else ""),
            tool=INPUT_TOOL,
            advice=input_advice(loader, shares.has_device),
            table=INPUT_STEPS_TABLE,
            sort_key=INPUT_SORT,
        )


class KernelLaunchBoundRule(Rule):
    """The median kernel-launch share >= ``KERNEL_LAUNCH_BOUND_PERCENT``."""

    name = KERNEL_LAUNCH_BOUND

    def fires(self, figures: Figures) -> bool:
        return figures.shares.kernel_launch >= KERNEL_LAUNCH_BOUND_PERCENT

    def finding(self, figures: Figures) -> Finding:
        share = figures.shares.kernel_launch
        return Finding(
            kind=KERNEL_LAUNCH,
            share=share,
            summary=f"Your program is kernel-launch bound: in the median step {share:.1f}% of the time is spent launching kernels.",
            evidence=f"kernel launch calls take {share:.1f}% of the step time (median of the per-step shares {figures.over})",
            tool=KERNELS_TOOL,
            advice=(
                "Fuse small ops (torch.compile, XLA jit) or use CUDA graphs to launch fewer kernels.",
                "Increase the batch size so each kernel does more work.",
            ),
            table=KERNELS_TABLE,
            sort_key=KERNELS_SORT,
        )


class CollectivesBoundRule(Rule):
    """The median share of collectives no compute hides >= ``COLLECTIVES_BOUND_PERCENT``
    (the breakdown gives the overlap to compute first, so this is exposed communication)."""

    name = COLLECTIVES_BOUND

    def fires(self, figures: Figures) -> bool:
        return figures.shares.collectives >= COLLECTIVES_BOUND_PERCENT

    def finding(self, figures: Figures) -> Finding:
        share, collective = figures.shares.collectives, figures.leads.top_collective_op
        return Finding(
            kind=COLLECTIVES,
            share=share,
            summary=f"Your program waits on communication: in the median step {share:.1f}% of the time is collectives that no computation hides.",
            evidence=f"collectives not overlapped with compute take {share:.1f}% of the step time (median of the per-step shares {figures.over})",
            tool=TRACE_TOOL if collective is None else OPS_TOOL,
            advice=(
                "Overlap communication with compute: DDP gradient buckets (bucket_cap_mb), FSDP prefetching, XLA async collectives.",
                "Communicate less often or less: gradient accumulation with no_sync(), lower-precision gradients, larger batches per rank.",
                "Look in the trace viewer for ranks that arrive late at the collectives (stragglers).",
            ),
            table=None if collective is None else OPS_TABLE,
            sort_key=None if collective is None else OPS_SORT,
            query=collective or "",
        )


class HostBoundRule(Rule):
    """On a profile with a device: the median share of host compute + idle (the device
    waits on the host) >= ``HOST_BOUND_PERCENT``."""

    name = HOST_BOUND

    def fires(self, figures: Figures) -> bool:
        return figures.shares.has_device and figures.shares.host >= HOST_BOUND_PERCENT

    def finding(self, figures: Figures) -> Finding:
        share = figures.shares.host
        return Finding(
            kind=HOST,
            share=share,
            summary=f"Your program is host-bound: in the median step the device waits on the host for {share:.1f}% of the time.",
            evidence=f"host compute and idle time take {share:.1f}% of the step time with no device work (median of the per-step shares {figures.over})",
            tool=OPS_TOOL,
            advice=(
                "Look at the framework op stats (host side) for the ops that keep the host busy.",
                "Move work to the device or overlap it with device execution.",
            ),
            table=OPS_TABLE,
            sort_key=OPS_SORT,
            query=figures.leads.top_host_op or "",
        )


class HostOnlyRule(Rule):
    """A CPU-only profile is host-bound whatever its shares: the host is all there is. It
    ranks by the host compute + idle share, as ``HostBoundRule``."""

    name = HOST_ONLY

    def fires(self, figures: Figures) -> bool:
        return not figures.shares.has_device

    def finding(self, figures: Figures) -> Finding:
        shares = figures.shares
        return Finding(
            kind=HOST,
            share=shares.host,
            summary=f"Your program is host-bound (no accelerator in this profile): in the median step host compute takes {shares.host_compute:.1f}% of the time.",
            evidence=f"no device in the profile: host compute {shares.host_compute:.1f}%, idle {shares.idle:.1f}% of the step time (medians of the per-step shares {figures.over})",
            tool=OPS_TOOL,
            advice=(
                "Look at the framework op stats for the ops that take the host's time.",
                "Look in the trace viewer for gaps where no thread runs (locks, sleeps, I/O outside the input pipeline).",
            ),
            table=OPS_TABLE,
            sort_key=OPS_SORT,
            query=figures.leads.top_host_op or "",
        )


class DeviceBoundRule(Rule):
    """When no other rule fires the device computes for most of the step; the sentence
    quotes the breakdown's device compute share."""

    name = DEVICE_BOUND
    placement = Placement.FALLBACK

    def fires(self, figures: Figures) -> bool:
        return True

    def finding(self, figures: Figures) -> Finding:
        share = figures.shares.device_compute
        return Finding(
            kind=DEVICE,
            share=share,
            summary=f"Your program is device-bound: the device computes for {share:.1f}% of the step time.",
            evidence=f"device compute takes {share:.1f}% of the kept steps' summed time (the breakdown's share, {figures.over})",
            tool=OPS_TOOL,
            advice=("Look at the framework op stats (device side), the kernel stats and the op profile for the most time-consuming device ops.",),
            table=OPS_TABLE,
            sort_key=OPS_SORT,
            query=figures.leads.top_device_op or "",
        )


RULES: tuple[Rule, ...] = (
    NoStepRule(),
    InputBoundRule(),
    KernelLaunchBoundRule(),
    CollectivesBoundRule(),
    HostBoundRule(),
    HostOnlyRule(),
    DeviceBoundRule(),
)
