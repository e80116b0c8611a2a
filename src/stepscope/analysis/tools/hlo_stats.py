"""hlo_stats: one row per HLO op (per program), with its time, FLOP rate, bandwidth and
roofline bound, on one device or all of them (XProf's HLO op stats).

The ops and their per-execution numbers are ``hlo_ops``' (read its docstring: which events,
names, programs, and why times are the device's clock). Per row, summed over the
selected device(s):

    occurrences           executions of the op.
    total_time_ps / _us   the executions' times; avg_time_us = total / occurrences.
    total_self_time_ps    the executions' self times; avg_self_time_us likewise.
    self_time_percent     total self time / the selection's total self time;
                          cumulative_self_time_percent down the table (most self time first).
    flops, bytes_accessed XLA's cost analysis, per execution, summed; null where the
                          source records none (XLA on CPU records none).
    gflops_per_second     flops / total time / 1e9. With ``device=all`` the time is summed over
                          the devices, so this is the rate of one device, averaged.
    memory_bandwidth_gb_per_second  bytes_accessed / total time / 1e9 (decimal GB/s).
    operational_intensity flops / bytes_accessed (FLOP per byte); null without both, or with
                          no bytes.
    bound_by              "Compute" when the intensity is at or past the devices' ridge point
                          (peak FLOP/s / peak bandwidth: ``chips``), else "Memory"; null when
                          the intensity or the ridge is unknown, or the selected devices
                          differ in ridge.

``peaks`` lists each selected device's peaks and where they came from (``chips``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from stepscope.analysis import applicability
from stepscope.analysis.ops.chips import Peaks
from stepscope.analysis.ops.op_table import bound_by
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import ToolResult, tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.analysis.xla.hlo_ops import ALL, OpGroups, group
from stepscope.analysis.xla.xla_selection import DEVICE_OPTION, PEAK_OPTIONS, common_ridge, intensity_of, known, rate, selected_peaks

TOOL = "hlo_stats"

COLUMNS = (
    Column("rank", "Rank"),
    Column("program", "Program", "string"),
    Column("category", "Category", "string"),
    Column("name", "HLO op", "string"),
    Column("occurrences", "Occurrences"),
    Column("total_time_us", "Total time (us)"),
    Column("avg_time_us", "Avg. time (us)"),
    Column("total_self_time_us", "Total self time (us)"),
    Column("avg_self_time_us", "Avg. self time (us)"),
    Column("self_time_percent", "Self time %"),
    Column("cumulative_self_time_percent", "Cumulative self time %"),
    Column("gflops_per_second", "GFLOP/s"),
    Column("memory_bandwidth_gb_per_second", "Memory GB/s"),
    Column("operational_intensity", "FLOP/byte"),
    Column("bound_by", "Bound by", "string"),
    Column("flops", "FLOPs"),
    Column("bytes_accessed", "Bytes accessed"),
    Column("program_id", "Program id", "string"),
    Column("expression", "HLO text", "string"),
    Column("total_time_ps", "Total time (ps)"),
    Column("total_self_time_ps", "Total self time (ps)"),
)


class HloOpRow(TypedDict):
    """One HLO op of one program, summed over the selected device(s)."""

    rank: int
    program: str
    program_id: str
    category: str
    name: str
    expression: str
    occurrences: int
    total_time_us: float
    avg_time_us: float
    total_self_time_us: float
    avg_self_time_us: float
    self_time_percent: float
    cumulative_self_time_percent: float
    flops: float | None
    bytes_accessed: float | None
    gflops_per_second: float | None
    memory_bandwidth_gb_per_second: float | None
    operational_intensity: float | None
    bound_by: str | None  # "Compute" | "Memory"
    total_time_ps: int
    total_self_time_ps: int


@dataclass
class HloStatsResult(ToolResult):
    device: str = ALL
    devices: list[str] = field(default_factory=list)
    peaks: list[Peaks] = field(default_factory=list)
    ridge_point: float | None = None  # FLOP/byte, when every selected device has the same
    total_self_time_ps: int = 0
    total_self_time_us: float = 0.0
    rows: list[HloOpRow] = field(default_factory=list)

    def tables(self) -> list[Table]:
        return [Table.of("hlo_ops", COLUMNS, self.rows)]

    def summary(self) -> list[str]:
        if not self.rows:
            return ["No XLA (HLO) ops in this profile."]
        programs = {row["program"] for row in self.rows}
        where = "all devices" if self.device == ALL else self.device
        lines = [
            f"{where}: {self.total_self_time_us:,.1f} us of HLO op time in {sum(r['occurrences'] for r in self.rows):,} executions "
            f"of {len(self.rows):,} HLO ops in {len(programs):,} program(s)"
        ]
        bound: dict[str, int] = {}
        for row in self.rows:
            bound[row["bound_by"] or "unknown"] = bound.get(row["bound_by"] or "unknown", 0) + row["total_self_time_ps"]
        if self.ridge_point is not None:
            parts = ", ".join(f"{name} {percent(ps, self.total_self_time_ps):.1f}%" for name, ps in sorted(bound.items(), key=lambda kv: -kv[1]))
            lines.append(f"Bound by (share of op time; ridge point {self.ridge_point:,.1f} FLOP/byte): {parts}")
        else:
            lines.append("Bound by: unknown (no device peaks: pass --option peak_flops=TFLOP/s --option peak_bw=GB/s)")
        top = self.rows[0]
        lines.append(f"Top op: {top['name']} ({top['category']}, {top['self_time_percent']:.1f}% of op time)")
        return lines


def hlo_rows(groups: OpGroups, ridge: float | None) -> list[HloOpRow]:
    total_self = int(groups.self_ps.sum())
    rows: list[HloOpRow] = []
    cumulative = 0
    for i in range(len(groups)):
        count, time, self_time = int(groups.occurrences[i]), int(groups.time_ps[i]), int(groups.self_ps[i])
        flops, accessed = float(groups.flops[i]), float(groups.bytes_accessed[i])
        cumulative += self_time
        intensity = intensity_of(flops, accessed)
        rows.append(
            HloOpRow(
                rank=i + 1,
                program=groups.program[i],
                program_id=groups.program_id[i],
                category=groups.category[i],
                name=groups.name[i],
                expression=groups.expression[i],
                occurrences=count,
                total_time_us=ps_to_us(time),
                avg_time_us=ps_to_us(time / count),
                total_self_time_us=ps_to_us(self_time),
                avg_self_time_us=ps_to_us(self_time / count),
                self_time_percent=percent(self_time, total_self),
                cumulative_self_time_percent=percent(cumulative, total_self),
                flops=known(flops),
                bytes_accessed=known(accessed),
                gflops_per_second=known(rate(flops, time)),
                memory_bandwidth_gb_per_second=known(rate(accessed, time)),
                operational_intensity=known(intensity),
                bound_by=bound_by(intensity, ridge),
                total_time_ps=time,
                total_self_time_ps=self_time,
            )
        )
    return rows


@tool(
    TOOL,
    title="HLO op stats",
    order=62,
    description="Which HLO ops take the time, at what FLOP rate and bandwidth, and are they compute- or memory-bound?",
    options=(DEVICE_OPTION, *PEAK_OPTIONS),
    applies=applicability.xla_ops,
)
def hlo_stats(stats: OpStats, device: str = ALL, peak_flops: str = "", peak_bw: str = "") -> HloStatsResult:
    mask, peaks = selected_peaks(stats, TOOL, device, peak_flops, peak_bw)
    groups = group(stats.xla_ops, mask)
    ridge = common_ridge(peaks)
    total = int(groups.self_ps.sum())
    return HloStatsResult(
        device=device,
        devices=stats.xla_ops.devices,
        peaks=peaks,
        ridge_point=ridge,
        total_self_time_ps=total,
        total_self_time_us=ps_to_us(total),
        rows=hlo_rows(groups, ridge),
    )
