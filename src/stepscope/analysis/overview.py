"""overview_page: step times, where each step's time went, device busy/idle, top ops,
run environment, and what to do next.

The step-time breakdown assigns every picosecond of a step's window to exactly one
category, so the parts sum to the step time exactly. Where activities overlap, the
higher-priority one claims the time (device compute first, then collectives, copies,
input, compile, kernel launch, host compute; see ``classify.Activity``); what nothing
covers is idle. Device busy time is the union of a device's activity intervals over the
profiled window (overlapping kernels on several streams count once).
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stepscope.analysis.classify import DEVICE_ACTIVITIES, Activity, event_activities
from stepscope.analysis.framework_op_stats import framework_op_stats
from stepscope.analysis.intervals import Union
from stepscope.analysis.ops import find_ops
from stepscope.analysis.registry import tool
from stepscope.analysis.steps import Steps, find_steps, launching_steps
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.trace import names
from stepscope.trace.model import Profile
from stepscope.trace.summary import device_names

TOOL = "overview_page"

# Breakdown keys in priority order (the Activity order), then idle.
BREAKDOWN = {
    Activity.DEVICE_COMPUTE: "device_compute",
    Activity.DEVICE_COLLECTIVES: "device_collectives",
    Activity.DEVICE_TO_DEVICE: "device_to_device",
    Activity.HOST_TO_DEVICE: "host_to_device",
    Activity.DEVICE_TO_HOST: "device_to_host",
    Activity.INPUT: "input",
    Activity.COMPILE: "compile",
    Activity.KERNEL_LAUNCH: "kernel_launch",
    Activity.HOST_COMPUTE: "host_compute",
}
IDLE = "idle"
# XProf's input-bound thresholds: share of step time spent waiting for input.
INPUT_MODERATE_PERCENT = 5.0
INPUT_HIGH_PERCENT = 20.0
KERNEL_LAUNCH_BOUND_PERCENT = 10.0
HOST_BOUND_PERCENT = 50.0

STEP_COLUMNS = (Column("step", "Step"), Column("step_time_us", "Step time (us)")) + tuple(
    Column(f"{key}_us", key.replace("_", " ").capitalize() + " (us)") for key in [*BREAKDOWN.values(), IDLE]
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
    Column("idle_time_us", "Idle (us)"),
    Column("span_us", "Window (us)"),
    Column("busy_percent", "Busy %"),
)


@dataclass
class OverviewResult:
    tool: str = TOOL
    step_source: str = ""
    steps_inferred: bool = False
    steps: list[dict[str, Any]] = field(default_factory=list)
    step_time_us: dict[str, float] = field(default_factory=dict)
    breakdown_percent: dict[str, float] = field(default_factory=dict)
    devices: list[dict[str, Any]] = field(default_factory=list)
    device: dict[str, Any] = field(default_factory=dict)
    top_ops: list[dict[str, Any]] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    recommendation: dict[str, Any] = field(default_factory=dict)
    flops: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "step_source": self.step_source,
            "steps_inferred": self.steps_inferred,
            "steps": self.steps,
            "step_time_us": self.step_time_us,
            "breakdown_percent": self.breakdown_percent,
            "device": self.device,
            "devices": self.devices,
            "top_ops": self.top_ops,
            "environment": self.environment,
            "recommendation": self.recommendation,
            "flops": self.flops,
        }

    def tables(self) -> list[Table]:
        step_rows = [(s["step"], s["step_time_us"], *(s["breakdown"][f"{k}_us"] for k in [*BREAKDOWN.values(), IDLE])) for s in self.steps]
        return [
            Table("steps", STEP_COLUMNS, step_rows),
            Table("devices", DEVICE_COLUMNS, [tuple(d[c.key] for c in DEVICE_COLUMNS) for d in self.devices]),
            Table("top_ops", TOP_OP_COLUMNS, [tuple(op[c.key] for c in TOP_OP_COLUMNS) for op in self.top_ops]),
        ]

    def summary(self) -> list[str]:
        times = self.step_time_us
        lines = [
            f"{len(self.steps)} step(s) from {self.step_source}"
            + (" (no step marker found: the whole profiled window is one step)" if self.steps_inferred else ""),
            f"step time: mean {times['mean']:,.1f} us, stddev {times['stddev']:,.1f}, min {times['min']:,.1f}, max {times['max']:,.1f}",
            "breakdown: " + ", ".join(f"{k} {v:.1f}%" for k, v in self.breakdown_percent.items() if v >= 0.05),
        ]
        for device in self.devices:
            lines.append(f"{device['device']}: busy {device['busy_percent']:.1f}% of the window")
        lines.append(f"recommendation: {self.recommendation['summary']}")
        lines.extend(f"  - {step}" for step in self.recommendation["next_steps"])
        return lines


def activity_unions(profile: Profile) -> dict[Activity, Union]:
    """The union of each activity's intervals across all planes."""
    starts: dict[Activity, list[np.ndarray]] = {activity: [] for activity in BREAKDOWN}
    ends: dict[Activity, list[np.ndarray]] = {activity: [] for activity in BREAKDOWN}
    for plane in profile.planes:
        activity = event_activities(plane)
        # Input work beside the step is host work as far as the step is concerned.
        activity = np.where(activity == Activity.INPUT_PIPELINE, Activity.HOST_COMPUTE, activity)
        events = plane.events
        for kind in BREAKDOWN:
            rows = activity == kind
            if rows.any():
                starts[kind].append(events.start_ps[rows])
                ends[kind].append(events.end_ps[rows])
    return {
        kind: Union.of(np.concatenate(starts[kind]), np.concatenate(ends[kind])) if starts[kind] else Union.empty()
        for kind in BREAKDOWN
    }


def step_breakdown(steps: Steps, unions: dict[Activity, Union]) -> dict[str, np.ndarray]:
    """Per step, ps of each category; the categories of a step sum to its duration."""
    result: dict[str, np.ndarray] = {}
    claimed = Union.empty()
    previous = np.zeros(len(steps), dtype=np.int64)
    for kind, key in BREAKDOWN.items():
        claimed = claimed | unions[kind]
        covered = claimed.covered(steps.start_ps, steps.end_ps)
        result[key] = covered - previous
        previous = covered
    result[IDLE] = steps.duration_ps - previous
    return result


# A framework is named when an event type of the profile shows its hand (a capture may
# hold several: a stepscope capture of a PyTorch job is XSpace with torch's ops in it).
FRAMEWORK_MARKERS = {
    "PyTorch": re.compile(r"^aten::|^ProfilerStep#\d+$|^autograd::"),
    "JAX": re.compile(r"^PjitFunction|^jit_|^pjit"),
    "TensorFlow": re.compile(r"^__inference_|^EagerExecute$|^IteratorGetNext|^tf\.|^Iterator::"),
}


def frameworks(profile: Profile) -> str:
    """The frameworks whose events the profile holds ("PyTorch", "JAX + ..."), "Python"
    for a capture of none, "" when nothing tells (a trace of unknown origin)."""
    found = [
        name
        for name, marker in FRAMEWORK_MARKERS.items()
        if any(marker.search(event_name) for plane in profile.planes for event_name in plane.metadata.names)
    ]
    if found:
        return " + ".join(found)
    captured = any(name.startswith("stepscope.") for plane in profile.planes for name in plane.metadata.names)
    return "Python" if captured else ""


def _environment(profile: Profile) -> dict[str, Any]:
    info = profile.info
    framework = frameworks(profile) or {"kineto": "PyTorch"}.get(profile.format, "")
    versions = {key: info[key] for key in ("cuda_runtime_version", "cuda_driver_version", "cupti_version", "hip_runtime_version") if key in info}
    devices = device_names(profile)
    return {
        "host": profile.host,
        "hosts": 1,
        "device_type": devices[0].split(":")[1] if devices else "CPU only",
        "device_count": len(devices),
        "devices": devices,
        "framework": framework,
        "versions": versions,
        "source_format": profile.format,
    }


def _recommendation(breakdown_percent: dict[str, float], devices: list[dict[str, Any]]) -> dict[str, Any]:
    input_share = breakdown_percent.get("input", 0.0)
    launch_share = breakdown_percent.get("kernel_launch", 0.0)
    host_share = breakdown_percent.get("host_compute", 0.0) + breakdown_percent.get(IDLE, 0.0)
    next_steps: list[str] = []
    if input_share >= INPUT_HIGH_PERCENT:
        input_bound = "highly"
    elif input_share >= INPUT_MODERATE_PERCENT:
        input_bound = "moderately"
    else:
        input_bound = "not"
    if input_bound != "not":
        summary = f"Your program is {input_bound} input-bound: {input_share:.1f}% of the step time is spent waiting for input."
        next_steps += [
            "Look at the input pipeline analyzer for where the input time goes.",
            "Load data in parallel (PyTorch: DataLoader(num_workers=..., pin_memory=True); tf.data: map(num_parallel_calls=AUTOTUNE)).",
            "Prefetch the next batches while the current step runs (DataLoader prefetch_factor; dataset.prefetch(AUTOTUNE)).",
        ]
    elif launch_share >= KERNEL_LAUNCH_BOUND_PERCENT:
        summary = f"Your program is kernel-launch bound: {launch_share:.1f}% of the step time is spent launching kernels."
        next_steps += [
            "Fuse small ops (torch.compile, XLA jit) or use CUDA graphs to launch fewer kernels.",
            "Increase the batch size so each kernel does more work.",
        ]
    elif devices and host_share >= HOST_BOUND_PERCENT:
        summary = f"Your program is host-bound: the device waits on the host for {host_share:.1f}% of the step time."
        next_steps += [
            "Look at the framework op stats (host side) for the ops that keep the host busy.",
            "Move work to the device or overlap it with device execution.",
        ]
    else:
        summary = f"Your program is not input-bound ({input_share:.1f}% of the step time is input)."
        next_steps.append("Look at the framework op stats and kernel stats for the most time-consuming ops.")
    return {"input_bound": input_bound, "input_percent": input_share, "kernel_launch_percent": launch_share, "summary": summary, "next_steps": next_steps}


def _flop_rate(profile: Profile, devices: list[dict[str, Any]]) -> dict[str, Any]:
    """Device FLOP rate over the devices' busy time, and its share of the devices' peak,
    where the profile records op flops (XLA ops) and the device peak (a plane stat)."""
    ops = find_ops(profile)
    device_flops = ops.flops[(ops.side == 1) & np.isfinite(ops.flops)]
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


def _stats(values: np.ndarray) -> dict[str, float]:
    us = values / 1e6
    return {
        "mean": float(us.mean()) if len(us) else 0.0,
        "stddev": float(us.std()) if len(us) else 0.0,
        "min": float(us.min()) if len(us) else 0.0,
        "max": float(us.max()) if len(us) else 0.0,
    }


@tool(TOOL)
def overview_page(profile: Profile) -> OverviewResult:
    steps = find_steps(profile)
    unions = activity_unions(profile)
    parts = step_breakdown(steps, unions)
    keys = [*BREAKDOWN.values(), IDLE]
    total_step = int(steps.duration_ps.sum())
    result = OverviewResult(step_source=steps.source, steps_inferred=steps.inferred)
    for index in range(len(steps)):
        result.steps.append(
            {
                "step": int(steps.number[index]),
                "start_us": ps_to_us(int(steps.start_ps[index])),
                "step_time_us": ps_to_us(int(steps.duration_ps[index])),
                "step_time_ps": int(steps.duration_ps[index]),
                "breakdown": {f"{key}_us": ps_to_us(int(parts[key][index])) for key in keys}
                | {f"{key}_ps": int(parts[key][index]) for key in keys},
            }
        )
    launched = np.zeros(len(steps), dtype=np.int64)
    for plane, step_index in launching_steps(profile, steps):
        is_work = np.isin(event_activities(plane), [int(a) for a in DEVICE_ACTIVITIES]) & (step_index >= 0)
        np.add.at(launched, step_index[is_work], plane.events.duration_ps[is_work])
    for index, step in enumerate(result.steps):
        step["device_time_launched_us"] = ps_to_us(int(launched[index]))
    result.step_time_us = _stats(steps.duration_ps)
    result.breakdown_percent = {key: percent(int(parts[key].sum()), total_step) for key in keys}

    window = profile.span_ps
    for plane in profile.device_planes:
        activity = event_activities(plane)
        rows = np.isin(activity, [int(a) for a in DEVICE_ACTIVITIES])
        busy = Union.of(plane.events.start_ps[rows], plane.events.end_ps[rows]).total
        result.devices.append(
            {
                "device": plane.name,
                "busy_time_us": ps_to_us(busy),
                "idle_time_us": ps_to_us(window - busy),
                "span_us": ps_to_us(window),
                "busy_percent": percent(busy, window),
                "busy_time_ps": busy,
            }
        )
    if result.devices:
        busy_total = sum(d["busy_time_ps"] for d in result.devices)
        span_total = window * len(result.devices)
        result.device = {
            "busy_time_us": ps_to_us(busy_total),
            "idle_time_us": ps_to_us(span_total - busy_total),
            "span_us": ps_to_us(span_total),
            "busy_percent": percent(busy_total, span_total),
        }
    else:
        result.device = {"busy_time_us": 0.0, "idle_time_us": 0.0, "span_us": 0.0, "busy_percent": 0.0}

    result.flops = _flop_rate(profile, result.devices)
    ops = framework_op_stats(profile).rows
    side = "Device" if any(row["host_or_device"] == "Device" for row in ops) else "Host"
    result.top_ops = [
        {key: row[key] for key in ("self_time_percent", "cumulative_self_time_percent", "type", "name", "gflops_per_second")}
        for row in ops
        if row["host_or_device"] == side
    ][:10]
    result.environment = _environment(profile)
    result.recommendation = _recommendation(result.breakdown_percent, result.devices)
    return result
