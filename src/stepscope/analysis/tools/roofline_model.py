"""roofline_model: how close each device, program and HLO op comes to the device's roofline
(XProf's roofline model).

The roofline of a device with peak compute P (FLOP/s) and peak memory bandwidth B
(bytes/s): at operational intensity I (FLOP per byte), the most FLOP/s attainable is
min(P, I x B). Below the ridge point P / B an op is memory-bound, at or above it
compute-bound. Peaks come from ``chips`` (options, the profile's plane stats, the table
of known chips); ``peaks`` says which, per device.

Rows, at three levels (``level``), over the selected device(s) (``device`` option):
    device   one per device plane (and one "all" row for several): every XLA op on it;
    program  one per HLO module;
    op       one per HLO op of a program (hlo_stats' rows).
The ops are ``hlo_ops``' (device-clock times). Per row:

    time_ps               the ops' time summed (total time; for a device or program, the
                          time its ops ran, idle between them not counted).
    flops, bytes_accessed XLA's cost analysis, summed; null where none is recorded.
    operational_intensity flops / bytes_accessed.
    gflops_per_second, memory_bandwidth_gb_per_second   flops (bytes) / time / 1e9.
    attainable_gflops_per_second  the roofline at the row's intensity: min(P, I x B) / 1e9.
    compute_utilization   achieved FLOP/s / P;  bandwidth_utilization  achieved bytes/s / B.
    roofline_fraction     achieved FLOP/s / attainable FLOP/s where flops > 0; else (an op
                          that only moves data) bandwidth_utilization. Both are
                          max(compute_utilization, bandwidth_utilization): below the ridge
                          I x B < P, so FLOP/s / (I x B) = bytes/s / B, and the compute
                          share is the smaller; above it attainable is P.
    bound_by              "Compute" | "Memory" by the ridge point; null where unknown.

An op that moves data (``classify.xla_transfer_activity``: copy-start/-done, send/recv,
infeed/outfeed) has no bandwidth_utilization nor roofline_fraction (null): its time is not
its transfer's (copy-start issues the DMA in a microsecond, copy-done waits for it, the
bytes move in between while other ops run, over the host link as often as HBM), so its
bytes over its time (5e5 x the HBM peak for copy-start on the shared TPU profile) are no
share of anything. XProf shows them as they come; the rate itself is kept, equal to
XProf's. A computing op above 1 (elementwise fusions up to 1.41) is kept as is: XLA's
bytes_accessed counts every operand byte as if read from HBM, so a share above 1 says that
some of them came from on-chip memory or caches; capping it would hide that
(docs/tools/roofline_model.md).

Peaks are per device; for ``device=all`` over devices with different peaks, every number
that needs a peak is null (the rates are still given). A log-log roofline chart needs no
more than this: each device's ``peaks`` (the two lines and their ridge) and each op row's
(operational_intensity, gflops_per_second) point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np

from stepscope.analysis import applicability
from stepscope.analysis.ops.chips import Peaks
from stepscope.analysis.ops.op_table import bound_by
from stepscope.analysis.ops.torch_costs import Assumption, count_assumptions
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import ToolResult, tool
from stepscope.analysis.steps.classify import xla_transfer_activity
from stepscope.analysis.tables import Column, Table, ps_to_us
from stepscope.analysis.xla.hlo_ops import ALL, OpGroups, XlaOps, group
from stepscope.analysis.xla.xla_selection import DEVICE_OPTION, PEAK_OPTIONS, common_peaks, common_ridge, intensity_of, known, rate, selected_peaks

TOOL = "roofline_model"
XLA, SHAPES = "xla", "shapes"
TOP_UNESTIMATED = 10
DEVICE, PROGRAM, OP = "device", "program", "op"

COLUMNS = (
    Column("level", "Level", "string"),
    Column("device", "Device", "string"),
    Column("program", "Program", "string"),
    Column("category", "Category", "string"),
    Column("name", "Name", "string"),
    Column("occurrences", "Occurrences"),
    Column("time_us", "Time (us)"),
    Column("operational_intensity", "FLOP/byte"),
    Column("gflops_per_second", "GFLOP/s"),
    Column("attainable_gflops_per_second", "Roofline GFLOP/s"),
    Column("memory_bandwidth_gb_per_second", "Memory GB/s"),
    Column("bound_by", "Bound by", "string"),
    Column("roofline_fraction", "Of roofline"),
    Column("compute_utilization", "Of peak FLOP/s"),
    Column("bandwidth_utilization", "Of peak bandwidth"),
    Column("flops", "FLOPs"),
    Column("bytes_accessed", "Bytes accessed"),
    Column("time_ps", "Time (ps)"),
)


UNESTIMATED_COLUMNS = (Column("name", "Op without FLOPs", "string"), Column("occurrences", "Occurrences"), Column("time_ps", "Time (ps)"))


class RooflineRow(TypedDict):
    """A device, a program or an HLO op against the roofline."""

    level: str  # "device" | "program" | "op"
    device: str  # the device plane, or "all"
    program: str  # "" on a device row
    category: str  # "" on device and program rows
    name: str  # the device, the program or the HLO op
    occurrences: int
    time_ps: int
    time_us: float
    flops: float | None
    bytes_accessed: float | None
    operational_intensity: float | None
    gflops_per_second: float | None
    memory_bandwidth_gb_per_second: float | None
    attainable_gflops_per_second: float | None
    compute_utilization: float | None
    bandwidth_utilization: float | None
    roofline_fraction: float | None
    bound_by: str | None


class Unestimated(TypedDict):
    """An op with no FLOP count: no XLA cost analysis, or no estimator for its shapes."""

    name: str
    occurrences: int
    time_ps: int


@dataclass
class RooflineResult(ToolResult):
    device: str = ALL
    devices: list[str] = field(default_factory=list)
    source: str = ""  # "xla" (XLA's cost analysis) | "shapes" (PyTorch ops' recorded shapes) | "" (no ops)
    unestimated_ops: int = 0  # op rows without FLOPs
    unestimated_time_ps: int = 0
    unestimated: list[Unestimated] = field(default_factory=list)  # the longest of them
    assumed_ops: int = 0  # shape estimates that took an unrecorded argument's default
    assumptions: list[Assumption] = field(default_factory=list)  # what they took, most frequent first
    peaks: list[Peaks] = field(default_factory=list)
    peak_tflops: float | None = None  # the selected devices' common peaks, when they share them
    peak_gbps: float | None = None
    ridge_point: float | None = None
    device_rows: list[RooflineRow] = field(default_factory=list)
    programs: list[RooflineRow] = field(default_factory=list)
    ops: list[RooflineRow] = field(default_factory=list)

    def tables(self) -> list[Table]:
        levels = [Table.of(name, COLUMNS, rows) for name, rows in (("devices", self.device_rows), ("programs", self.programs), ("ops", self.ops))]
        return [*levels, Table.of("unestimated", UNESTIMATED_COLUMNS, self.unestimated)]

    def summary(self) -> list[str]:
        if not self.ops:
            return ["No XLA (HLO) ops, and no PyTorch ops with kernels, in this profile."]
        lines = []
        if self.source == SHAPES:
            lines.append(
                f"FLOPs and bytes estimated from the PyTorch ops' recorded input shapes; {self.unestimated_ops} op rows "
                f"({self.unestimated_time_ps / 1e6:,.1f} us of kernel time) have no estimate, {self.assumed_ops} assumed a default argument"
            )
            lines.extend(f"  {entry['ops']} op(s): {entry['assumption']}" for entry in self.assumptions)
        for peaks in self.peaks:
            if peaks.peak_tflops is None or peaks.peak_gbps is None:
                lines.append(f"{peaks.device}: peaks unknown (pass --option peak_flops=TFLOP/s --option peak_bw=GB/s)")
                continue
            where = {"profile": "the profile's device stats", "table": f"the known-chips table ({peaks.chip})", "options": "the options"}[peaks.source]
            lines.append(
                f"{peaks.device}: {peaks.peak_tflops:,.1f} TFLOP/s, {peaks.peak_gbps:,.1f} GB/s (ridge {peaks.ridge or 0:,.1f} FLOP/byte), from {where}"
            )
        top = self.device_rows[-1]
        if top["flops"] is None:
            lines.append("No FLOP counts in this profile (XLA records none on CPU): times only, no roofline.")
        elif top["roofline_fraction"] is not None:
            lines.append(
                f"{top['name']}: {top['gflops_per_second'] or 0:,.1f} GFLOP/s at {top['operational_intensity'] or 0:.3g} FLOP/byte, "
                f"{top['bound_by']}-bound, {100 * top['roofline_fraction']:.1f}% of its roofline"
            )
        return lines


def _row(
    level: str,
    device: str,
    program: str,
    category: str,
    name: str,
    count: int,
    time: int,
    flops: float,
    accessed: float,
    peaks: tuple[float | None, float | None],
    moves_data: bool = False,
) -> RooflineRow:
    peak_tflops, peak_gbps = peaks
    intensity = intensity_of(flops, accessed)
    flop_rate, byte_rate = rate(flops, time), rate(accessed, time)
    attainable = math.nan
    compute = bandwidth = fraction = math.nan
    if peak_tflops and peak_gbps:
        if math.isfinite(intensity):
            attainable = min(peak_tflops * 1e3, intensity * peak_gbps)
        compute = flop_rate / (peak_tflops * 1e3)
        bandwidth = math.nan if moves_data else byte_rate / peak_gbps
        known_shares = [share for share in (compute, bandwidth) if math.isfinite(share)]
        fraction = max(known_shares) if known_shares and not moves_data else math.nan
    ridge = peak_tflops * 1e12 / (peak_gbps * 1e9) if peak_tflops and peak_gbps else None
    return RooflineRow(
        level=level,
        device=device,
        program=program,
        category=category,
        name=name,
        occurrences=count,
        time_ps=time,
        time_us=ps_to_us(time),
        flops=known(flops),
        bytes_accessed=known(accessed),
        operational_intensity=known(intensity),
        gflops_per_second=known(flop_rate),
        memory_bandwidth_gb_per_second=known(byte_rate),
        attainable_gflops_per_second=known(attainable),
        compute_utilization=known(compute),
        bandwidth_utilization=known(bandwidth),
        roofline_fraction=known(fraction),
        bound_by=bound_by(intensity, ridge),
    )


def _sum_known(values: np.ndarray) -> float:
    known_values = values[np.isfinite(values)]
    return float(known_values.sum()) if len(known_values) else math.nan


def _device_rows(xla: XlaOps, mask: np.ndarray, peaks: list[Peaks], label: str) -> list[RooflineRow]:
    rows = []
    for plane_peaks in peaks:
        here = mask & (xla.plane == xla.plane_names.index(plane_peaks.device))
        rows.append(_device_row(xla, here, plane_peaks.device, (plane_peaks.peak_tflops, plane_peaks.peak_gbps)))
    if len(peaks) > 1:
        rows.append(_device_row(xla, mask, label, common_peaks(peaks)))
    return rows


def _device_row(xla: XlaOps, here: np.ndarray, name: str, peaks: tuple[float | None, float | None]) -> RooflineRow:
    time = int(xla.time_ps[here].sum())
    return _row(DEVICE, name, "", "", name, int(here.sum()), time, _sum_known(xla.flops[here]), _sum_known(xla.bytes_accessed[here]), peaks)


def _program_rows(groups: OpGroups, device: str, peaks: tuple[float | None, float | None]) -> list[RooflineRow]:
    order: dict[str, list[int]] = {}
    for i, program in enumerate(groups.program):
        order.setdefault(program, []).append(i)
    rows = []
    for program, members in order.items():
        at = np.asarray(members)
        time = int(groups.time_ps[at].sum())
        rows.append(
            _row(
                PROGRAM,
                device,
                program,
                "",
                program,
                int(groups.occurrences[at].sum()),
                time,
                _sum_known(groups.flops[at]),
                _sum_known(groups.bytes_accessed[at]),
                peaks,
            )
        )
    return sorted(rows, key=lambda row: (-row["time_ps"], row["name"]))


@tool(
    TOOL,
    title="Roofline model",
    order=64,
    description="How close do the device, each program and each HLO op come to the device's roofline, and what bounds them?",
    options=(DEVICE_OPTION, *PEAK_OPTIONS),
    applies=applicability.roofline_ops,
)
def roofline_model(stats: OpStats, device: str = ALL, peak_flops: str = "", peak_bw: str = "") -> RooflineResult:
    xla = stats.roofline_ops
    from_shapes = xla is not stats.xla_ops
    mask, peaks = selected_peaks(stats, TOOL, device, peak_flops, peak_bw, xla)
    shared = common_peaks(peaks)
    groups = group(xla, mask)
    ops = [
        _row(
            OP,
            device,
            groups.program[i],
            groups.category[i],
            groups.name[i],
            int(groups.occurrences[i]),
            int(groups.time_ps[i]),
            float(groups.flops[i]),
            float(groups.bytes_accessed[i]),
            shared,
            moves_data=xla_transfer_activity(groups.name[i], groups.category[i]) is not None,
        )
        for i in range(len(groups))
    ]
    assumptions = count_assumptions(stats.shape_costs.assumed[mask]) if from_shapes else []
    missing = [i for i in range(len(groups)) if not math.isfinite(float(groups.flops[i]))]
    missing.sort(key=lambda i: (-int(groups.time_ps[i]), groups.name[i]))
    return RooflineResult(
        device=device,
        devices=xla.devices,
        source=(SHAPES if from_shapes else XLA) if len(xla) else "",
        unestimated_ops=len(missing),
        unestimated_time_ps=int(sum(int(groups.time_ps[i]) for i in missing)),
        unestimated=[
            Unestimated(name=groups.name[i], occurrences=int(groups.occurrences[i]), time_ps=int(groups.time_ps[i])) for i in missing[:TOP_UNESTIMATED]
        ],
        assumed_ops=sum(entry["ops"] for entry in assumptions),
        assumptions=assumptions,
        peaks=peaks,
        peak_tflops=shared[0],
        peak_gbps=shared[1],
        ridge_point=common_ridge(peaks),
        device_rows=_device_rows(xla, mask, peaks, device) if len(groups) else [],
        programs=_program_rows(groups, device, shared),
        ops=ops,
    )
