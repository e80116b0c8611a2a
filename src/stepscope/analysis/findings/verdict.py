"""The overview's recommendation: what bounds the step, the numbers it rests on, where to look.

Every rule reads per-step shares of the steady-state steps (``step_outliers``: warm-up and
one-off steps set aside), so one slow first step cannot decide the verdict: a single 6.6 ms
first ``hipLaunchKernel`` (a code-object load) made a ROCm toy run "kernel-launch bound
71%" when its steady step launches nothing slow. Input uses the mean of the per-step
shares, as XProf's input-bound verdict does (and the input pipeline analyzer, so the two
pages agree); the other shares use the median of the per-step shares, robust to the odd
step the rule above did not catch.

Each sentence says which figure it quotes, because the overview's breakdown below it is of
the kept steps' summed time (a long step weighs more) and differs from a per-step mean or
median: "on average ... of a step" (mean), "in the median step" (median). The device-bound
sentence decides nothing by threshold and quotes the breakdown's own device compute share,
so it is the number shown beside it.

Rules; every one that holds gives its evidence and advice (a step can be input-bound *and*
wait for collectives), and the first one is the summary:
- input >= ``INPUT_MODERATE_PERCENT`` (moderately) / ``INPUT_HIGH_PERCENT`` (highly) comes
  first when it holds, as in XProf (the input pipeline is the first thing to fix);
- then, largest share first:
  - kernel launch >= ``KERNEL_LAUNCH_BOUND_PERCENT``;
  - collectives >= ``COLLECTIVES_BOUND_PERCENT``: collective time no compute hides (the
    breakdown gives the overlap to compute first, so this is exposed communication);
  - host compute + idle >= ``HOST_BOUND_PERCENT`` where the profile has a device (the
    device waits on the host), or always on a CPU-only profile (the host is all there is);
- when none holds, the device computes for most of the step: device-bound.
- none of them where no step was found (``Steps.inferred``: the whole profile is one
  window): a bound is a share of the step time, and a window that holds compilation,
  warm-up and the gaps between calls is no step. XProf's overview says the same
  ("No step time measured...", bottleneck "unknown"); the verdict is ``unknown``.

Each finding's evidence names the tool that shows it and, where that tool has a table, the
rows that support it: the table, the column it is sorted by (descending: biggest first) and
a search text that keeps those rows (the dashboard's table search: any text column holding
it, ignoring case). The page turns them into the tool's address (``&sort=``, ``&q=``):
- input: the input pipeline analyzer's steps, the most input-bound first;
- kernel launch: the kernels launched most often;
- collectives: the framework op of the largest collective (``classify.COLLECTIVE``) by self
  time, else the trace viewer;
- host: the host op with the most self time; device: the device op with the most self time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from stepscope.analysis.findings.loader_settings import LoaderSettings
from stepscope.analysis.steps.classify import COLLECTIVE

# XProf's input-bound thresholds: share of step time spent waiting for input.
INPUT_MODERATE_PERCENT = 5.0
INPUT_HIGH_PERCENT = 20.0
KERNEL_LAUNCH_BOUND_PERCENT = 10.0
COLLECTIVES_BOUND_PERCENT = 10.0
HOST_BOUND_PERCENT = 50.0

HIGHLY, MODERATELY, NOT = "highly", "moderately", "not"
INPUT, KERNEL_LAUNCH, COLLECTIVES, HOST, DEVICE = "input", "kernel_launch", "collectives", "host", "device"
UNKNOWN = "unknown"

# The tools that show each finding's evidence (registry names).
INPUT_TOOL = "input_pipeline_analyzer"
OPS_TOOL = "framework_op_stats"
KERNELS_TOOL = "kernel_stats"
TRACE_TOOL = "trace_viewer"


@dataclass(frozen=True)
class Shares:
    """Per-step shares of the step time (percent) the rules read, over the kept steps."""

    input: float  # mean
    kernel_launch: float  # median
    collectives: float  # median
    host: float  # median of host compute + idle
    host_compute: float  # median
    idle: float  # median
    device_compute: float  # of the kept steps' summed time: the breakdown's figure
    steps: int  # how many steps the shares are over
    has_device: bool
    steps_known: bool = True  # False: no step marker, the whole profile is one window


# The tables the evidence points into, and the columns it sorts them by.
INPUT_STEPS_TABLE, INPUT_SORT = "steps", "input_percent"
OPS_TABLE, OPS_SORT = "framework_ops", "total_self_time_us"
KERNELS_TABLE, KERNELS_SORT = "kernels", "occurrences"


@dataclass(frozen=True)
class Leads:
    """The framework_op_stats rows (op names) the findings point at, None where the profile
    has none: the op with the most self time on each side, and the collective op with the
    most self time on either side."""

    top_host_op: str | None = None
    top_device_op: str | None = None
    top_collective_op: str | None = None

    @classmethod
    def of(cls, host: list[tuple[str, str]], device: list[tuple[str, str]]) -> Leads:
        """From each side's (type, name) rows ranked by self time, biggest first; a
        collective is one whose name or type says so, the device side's first (that is
        where collective time is measured)."""
        collectives = [name for kind, name in [*device, *host] if COLLECTIVE.search(name) or COLLECTIVE.search(kind)]
        return cls(
            top_host_op=host[0][1] if host else None,
            top_device_op=device[0][1] if device else None,
            top_collective_op=collectives[0] if collectives else None,
        )


class PredictedGain(TypedDict):
    """What fixing a finding would buy: the matching critical_path what-if (finding_gains)."""

    change: str  # the what-if's name ("input_free", "launch_halved", "faster", ...)
    description: str  # what it changes, in words
    step_ps: int  # the mean kept step, measured
    predicted_step_ps: int  # the same steps re-scheduled with the change
    gain_percent: float  # (step_ps - predicted_step_ps) / step_ps, in percent
    text: str  # "input free: 222 -> 151 ms, -32.0%"


class Evidence(TypedDict):
    finding: str  # the finding's kind ("input", "kernel_launch", ...)
    text: str  # its number and how it was taken
    tool: str  # the tool that shows it (a registry name)
    table: str | None  # the table of that tool's result holding the supporting rows; null: none (the trace viewer)
    sort_key: str | None  # the column those rows are sorted by, descending
    query: str  # the search that keeps them ("" keeps every row)
    predicted: PredictedGain | None  # what fixing it would buy; null where no what-if matches


class Recommendation(TypedDict):
    """The overview's verdict (documented in docs/tools/overview_page.md)."""

    verdict: str
    input_bound: str  # "highly" | "moderately" | "not"
    input_percent: float
    kernel_launch_percent: float
    collectives_percent: float
    host_percent: float
    summary: str
    next_steps: list[str]
    evidence: list[Evidence]
    set_aside: str
    outside_steps: str  # the device work in no step, in words ("" when under the overview's threshold)


@dataclass(frozen=True)
class Finding:
    kind: str
    share: float  # percent of the step time the finding rests on
    summary: str
    evidence: str
    tool: str
    advice: tuple[str, ...]
    table: str | None = None
    sort_key: str | None = None
    query: str = ""

    def to_json(self, predicted: PredictedGain | None = None) -> Evidence:
        return Evidence(finding=self.kind, text=self.evidence, tool=self.tool, table=self.table, sort_key=self.sort_key, query=self.query, predicted=predicted)


def input_bound_verdict(input_percent: float) -> str:
    """XProf's classification of a mean input share (percent of step time)."""
    if input_percent >= INPUT_HIGH_PERCENT:
        return HIGHLY
    if input_percent >= INPUT_MODERATE_PERCENT:
        return MODERATELY
    return NOT


LOOK_AT_INPUT = "Look at the input pipeline analyzer for where the input time goes."
LOAD_IN_PARALLEL = (
    "Load data in parallel (PyTorch: DataLoader(num_workers=..., pin_memory=True); tf.data: map(num_parallel_calls=AUTOTUNE)).",
    "Prefetch the next batches while the current step runs (DataLoader prefetch_factor; dataset.prefetch(AUTOTUNE)).",
)
# A DataLoader prefetches this many batches per worker unless told otherwise (PyTorch's default).
DEFAULT_PREFETCH_FACTOR = 2


def _input_advice(loader: LoaderSettings | None, has_device: bool) -> tuple[str, ...]:
    """The next step from what the loader already does: loading in parallel is advised only
    to a loader that does not (or an unknown one); a loader with workers is told what comes
    after them, each setting it lacks by name."""
    if loader is None or not loader.parallel:
        return (LOOK_AT_INPUT, *LOAD_IN_PARALLEL)
    more = f"num_workers={2 * loader.num_workers}" if loader.num_workers else "more workers"
    advice = [
        f"The DataLoader already loads in parallel ({loader.described()}): look at the input pipeline analyzer's stages for what the workers spend their time on.",
        f"Where it is reading (storage latency) and the CPU has cores to spare: {more}.",
        "Where it is decoding and transforms: make them cheaper (cache decoded samples, lighter augmentation, transforms on the device); more workers help only while cores are free.",
    ]
    if loader.prefetch_factor is not None and loader.prefetch_factor <= DEFAULT_PREFETCH_FACTOR:
        advice.append(
            f"Prefetch deeper: prefetch_factor={loader.prefetch_factor} keeps {loader.prefetch_factor} batches per worker ready; raise it where the wait comes in bursts."
        )
    if has_device and loader.pin_memory is False:
        advice.append("pin_memory=True: batches in pinned memory copy to the GPU faster and asynchronously.")
    if loader.persistent_workers is False and loader.passes > 1:
        advice.append("persistent_workers=True keeps the workers from one epoch to the next instead of starting them again.")
    return tuple(advice)


def _findings(shares: Shares, leads: Leads, loader: LoaderSettings | None = None) -> list[Finding]:
    over = f"over {shares.steps} step(s)"
    if not shares.steps_known:
        return [
            Finding(
                UNKNOWN,
                0.0,
                "No step was found (no step marker), so stepscope cannot tell what bounds a step; the breakdown shows where the profiled time went.",
                "no step marker: the whole profiled window is one step",
                TRACE_TOOL,
                (
                    "Mark the steps (stepscope.step(), torch.profiler's schedule with prof.step(), "
                    "jax.profiler.StepTraceAnnotation, tf.profiler.experimental.Trace(step_num=...)) and profile again.",
                ),
            )
        ]
    found: list[Finding] = []
    input_bound = input_bound_verdict(shares.input)
    if input_bound != NOT:
        found.append(
            Finding(
                INPUT,
                shares.input,
                f"Your program is {input_bound} input-bound: on average {shares.input:.1f}% of a step's time is spent waiting for input.",
                f"input wait is {shares.input:.1f}% of the step time (mean of the per-step shares {over})"
                + (f"; the DataLoader has {loader.described()} (from {loader.source})" if loader else ""),
                INPUT_TOOL,
                _input_advice(loader, shares.has_device),
                INPUT_STEPS_TABLE,
                INPUT_SORT,
            )
        )
    bounds: list[Finding] = []
    if shares.kernel_launch >= KERNEL_LAUNCH_BOUND_PERCENT:
        bounds.append(
            Finding(
                KERNEL_LAUNCH,
                shares.kernel_launch,
                f"Your program is kernel-launch bound: in the median step {shares.kernel_launch:.1f}% of the time is spent launching kernels.",
                f"kernel launch calls take {shares.kernel_launch:.1f}% of the step time (median of the per-step shares {over})",
                KERNELS_TOOL,
                (
                    "Fuse small ops (torch.compile, XLA jit) or use CUDA graphs to launch fewer kernels.",
                    "Increase the batch size so each kernel does more work.",
                ),
                KERNELS_TABLE,
                KERNELS_SORT,
            )
        )
    if shares.collectives >= COLLECTIVES_BOUND_PERCENT:
        collective = leads.top_collective_op
        bounds.append(
            Finding(
                COLLECTIVES,
                shares.collectives,
                f"Your program waits on communication: in the median step {shares.collectives:.1f}% of the time is collectives that no computation hides.",
                f"collectives not overlapped with compute take {shares.collectives:.1f}% of the step time (median of the per-step shares {over})",
                TRACE_TOOL if collective is None else OPS_TOOL,
                (
                    "Overlap communication with compute: DDP gradient buckets (bucket_cap_mb), FSDP prefetching, XLA async collectives.",
                    "Communicate less often or less: gradient accumulation with no_sync(), lower-precision gradients, larger batches per rank.",
                    "Look in the trace viewer for ranks that arrive late at the collectives (stragglers).",
                ),
                None if collective is None else OPS_TABLE,
                None if collective is None else OPS_SORT,
                collective or "",
            )
        )
    if shares.has_device and shares.host >= HOST_BOUND_PERCENT:
        bounds.append(
            Finding(
                HOST,
                shares.host,
                f"Your program is host-bound: in the median step the device waits on the host for {shares.host:.1f}% of the time.",
                f"host compute and idle time take {shares.host:.1f}% of the step time with no device work (median of the per-step shares {over})",
                OPS_TOOL,
                (
                    "Look at the framework op stats (host side) for the ops that keep the host busy.",
                    "Move work to the device or overlap it with device execution.",
                ),
                OPS_TABLE,
                OPS_SORT,
                leads.top_host_op or "",
            )
        )
    elif not shares.has_device:
        bounds.append(
            Finding(
                HOST,
                shares.host,
                f"Your program is host-bound (no accelerator in this profile): in the median step host compute takes {shares.host_compute:.1f}% of the time.",
                f"no device in the profile: host compute {shares.host_compute:.1f}%, idle {shares.idle:.1f}% of the step time (medians of the per-step shares {over})",
                OPS_TOOL,
                (
                    "Look at the framework op stats for the ops that take the host's time.",
                    "Look in the trace viewer for gaps where no thread runs (locks, sleeps, I/O outside the input pipeline).",
                ),
                OPS_TABLE,
                OPS_SORT,
                leads.top_host_op or "",
            )
        )
    found += sorted(bounds, key=lambda finding: -finding.share)
    if not found:
        found.append(
            Finding(
                DEVICE,
                shares.device_compute,
                f"Your program is device-bound: the device computes for {shares.device_compute:.1f}% of the step time.",
                f"device compute takes {shares.device_compute:.1f}% of the kept steps' summed time (the breakdown's share, {over})",
                OPS_TOOL,
                ("Look at the framework op stats (device side), the kernel stats and the op profile for the most time-consuming device ops.",),
                OPS_TABLE,
                OPS_SORT,
                leads.top_device_op or "",
            )
        )
    return found


def recommendation(
    shares: Shares,
    set_aside_note: str,
    leads: Leads | None = None,
    outside_steps_note: str = "",
    loader: LoaderSettings | None = None,
    predict: Callable[[str], PredictedGain | None] | None = None,
) -> Recommendation:
    """``predict(finding kind)``: what fixing that finding would buy (``finding_gains``);
    none without it."""
    found = _findings(shares, leads or Leads(), loader)
    summary = " ".join(part for part in (found[0].summary, set_aside_note, outside_steps_note) if part)
    return Recommendation(
        verdict=found[0].kind,
        input_bound=input_bound_verdict(shares.input),
        input_percent=shares.input,
        kernel_launch_percent=shares.kernel_launch,
        collectives_percent=shares.collectives,
        host_percent=shares.host,
        summary=summary,
        next_steps=[advice for finding in found for advice in finding.advice],
        evidence=[finding.to_json(predict(finding.kind) if predict else None) for finding in found],
        set_aside=set_aside_note,
        outside_steps=outside_steps_note,
    )
