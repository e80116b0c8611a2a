"""framework_op_stats: one row per framework op, host and device side.

Which events are ops, and their type, is ``ops.find_ops``'s: step markers and allocator
events are not ops; PyTorch ops are typed by ``op_categories`` (GEMM, convolution...),
TensorFlow ops by their op type, XLA ops by their ``hlo_category``. The rows are
``op_table``'s (read from the profile's ``OpStats``); the overview's top operations are
the first rows of one side.

Times are the ops' own durations (total) and those minus their child ops (self). The
self-time share is of all op self time on that side; "with idle" adds an IDLE row per side
holding the time no op ran within each plane's active span (its first op's start to its
last op's end, less the union of its op intervals: ``op_table.idle_in_span_ps``), as
XProf's "include idle" toggle does; on a device, the overview's device idle.

FLOP rate, memory bandwidth, operational intensity and the roofline bound: see
``op_table``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stepscope.analysis.ops.op_table import OpRow, OpTableRow
from stepscope.analysis.ops.ops import Side
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import ToolResult, tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us

TOOL = "framework_op_stats"
IDLE = "IDLE"

COLUMNS = (
    Column("rank", "Rank"),
    Column("host_or_device", "Host/device", "string"),
    Column("type", "Type", "string"),
    Column("name", "Name", "string"),
    Column("occurrences", "Occurrences"),
    Column("total_time_us", "Total time (us)"),
    Column("avg_time_us", "Avg time (us)"),
    Column("total_self_time_us", "Total self time (us)"),
    Column("avg_self_time_us", "Avg self time (us)"),
    Column("self_time_percent", "Self time % (of side)"),
    Column("cumulative_self_time_percent", "Cumulative self time %"),
    Column("self_time_percent_with_idle", "Self time % incl. idle"),
    Column("gflops_per_second", "GFLOP/s"),
    Column("memory_bandwidth_gb_per_second", "Memory GB/s"),
    Column("operational_intensity", "FLOP/byte"),
    Column("bound_by", "Bound by", "string"),
)


@dataclass
class FrameworkOpStatsResult(ToolResult):
    rows: list[OpRow] = field(default_factory=list)
    idle_rows: list[OpTableRow] = field(default_factory=list)  # per side, the time no op ran (IDLE)

    def tables(self) -> list[Table]:
        return [Table.of("framework_ops", COLUMNS, self.rows), Table.of("idle", COLUMNS, self.idle_rows)]

    def summary(self) -> list[str]:
        lines = []
        for side in Side:
            rows = [row for row in self.rows if row["host_or_device"] == side.label]
            if rows:
                top = rows[0]
                lines.append(f"{side.label}: {len(rows)} ops; most self time: {top['name']} ({top['self_time_percent']:.1f}%)")
        return lines or ["No framework ops in this profile."]


@tool(
    TOOL,
    title="Framework op stats",
    order=30,
    description="Which framework ops (aten::, TF ops, XLA ops) take the time, on host and device?",
)
def framework_op_stats(stats: OpStats) -> FrameworkOpStatsResult:
    ops = stats.ops
    result = FrameworkOpStatsResult()
    for side in Side:
        if not (ops.side == side).any():
            continue
        idle = stats.side_idle_ps(side)
        result.rows += stats.op_rows(side)
        side_self = int(ops.self_ps[ops.side == side].sum())
        result.idle_rows.append(
            {
                "rank": 0,
                "host_or_device": side.label,
                "type": IDLE,
                "name": IDLE,
                "occurrences": 0,
                "total_time_us": ps_to_us(idle),
                "total_self_time_us": ps_to_us(idle),
                "self_time_percent_with_idle": percent(idle, side_self + idle),
                "total_time_ps": idle,
                "total_self_time_ps": idle,
            }
        )
    return result
