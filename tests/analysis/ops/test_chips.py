"""The device peaks table: chip names as profilers write them, and where peaks come from."""

from __future__ import annotations

import json

import pytest

import stepscope
from stepscope.analysis.ops.chips import chip_of, device_peaks
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
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
        ("NVIDIA H200 NVL", "NVIDIA H200 NVL"),
        ("NVIDIA B200", "NVIDIA B200"),
        ("NVIDIA GB200", "NVIDIA GB200"),  # one word: not a B200
        ("NVIDIA GH200 480GB", None),  # bandwidth depends on its memory: not guessed
        ("AMD Instinct MI300X VF", "AMD MI300X"),  # a virtual function, as clouds name it
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


@pytest.mark.parametrize(
    ("device", "dense"),
    [
        # Dense = the datasheet's sparse tensor figure (2:4 structured sparsity) halved,
        # FP32 as printed, bandwidth in decimal GB/s (TB/s x 1000).
        # NVIDIA Blackwell technical brief, HGX B200 per GPU: BF16 4,500*, TF32 2,200*, FP32 80; 64 TB/s / 8 GPUs.
        ("NVIDIA B200", (4500 / 2, 80.0, 2200 / 2, 64_000 / 8)),
        # GB200 per GPU: BF16 5,000*, TF32 2,500*, FP32 90; NVL72: 576 TB/s / 72 GPUs.
        ("NVIDIA GB200", (5000 / 2, 90.0, 2500 / 2, 576_000 / 72)),
        # H200 SXM: BF16 1,979* (989 whole), TF32 989*, FP32 67, 4.8 TB/s.
        ("NVIDIA H200", (989.0, 67.0, 989 / 2, 4.8 * 1000)),
        # AMD MI300X: BF16 1,307.4 dense (2,614.9 sparse), FP32 Matrix 163.4, TF32 653.7, 5.3 TB/s.
        ("AMD Instinct MI300X", (1307.4, 163.4, 653.7, 5.3 * 1000)),
        # V100: FP16 tensor 125, FP32 15.7, no TF32.
        ("Tesla V100-SXM2-16GB", (125.0, 15.7, None, 900.0)),
    ],
)
def test_dense_peaks_of_the_newer_chips(device: str, dense: tuple):
    chip = chip_of(device)
    assert chip is not None
    assert (chip.peak_tflops, chip.fp32_tflops, chip.tf32_tflops, chip.peak_gbps) == pytest.approx(dense)


def test_a_b200_kineto_trace_has_peaks(tmp_path):
    # Kineto names the GPU in deviceProperties; the B200 row gives its peaks (MFU had none).
    document = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA B200", "totalGlobalMem": 191_000_000_000}],
        "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7}}],
    }
    path = tmp_path / "b200.pt.trace.json"
    path.write_text(json.dumps(document))
    profile = stepscope.load(path)
    peaks = device_peaks(profile, profile.plane("/device:GPU:0"))
    assert (peaks.source, peaks.chip, peaks.peak_tflops, peaks.peak_gbps) == ("table", "NVIDIA B200", 4500 / 2, 8000.0)
