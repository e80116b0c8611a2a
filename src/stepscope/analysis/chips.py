"""Device peaks (FLOP/s and memory bandwidth) for the roofline: from the profile, from a
table of known chips, or from the user.

Where a device's peaks come from, first that answers:
  1. the user's overrides (``peak_flops`` in TFLOP/s, ``peak_bw`` in GB/s, tool options);
     one of them alone replaces that peak only;
  2. the device plane's own stats ``peak_teraflops_per_second`` and
     ``peak_hbm_bw_gigabytes_per_second``, which TPU profilers write (XProf's roofline reads
     the same two);
  3. the table below, by the chip's name: a TPU plane's ``device_type_string`` stat ("TPU v6
     Lite"), a GPU's model from Kineto's ``deviceProperties`` ("NVIDIA A100-SXM4-80GB").

Every ``Peaks`` says which of the three it is (``source``) and, from the table, which chip,
so a result can say what its fractions of the roofline are fractions of. A device none of
them knows (a CPU, an unlisted GPU) has no peaks: rates are still given, the bound and
the fraction of the roofline are not.

The table (facts from the vendors' published specifications; peak FLOP/s is the dense
16-bit matrix rate, BF16 where the chip has it, FP16 on V100, without structured
sparsity, which is what ML training and inference FLOP counts are measured against;
bandwidth is the main memory's, in decimal GB/s):

  chip           TFLOP/s   GB/s    source
  TPU v2            45      600    Cloud TPU documentation, "TPU v2" (per chip)
  TPU v3           123      900    Cloud TPU documentation, "TPU v3": 123 TFLOPs bf16, 900 GBps
  TPU v4           275     1200    Cloud TPU documentation, "TPU v4": 275 TFLOPs bf16, 1200 GBps
  TPU v5e          197      819    Cloud TPU documentation, "TPU v5e": 197 TFLOPs bf16, 819 GBps
  TPU v5p          459     2765    Cloud TPU documentation, "TPU v5p": 459 TFLOPs bf16, 2765 GBps
  TPU v6e          918     1640    Cloud TPU documentation, "TPU v6e" (Trillium): 918 TFLOPs bf16, 1640 GBps
  V100 (SXM2)      125      900    NVIDIA V100 datasheet: 125 TFLOPS tensor (FP16), 900 GB/s HBM2
  A100 40GB        312     1555    NVIDIA A100 datasheet: 312 TFLOPS BF16 dense, 1,555 GB/s
  A100 80GB        312     2039    NVIDIA A100 datasheet: 312 TFLOPS BF16 dense, 2,039 GB/s (SXM)
  H100 SXM         989     3350    NVIDIA H100 datasheet: 989 TFLOPS BF16 dense (1,979 sparse), 3.35 TB/s
  H100 PCIe        756     2000    NVIDIA H100 datasheet: 756 TFLOPS BF16 dense, 2 TB/s
  H100 NVL         835     3900    NVIDIA H100 datasheet: 835 TFLOPS BF16 dense, 3.9 TB/s
  H200             989     4800    NVIDIA H200 datasheet: 989 TFLOPS BF16 dense, 4.8 TB/s HBM3e
  L4               121      300    NVIDIA L4 datasheet: 121 TFLOPS BF16 dense (242 sparse), 300 GB/s
  MI250X           383     3277    AMD Instinct MI250X datasheet: 383 TFLOPS BF16, 3.2768 TB/s HBM2e
  MI250            362     3277    AMD Instinct MI250 datasheet: 362.1 TFLOPS BF16, 3.2768 TB/s
  MI300X          1307     5300    AMD Instinct MI300X datasheet: 1307.4 TFLOPS BF16 dense, 5.3 TB/s
  MI300A           981     5300    AMD Instinct MI300A datasheet: 980.6 TFLOPS BF16 dense, 5.3 TB/s

A name matches the first row each of whose patterns begins one of the name's words
(case-insensitive; a word is a run of letters and digits) and is not followed there by a
digit: "80g" matches "A100-SXM4-80GB", "l4" matches "NVIDIA L4" but not "L40S", "v5"
matches "TPU v5 lite" and "v5e". The more specific rows come first (``A100 80GB`` before
``A100``, ``MI250X`` before ``MI250``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from stepscope.errors import StepscopeError
from stepscope.trace import names
from stepscope.trace.model import Plane, Profile

_WORD = re.compile(r"[a-z0-9]+")
FROM_OPTIONS = "options"
FROM_PROFILE = "profile"
FROM_TABLE = "table"


@dataclass(frozen=True)
class Chip:
    name: str
    patterns: tuple[str, ...]  # each must begin a word of the device's name (see above)
    peak_tflops: float
    peak_gbps: float


KNOWN_CHIPS: tuple[Chip, ...] = (
    Chip("TPU v2", ("tpu", "v2"), 45.0, 600.0),
    Chip("TPU v3", ("tpu", "v3"), 123.0, 900.0),
    Chip("TPU v4", ("tpu", "v4"), 275.0, 1200.0),
    Chip("TPU v5e", ("tpu", "v5", "lite"), 197.0, 819.0),
    Chip("TPU v5e", ("tpu", "v5e"), 197.0, 819.0),
    Chip("TPU v5p", ("tpu", "v5"), 459.0, 2765.0),
    Chip("TPU v6e", ("tpu", "v6"), 918.0, 1640.0),
    Chip("NVIDIA V100", ("v100",), 125.0, 900.0),
    Chip("NVIDIA A100 80GB", ("a100", "80g"), 312.0, 2039.0),
    Chip("NVIDIA A100 40GB", ("a100",), 312.0, 1555.0),
    Chip("NVIDIA H100 PCIe", ("h100", "pcie"), 756.0, 2000.0),
    Chip("NVIDIA H100 NVL", ("h100", "nvl"), 835.0, 3900.0),
    Chip("NVIDIA H100 SXM", ("h100",), 989.0, 3350.0),
    Chip("NVIDIA H200", ("h200",), 989.0, 4800.0),
    Chip("NVIDIA L4", ("l4",), 121.0, 300.0),
    Chip("AMD MI250X", ("mi250x",), 383.0, 3276.8),
    Chip("AMD MI250", ("mi250",), 362.1, 3276.8),
    Chip("AMD MI300X", ("mi300x",), 1307.4, 5300.0),
    Chip("AMD MI300A", ("mi300a",), 980.6, 5300.0),
)


@dataclass(frozen=True)
class Peaks:
    """One device's peaks and where they came from (its JSON form)."""

    device: str
    chip: str | None  # the device's name as the profile gives it, or the table's row
    peak_tflops: float | None
    peak_gbps: float | None
    source: str  # "options" | "profile" | "table" | "" (none known); see the module docstring

    @property
    def ridge(self) -> float | None:
        """FLOP per byte where the roofline turns from memory- to compute-bound."""
        if not self.peak_tflops or not self.peak_gbps:
            return None
        return self.peak_tflops * 1e12 / (self.peak_gbps * 1e9)


def parse_peak(tool: str, option: str, text: str) -> float | None:
    """An override's value: "" for none, else a positive number."""
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise StepscopeError(f"{tool}: option {option} must be a number, not {text[:40]!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise StepscopeError(f"{tool}: option {option} must be a positive number, not {text[:40]!r}")
    return value


def chip_of(name: str) -> Chip | None:
    """The table's row for a device name, if any."""
    words = _WORD.findall(name.lower())

    def begins_a_word(pattern: str) -> bool:
        return any(w.startswith(pattern) and not w[len(pattern) : len(pattern) + 1].isdigit() for w in words)

    return next((chip for chip in KNOWN_CHIPS if all(begins_a_word(p) for p in chip.patterns)), None)


def device_name(profile: Profile, plane: Plane) -> str | None:
    """What the profile calls the chip: the plane's ``device_type_string``, else Kineto's
    ``deviceProperties`` name for a GPU plane's ordinal."""
    stats = {stat.name: stat.value for stat in plane.plane_stats}
    named = stats.get(names.DEVICE_TYPE_STRING)
    if isinstance(named, str) and named:
        return named
    if plane.name.startswith(names.GPU_PLANE_PREFIX):
        ordinal = plane.name.removeprefix(names.GPU_PLANE_PREFIX)
        for device in profile.info.get("deviceProperties") or []:
            if isinstance(device, dict) and str(device.get("id")) == ordinal and isinstance(device.get("name"), str):
                return str(device["name"])
    return None


def _positive(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None


def device_peaks(profile: Profile, plane: Plane, peak_tflops: float | None = None, peak_gbps: float | None = None) -> Peaks:
    """The peaks of one device plane (overrides in TFLOP/s and GB/s first)."""
    named = device_name(profile, plane)
    stats = {stat.name: stat.value for stat in plane.plane_stats}
    flops, bandwidth = _positive(stats.get(names.PEAK_TERAFLOPS)), _positive(stats.get(names.PEAK_HBM_BANDWIDTH))
    source, chip_label = (FROM_PROFILE, named) if flops and bandwidth else ("", named)
    if not (flops and bandwidth):
        chip = chip_of(named) if named else None
        if chip is not None:
            flops, bandwidth, source, chip_label = chip.peak_tflops, chip.peak_gbps, FROM_TABLE, chip.name
        else:
            flops = bandwidth = None
    if peak_tflops is not None or peak_gbps is not None:
        flops = peak_tflops if peak_tflops is not None else flops
        bandwidth = peak_gbps if peak_gbps is not None else bandwidth
        source = FROM_OPTIONS
    return Peaks(plane.name, chip_label, flops, bandwidth, source)
