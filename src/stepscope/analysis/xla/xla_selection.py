"""What the XLA tools (hlo_stats, roofline_model) share: their ``device`` and peak options,
the selection of a device's XLA ops with the peaks of the planes they ran on, and the rate
arithmetic (NaN where unknown inside, null in the JSON)."""

from __future__ import annotations

import math

import numpy as np

from stepscope.analysis.ops.chips import Peaks, device_peaks, parse_peak
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import Option
from stepscope.analysis.xla.hlo_ops import ALL, XlaOps
from stepscope.errors import StepscopeError
from stepscope.trace.model import distinct_indices

DEVICE_OPTION = Option(
    "device",
    str,
    ALL,
    f"the device plane to show, or {ALL!r} (every device; the host where no device ran XLA ops)",
    choices=(ALL,),
    choices_from="devices",
)


PEAK_OPTIONS = (
    Option("peak_flops", str, "", "the device's peak in TFLOP/s (default: from the profile, else the table of known chips)"),
    Option("peak_bw", str, "", "the device's peak memory bandwidth in GB/s (default: as peak_flops)"),
)


def selected_peaks(stats: OpStats, tool_name: str, device: str, peak_flops: str, peak_bw: str, ops: XlaOps | None = None) -> tuple[np.ndarray, list[Peaks]]:
    """The mask of the chosen device's ops (the XLA ops unless ``ops`` says otherwise),
    and the peaks of the planes they ran on."""
    xla = stats.xla_ops if ops is None else ops
    if device != ALL and device not in xla.devices:
        choices = ", ".join([ALL, *xla.devices])
        raise StepscopeError(f"{tool_name}: no XLA ops on device {device!r} (choose from {choices})")
    flops, bandwidth = parse_peak(tool_name, "peak_flops", peak_flops), parse_peak(tool_name, "peak_bw", peak_bw)
    mask = xla.select(device)
    planes = [stats.profile.planes[i] for i in distinct_indices(xla.plane[mask])]
    return mask, [device_peaks(stats.profile, plane, flops, bandwidth) for plane in planes]


def common_peaks(peaks: list[Peaks]) -> tuple[float | None, float | None]:
    """(TFLOP/s, GB/s) when every selected device has the same, else (None, None)."""
    pairs = {(p.peak_tflops, p.peak_gbps) for p in peaks}
    return pairs.pop() if len(pairs) == 1 else (None, None)


def common_ridge(peaks: list[Peaks]) -> float | None:
    ridges = {p.ridge for p in peaks}
    return ridges.pop() if len(ridges) == 1 else None


def known(value: float) -> float | None:
    return None if not math.isfinite(value) else float(value)


def intensity_of(flops: float, accessed: float) -> float:
    return flops / accessed if math.isfinite(flops) and math.isfinite(accessed) and accessed > 0 else math.nan


def rate(amount: float, time_ps: int) -> float:
    """amount per second, in billions (GFLOP/s, GB/s); NaN without amount or time."""
    return amount / (time_ps / 1e12) / 1e9 if math.isfinite(amount) and time_ps > 0 else math.nan
