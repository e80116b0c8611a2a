"""kernel_stats: GPU kernels by (name, launch configuration, framework op).

Totals are sums of the kernels' own durations in the trace, in integer picoseconds, so they
equal the trace to the nanosecond (``total_duration_ps`` carries the exact figure beside
the microsecond one).

Launch configuration comes from XSpace's ``kernel_details`` stat (Kineto's kernel args are
translated to it on import): registers per thread, static + dynamic shared memory, block
and grid dimensions, occupancy. TensorCore use is read from the kernel name (the
instruction-shape tags cuBLAS/cuDNN/CUTLASS put there); eligibility from the framework op
(matrix multiplies and convolutions). ``tensor_core_percent`` is the share of kernel
time in kernels whose name says TensorCore.

The kernels themselves come from ``OpStats.kernels`` (``kernels.find_kernels``), which
the overview's GPU figures read too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypedDict

from stepscope.analysis.kernels import TENSOR_CORE_KERNEL, LaunchConfig
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import ToolResult, tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us

TOOL = "kernel_stats"
TENSOR_CORE_OP = re.compile(r"conv|matmul|mm\b|addmm|bmm|linear|gemm|einsum|dot|attention", re.IGNORECASE)

COLUMNS = (
    Column("kernel_name", "Kernel name", "string"),
    Column("op_name", "Framework op", "string"),
    Column("registers_per_thread", "Registers per thread"),
    Column("shared_memory_bytes", "Shared memory (bytes)"),
    Column("block_dim", "Block dim", "string"),
    Column("grid_dim", "Grid dim", "string"),
    Column("occupancy_pct", "Occupancy %"),
    Column("is_op_tensor_core_eligible", "Op is TensorCore eligible", "bool"),
    Column("is_kernel_using_tensor_core", "Kernel uses TensorCore", "bool"),
    Column("occurrences", "Occurrences"),
    Column("total_duration_us", "Total duration (us)"),
    Column("avg_duration_us", "Avg duration (us)"),
    Column("min_duration_us", "Min duration (us)"),
    Column("max_duration_us", "Max duration (us)"),
    Column("total_duration_ps", "Total duration (ps)"),
)


class KernelRow(TypedDict):
    """One kernel, launch configuration and framework op: the ``kernels`` table's row."""

    kernel_name: str
    op_name: str
    registers_per_thread: int
    shared_memory_bytes: int
    block_dim: str
    grid_dim: str
    occupancy_pct: float | None
    is_op_tensor_core_eligible: bool
    is_kernel_using_tensor_core: bool
    occurrences: int
    total_duration_us: float
    avg_duration_us: float
    min_duration_us: float
    max_duration_us: float
    total_duration_ps: int


@dataclass
class KernelStatsResult(ToolResult):
    rows: list[KernelRow] = field(default_factory=list)
    total_kernel_time_us: float = 0.0
    total_kernel_time_ps: int = 0
    devices: list[str] = field(default_factory=list)
    # Kernel time in kernels whose name carries a TensorCore tag, and its share of all
    # kernel time (the PyTorch TensorBoard plugin's "Kernel time using Tensor Cores").
    tensor_core_time_us: float = 0.0
    tensor_core_percent: float = 0.0

    def tables(self) -> list[Table]:
        return [Table.of("kernels", COLUMNS, self.rows)]

    def summary(self) -> list[str]:
        if not self.rows:
            return ["No GPU kernels in this profile."]
        kernels = sum(row["occurrences"] for row in self.rows)
        return [
            f"{kernels:,} kernel launches on {', '.join(self.devices)}: {ps_to_us(self.total_kernel_time_ps):,.3f} us of kernel time",
            f"TensorCore kernels (by name): {self.tensor_core_percent:.1f}% of kernel time ({self.tensor_core_time_us:,.3f} us)",
        ]


@tool(
    TOOL,
    title="Kernel stats",
    order=40,
    description="Which GPU kernels run, how often, how long, with what launch shape and occupancy?",
)
def kernel_stats(stats: OpStats) -> KernelStatsResult:
    ops = stats.ops
    op_of: dict[tuple[int, int], str] = {
        (int(plane), int(row)): str(name) for plane, row, name, side in zip(ops.plane, ops.row, ops.name, ops.side) if side == 1
    }
    groups: dict[tuple[str, str, LaunchConfig], list[int]] = {}
    tensor_core_ps = 0
    for device in stats.kernels:
        tensor_core_ps += int(device.duration_ps[device.uses_tensor_core].sum())
        for row, name, config, duration in zip(device.rows.tolist(), device.names, device.configs, device.duration_ps.tolist()):
            op_name = op_of.get((device.plane_index, row), "")
            op_name = "" if op_name == name else op_name
            groups.setdefault((name, op_name, config), []).append(duration)
    rows_out: list[KernelRow] = []
    for (name, op_name, config), durations in groups.items():
        total = sum(durations)
        rows_out.append(
            {
                "kernel_name": name,
                "op_name": op_name,
                "registers_per_thread": config.registers_per_thread,
                "shared_memory_bytes": config.shared_memory_bytes,
                "block_dim": config.block_dim,
                "grid_dim": config.grid_dim,
                "occupancy_pct": config.occupancy_pct,
                "is_op_tensor_core_eligible": bool(TENSOR_CORE_OP.search(op_name or name)),
                "is_kernel_using_tensor_core": bool(TENSOR_CORE_KERNEL.search(name)),
                "occurrences": len(durations),
                "total_duration_us": ps_to_us(total),
                "avg_duration_us": ps_to_us(total / len(durations)),
                "min_duration_us": ps_to_us(min(durations)),
                "max_duration_us": ps_to_us(max(durations)),
                "total_duration_ps": total,
            }
        )
    rows_out.sort(key=lambda row: (-row["total_duration_ps"], row["kernel_name"]))
    total_ps = sum(row["total_duration_ps"] for row in rows_out)
    return KernelStatsResult(
        rows=rows_out,
        total_kernel_time_us=ps_to_us(total_ps),
        total_kernel_time_ps=total_ps,
        devices=[device.device for device in stats.kernels],
        tensor_core_time_us=ps_to_us(tensor_core_ps),
        tensor_core_percent=percent(tensor_core_ps, total_ps),
    )
