"""The overview's GPU figures, per GPU plane, as the PyTorch TensorBoard plugin showed them:
GPU utilisation, estimated SM efficiency, estimated achieved occupancy, the share of kernel
time on TensorCores, and the kernels that took the most time (for a pie).

All four read the kernels ``kernels.find_kernels`` found (``OpStats.kernels``): device
compute and collective events of a ``/device:GPU:N`` plane, not copies or memsets.

- ``utilization_percent``: the union of the device's kernels (concurrent kernels on several
  streams count once) over the device's active span. This is not overview's
  ``busy_percent``: that one counts copies and memsets as busy too, so utilisation is at
  most the busy figure, and lower by the time only copies ran.
- ``sm_efficiency_percent``: a kernel with ``blocks`` thread blocks (the product of its
  grid's dimensions) on a GPU with ``S`` SMs keeps ``min(1, blocks / S)`` of the SMs busy
  (a grid of fewer blocks than SMs leaves SMs idle); the figure is that, weighted by the
  kernel's duration, summed, over the active span. Where kernels overlap, their
  ``blocks / S`` are added before the cap, so two half-GPU kernels side by side count as one
  full GPU and the figure never passes 100%. Kineto's own ``blocks per SM`` arg is the same
  ``blocks / S``. None where the trace has no SM count for the GPU (``core_count``, from
  Kineto's ``deviceProperties``) or no kernel records its grid; kernels without a grid
  count as 0 (the note says how much kernel time that is).
- ``achieved_occupancy_percent``: the mean of the kernels' ``occ_pct`` (Kineto's ``est.
  achieved occupancy %``), weighted by duration, over the kernels that record one; None
  where none does.
- ``tensor_core_percent``: the share of the device's kernel time in kernels whose names
  say TensorCore (``kernels.TENSOR_CORE_KERNEL``), as kernel_stats counts them.

The denominator: the plugin divides utilisation and SM efficiency by the steps' span
(first ProfilerStep's start to the last one's end) and counts only kernel time inside it;
stepscope divides by the device's active span (its first device work to its last), the
span overview's ``busy_percent`` headline is over, so the figures on one page share one
denominator, and a profile with no step markers (or kernels outside them) still gets them.
On a profile whose steps cover the device's work the two agree; where the device works
before the first step or after the last one, the plugin's figures leave that work out.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from stepscope.analysis.grouping import Groups
from stepscope.analysis.intervals import Union
from stepscope.analysis.ops.kernels import DeviceKernels
from stepscope.analysis.tables import percent, ps_to_us

TOP_KERNELS = 10


class KernelSlice(TypedDict):
    """One slice of the top-kernels pie: a kernel name's total time on the device, or
    (``other``) the kernels past the top ones together."""

    kernel_name: str
    other: bool
    total_duration_us: float
    total_duration_ps: int
    percent: float  # of the device's kernel time


class GpuMetrics(TypedDict):
    device: str
    kernel_count: int
    kernel_time_us: float  # the kernels' durations summed
    kernel_busy_time_us: float  # their union
    active_span_us: float  # overview's: the device's first work to its last
    utilization_percent: float
    sm_count: int | None
    sm_efficiency_percent: float | None
    sm_efficiency_note: str | None  # why it is None, or what it leaves out
    achieved_occupancy_percent: float | None
    occupancy_note: str | None
    tensor_core_time_us: float
    tensor_core_percent: float
    top_kernels: list[KernelSlice]


def _share(part_ps: int, kernels: DeviceKernels) -> str:
    return f"{percent(part_ps, int(kernels.duration_ps.sum())):.1f}% of kernel time"


def sm_busy_ps(start_ps: np.ndarray, end_ps: np.ndarray, fraction: np.ndarray) -> float:
    """The time integral of ``min(1, sum of the running kernels' fractions)``, in ps: a sweep
    over the kernels' starts and ends (each start adds its fraction, each end takes it off)."""
    if not len(start_ps):
        return 0.0
    times = np.concatenate((start_ps, end_ps))
    steps = np.concatenate((fraction, -fraction))
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(steps[order])
    # Between times[i] and times[i+1] the level after event i holds (float sums drift by
    # ~1e-16, hence the clip at 0).
    return float(np.sum(np.diff(times) * np.clip(level[:-1], 0.0, 1.0)))


def _sm_efficiency(kernels: DeviceKernels, active_ps: int) -> tuple[float | None, str | None]:
    if kernels.sm_count is None:
        return None, "The trace records no SM count for this GPU (Kineto's deviceProperties numSms), so SM efficiency cannot be estimated."
    blocks = kernels.blocks
    known = blocks >= 0
    if not known.any():
        return None, "No kernel records its grid, so SM efficiency cannot be estimated."
    busy = sm_busy_ps(kernels.start_ps[known], kernels.end_ps[known], blocks[known] / kernels.sm_count)
    note = None
    if not known.all():
        missing = int(kernels.duration_ps[~known].sum())
        note = f"{int((~known).sum()):,} of {len(known):,} kernels ({_share(missing, kernels)}) record no grid and count as 0."
    return percent(busy, active_ps), note


def _occupancy(kernels: DeviceKernels) -> tuple[float | None, str | None]:
    occupancy = kernels.occupancy_pct
    known = np.isfinite(occupancy)
    weights = kernels.duration_ps[known].astype(np.float64)
    if not known.any() or weights.sum() <= 0:
        return None, "No kernel records its estimated achieved occupancy."
    mean = float(np.sum(occupancy[known] * weights) / weights.sum())
    note = None
    if not known.all():
        note = f"Over the {int(known.sum()):,} of {len(known):,} kernels ({_share(int(weights.sum()), kernels)}) that record it."
    return mean, note


def top_kernels(kernels: DeviceKernels, limit: int = TOP_KERNELS) -> list[KernelSlice]:
    """The ``limit`` kernel names with the most time, largest first (ties by name), then
    the rest as one ``other`` slice when there is a rest."""
    groups = Groups.of(kernels.name_code)
    names = kernels.tables.names
    totals = dict(zip((names[code] for code in kernels.name_code[groups.first].tolist()), groups.sum(kernels.duration_ps).tolist()))
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    whole = sum(totals.values())
    slices = [(name, False, total) for name, total in ranked[:limit]]
    if len(ranked) > limit:
        slices.append(("other", True, sum(total for _, total in ranked[limit:])))
    return [
        {"kernel_name": name, "other": other, "total_duration_us": ps_to_us(total), "total_duration_ps": total, "percent": percent(total, whole)}
        for name, other, total in slices
    ]


def gpu_metrics(devices: list[DeviceKernels], active_span_ps: dict[str, int]) -> list[GpuMetrics]:
    """Per GPU plane with kernels; ``active_span_ps`` is overview's active span per device."""
    found: list[GpuMetrics] = []
    for kernels in devices:
        active = active_span_ps.get(kernels.device, 0)
        kernel_ps = int(kernels.duration_ps.sum())
        busy = Union.of(kernels.start_ps, kernels.end_ps).total
        tensor_core = int(kernels.duration_ps[kernels.uses_tensor_core].sum())
        efficiency, efficiency_note = _sm_efficiency(kernels, active)
        occupancy, occupancy_note = _occupancy(kernels)
        found.append(
            {
                "device": kernels.device,
                "kernel_count": len(kernels.rows),
                "kernel_time_us": ps_to_us(kernel_ps),
                "kernel_busy_time_us": ps_to_us(busy),
                "active_span_us": ps_to_us(active),
                "utilization_percent": percent(busy, active),
                "sm_count": kernels.sm_count,
                "sm_efficiency_percent": efficiency,
                "sm_efficiency_note": efficiency_note,
                "achieved_occupancy_percent": occupancy,
                "occupancy_note": occupancy_note,
                "tensor_core_time_us": ps_to_us(tensor_core),
                "tensor_core_percent": percent(tensor_core, kernel_ps),
                "top_kernels": top_kernels(kernels),
            }
        )
    return found
