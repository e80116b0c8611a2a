"""overview_page, kernel_stats and framework_op_stats on a small hand-made Kineto trace.

Every expected number is derived in the comments from the events below (times in us).

Host thread (pid 100, tid 1):
  ProfilerStep#1 [0,100)
    DataLoader __next__ [0,20)                      -> input
    aten::mm [20,50)  (External id 7)               -> host compute
      cudaLaunchKernel [25,30) (correlation 1)      -> kernel launch
    cudaMemcpyAsync [50,60)                         -> host compute (not a kernel launch)
  ProfilerStep#2 [100,150)
    aten::relu [100,110)                            -> host compute
GPU 0 (pid 0, stream 7):
  sgemm [30,70)   grid 1,1,1 block 128,1,1 regs 32, External id 7
  Memcpy HtoD [60,80)
  ncclKernel_AllReduce [110,130), External id 9 (no host op has it)
  sgemm [135,140) grid 2,1,1 block 128,1,1 regs 32, External id 7
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool

US = 1_000_000


def _x(name, cat, pid, tid, ts, dur, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


EVENTS = [
    {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
    _x("ProfilerStep#1", "user_annotation", 100, 1, 0, 100),
    _x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", 100, 1, 0, 20),
    _x("aten::mm", "cpu_op", 100, 1, 20, 30, **{"External id": 7}),
    _x("cudaLaunchKernel", "cuda_runtime", 100, 1, 25, 5, correlation=1, **{"External id": 7}),
    _x("cudaMemcpyAsync", "cuda_runtime", 100, 1, 50, 10, correlation=2),
    _x("ProfilerStep#2", "user_annotation", 100, 1, 100, 50),
    _x("aten::relu", "cpu_op", 100, 1, 100, 10),
    _x(
        "sgemm",
        "kernel",
        0,
        7,
        30,
        40,
        correlation=1,
        device=0,
        stream=7,
        grid=[1, 1, 1],
        block=[128, 1, 1],
        **{"registers per thread": 32, "shared memory": 0, "External id": 7},
    ),
    _x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 0, 7, 60, 20, correlation=2, device=0, bytes=1024),
    _x(
        "ncclKernel_AllReduce",
        "kernel",
        0,
        7,
        110,
        20,
        device=0,
        grid=[1, 1, 1],
        block=[64, 1, 1],
        **{"registers per thread": 40, "shared memory": 512, "External id": 9},
    ),
    _x("sgemm", "kernel", 0, 7, 135, 5, device=0, grid=[2, 1, 1], block=[128, 1, 1], **{"registers per thread": 32, "shared memory": 0, "External id": 7}),
]


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> stepscope.Profile:
    path = tmp_path_factory.mktemp("golden") / "golden.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": EVENTS}))
    loaded = stepscope.load(path)
    loaded.validate()
    return loaded


def test_overview_steps_and_breakdown(profile):
    result = run_tool("overview_page", profile).to_json()
    assert result["step_source"] == "ProfilerStep" and not result["steps_inferred"]
    step1, step2 = result["steps"]
    assert (step1["step"], step1["step_time_us"], step2["step"], step2["step_time_us"]) == (1, 100, 2, 50)
    # Step 1 [0,100), in priority order: device compute [30,70) = 40; H2D [60,80) less
    # [60,70) already claimed = 10; input [0,20) = 20; kernel launch [25,30) = 5; host
    # compute [20,60) less [25,60) claimed = [20,25) = 5; idle [80,100) = 20.
    assert {k: v for k, v in step1["breakdown"].items() if k.endswith("_us") and v} == {
        "device_compute_us": 40,
        "host_to_device_us": 10,
        "input_us": 20,
        "kernel_launch_us": 5,
        "host_compute_us": 5,
        "idle_us": 20,
    }
    # Step 2 [100,150): compute [135,140) = 5; collectives [110,130) = 20; host compute
    # [100,110) = 10; idle [130,135) + [140,150) = 15.
    assert {k: v for k, v in step2["breakdown"].items() if k.endswith("_us") and v} == {
        "device_compute_us": 5,
        "device_collectives_us": 20,
        "host_compute_us": 10,
        "idle_us": 15,
    }
    for step in (step1, step2):
        parts = [v for k, v in step["breakdown"].items() if k.endswith("_ps")]
        assert sum(parts) == step["step_time_ps"]
    # Device work by the step that launched it: sgemm (correlation 1, launched at 25) and
    # the copy (correlation 2, cudaMemcpyAsync at 50) are step 1's: 40 + 20; the all-reduce
    # and the second sgemm have no launching call and run in step 2: 20 + 5.
    assert (step1["device_time_launched_us"], step2["device_time_launched_us"]) == (60, 25)
    # Step times 100 and 50: mean 75, median 75, population stddev 25. Neither is set aside
    # (100 is not more than 3x 50, and nothing compiled).
    assert result["step_time_us"] == {"mean": 75.0, "median": 75.0, "stddev": 25.0, "min": 50.0, "max": 100.0}
    assert result["set_aside"] == [] and result["step_time_us_all"] == result["step_time_us"]
    # Input: 20 of 150 us of step time = 13.3% (weighted). The verdict reads the mean of
    # the per-step shares, (20% + 0%) / 2 = 10%: moderately input-bound (5-20%).
    assert result["recommendation"]["input_bound"] == "moderately"
    assert result["recommendation"]["input_percent"] == pytest.approx(10.0)
    assert result["breakdown_percent"]["input"] == pytest.approx(100 * 20 / 150)


def test_overview_device_busy_is_the_union_of_activity(profile):
    device = run_tool("overview_page", profile).to_json()["device"]
    # Device intervals [30,70) [60,80) [110,130) [135,140): union 50 + 20 + 5 = 75 us. The
    # device's active span is [30,140) = 110 us (75 / 110 busy, 35 idle inside it); the
    # profile window is 150 us (the last event, ProfilerStep#2, ends at 150): 50%. All of
    # the device work lies inside the steps [0,150): none outside.
    assert device == {
        "busy_time_us": 75.0,
        "busy_outside_steps_us": 0.0,
        "busy_outside_steps_percent": 0.0,
        "idle_time_us": 35.0,
        "active_span_us": 110.0,
        "busy_percent": pytest.approx(100 * 75 / 110),
        "window_us": 150.0,
        "busy_percent_of_window": 50.0,
    }


def test_kernel_stats_rows(profile):
    rows = run_tool("kernel_stats", profile).to_json()["rows"]
    summary = [
        (
            r["kernel_name"],
            r["op_name"],
            r["grid_dim"],
            r["block_dim"],
            r["registers_per_thread"],
            r["shared_memory_bytes"],
            r["occurrences"],
            r["total_duration_us"],
        )
        for r in rows
    ]
    # One row per launch configuration; ordered by total time. sgemm's External id 7 is
    # aten::mm's; the all-reduce's (9) belongs to no host op.
    assert summary == [
        ("sgemm", "aten::mm", "1,1,1", "128,1,1", 32, 0, 1, 40.0),
        ("ncclKernel_AllReduce", "", "1,1,1", "64,1,1", 40, 512, 1, 20.0),
        ("sgemm", "aten::mm", "2,1,1", "128,1,1", 32, 0, 1, 5.0),
    ]
    assert rows[0]["total_duration_ps"] == 40 * US


def test_framework_op_stats_host_and_device(profile):
    result = run_tool("framework_op_stats", profile).to_json()
    host = {r["name"]: (r["occurrences"], r["total_time_us"], r["total_self_time_us"]) for r in result["rows"] if r["host_or_device"] == "Host"}
    # Host ops are the cpu_op events; runtime calls are not ops, so aten::mm keeps all 30 us as self.
    assert host == {"aten::mm": (1, 30.0, 30.0), "aten::relu": (1, 10.0, 10.0)}
    device = {r["name"]: (r["occurrences"], r["total_time_us"]) for r in result["rows"] if r["host_or_device"] == "Device"}
    # Device work is attributed to the op that launched it (External id), else named itself.
    assert device == {"aten::mm": (2, 45.0), "Memcpy HtoD (Pageable -> Device)": (1, 20.0), "ncclKernel_AllReduce": (1, 20.0)}
    mm = next(r for r in result["rows"] if r["host_or_device"] == "Device" and r["name"] == "aten::mm")
    # 45 of 85 us of device op time. Device idle: its active span [30,140) = 110 us less the
    # 75 us union of its work = 35 us (the overview's device idle_time_us); 45 / (85 + 35).
    assert mm["self_time_percent"] == pytest.approx(100 * 45 / 85)
    assert mm["self_time_percent_with_idle"] == pytest.approx(100 * 45 / 120)
    device_idle = next(r for r in result["idle_rows"] if r["host_or_device"] == "Device")
    assert device_idle["total_time_us"] == 35.0


def test_overview_flop_rate_and_utilisation(tmp_path: Path):
    """Two XLA ops on a TPU with flops and bytes on their metadata, a 1000 TFLOP/s and
    1000 GB/s peak."""
    from stepscope.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name="/device:TPU:0")
    plane.stat_metadata[1].CopyFrom(xplane_pb2.XStatMetadata(id=1, name="flops"))
    plane.stat_metadata[2].CopyFrom(xplane_pb2.XStatMetadata(id=2, name="peak_teraflops_per_second"))
    plane.stat_metadata[3].CopyFrom(xplane_pb2.XStatMetadata(id=3, name="bytes_accessed"))
    plane.stat_metadata[4].CopyFrom(xplane_pb2.XStatMetadata(id=4, name="peak_hbm_bw_gigabytes_per_second"))
    plane.stats.add(metadata_id=2, double_value=1000.0)
    plane.stats.add(metadata_id=4, double_value=1000.0)
    for key, flops, accessed in ((1, 1_000_000_000, 1_000_000), (2, 3_000_000_000, 3_000_000_000)):
        meta = plane.event_metadata[key]
        meta.id, meta.name = key, f"fusion.{key}"
        meta.stats.add(metadata_id=1, uint64_value=flops)
        meta.stats.add(metadata_id=3, uint64_value=accessed)
    line = plane.lines.add(id=1, name="XLA Ops", timestamp_ns=1_000_000)
    line.events.add(metadata_id=1, offset_ps=0, duration_ps=10 * US)
    line.events.add(metadata_id=2, offset_ps=20 * US, duration_ps=10 * US)
    path = tmp_path / "tpu.xplane.pb"
    path.write_bytes(space.SerializeToString())
    flops = run_tool("overview_page", stepscope.load(path)).to_json()["flops"]
    # 4e9 FLOP over 20 us of busy device time = 2e14 FLOP/s = 200,000 GFLOP/s; against a
    # 1000 TFLOP/s (1e15) peak that is 20%.
    assert flops["device_flops"] == 4e9
    assert flops["gflops_per_second"] == pytest.approx(200_000)
    assert flops["utilization_percent"] == pytest.approx(20.0)
    # Roofline: the ridge point is 1e15 FLOP/s / 1e12 B/s = 1000 FLOP/byte. fusion.1 does
    # 1e9 / 1e6 = 1000 FLOP/byte: compute-bound; fusion.2 3e9 / 3e9 = 1: memory-bound.
    rows = run_tool("framework_op_stats", stepscope.load(path)).to_json()["rows"]
    assert {r["name"]: (r["operational_intensity"], r["bound_by"]) for r in rows} == {
        "fusion.1": (1000.0, "Compute"),
        "fusion.2": (1.0, "Memory"),
    }
