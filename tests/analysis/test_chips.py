"""The device peaks table: chip names as profilers write them, and where peaks come from."""

from __future__ import annotations

import pytest

import stepscope
from stepscope.analysis.chips import chip_of, device_peaks
from tests.support.traces import shared


@pytest.mark.parametrize(
    ("device", "chip"),
    [
        ("TPU v6 Lite", "TPU v6e"),  # device_type_string of the shared TPU profile
        ("TPU v5 lite", "TPU v5e"),
        ("TPU v5e", "TPU v5e"),
        ("TPU v5", "TPU v5p"),
        ("TPU v4", "TPU v4"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB"),
        ("NVIDIA A100-PG509-200", "NVIDIA A100 40GB"),  # the shared a100 Kineto trace's
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA H200", "NVIDIA H200"),
        ("Tesla V100-SXM2-16GB", "NVIDIA V100"),
        ("NVIDIA L4", "NVIDIA L4"),
        ("NVIDIA L40S", None),  # not an L4
        ("AMD Instinct MI250X", "AMD MI250X"),
        ("AMD Instinct MI300X", "AMD MI300X"),
        ("AMD Radeon Graphics", None),  # the shared mi250 trace names its GPU so: unknown
        ("cpu", None),
    ],
)
def test_chip_names(device: str, chip: str | None):
    found = chip_of(device)
    assert (found.name if found else None) == chip


def test_peaks_from_the_profile_the_table_and_the_options():
    tpu = stepscope.load(shared("xplane/tpu_v_inference_4chips.xplane.pb"))
    plane = tpu.plane("/device:TPU:0")
    assert plane is not None
    stats = {s.name: s.value for s in plane.plane_stats}
    peaks = device_peaks(tpu, plane)
    # The plane's own figures win over the table's (918 TFLOP/s, 1640 GB/s for a v6e).
    assert (peaks.source, peaks.chip) == ("profile", "TPU v6 Lite")
    assert (peaks.peak_tflops, peaks.peak_gbps) == (stats["peak_teraflops_per_second"], stats["peak_hbm_bw_gigabytes_per_second"])
    # One override replaces that peak only.
    half = device_peaks(tpu, plane, peak_gbps=800.0)
    assert (half.source, half.peak_tflops, half.peak_gbps) == ("options", stats["peak_teraflops_per_second"], 800.0)
    assert half.ridge == pytest.approx(stats["peak_teraflops_per_second"] * 1e12 / 800e9)

    a100 = stepscope.load(shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"))
    gpu = a100.device_planes[0]
    from_table = device_peaks(a100, gpu)
    # The A100 40GB row: 312 TFLOP/s dense BF16, 1555 GB/s (NVIDIA's datasheet).
    assert (from_table.source, from_table.chip, from_table.peak_tflops, from_table.peak_gbps) == ("table", "NVIDIA A100 40GB", 312.0, 1555.0)
    assert from_table.ridge == pytest.approx(312e12 / 1555e9)

    cpu = stepscope.load(shared("kineto/cpu_only_rank34.pt.trace.json.gz"))
    host = cpu.plane("/host:CPU")
    assert host is not None
    unknown = device_peaks(cpu, host)
    assert (unknown.source, unknown.peak_tflops, unknown.peak_gbps, unknown.ridge) == ("", None, None, None)
