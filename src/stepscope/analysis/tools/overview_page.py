"""overview_page: step times, where each step's time went, device busy/idle, top ops,
run environment, and what to do next.

The step-time breakdown assigns every picosecond of a step's window to exactly one
category, so the parts sum to the step time exactly. Where activities overlap, the
higher-priority one claims the time (device compute first, then collectives, copies,
input, compile, kernel launch, host compute; see ``classify.Activity``); what nothing
covers is idle. Device busy time is the union of a device's activity intervals
(overlapping kernels on several streams count once), over the device's active span (the
headline) and over the profile window. On GPU profiles, ``gpus`` holds the PyTorch
TensorBoard plugin's figures (utilisation, estimated SM efficiency and achieved occupancy,
TensorCore share, top kernels) over the same active span (``gpu_metrics``).

Warm-up and one-off steps (``step_outliers``) stay in the steps table, flagged, and out of
the summary statistics, the breakdown percentages and the verdict (``verdict``); the
``_all`` variants keep every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from stepscope.analysis.findings.figures import Leads, Shares
from stepscope.analysis.findings.finding_gains import gain_predictor
from stepscope.analysis.findings.loader_settings import loader_settings
from stepscope.analysis.findings.verdict import Recommendation, recommendation
from stepscope.analysis.intervals import Union
from stepscope.analysis.ops.chips import device_name
from stepscope.analysis.ops.frameworks import frameworks
from stepscope.analysis.ops.ops import Side
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import ToolResult, tool
from stepscope.analysis.steps.breakdown import BREAKDOWN, IDLE
from stepscope.analysis.steps.classify import DEVICE_ACTIVITIES, event_activities
from stepscope.analysis.steps.gpu_metrics import GpuMetrics, gpu_metrics
from stepscope.analysis.steps.step_outliers import SetAsideStep, set_aside_note, set_aside_rows
from stepscope.analysis.steps.step_throughput import Throughput, throughput
from stepscope.analysis.steps.steps import launching_steps
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.trace import names
from stepscope.trace.model import Profile
from stepscope.trace.steps import Steps
from stepscope.trace.summary import device_names

TOOL = "overview_page"
# Device work outside every step window from this share of the busy time up is named in
# the headline (below it, rounding and the odd trailing copy).
OUTSIDE_STEPS_NOTE_PERCENT = 1.0

STEP_COLUMNS = (
    Column("step", "Step"),
    Column("step_time_us", "Step time (us)"),
    *(Column(f"{key}_us", key.replace("_", " ").capitalize() + " (us)") for key in [*BREAKDOWN.values(), IDLE]),
    Column("set_aside", "Set aside", "string"),
)
TOP_OP_COLUMNS = (
    Column("self_time_percent", "Self time %"),
    Column("cumulative_self_time_percent", "Cumulative %"),
    Column("type", "Category", "string"),
    Column("name", "Operation", "string"),
    Column("gflops_per_second", "GFLOP/s"),
)
DEVICE_COLUMNS = (
    Column("device", "Device", "string"),
    Column("busy_time_us", "Busy (us)"),
    Column("idle_time_us", "Device idle in active span (us)"),
    Column("active_span_us", "Active span (us)"),
    Column("busy_percent", "Busy % of active span"),
    Column("window_us", "Profile window (us)"),
    Column("busy_percent_of_window", "Busy % of window"),
    Column("busy_outside_steps_us", "Busy outside the steps (us)"),
)


class OverviewStep(TypedDict):
    step: int
    start_us: float
    start_ps: int  # from the profile start, exact (the trace viewer opens a step by it)
    step_time_us: float
    step_time_ps: int
    breakdown: dict[str, float]  # "<category>_us" and "<category>_ps" (exact) per category and idle
    device_time_launched_us: float  # device work the step's host ops launched, wherever it ran
    set_aside: str | None  # "compile" | "outlier" when left out of the statistics, else null


class StepStats(TypedDict):
    """Step time in microseconds over a set of steps (0 for none)."""

    mean: float
    median: float
    stddev: float
    min: float
    max: float


class DeviceTotals(TypedDict):
    busy_time_us: float
    busy_outside_steps_us: float  # busy time in no step's window (in no step's breakdown)
    busy_outside_steps_percent: float  # of the busy time
    idle_time_us: float  # device idle: the active span less the busy time (framework_op_stats' device IDLE row)
    active_span_us: float  # first device work to last
    busy_percent: float  # of the active span (the headline)
    window_us: float  # the profile window
    busy_percent_of_window: float


class DeviceBusy(DeviceTotals):
    device: str
    busy_time_ps: int
    busy_outside_steps_ps: int
    active_span_ps: int


class TopOp(TypedDict):
    self_time_percent: float
    cumulative_self_time_percent: float
    type: str
    name: str
    gflops_per_second: float | None
    self_time_us: float
    # The event name that ``name`` shortens (XLA's whole HLO text behind ``copy-done.2``),
    # "" where the name is the event's own: the page shows it on hover.
    full_name: str


class Environment(TypedDict):
    host: str
    hosts: int
    device_type: str  # "GPU", "TPU", ... of the first device plane; "CPU only" without one
    # What the profile calls the first device's chip ("NVIDIA A100-SXM4-80GB", "TPU v6 Lite":
    # chips.device_name), "" where it does not say; the diff compares it between runs.
    device_kind: str
    device_count: int
    devices: list[str]
    framework: str
    versions: dict[str, str | int | float]
    source_format: str


class Flops(TypedDict):
    device_flops: float | None
    gflops_per_second: float | None
    peak_tflops_per_second: float | None
    utilization_percent: float | None


@dataclass
class OverviewResult(ToolResult):
    step_source: str
    steps_inferred: bool
    steps: list[OverviewStep]
    step_time_us: StepStats  # over the steps kept (not set aside)
    step_time_us_all: StepStats  # over every step
    breakdown_percent: dict[str, float]  # per category and idle, share of the kept steps' time
    breakdown_percent_all: dict[str, float]
    set_aside: list[SetAsideStep]
    device: DeviceTotals  # the devices together
    devices: list[DeviceBusy]
    top_ops: list[TopOp]
    environment: Environment
    recommendation: Recommendation
    flops: Flops
    gpus: list[GpuMetrics]  # per GPU plane with kernels (``gpu_metrics``); empty without
    throughput: Throughput  # per step: MFU where FLOPs are known, tokens/s and samples/s (``step_throughput``)

    def tables(self) -> list[Table]:
        step_rows = [(s["step"], s["step_time_us"], *(s["breakdown"][f"{k}_us"] for k in [*BREAKDOWN.values(), IDLE]), s["set_aside"]) for s in self.steps]
        return [
            Table("steps", STEP_COLUMNS, step_rows),
            Table.of("devices", DEVICE_COLUMNS, self.devices),
            Table.of("top_ops", TOP_OP_COLUMNS, self.top_ops),
        ]

    def summary(self) -> list[str]:
        times = self.step_time_us
        kept = len(self.steps) - len(self.set_aside)
        lines = [
            f"{len(self.steps)} step(s) from {self.step_source}"
            + (" (no step marker found: the whole profiled window is one step)" if self.steps_inferred else "")
            + (f"; {len(self.set_aside)} set aside, statistics over the other {kept}" if self.set_aside else ""),
            f"step time: mean {times['mean']:,.1f} us, median {times['median']:,.1f}, stddev {times['stddev']:,.1f}, "
            f"min {times['min']:,.1f}, max {times['max']:,.1f}",
            "breakdown (of the kept steps' summed time; idle: no host or device activity): "
            + ", ".join(f"{k} {v:.1f}%" for k, v in self.breakdown_percent.items() if v >= 0.05),
        ]
        lines.extend(
            f"{device['device']}: busy {device['busy_percent']:.1f}% of its active span ({device['busy_percent_of_window']:.1f}% of the profile window)"
            for device in self.devices
        )
        lines.extend(_gpu_line(gpu) for gpu in self.gpus)
        lines.extend(_throughput_lines(self.throughput))
        lines.append(f"recommendation: {self.recommendation['summary']}")
        lines.extend(f"  what if {item['predicted']['text']}" for item in self.recommendation["evidence"] if item["predicted"])
        lines.extend(f"  - {step}" for step in self.recommendation["next_steps"])
        return lines


def _gpu_line(gpu: GpuMetrics) -> str:
    def shown(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}%"

    return (
        f"{gpu['device']}: GPU utilisation {gpu['utilization_percent']:.1f}% (kernels over the active span), "
        f"est. SM efficiency {shown(gpu['sm_efficiency_percent'])}, est. achieved occupancy {shown(gpu['achieved_occupancy_percent'])}, "
        f"TensorCore kernels {gpu['tensor_core_percent']:.1f}% of kernel time"
    )


def _throughput_lines(through: Throughput) -> list[str]:
    lines = []
    if through["mfu_percent"] is not None:
        where = "XLA's cost analysis" if through["flops_source"] == "xla" else "estimates from the PyTorch ops' recorded shapes"
        lines.append(
            f"MFU {through['mfu_percent']:.3g}% of {through['peak_tflops_per_second'] or 0:,.1f} TFLOP/s "
            f"({len(through['devices'])} device(s); FLOPs from {where})"
        )
        lines.extend(f"  MFU assumes, for {entry['ops']} op(s): {entry['assumption']}" for entry in through["flop_assumptions"])
    for key, label in (("tokens_per_second", "tokens/s"), ("samples_per_second", "samples/s")):
        value = through[key]  # type: ignore[literal-required]
        if value is not None:
            lines.append(f"throughput: {value:,.1f} {label}")
    return lines


def _environment(profile: Profile) -> Environment:
    info = profile.info
    framework = frameworks(profile)
    versions: dict[str, str | int | float] = {
        key: info[key] for key in ("cuda_runtime_version", "cuda_driver_version", "cupti_version", "hip_runtime_version") if key in info
    }
    devices = device_names(profile)
    kind = device_name(profile, profile.device_planes[0]) if profile.device_planes else None
    return {
        "host": profile.host,
        "hosts": 1,
        "device_type": devices[0].split(":")[1] if devices else "CPU only",
        "device_kind": kind or "",
        "device_count": len(devices),
        "devices": devices,
        "framework": framework,
        "versions": versions,
        "source_format": profile.format,
    }


def _flop_rate(stats: OpStats, devices: list[DeviceBusy]) -> Flops:
    """Device FLOP rate over the devices' busy time, and its share of the devices' peak,
    where the profile records op flops (XLA ops) and the device peak (a plane stat)."""
    profile, ops = stats.profile, stats.ops
    device_flops = ops.flops[(ops.side == Side.DEVICE) & np.isfinite(ops.flops)]
    busy_s = sum(d["busy_time_ps"] for d in devices) / 1e12
    if not len(device_flops) or busy_s <= 0:
        return {"device_flops": None, "gflops_per_second": None, "peak_tflops_per_second": None, "utilization_percent": None}
    rate = float(device_flops.sum()) / busy_s
    peaks = [
        float(stat.value)
        for plane in profile.device_planes
        for stat in plane.plane_stats
        if stat.name == names.PEAK_TERAFLOPS and isinstance(stat.value, (int, float))
    ]
    peak = sum(peaks) / len(peaks) if peaks else None
    return {
        "device_flops": float(device_flops.sum()),
        "gflops_per_second": rate / 1e9,
        "peak_tflops_per_second": peak,
        "utilization_percent": percent(rate, peak * 1e12) if peak else None,
    }


def top_operations(stats: OpStats, limit: int = 10) -> list[TopOp]:
    """The overview's top operations: the ``limit`` framework_op_stats rows with the most
    self time, from one side: the device side wherever the profile has device ops (that is
    the work the accelerator did, each kernel counted under the op that launched it), else
    the host side; the same rule for Kineto, XSpace and Chrome traces. Each row:
    ``self_time_percent`` and ``cumulative_self_time_percent`` (of that side's op self
    time, as in framework_op_stats), ``type`` (the op's type: its category for PyTorch ops,
    TensorFlow's op type, XLA's ``hlo_category``), ``name``, ``gflops_per_second`` (NaN where
    the source records no flops), ``self_time_us`` (the op's total self time) and
    ``full_name`` (``shortened_names``). Empty for a profile without ops."""
    side = Side.DEVICE if (stats.ops.side == Side.DEVICE).any() else Side.HOST
    rows = stats.op_rows(side)[:limit]
    full = shortened_names(stats.profile, {row["name"] for row in rows})
    return [
        {
            "self_time_percent": row["self_time_percent"],
            "cumulative_self_time_percent": row["cumulative_self_time_percent"],
            "type": row["type"],
            "name": row["name"],
            "gflops_per_second": row["gflops_per_second"],
            "self_time_us": row["total_self_time_us"],
            "full_name": full.get(row["name"], ""),
        }
        for row in rows
    ]


def shortened_names(profile: Profile, labels: set[str]) -> dict[str, str]:
    """The event name each of ``labels`` shortens, where one does (``EventMetadata.labels``:
    XLA names an op by its HLO text, the tables by ``copy-done.2``); the first one met,
    where ops of several programs share a label. Read from the planes' event types, not
    their events."""
    found: dict[str, str] = {}
    for plane in profile.planes:
        for label, name in zip(plane.metadata.labels, plane.metadata.names):
            if label != name and label in labels:
                found.setdefault(label, name)
    return found


def _leads(stats: OpStats) -> Leads:
    """The rows the recommendation's evidence points at, from framework_op_stats' rows."""
    host, device = ([(row["type"], row["name"]) for row in stats.op_rows(side)] for side in (Side.HOST, Side.DEVICE))
    return Leads.of(host, device)


def _stats(values: np.ndarray) -> StepStats:
    us = np.asarray(values, dtype=np.float64) / 1e6
    if not len(us):
        return StepStats(mean=0.0, median=0.0, stddev=0.0, min=0.0, max=0.0)
    return StepStats(mean=float(us.mean()), median=float(np.median(us)), stddev=float(us.std()), min=float(us.min()), max=float(us.max()))


def _breakdown_percent(parts: dict[str, np.ndarray], durations: np.ndarray, rows: np.ndarray) -> dict[str, float]:
    """Each category's share of the total step time of ``rows`` (weighted by step length)."""
    total = int(durations[rows].sum())
    return {key: percent(int(parts[key][rows].sum()), total) for key in parts}


def _per_step_percent(part: np.ndarray, durations: np.ndarray) -> np.ndarray:
    return np.asarray([percent(int(p), int(d)) for p, d in zip(part, durations)], dtype=np.float64)


def _shares(parts: dict[str, np.ndarray], durations: np.ndarray, kept: np.ndarray, has_device: bool, steps_known: bool) -> Shares:
    """The shares the verdict reads (``verdict.Shares``), over the kept steps: per-step
    means and medians for its rules; device compute as the breakdown gives it (of the kept
    steps' summed time), the one figure the device-bound sentence quotes."""
    rows = np.flatnonzero(kept)
    step_ps = durations[rows]

    def median(*keys: str) -> float:
        share = _per_step_percent(np.sum([parts[key][rows] for key in keys], axis=0), step_ps)
        return float(np.median(share)) if len(share) else 0.0

    input_share = _per_step_percent(parts["input"][rows], step_ps)
    return Shares(
        input=float(input_share.mean()) if len(input_share) else 0.0,
        kernel_launch=median("kernel_launch"),
        collectives=median("device_collectives"),
        host=median("host_compute", IDLE),
        host_compute=median("host_compute"),
        idle=median(IDLE),
        device_compute=_breakdown_percent(parts, durations, rows)["device_compute"],
        steps=len(rows),
        has_device=has_device,
        steps_known=steps_known,
    )


def _device_busy(profile: Profile, steps: Steps) -> list[DeviceBusy]:
    """Per device: busy time (the union of its device work) over its active span (first
    device work to last; the headline, as HTA and TraceLens report it) and over the whole
    profile window (which includes the profiler's own time before the first and after the
    last device event); and the busy time outside every step window, which no step's
    breakdown holds (work launched before the first step marker, or queued past the last)."""
    window = profile.span_ps
    step_windows = Union.of(steps.start_ps, steps.start_ps + steps.duration_ps)
    devices: list[DeviceBusy] = []
    for plane in profile.device_planes:
        rows = np.isin(event_activities(plane), [int(a) for a in DEVICE_ACTIVITIES])
        busy_union = Union.of(plane.events.start_ps[rows], plane.events.ends(rows))
        busy = busy_union.total
        outside = busy - int(busy_union.covered(step_windows.start, step_windows.end).sum())
        active = int(busy_union.end[-1] - busy_union.start[0]) if len(busy_union.start) else 0
        devices.append(
            {
                "device": plane.name,
                "busy_time_us": ps_to_us(busy),
                "busy_outside_steps_us": ps_to_us(outside),
                "busy_outside_steps_percent": percent(outside, busy),
                "idle_time_us": ps_to_us(active - busy),
                "active_span_us": ps_to_us(active),
                "busy_percent": percent(busy, active),
                "window_us": ps_to_us(window),
                "busy_percent_of_window": percent(busy, window),
                "busy_time_ps": busy,
                "busy_outside_steps_ps": outside,
                "active_span_ps": active,
            }
        )
    return devices


def outside_steps_note(device: DeviceTotals) -> str:
    """The headline's word on device work no step holds, from ``OUTSIDE_STEPS_NOTE_PERCENT``
    of the devices' busy time up: the breakdown and the verdict cannot see it."""
    share = device["busy_outside_steps_percent"]
    if share < OUTSIDE_STEPS_NOTE_PERCENT:
        return ""
    return f"{share:.1f}% of the device busy time ({device['busy_outside_steps_us']:,.1f} us) ran outside the profiled steps and is in no step's breakdown."


def _devices_total(devices: list[DeviceBusy], window: int) -> DeviceTotals:
    busy = sum(d["busy_time_ps"] for d in devices)
    outside = sum(d["busy_outside_steps_ps"] for d in devices)
    active = sum(d["active_span_ps"] for d in devices)
    windows = window * len(devices)
    return {
        "busy_time_us": ps_to_us(busy),
        "busy_outside_steps_us": ps_to_us(outside),
        "busy_outside_steps_percent": percent(outside, busy),
        "idle_time_us": ps_to_us(active - busy),
        "active_span_us": ps_to_us(active),
        "busy_percent": percent(busy, active),
        "window_us": ps_to_us(windows),
        "busy_percent_of_window": percent(busy, windows),
    }


@tool(
    TOOL,
    title="Overview page",
    order=10,
    description="How long is a step, where does its time go, and what should I do first?",
)
def overview_page(stats: OpStats) -> OverviewResult:
    profile, steps, parts, aside = stats.profile, stats.steps, stats.breakdown, stats.set_aside
    kept = aside.kept
    launched = np.zeros(len(steps), dtype=np.int64)
    for plane, step_index in launching_steps(profile, steps):
        is_work = np.isin(event_activities(plane), [int(a) for a in DEVICE_ACTIVITIES]) & (step_index >= 0)
        np.add.at(launched, step_index[is_work], plane.events.duration_ps[is_work])
    step_rows = [
        OverviewStep(
            step=int(steps.number[index]),
            start_us=ps_to_us(int(steps.start_ps[index])),
            start_ps=int(steps.start_ps[index]),
            step_time_us=ps_to_us(int(steps.duration_ps[index])),
            step_time_ps=int(steps.duration_ps[index]),
            breakdown={f"{key}_us": ps_to_us(int(parts[key][index])) for key in parts} | {f"{key}_ps": int(parts[key][index]) for key in parts},
            device_time_launched_us=ps_to_us(int(launched[index])),
            set_aside=str(aside.reason[index]) or None,
        )
        for index in range(len(steps))
    ]
    set_aside = set_aside_rows(steps, aside, parts)
    devices = _device_busy(profile, steps)
    device = _devices_total(devices, profile.span_ps)
    shares = _shares(parts, steps.duration_ps, kept, has_device=bool(devices), steps_known=not steps.inferred)
    return OverviewResult(
        step_source=steps.source,
        steps_inferred=steps.inferred,
        steps=step_rows,
        step_time_us=_stats(steps.duration_ps[kept]),
        step_time_us_all=_stats(steps.duration_ps),
        breakdown_percent=_breakdown_percent(parts, steps.duration_ps, np.flatnonzero(kept)),
        breakdown_percent_all=_breakdown_percent(parts, steps.duration_ps, np.arange(len(steps))),
        set_aside=set_aside,
        device=device,
        devices=devices,
        top_ops=top_operations(stats),
        environment=_environment(profile),
        recommendation=recommendation(
            shares, set_aside_note(set_aside), _leads(stats), outside_steps_note(device), loader_settings(profile), gain_predictor(stats)
        ),
        flops=_flop_rate(stats, devices),
        gpus=gpu_metrics(stats.kernels, {device["device"]: device["active_span_ps"] for device in devices}),
        throughput=throughput(stats),
    )
