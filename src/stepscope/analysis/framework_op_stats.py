"""framework_op_stats: one row per framework op, host and device side.

Which events are ops, and their type, is ``ops.find_ops``'s: step markers and allocator
events are not ops; PyTorch ops are typed by ``op_categories`` (GEMM, convolution...),
TensorFlow ops by their op type, XLA ops by their ``hlo_category``. ``top_operations`` is
the overview's short list, from these rows.

Times are the ops' own durations (total) and those minus their child ops (self). The
self-time share is of all op self time on that side; "with idle" adds an IDLE row per side
holding the time no op ran (the profiled window minus the union of the side's op
intervals, per device), as XProf's "include idle" toggle does.

FLOP rate, memory bandwidth and operational intensity are given where the source records
flops and bytes accessed (XLA ops in XSpace); NaN otherwise, never a made-up number. A
device op is "Compute" or "Memory" bound by where its operational intensity falls against
the device's ridge point (peak FLOP/s over peak HBM bandwidth, from the device plane's
capability stats), as on a roofline; unknown without both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stepscope.analysis.intervals import Union
from stepscope.analysis.ops import DEVICE, HOST, Ops, find_ops
from stepscope.analysis.registry import tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.trace import names
from stepscope.trace.model import Profile

TOOL = "framework_op_stats"
IDLE = "IDLE"
SIDES = (HOST, DEVICE)

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
class FrameworkOpStatsResult:
    tool: str = TOOL
    rows: list[dict[str, Any]] = field(default_factory=list)
    idle_rows: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "idle_rows": self.idle_rows}

    def tables(self) -> list[Table]:
        ordered = [tuple(row.get(c.key) for c in COLUMNS) for row in self.rows]
        return [Table("framework_ops", COLUMNS, ordered), Table("idle", COLUMNS, [tuple(r.get(c.key) for c in COLUMNS) for r in self.idle_rows])]

    def summary(self) -> list[str]:
        lines = []
        for side in SIDES:
            rows = [row for row in self.rows if row["host_or_device"] == side]
            if rows:
                top = rows[0]
                lines.append(
                    f"{side}: {len(rows)} ops; most self time: {top['name']} ({top['self_time_percent']:.1f}%)"
                )
        return lines or ["No framework ops in this profile."]


def side_idle_ps(profile: Profile, ops: Ops, side: int) -> int:
    """Per plane on this side, the window minus the union of its op intervals, summed."""
    idle = 0
    window = profile.span_ps
    for plane_index in np.unique(ops.plane[ops.side == side]).tolist():
        mask = (ops.side == side) & (ops.plane == plane_index)
        events = profile.planes[plane_index].events
        starts = events.start_ps[ops.row[mask]]
        busy = Union.of(starts, starts + ops.duration_ps[mask]).total
        idle += max(window - busy, 0)
    return idle


def ridge_point(profile: Profile) -> float | None:
    """FLOP/byte where the device's roofline turns from memory- to compute-bound: peak
    FLOP/s over peak memory bandwidth, from the device planes' capability stats."""
    for plane in profile.device_planes:
        stats = {stat.name: stat.value for stat in plane.plane_stats}
        flops, bandwidth = stats.get(names.PEAK_TERAFLOPS), stats.get(names.PEAK_HBM_BANDWIDTH)
        if isinstance(flops, (int, float)) and isinstance(bandwidth, (int, float)) and flops > 0 and bandwidth > 0:
            return flops * 1e12 / (bandwidth * 1e9)
    return None


def bound_by(intensity: float, ridge: float | None) -> str | None:
    if ridge is None or not math.isfinite(intensity):
        return None
    return "Compute" if intensity >= ridge else "Memory"


def _rate(amount: float, seconds: float, scale: float) -> float:
    if seconds <= 0 or not math.isfinite(amount):
        return math.nan
    return amount / seconds / scale


def _side_rows(ops: Ops, side_index: int, ridge: float | None, idle: int) -> list[dict[str, Any]]:
    """One row per (type, name) of one side, ranked by total self time (first seen first
    among equals)."""
    side = SIDES[side_index]
    mask = ops.side == side_index
    keys = list(zip(ops.type[mask].tolist(), ops.name[mask].tolist()))
    key_index: dict[tuple[str, str], int] = {}
    codes = np.asarray([key_index.setdefault(k, len(key_index)) for k in keys], dtype=np.int64)
    count = np.bincount(codes, minlength=len(key_index))
    total = np.bincount(codes, weights=ops.duration_ps[mask], minlength=len(key_index))
    self_total = np.bincount(codes, weights=ops.self_ps[mask], minlength=len(key_index))
    flops = np.bincount(codes, weights=np.nan_to_num(ops.flops[mask]), minlength=len(key_index))
    has_flops = np.bincount(codes, weights=np.isfinite(ops.flops[mask]), minlength=len(key_index)) > 0
    accessed = np.bincount(codes, weights=np.nan_to_num(ops.bytes_accessed[mask]), minlength=len(key_index))
    has_bytes = np.bincount(codes, weights=np.isfinite(ops.bytes_accessed[mask]), minlength=len(key_index)) > 0
    side_self = float(self_total.sum())
    order = np.lexsort((np.arange(len(key_index)), -self_total))
    distinct = list(key_index)
    rows = []
    cumulative = 0.0
    for rank, code in enumerate(order.tolist(), start=1):
        op_type, name = distinct[code]
        cumulative += self_total[code]
        seconds = total[code] / 1e12
        flop_count = flops[code] if has_flops[code] else math.nan
        byte_count = accessed[code] if has_bytes[code] else math.nan
        intensity = flop_count / byte_count if byte_count and math.isfinite(byte_count) else math.nan
        rows.append(
            {
                "rank": rank,
                "host_or_device": side,
                "type": op_type,
                "name": name,
                "occurrences": int(count[code]),
                "total_time_us": ps_to_us(total[code]),
                "avg_time_us": ps_to_us(total[code] / count[code]),
                "total_self_time_us": ps_to_us(self_total[code]),
                "avg_self_time_us": ps_to_us(self_total[code] / count[code]),
                "self_time_percent": percent(self_total[code], side_self),
                "cumulative_self_time_percent": percent(cumulative, side_self),
                "self_time_percent_with_idle": percent(self_total[code], side_self + idle),
                "gflops_per_second": _rate(flop_count, seconds, 1e9),
                "memory_bandwidth_gb_per_second": _rate(byte_count, seconds, 1e9),
                "operational_intensity": intensity,
                "bound_by": bound_by(intensity, ridge) if side == DEVICE else None,
                "total_time_ps": int(total[code]),
                "total_self_time_ps": int(self_total[code]),
            }
        )
    return rows


@tool(TOOL)
def framework_op_stats(profile: Profile) -> FrameworkOpStatsResult:
    ops = find_ops(profile)
    ridge = ridge_point(profile)
    result = FrameworkOpStatsResult()
    for side_index, side in enumerate(SIDES):
        if not (ops.side == side_index).any():
            continue
        idle = side_idle_ps(profile, ops, side_index)
        result.rows += _side_rows(ops, side_index, ridge, idle)
        side_self = int(ops.self_ps[ops.side == side_index].sum())
        result.idle_rows.append(
            {
                "rank": 0,
                "host_or_device": side,
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


def top_operations(profile: Profile, limit: int = 10) -> list[dict[str, Any]]:
    """The overview's top operations: the ``limit`` framework_op_stats rows with the most
    self time, from one side: the device side wherever the profile has device ops (that is
    the work the accelerator did, each kernel counted under the op that launched it), else
    the host side; the same rule for Kineto, XSpace and Chrome traces. Each row:
    ``self_time_percent`` and ``cumulative_self_time_percent`` (of that side's op self
    time, as in framework_op_stats), ``type`` (the op's type: its category for PyTorch ops,
    TensorFlow's op type, XLA's ``hlo_category``), ``name``, ``gflops_per_second`` (NaN where
    the source records no flops) and ``self_time_us`` (the op's total self time). Empty
    for a profile without ops."""
    ops = find_ops(profile)
    side_index = SIDES.index(DEVICE) if (ops.side == SIDES.index(DEVICE)).any() else SIDES.index(HOST)
    idle = side_idle_ps(profile, ops, side_index)
    return [
        {
            "self_time_percent": row["self_time_percent"],
            "cumulative_self_time_percent": row["cumulative_self_time_percent"],
            "type": row["type"],
            "name": row["name"],
            "gflops_per_second": row["gflops_per_second"],
            "self_time_us": row["total_self_time_us"],
        }
        for row in _side_rows(ops, side_index, ridge_point(profile), idle)[:limit]
    ]
