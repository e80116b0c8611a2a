"""The overview's GPU figures (``gpu_metrics``) and kernel_stats' TensorCore share.

A small Kineto trace written here, every figure derived by hand in the comments, and the
real shared Kineto traces, each figure computed in the test straight from the JSON (kernel
events of category ``kernel``, Kineto's own ``blocks per SM`` and ``est. achieved occupancy
%`` args, ``deviceProperties[].numSms``), independently of the importer and the analysis.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.ops.kernels import TENSOR_CORE_KERNEL
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.steps.gpu_metrics import top_kernels
from tests.support.frameworks import read_json_exact
from tests.support.intervals import union_length
from tests.support.traces import shared


def _kernel(name: str, ts: int, dur: int, grid: list[int] | None, occupancy: float | None = None, stream: int = 7) -> dict:
    args: dict = {"device": 0, "stream": stream, "block": [128, 1, 1], "registers per thread": 32, "shared memory": 0}
    if grid is not None:
        args["grid"] = grid
    else:
        args.pop("block")
    if occupancy is not None:
        args["est. achieved occupancy %"] = occupancy
    return {"ph": "X", "name": name, "cat": "kernel", "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


# GPU 0 with 4 SMs (times in us):
#   volta_h884gemm_64x64_nn [0,10)  stream 7, grid 2,1,1 = 2 blocks -> 2/4 = 0.5 of the SMs, occupancy 50
#   elementwise             [10,30) stream 7, grid 4,2,1 = 8 blocks -> min(1, 8/4) = 1, occupancy 25
#   Memcpy HtoD             [30,40) stream 7: device work, not a kernel
#   elementwise             [40,50) stream 8, grid 3,1,1 = 3 blocks -> 0.75, no occupancy recorded
#   reduce                  [45,60) stream 7, grid 2,1,1 = 2 blocks -> 0.5, occupancy 100
STEP = {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 100, "tid": 1, "ts": 0, "dur": 60, "args": {}}
KERNELS = [
    _kernel("volta_h884gemm_64x64_nn", 0, 10, [2, 1, 1], 50),
    _kernel("elementwise", 10, 20, [4, 2, 1], 25),
    _kernel("elementwise", 40, 10, [3, 1, 1], None, stream=8),
    _kernel("reduce", 45, 15, [2, 1, 1], 100),
]
MEMCPY = {
    "ph": "X",
    "name": "Memcpy HtoD (Pageable -> Device)",
    "cat": "gpu_memcpy",
    "pid": 0,
    "tid": 7,
    "ts": 30,
    "dur": 10,
    "args": {"device": 0, "bytes": 64},
}
DEVICE = [{"id": 0, "name": "Test GPU", "numSms": 4}]


def _profile(tmp_path: Path, events: list[dict], devices: list[dict] | None = DEVICE) -> stepscope.Profile:
    document: dict = {"schemaVersion": 1, "traceEvents": [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}, *events]}
    if devices is not None:
        document["deviceProperties"] = devices
    path = tmp_path / "gpu.pt.trace.json"
    path.write_text(json.dumps(document))
    profile = stepscope.load(path)
    profile.validate()
    return profile


def _gpus(profile: stepscope.Profile) -> list[dict]:
    return run_tool("overview_page", profile).to_json()["gpus"]


def test_the_four_figures_by_hand(tmp_path: Path):
    (gpu,) = _gpus(_profile(tmp_path, [STEP, *KERNELS, MEMCPY]))
    assert gpu["device"] == "/device:GPU:0"
    assert gpu["kernel_count"] == 4
    assert gpu["sm_count"] == 4
    # Kernel time 10 + 20 + 10 + 15 = 55 us; their union [0,30) + [40,60) = 50 us.
    assert gpu["kernel_time_us"] == 55.0
    assert gpu["kernel_busy_time_us"] == 50.0
    # Active span: first device work (0) to last (60) = 60 us; utilisation 50 / 60, below
    # the overview's busy figure (60 / 60: the memcpy [30,40) is busy but not a kernel).
    assert gpu["active_span_us"] == 60.0
    assert gpu["utilization_percent"] == pytest.approx(100 * 50 / 60)
    # SM efficiency: 10 x 0.5 + 20 x 1, then [40,45) 0.75 x 5, [45,50) min(1, 0.75 + 0.5) x 5
    # (the overlap is capped at the whole GPU), [50,60) 0.5 x 10 = 5 + 20 + 3.75 + 5 + 5 =
    # 38.75 us of full-GPU time, over 60 us.
    assert gpu["sm_efficiency_percent"] == pytest.approx(100 * 38.75 / 60)
    assert gpu["sm_efficiency_note"] is None
    # Occupancy over the three kernels that record one: (50 x 10 + 25 x 20 + 100 x 15) / 45.
    assert gpu["achieved_occupancy_percent"] == pytest.approx(2500 / 45)
    # Those three are 45 of the 55 us of kernel time: 81.8%.
    assert gpu["occupancy_note"] == "Over the 3 of 4 kernels (81.8% of kernel time) that record it."
    # TensorCore: only the h884 gemm, 10 of 55 us.
    assert gpu["tensor_core_time_us"] == 10.0
    assert gpu["tensor_core_percent"] == pytest.approx(100 * 10 / 55)
    # Top kernels by name: elementwise 30 us, reduce 15, the gemm 10; no rest.
    assert [(s["kernel_name"], s["other"], s["total_duration_us"]) for s in gpu["top_kernels"]] == [
        ("elementwise", False, 30.0),
        ("reduce", False, 15.0),
        ("volta_h884gemm_64x64_nn", False, 10.0),
    ]
    assert [s["percent"] for s in gpu["top_kernels"]] == pytest.approx([100 * 30 / 55, 100 * 15 / 55, 100 * 10 / 55])
    device = run_tool("overview_page", _profile(tmp_path, [STEP, *KERNELS, MEMCPY])).to_json()["devices"][0]
    assert device["busy_percent"] == 100.0


def test_the_rest_of_the_kernels_is_one_other_slice(tmp_path: Path):
    (kernels,) = OpStats(_profile(tmp_path, [STEP, *KERNELS])).kernels
    # The top 2 names (elementwise 30, reduce 15), then the gemm's 10 us as "other".
    slices = top_kernels(kernels, limit=2)
    assert [(s["kernel_name"], s["other"], s["total_duration_ps"]) for s in slices] == [
        ("elementwise", False, 30_000_000),
        ("reduce", False, 15_000_000),
        ("other", True, 10_000_000),
    ]


def test_fewer_blocks_than_sms_and_a_kernel_without_a_grid(tmp_path: Path):
    # One kernel [0,10) of 1 block on 4 SMs (0.25), one [10,20) with no grid recorded
    # (it counts as 0): 10 x 0.25 = 2.5 us over the 20 us span = 12.5%. Neither records
    # occupancy.
    (gpu,) = _gpus(_profile(tmp_path, [_kernel("small", 0, 10, [1, 1, 1]), _kernel("unknown", 10, 10, None)]))
    assert gpu["sm_efficiency_percent"] == pytest.approx(12.5)
    assert gpu["sm_efficiency_note"] == "1 of 2 kernels (50.0% of kernel time) record no grid and count as 0."
    assert gpu["achieved_occupancy_percent"] is None
    assert gpu["occupancy_note"] == "No kernel records its estimated achieved occupancy."


def test_no_sm_count_or_no_grids_gives_no_sm_efficiency_and_says_why(tmp_path: Path):
    (gpu,) = _gpus(_profile(tmp_path, KERNELS, devices=None))
    assert gpu["sm_count"] is None and gpu["sm_efficiency_percent"] is None
    assert "no SM count" in gpu["sm_efficiency_note"]
    (gpu,) = _gpus(_profile(tmp_path, [_kernel("unknown", 0, 10, None)]))
    assert gpu["sm_efficiency_percent"] is None
    assert gpu["sm_efficiency_note"] == "No kernel records its grid, so SM efficiency cannot be estimated."


def test_a_cpu_only_profile_has_no_gpu_figures():
    result = run_tool("overview_page", stepscope.load(shared("kineto/cpu_only_rank34.pt.trace.json.gz")))
    assert result.to_json()["gpus"] == []
    assert not any("GPU utilisation" in line for line in result.summary())


def test_kernel_stats_tensor_core_share_by_hand(tmp_path: Path):
    result = run_tool("kernel_stats", _profile(tmp_path, KERNELS))
    data = result.to_json()
    # As above: the h884 gemm's 10 of 55 us.
    assert data["tensor_core_time_us"] == 10.0
    assert data["tensor_core_percent"] == pytest.approx(100 * 10 / 55)
    assert "TensorCore kernels (by name): 18.2% of kernel time (10.000 us)" in result.summary()


# --- the real traces, from the JSON ----------------------------------------------------------

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def _capped_sweep(kernels: list[tuple[float, float, float]]) -> float:
    """Integral of min(1, the running kernels' summed fraction), walking the boundaries."""
    boundaries = sorted([(start, fraction) for start, _, fraction in kernels] + [(end, -fraction) for _, end, fraction in kernels])
    total, level, last = 0.0, 0.0, None
    for time, change in boundaries:
        if last is not None:
            total += (time - last) * min(1.0, max(0.0, level))
        level += change
        last = time
    return total


def expected_from_json(path: Path) -> dict:
    """Every figure of the one GPU in ``path``, from the JSON (times in us, from the
    device's first work)."""
    document = read_json_exact(path)  # ns-resolution timestamps need more digits than a float
    events = [e for e in document["traceEvents"] if e.get("ph") == "X"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    (device,) = {e["args"]["device"] for e in kernels}
    device_work = [e for e in events if e.get("cat") in DEVICE_CATEGORIES and e["args"].get("device") == device]
    origin = min(e["ts"] for e in device_work)

    def start(e: dict) -> float:
        return float(e["ts"] - origin)

    def end(e: dict) -> float:
        return float(e["ts"] + e["dur"] - origin)

    kernels = [e for e in kernels if e["args"]["device"] == device]
    spans = [(start(e), end(e)) for e in kernels]
    active = max(end(e) for e in device_work)
    kernel_time = float(sum(e["dur"] for e in kernels))
    sms = next((p["numSms"] for p in document.get("deviceProperties", []) if p["id"] == device), None)
    with_blocks = [e for e in kernels if "blocks per SM" in e["args"]]
    efficiency = None
    if sms is not None and with_blocks:
        # Kineto's own blocks per SM is the grid's blocks over numSms (a float32 printed to 6 decimals).
        for e in with_blocks:
            assert float(e["args"]["blocks per SM"]) == pytest.approx(math.prod(e["args"]["grid"]) / sms, rel=1e-6, abs=5e-7)
        sweep = _capped_sweep([(start(e), end(e), float(e["args"]["blocks per SM"])) for e in with_blocks])
        efficiency = 100 * sweep / active
    with_occupancy = [e for e in kernels if "est. achieved occupancy %" in e["args"]]
    occupancy = None
    if with_occupancy:
        weights = sum(float(e["dur"]) for e in with_occupancy)
        occupancy = sum(float(e["args"]["est. achieved occupancy %"]) * float(e["dur"]) for e in with_occupancy) / weights
    by_name: dict[str, float] = {}
    for e in kernels:
        by_name[e["name"]] = by_name.get(e["name"], 0.0) + float(e["dur"])
    ranked = sorted(by_name.items(), key=lambda item: (-item[1], item[0]))
    top = [(name, 100 * time / kernel_time) for name, time in ranked[:10]]
    if len(ranked) > 10:
        top.append(("other", 100 * sum(time for _, time in ranked[10:]) / kernel_time))
    tensor_core = sum(float(e["dur"]) for e in kernels if TENSOR_CORE_KERNEL.search(e["name"]))
    return {
        "device": f"/device:GPU:{device}",
        "kernel_count": len(kernels),
        "kernel_time_us": kernel_time,
        "utilization_percent": 100 * union_length(spans) / active,
        "sm_count": sms,
        "sm_efficiency_percent": efficiency,
        "achieved_occupancy_percent": occupancy,
        "tensor_core_percent": 100 * tensor_core / kernel_time,
        "top_kernels": top,
    }


def _close(actual: float | None, expected: float | None) -> bool:
    if expected is None:
        return actual is None
    return actual == pytest.approx(expected, rel=1e-5, abs=1e-4)


@pytest.mark.parametrize(
    "name",
    [
        "alexnet_small",  # A100, 108 SMs, a few overlapping kernels
        "a100_ddp_cnn_rank0_of_2",  # NCCL kernels overlapping compute: the cap matters
        "v100_resnet_ns_resolution",  # 80 SMs, float ns timestamps
        "recsys_sampled_rank0_of_128",  # no deviceProperties: no SM count
        "mi250_rocm_toy_train",  # ROCm: no grids, no occupancy
    ],
)
def test_real_traces_against_the_json(name: str):
    path = shared(f"kineto/{name}.pt.trace.json.gz")
    expected = expected_from_json(path)
    profile = stepscope.load(path)
    (gpu,) = run_tool("overview_page", profile).to_json()["gpus"]
    assert gpu["device"] == expected["device"]
    assert gpu["kernel_count"] == expected["kernel_count"]
    assert gpu["sm_count"] == expected["sm_count"]
    assert gpu["kernel_time_us"] == pytest.approx(expected["kernel_time_us"], rel=1e-6)
    for key in ("utilization_percent", "sm_efficiency_percent", "achieved_occupancy_percent", "tensor_core_percent"):
        assert _close(gpu[key], expected[key]), (key, gpu[key], expected[key])
    assert [s["kernel_name"] for s in gpu["top_kernels"]] == [n for n, _ in expected["top_kernels"]]
    assert [s["percent"] for s in gpu["top_kernels"]] == pytest.approx([p for _, p in expected["top_kernels"]], rel=1e-5)
    assert (gpu["sm_efficiency_note"] is None) == (expected["sm_efficiency_percent"] is not None)
    # kernel_stats' share over the whole profile is the same on a one-GPU profile.
    assert run_tool("kernel_stats", profile).to_json()["tensor_core_percent"] == pytest.approx(expected["tensor_core_percent"], rel=1e-6, abs=1e-9)


def test_the_figures_are_the_same_after_saving_as_xspace(tmp_path: Path):
    """The SM count travels as the GPU plane's core_count stat and the launch shapes as
    kernel_details, so a Kineto trace saved as .xplane.pb gives the same figures."""
    profile = stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz"))
    target = tmp_path / "alexnet.xplane.pb"
    stepscope.save(profile, target)
    assert _gpus(stepscope.load(target)) == _gpus(profile)


def test_the_overlap_cap_is_what_tells_the_ddp_trace_apart():
    """On the DDP trace NCCL kernels run beside compute: summing each kernel's
    min(1, blocks per SM) without the cap gives a larger figure than the capped sweep,
    so the test above checks the cap, not only the per-kernel formula."""
    path = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")
    kernels = [e for e in read_json_exact(path)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    origin = min(e["ts"] for e in kernels)
    uncapped = sum(float(e["dur"]) * min(1.0, float(e["args"]["blocks per SM"])) for e in kernels)
    capped = _capped_sweep([(float(e["ts"] - origin), float(e["ts"] + e["dur"] - origin), float(e["args"]["blocks per SM"])) for e in kernels])
    assert uncapped > capped * 1.001


def test_the_report_summary_names_the_figures():
    result = run_tool("overview_page", stepscope.load(shared("kineto/v100_resnet_ns_resolution.pt.trace.json.gz")))
    (gpu,) = result.to_json()["gpus"]
    line = next(line for line in result.summary() if "GPU utilisation" in line)
    assert line == (
        f"/device:GPU:0: GPU utilisation {gpu['utilization_percent']:.1f}% (kernels over the active span), "
        f"est. SM efficiency {gpu['sm_efficiency_percent']:.1f}%, est. achieved occupancy {gpu['achieved_occupancy_percent']:.1f}%, "
        f"TensorCore kernels {gpu['tensor_core_percent']:.1f}% of kernel time"
    )
