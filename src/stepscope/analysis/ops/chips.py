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

The table (facts from the vendors' published specifications). ``peak_tflops`` is the dense
16-bit matrix rate, BF16 where the chip has it (FP16 is the same on every GPU listed), FP16
on V100, without 2:4 structured sparsity: what ML training and inference FLOP counts are
measured against, and what MFU and the roofline use. NVIDIA's datasheets print the sparse
tensor figure with an asterisk; the dense one is half of it. ``fp32_tflops`` is the dense
FP32 rate (NVIDIA: the non-tensor FP32 figure; AMD: "FP32 Matrix"), ``tf32_tflops`` the
dense TF32 tensor rate (None: the chip has none, or the TPU documentation gives none); they
are for reading a run whose matmuls are in those precisions (pass them as ``peak_flops``).
Bandwidth is the main memory's, in decimal GB/s. Halved figures keep the whole TFLOP/s
(H100 SXM: 1,979* -> 989).

  chip          BF16   FP32   TF32    GB/s   source (dense figures; * = sparse in the source, halved)
  TPU v2          45     -      -      600   Cloud TPU documentation, "TPU v2" (per chip)
  TPU v3         123     -      -      900   Cloud TPU documentation, "TPU v3": 123 TFLOPs bf16, 900 GBps
  TPU v4         275     -      -     1200   Cloud TPU documentation, "TPU v4": 275 TFLOPs bf16, 1200 GBps
  TPU v5e        197     -      -      819   Cloud TPU documentation, "TPU v5e": 197 TFLOPs bf16, 819 GBps
  TPU v5p        459     -      -     2765   Cloud TPU documentation, "TPU v5p": 459 TFLOPs bf16, 2765 GBps
  TPU v6e        918     -      -     1640   Cloud TPU documentation, "TPU v6e" (Trillium): 918 TFLOPs bf16, 1640 GBps
  V100 (SXM2)    125   15.7     -      900   NVIDIA V100 datasheet: 125 TFLOPS tensor (FP16), 15.7 FP32, 900 GB/s HBM2
  A100 40GB      312   19.5   156     1555   NVIDIA A100 datasheet: BF16 312 (624*), FP32 19.5, TF32 156 (312*), 1,555 GB/s
  A100 80GB      312   19.5   156     2039   NVIDIA A100 datasheet: as 40GB, 2,039 GB/s (SXM)
  H100 SXM       989   67     494.5   3350   NVIDIA H100 datasheet: BF16 1,979*, FP32 67, TF32 989*, 3.35 TB/s
  H100 PCIe      756   51     378     2000   NVIDIA H100 datasheet: BF16 1,513*, FP32 51, TF32 756*, 2 TB/s
  H100 NVL       835   60     417.5   3900   NVIDIA H100 NVL datasheet: BF16 1,671*, FP32 60, TF32 835*, 3.9 TB/s
  H200 NVL       835   60     417.5   4800   NVIDIA H200 datasheet (NVL): BF16 1,671*, FP32 60, TF32 835*, 4.8 TB/s
  H200 (SXM)     989   67     494.5   4800   NVIDIA H200 datasheet (SXM): BF16 1,979*, FP32 67, TF32 989*, 4.8 TB/s HBM3e
  GB200 (a GPU) 2500   90    1250     8000   NVIDIA Blackwell architecture technical brief, GB200 (per GPU, 1,200 W):
                                             BF16 5,000*, FP32 90, TF32 2,500*; GB200 NVL72: 576 TB/s over 72 GPUs
  B200          2250   80    1100     8000   NVIDIA Blackwell architecture technical brief, HGX B200 (per GPU, 1,000 W):
                                             BF16 4,500*, FP32 80, TF32 2,200*; HGX B200: 64 TB/s over 8 GPUs
  L4             121   30.3    60      300   NVIDIA L4 datasheet: BF16 242*, FP32 30.3, TF32 120*, 300 GB/s
  MI250X         383   95.7     -     3277   AMD Instinct MI250X datasheet: BF16 383, FP32 Matrix 95.7, 3.2768 TB/s HBM2e
  MI250          362   90.5     -     3277   AMD Instinct MI250 datasheet: BF16 362.1, FP32 Matrix 90.5, 3.2768 TB/s
  MI300X        1307  163.4   653.7   5300   AMD Instinct MI300X datasheet: BF16 1,307.4 (2,614.9 sparse), FP32 Matrix 163.4,
                                             TF32 653.7, 5.3 TB/s
  MI300A         981  122.6   490.3   5300   AMD Instinct MI300A datasheet: BF16 980.6, FP32 Matrix 122.6, TF32 490.3, 5.3 TB/s

A name matches the first row each of whose patterns begins one of the name's words
(case-insensitive; a word is a run of letters and digits) and is not followed there by a
digit: "80g" matches "A100-SXM4-80GB", "l4" matches "NVIDIA L4" but not "L40S", "v5"
matches "TPU v5 lite" and "v5e". The more specific rows come first (``A100 80GB`` before
``A100``, ``MI250X`` before ``MI250``, ``H200 NVL`` before ``H200``); "gb200" is one word,
so a GB200 is never read as a B200. A GH200 (an H100-class GPU whose bandwidth depends on
its memory, 4 or 4.9 TB/s) is not listed: unknown, not guessed.
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
    peak_tflops: float  # dense BF16 (FP16 on V100)
    peak_gbps: float
    fp32_tflops: float | None = None  # dense FP32
    tf32_tflops: float | None = None  # dense TF32 tensor


KNOWN_CHIPS: tuple[Chip, ...] = (
    Chip("TPU v2", ("tpu", "v2"), 45.0, 600.0),
    Chip("TPU v3", ("tpu", "v3"), 123.0, 900.0),
    Chip("TPU v4", ("tpu", "v4"), 275.0, 1200.0),
    Chip("TPU v5e", ("tpu", "v5", "lite"), 197.0, 819.0),
    Chip("TPU v5e", ("tpu", "v5e"), 197.0, 819.0),
    Chip("TPU v5p", ("tpu", "v5"), 459.0, 2765.0),
    Chip("TPU v6e", ("tpu", "v6"), 918.0, 1640.0),
    Chip("NVIDIA V100", ("v100",), 125.0, 900.0, 15.7),
    Chip("NVIDIA A100 80GB", ("a100", "80g"), 312.0, 2039.0, 19.5, 156.0),
    Chip("NVIDIA A100 40GB", ("a100",), 312.0, 1555.0, 19.5, 156.0),
    Chip("NVIDIA H100 PCIe", ("h100", "pcie"), 756.0, 2000.0, 51.0, 378.0),
    Chip("NVIDIA H100 NVL", ("h100", "nvl"), 835.0, 3900.0, 60.0, 417.5),
    Chip("NVIDIA H100 SXM", ("h100",), 989.0, 3350.0, 67.0, 494.5),
    Chip("NVIDIA H200 NVL", ("h200", "nvl"), 835.0, 4800.0, 60.0, 417.5),
    Chip("NVIDIA H200", ("h200",), 989.0, 4800.0, 67.0, 494.5),
    Chip("NVIDIA GB200", ("gb200",), 2500.0, 8000.0, 90.0, 1250.0),
    Chip("NVIDIA B200", ("b200",), 2250.0, 8000.0, 80.0, 1100.0),
    Chip("NVIDIA L4", ("l4",), 121.0, 300.0, 30.3, 60.0),
    Chip("AMD MI250X", ("mi250x",), 383.0, 3276.8, 95.7),
    Chip("AMD MI250", ("mi250",), 362.1, 3276.8, 90.5),
    Chip("AMD MI300X", ("mi300x",), 1307.4, 5300.0, 163.4, 653.7),
    Chip("AMD MI300A", ("mi300a",), 980.6, 5300.0, 122.6, 490.3),
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
