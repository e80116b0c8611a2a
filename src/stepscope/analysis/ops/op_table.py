"""The framework op table: one row per (type, name) of one side (host or device), ranked by
self time, with FLOP rate, bandwidth and roofline bound where the profile records them.

framework_op_stats shows every row; the overview's top operations are the first rows of
one side (``overview.top_operations``). Both read the rows from the profile's ``OpStats``,
which builds each side's rows once.

FLOP rate, memory bandwidth and operational intensity are given where the source records
flops and bytes accessed (XLA ops in XSpace); NaN otherwise, never a made-up number. A
device op is "Compute" or "Memory" bound by where its operational intensity falls against
the device's ridge point (peak FLOP/s over peak HBM bandwidth, from the device plane's
capability stats), as on a roofline; unknown without both.
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np

from stepscope.analysis.grouping import Groups
from stepscope.analysis.intervals import Union
from stepscope.analysis.ops.ops import Ops, Side
from stepscope.analysis.tables import percent, ps_to_us
from stepscope.trace import names
from stepscope.trace.model import Profile, distinct_indices


def idle_in_span_ps(profile: Profile, ops: Ops, mask: np.ndarray) -> int:
    """Per plane of the ops in ``mask``: its active span (its first op's start to its last
    op's end) minus the union of its op intervals; summed over the planes. The IDLE of
    framework_op_stats and op_profile, and the overview's device idle: XProf's IDLE row is
    the same span less the op time (``total_time_ps`` from the first op to the last), so
    the time before a device's first op and after its last is no idle here either."""
    idle = 0
    for plane_index in distinct_indices(ops.plane[mask]):
        here = mask & (ops.plane == plane_index)
        starts = profile.planes[plane_index].events.start_ps[ops.row[here]]
        busy = Union.of(starts, starts + ops.duration_ps[here])
        if len(busy.start):  # else its ops all take no time: no span, no idle
            idle += int(busy.end[-1] - busy.start[0]) - busy.total
    return idle


def side_idle_ps(profile: Profile, ops: Ops, side: Side) -> int:
    """A side's IDLE: ``idle_in_span_ps`` over its ops."""
    return idle_in_span_ps(profile, ops, ops.side == side)


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


class OpTableRow(TypedDict):
    """What every row of the framework op table has, a side's IDLE row included."""

    rank: int
    host_or_device: str
    type: str
    name: str
    occurrences: int
    total_time_us: float
    total_self_time_us: float
    self_time_percent_with_idle: float
    total_time_ps: int
    total_self_time_ps: int


class OpRow(OpTableRow):
    """One framework op (type, name) of one side: framework_op_stats' row."""

    avg_time_us: float
    avg_self_time_us: float
    self_time_percent: float
    cumulative_self_time_percent: float
    gflops_per_second: float | None  # null (NaN in Python) where the source records no flops
    memory_bandwidth_gb_per_second: float | None
    operational_intensity: float | None
    bound_by: str | None  # "Compute" | "Memory" on the device side, else null


def side_rows(ops: Ops, side: Side, ridge: float | None, idle: int) -> list[OpRow]:
    """One row per (type, name) of one side, ranked by total self time (first seen first
    among equals)."""
    mask = ops.side == side
    type_code, name_code = ops.type_codes.codes[mask], ops.name_codes.codes[mask]
    groups = Groups.of(type_code, name_code)
    codes = groups.group
    distinct = [(ops.type_codes.values[t], ops.name_codes.values[n]) for t, n in zip(type_code[groups.first].tolist(), name_code[groups.first].tolist())]
    count = groups.size
    total = np.bincount(codes, weights=ops.duration_ps[mask], minlength=len(distinct))
    self_total = np.bincount(codes, weights=ops.self_ps[mask], minlength=len(distinct))
    flops = np.bincount(codes, weights=np.nan_to_num(ops.flops[mask]), minlength=len(distinct))
    has_flops = np.bincount(codes, weights=np.isfinite(ops.flops[mask]), minlength=len(distinct)) > 0
    accessed = np.bincount(codes, weights=np.nan_to_num(ops.bytes_accessed[mask]), minlength=len(distinct))
    has_bytes = np.bincount(codes, weights=np.isfinite(ops.bytes_accessed[mask]), minlength=len(distinct)) > 0
    side_self = float(self_total.sum())
    order = np.lexsort((np.arange(len(distinct)), -self_total))
    rows: list[OpRow] = []
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
                "host_or_device": side.label,
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
                "bound_by": bound_by(intensity, ridge) if side == Side.DEVICE else None,
                "total_time_ps": int(total[code]),
                "total_self_time_ps": int(self_total[code]),
            }
        )
    return rows
