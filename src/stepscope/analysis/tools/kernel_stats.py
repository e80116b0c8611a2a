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
the overview's GPU figures read too, with names and launch configurations as integer
codes; the rows are a numpy group-by over (name code, op code, config code)
(``grouping.Groups``), numbered in first-seen order, so Python work is per row, not per
kernel (a dict keyed per kernel took a second on a 1M-event profile).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np
import numpy.typing as npt

from stepscope.analysis import applicability
from stepscope.analysis.grouping import Groups, factorize
from stepscope.analysis.ops.kernels import TENSOR_CORE_KERNEL, DeviceKernels
from stepscope.analysis.ops.ops import Ops, Side
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


def _op_codes(ops: Ops, device: DeviceKernels, strings: dict[Hashable, int], no_op: int) -> npt.NDArray[np.int64]:
    """Per kernel of ``device``, the code of the device op at its event row (the framework
    op that launched it; ``no_op`` where no op is there): a sorted search over that
    plane's op rows, not a dict over every op of the profile."""
    mine = np.flatnonzero((ops.side == Side.DEVICE) & (ops.plane == device.plane_index))
    op_rows = ops.row[mine]
    order = np.argsort(op_rows, kind="stable")
    op_rows, mine = op_rows[order], mine[order]
    codes = np.full(len(device.rows), no_op, dtype=np.int64)
    if not len(op_rows):
        return codes
    position = np.searchsorted(op_rows, device.rows, "right") - 1
    hit = (position >= 0) & (op_rows[np.maximum(position, 0)] == device.rows)
    # "right" - 1 finds the last op at a row, as a dict built in op order keeps the last.
    found = mine[position[hit]]
    coded = ops.name_codes
    # The plane's op names, each distinct one once, into the kernel names' code space.
    shared = factorize(coded.values, strings)[0]
    codes[hit] = shared[coded.codes[found]]
    return codes


@tool(
    TOOL,
    title="Kernel stats",
    order=40,
    description="Which GPU kernels run, how often, how long, with what launch shape and occupancy?",
    applies=applicability.gpu_kernels,
)
def kernel_stats(stats: OpStats) -> KernelStatsResult:
    devices = stats.kernels
    tensor_core_ps = sum(int(device.duration_ps[device.uses_tensor_core].sum()) for device in devices)
    rows_out: list[KernelRow] = []
    if devices:
        tables = devices[0].tables
        # Op names share the kernel names' code space, so "op named as the kernel" is a
        # comparison of codes; "" (no op) is a string like any other.
        strings: dict[Hashable, int] = {name: code for code, name in enumerate(tables.names)}
        no_op = strings.setdefault("", len(strings))
        name_code = np.concatenate([device.name_code for device in devices])
        op_code = np.concatenate([_op_codes(stats.ops, device, strings, no_op) for device in devices])
        op_code[op_code == name_code] = no_op
        config_code = np.concatenate([device.config_code for device in devices])
        duration = np.concatenate([device.duration_ps for device in devices])
        groups = Groups.of(name_code, op_code, config_code)
        text = list(strings)
        totals, lows, highs = groups.sum(duration).tolist(), groups.min(duration).tolist(), groups.max(duration).tolist()
        firsts = groups.first
        for name_index, op_index, config_index, count, total, low, high in zip(
            name_code[firsts].tolist(), op_code[firsts].tolist(), config_code[firsts].tolist(), groups.size.tolist(), totals, lows, highs
        ):
            name, op_name, config = tables.names[name_index], str(text[op_index]), tables.configs[config_index]
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
                    "occurrences": count,
                    "total_duration_us": ps_to_us(total),
                    "avg_duration_us": ps_to_us(total / count),
                    "min_duration_us": ps_to_us(low),
                    "max_duration_us": ps_to_us(high),
                    "total_duration_ps": total,
                }
            )
    rows_out.sort(key=lambda row: (-row["total_duration_ps"], row["kernel_name"]))
    total_ps = sum(row["total_duration_ps"] for row in rows_out)
    return KernelStatsResult(
        rows=rows_out,
        total_kernel_time_us=ps_to_us(total_ps),
        total_kernel_time_ps=total_ps,
        devices=[device.device for device in devices],
        tensor_core_time_us=ps_to_us(tensor_core_ps),
        tensor_core_percent=percent(tensor_core_ps, total_ps),
    )
