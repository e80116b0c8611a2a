"""memory_profile: golden tests on small synthetic traces (every number derived by hand in a
comment), and real profiles checked against figures computed here from the files
themselves (JSON with the standard library, XSpace with TSL's own protobuf class)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.analysis.memory.allocations import NO_OP
from stepscope.analysis.registry import TOOLS
from stepscope.analysis.tools import memory_profile as mp
from stepscope.analysis.tools.memory_profile import BEFORE_PROFILE, MAX_TIMELINE_POINTS, memory_profile
from stepscope.protos import xplane_pb2
from stepscope.render.formats import render_csv, render_json, render_text
from tests.support.frameworks import (
    find_files,
    nearest_ns,
    read_json_exact,
    read_xspace_independently,
    run_framework_script,
)
from tests.support.traces import ALL_SHARED_TRACES, read_json, shared

PS_PER_US = 1_000_000
T0 = 1_623_212_388_426_919  # µs since the epoch: time 0 of the synthetic traces (no baseTimeNanoseconds)
PID = 100
CPU, CUDA = 0, 1


# --- building synthetic Kineto traces ------------------------------------------------------------


def op(name: str, ts: int, dur: int, tid: int = 1, base: int = T0) -> dict[str, Any]:
    return {"ph": "X", "cat": "Operator", "name": name, "pid": PID, "tid": tid, "ts": base + ts, "dur": dur, "args": {}}


def memory(ts: int, size: int, device_type: int, device_id: int, tid: int = 1, base: int = T0, **more: int) -> dict[str, Any]:
    args = {"Device Type": device_type, "Device Id": device_id, "Bytes": size, **more}
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": PID, "tid": tid, "ts": base + ts, "args": args}


def write_trace(tmp_path: Path, events: list[dict[str, Any]], name: str = "synthetic.pt.trace.json", **header: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, **header, "traceEvents": events}))
    return path


def device(result: mp.MemoryProfileResult, name: str) -> dict[str, Any]:
    return next(d for d in result.to_json()["devices"] if d["device"] == name)


def holders(entry: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(h["op"], h["bytes"], h["allocations"]) for h in entry["peak_holders"]]


def points(entry: dict[str, Any]) -> list[tuple[float, int]]:
    return [(p["time_us"], p["allocated_bytes"]) for p in entry["timeline"]]


# --- 2021 schema: Bytes only, two devices ------------------------------------------------------------


def legacy_events() -> list[dict[str, Any]]:
    """Times in µs after T0. Thread 1 runs two ProfilerSteps; thread 2 is the autograd thread.

    GPU:0 (Device Type 1, Id 0)                 running sum
      13  +1000  in aten::empty in aten::conv2d    1000
      20   +200  in aten::conv2d                   1200
      42   +500  in aten::relu                     1700
      55   -200  (thread 1, between ops)           1500
      62   +300  in aten::mm (thread 2)            1800
      70   -500                                    1300
      90   +100  thread 2, in no op                1400
     112   +800  in aten::add                      2200  <- peak, step 2
     130  -1000                                    1200
     150   -100  thread 2                          1100
     160   -300                                     800
    CPU (Device Type 0, Id -1)
      25    +64  in aten::conv2d                     64
      45    +64  in aten::relu                      128
      58    -64  (most recent 64-byte block: relu's) 64
     115   +256  in aten::add                       320  <- peak, step 2
     140   -256                                      64
    """
    return [
        op("ProfilerStep#1", 0, 100),
        op("aten::conv2d", 10, 20),
        op("aten::empty", 12, 2),
        memory(13, 1000, CUDA, 0),
        memory(20, 200, CUDA, 0),
        memory(25, 64, CPU, -1),
        op("aten::relu", 40, 10),
        memory(42, 500, CUDA, 0),
        memory(45, 64, CPU, -1),
        memory(55, -200, CUDA, 0),
        memory(58, -64, CPU, -1),
        op("aten::mm", 60, 10, tid=2),
        memory(62, 300, CUDA, 0, tid=2),
        memory(70, -500, CUDA, 0),
        memory(90, 100, CUDA, 0, tid=2),
        op("ProfilerStep#2", 100, 100),
        op("aten::add", 110, 10),
        memory(112, 800, CUDA, 0),
        memory(115, 256, CPU, -1),
        memory(130, -1000, CUDA, 0),
        memory(140, -256, CPU, -1),
        memory(150, -100, CUDA, 0, tid=2),
        memory(160, -300, CUDA, 0),
    ]


@pytest.fixture
def legacy(tmp_path: Path) -> mp.MemoryProfileResult:
    profile = stepscope.load(write_trace(tmp_path, legacy_events()))
    profile.validate()
    assert profile.start_ns == T0 * 1000  # ProfilerStep#1 at ts 0 is the earliest event
    return memory_profile(profile)


def test_legacy_devices_are_named_and_ordered(legacy):
    assert [d["device"] for d in legacy.to_json()["devices"]] == ["CPU", "GPU:0"]


def test_legacy_gpu_peak_time_and_step(legacy):
    gpu = device(legacy, "GPU:0")
    assert gpu["allocated_from"] == "running sum of Bytes"
    assert gpu["events"] == 11
    assert gpu["peak_allocated_bytes"] == 2200
    assert gpu["peak_time_us"] == 112.0 and gpu["peak_time_ps"] == 112 * PS_PER_US
    assert gpu["peak_step"] == 2
    assert gpu["peak_reserved_bytes"] is None and gpu["lifetime_peak_bytes"] is None
    # The 2021 schema has no Total Reserved: not recorded (null), never 0.
    assert gpu["reserved_from"] is None and gpu["peak_in_use_bytes"] is None


def test_legacy_gpu_timeline_is_the_running_sum(legacy):
    gpu = device(legacy, "GPU:0")
    # Every point (11 events <= MAX_TIMELINE_POINTS), from the table in legacy_events.
    assert points(gpu) == [
        (13.0, 1000),
        (20.0, 1200),
        (42.0, 1700),
        (55.0, 1500),
        (62.0, 1800),
        (70.0, 1300),
        (90.0, 1400),
        (112.0, 2200),
        (130.0, 1200),
        (150.0, 1100),
        (160.0, 800),
    ]
    assert all(p["reserved_bytes"] is None for p in gpu["timeline"])


def test_legacy_gpu_step_peaks(legacy):
    # Step 1 [0, 100): 1000, 1200, 1700, 1500, 1800, 1300, 1400 -> 1800.
    # Step 2 [100, 200): starts at 1400, then 2200, 1200, 1100, 800 -> 2200.
    assert device(legacy, "GPU:0")["step_peaks"] == [
        {"step": 1, "peak_allocated_bytes": 1800},
        {"step": 2, "peak_allocated_bytes": 2200},
    ]


def test_legacy_gpu_peak_holders(legacy):
    # Live just after the peak (112 µs): 1000 (13 µs, made in aten::empty, charged to its caller
    # aten::conv2d), 300 (aten::mm), 100 (thread 2, no op), 800 (aten::add). The 200 (20 µs)
    # was freed at 55 µs and the 500 (42 µs) at 70 µs. 1000 + 800 + 300 + 100 = 2200, the peak.
    assert holders(device(legacy, "GPU:0")) == [
        ("aten::conv2d", 1000, 1),
        ("aten::add", 800, 1),
        ("aten::mm", 300, 1),
        (NO_OP, 100, 1),
    ]


def test_legacy_cpu_frees_match_the_latest_block_of_their_size(legacy):
    cpu = device(legacy, "CPU")
    # 64, 128, 64, 320, 64: the peak is 320 at 115 µs, in step 2.
    assert points(cpu) == [(25.0, 64), (45.0, 128), (58.0, 64), (115.0, 320), (140.0, 64)]
    assert (cpu["peak_allocated_bytes"], cpu["peak_time_us"], cpu["peak_step"]) == (320, 115.0, 2)
    # The free at 58 µs takes aten::relu's block (the latest 64-byte one), so conv2d's is live.
    assert holders(cpu) == [("aten::add", 256, 1), ("aten::conv2d", 64, 1)]
    # Step 1: 64, 128, 64 -> 128. Step 2: starts at 64, then 320, 64 -> 320.
    assert cpu["step_peaks"] == [{"step": 1, "peak_allocated_bytes": 128}, {"step": 2, "peak_allocated_bytes": 320}]


def test_legacy_allocations_per_device_largest_first_ties_earliest(legacy):
    """Each device its own list (the page shows the selected device's): from legacy_events'
    table, frees matched by size to the latest live block of that size."""
    # GPU:0: 1000 (conv2d's aten::empty) 13 -> 130; 800 (add) live; 500 (relu) 42 -> 70;
    # 300 (mm) 62 -> 160; 200 (conv2d) 20 -> 55; 100 (thread 2, no op) 90 -> 150.
    assert [(a["bytes"], a["start_us"], a["end_us"], a["op"]) for a in device(legacy, "GPU:0")["allocations"]] == [
        (1000, 13.0, 130.0, "aten::conv2d"),
        (800, 112.0, None, "aten::add"),
        (500, 42.0, 70.0, "aten::relu"),
        (300, 62.0, 160.0, "aten::mm"),
        (200, 20.0, 55.0, "aten::conv2d"),
        (100, 90.0, 150.0, NO_OP),
    ]
    # CPU: 256 (add) 115 -> 140, then the two 64-byte blocks, the earlier first: conv2d's at
    # 25 (live: the free at 58 took relu's, the latest) and relu's at 45 -> 58.
    assert [(a["bytes"], a["start_us"], a["end_us"], a["op"]) for a in device(legacy, "CPU")["allocations"]] == [
        (256, 115.0, 140.0, "aten::add"),
        (64, 25.0, None, "aten::conv2d"),
        (64, 45.0, 58.0, "aten::relu"),
    ]


def test_legacy_note_says_the_running_sum_starts_at_zero(legacy):
    assert "running sum of Bytes from 0 at the profile start" in legacy.note
    assert "not counted" in legacy.note and "below 0" not in legacy.note
    # The 2021 schema has no Addr: holders come from matching frees by size, and the note says so.
    assert [d["frees_matched_by"] for d in legacy.to_json()["devices"]] == ["size", "size"]
    assert "no addresses" in legacy.note


def test_tables_summary_and_renderers(legacy):
    peaks, held, allocations = legacy.tables()
    assert (peaks.name, held.name, allocations.name) == ("memory_peaks", "peak_holders", "allocations")
    assert [(r["device"], r["peak_allocated_bytes"], r["peak_step"]) for r in peaks.records()] == [("CPU", 320, 2), ("GPU:0", 2200, 2)]
    assert [(r["device"], r["op"], r["bytes"]) for r in held.records()] == [
        ("CPU", "aten::add", 256),
        ("CPU", "aten::conv2d", 64),
        ("GPU:0", "aten::conv2d", 1000),
        ("GPU:0", "aten::add", 800),
        ("GPU:0", "aten::mm", 300),
        ("GPU:0", NO_OP, 100),
    ]
    assert legacy.summary()[1].startswith("GPU:0: peak 2.1 KiB allocated at 112.000 us (step 2); held by aten::conv2d 1,000 B")
    assert json.loads(render_json([legacy]))["memory_profile"]["devices"][1]["peak_allocated_bytes"] == 2200
    assert "aten::conv2d" in render_text([legacy]) and "# memory_profile.peak_holders" in render_csv([legacy])
    assert "# memory_profile.allocations" in render_csv([legacy])
    assert len(allocations.records()) == sum(len(d["allocations"]) for d in legacy.to_json()["devices"])
    assert TOOLS["memory_profile"].function is memory_profile.__wrapped__


# --- today's schema: Addr, Total Allocated, Total Reserved ----------------------------------------


def current_events(base: int) -> list[dict[str, Any]]:
    """µs after base. GPU:0 had 5000 B allocated before the profile (1000 B of it at Addr 99).

    GPU:0         Addr  Total Allocated  Total Reserved
       6   +400  1     5400             8000   in aten::linear
       8   +600  2     6000             8000   in aten::linear
      20  -1000  99    5000             8000   (allocated before the profile)
      27  +2000  3     7000            10000   in aten::softmax  <- peak (first 7000), step 7
      30   -400  1     6600            10000
      57   +400  1     7000            10000   in aten::linear (Addr 1 again; 7000 again, not the first)
      60  -2000  3     5000            10000
    GPU:1 (thread 2)
      12  +4096  7     4096          2097152   in aten::copy_  <- peak, step 7
      70  -4096  7        0          2097152
    """

    def mem(ts: int, size: int, device_id: int, addr: int, total: int, reserved: int, tid: int = 1) -> dict[str, Any]:
        return memory(ts, size, CUDA, device_id, tid=tid, base=base, Addr=addr, **{"Total Allocated": total, "Total Reserved": reserved})

    return [
        op("ProfilerStep#7", 0, 50, base=base),
        op("aten::linear", 5, 10, base=base),
        mem(6, 400, 0, 1, 5400, 8000),
        mem(8, 600, 0, 2, 6000, 8000),
        op("aten::copy_", 10, 10, tid=2, base=base),
        mem(12, 4096, 1, 7, 4096, 2097152, tid=2),
        mem(20, -1000, 0, 99, 5000, 8000),
        op("aten::softmax", 25, 10, base=base),
        mem(27, 2000, 0, 3, 7000, 10000),
        mem(30, -400, 0, 1, 6600, 10000),
        op("ProfilerStep#8", 50, 50, base=base),
        op("aten::linear", 55, 10, base=base),
        mem(57, 400, 0, 1, 7000, 10000),
        mem(60, -2000, 0, 3, 5000, 10000),
        mem(70, -4096, 1, 7, 0, 2097152, tid=2),
    ]


@pytest.fixture
def current(tmp_path: Path) -> mp.MemoryProfileResult:
    base_ns = 1_700_000_000_000_000_000
    path = write_trace(tmp_path, current_events(0), baseTimeNanoseconds=base_ns)
    profile = stepscope.load(path)
    profile.validate()
    assert profile.start_ns == base_ns
    return memory_profile(profile)


def test_current_schema_uses_the_allocator_totals(current):
    gpu0 = device(current, "GPU:0")
    assert gpu0["allocated_from"] == "Total Allocated" and gpu0["frees_matched_by"] == "address"
    assert points(gpu0) == [(6.0, 5400), (8.0, 6000), (20.0, 5000), (27.0, 7000), (30.0, 6600), (57.0, 7000), (60.0, 5000)]
    assert [p["reserved_bytes"] for p in gpu0["timeline"]] == [8000, 8000, 8000, 10000, 10000, 10000, 10000]
    # 7000 is reached at 27 µs and again at 57 µs: the peak is the first, in step 7.
    assert (gpu0["peak_allocated_bytes"], gpu0["peak_time_us"], gpu0["peak_step"]) == (7000, 27.0, 7)
    assert gpu0["peak_reserved_bytes"] == 10000
    # Kineto's Total Reserved holds the allocated bytes: no separate in-use sum.
    assert (gpu0["reserved_from"], gpu0["peak_in_use_bytes"]) == ("Total Reserved", None)
    # Step 7 [0, 50): 5400, 6000, 5000, 7000, 6600 -> 7000. Step 8 [50, 100): from 6600; 7000, 5000 -> 7000.
    assert gpu0["step_peaks"] == [{"step": 7, "peak_allocated_bytes": 7000}, {"step": 8, "peak_allocated_bytes": 7000}]


def test_current_schema_holders_match_frees_by_address(current):
    # Live just after 27 µs: Addr 1 (400) and 2 (600) from aten::linear, Addr 3 (2000) from
    # aten::softmax: 3000 B. The peak is 7000, so 4000 B were allocated before the profile
    # (5000 before it, minus the 1000 at Addr 99 freed at 20 µs).
    assert holders(device(current, "GPU:0")) == [(BEFORE_PROFILE, 4000, 0), ("aten::softmax", 2000, 1), ("aten::linear", 1000, 2)]


def test_current_schema_allocations_with_lifetimes(current):
    # From current_events' table, frees matched by Addr: Addr 1 (400, aten::linear) 6 -> 30 µs;
    # Addr 2 (600, aten::linear) 8 µs, never freed; Addr 3 (2000, aten::softmax) 27 -> 60 µs;
    # Addr 1 again (400, aten::linear) 57 µs, never freed. The free of Addr 99 at 20 µs has no
    # allocation in the profile. Largest first, then by start.
    assert device(current, "GPU:0")["allocations"] == [
        {"bytes": 2000, "start_us": 27.0, "end_us": 60.0, "lifetime_us": 33.0, "op": "aten::softmax"},
        {"bytes": 600, "start_us": 8.0, "end_us": None, "lifetime_us": None, "op": "aten::linear"},
        {"bytes": 400, "start_us": 6.0, "end_us": 30.0, "lifetime_us": 24.0, "op": "aten::linear"},
        {"bytes": 400, "start_us": 57.0, "end_us": None, "lifetime_us": None, "op": "aten::linear"},
    ]
    # GPU:1: Addr 7 (4096, aten::copy_) 12 -> 70 µs.
    assert device(current, "GPU:1")["allocations"] == [{"bytes": 4096, "start_us": 12.0, "end_us": 70.0, "lifetime_us": 58.0, "op": "aten::copy_"}]
    table = next(t for t in current.tables() if t.name == "allocations")
    assert [(r["device"], r["bytes"], r["state"]) for r in table.records()][:2] == [("GPU:0", 2000, "freed"), ("GPU:0", 600, mp.LIVE_AT_END)]


def test_current_schema_second_gpu(current):
    gpu1 = device(current, "GPU:1")
    assert (gpu1["peak_allocated_bytes"], gpu1["peak_time_us"], gpu1["peak_step"]) == (4096, 12.0, 7)
    assert gpu1["peak_reserved_bytes"] == 2097152
    assert holders(gpu1) == [("aten::copy_", 4096, 1)]
    # Step 8 [50, 100) starts with the 4096 B still allocated (freed at 70 µs).
    assert gpu1["step_peaks"] == [{"step": 7, "peak_allocated_bytes": 4096}, {"step": 8, "peak_allocated_bytes": 4096}]
    assert "'Total Allocated'" in current.note


# --- no memory events; downsampling ----------------------------------------------------------------


def test_no_memory_events_is_an_empty_result_that_says_why(tmp_path: Path):
    profile = stepscope.load(write_trace(tmp_path, [op("ProfilerStep#1", 0, 10), op("aten::add", 2, 3)]))
    result = memory_profile(profile)
    assert result.to_json()["devices"] == []
    # A Kineto trace is PyTorch's: the one line says what records PyTorch's allocations.
    assert result.note == (
        "No memory events in this profile: PyTorch records allocations only with "
        "torch.profiler.profile(profile_memory=True), which stepscope turns on at ProfilerOptions(host_tracer_level=3)."
    )
    assert result.summary() == [result.note]
    assert all(not table.rows for table in result.tables())
    json.dumps(result.to_json())


def test_long_timeline_is_downsampled_keeping_the_exact_peak(tmp_path: Path):
    # 5000 events on GPU:0, one per µs at 1..5000: odd ones +100, even ones -100 (levels 100,
    # 0, 100, 0, ...), except event 3001 (at 3001 µs, level 0 before it), which allocates 7777
    # instead of 100: from there the levels are 7777, 7677, 7777, 7677... The peak is 7777,
    # first at 3001 µs (and again at 3003, 3005, ...).
    events = [op("ProfilerStep#1", 0, 6000)]
    levels = []
    level = 0
    for index in range(1, 5001):
        size = 7777 if index == 3001 else (100 if index % 2 else -100)
        level += size
        levels.append((float(index), level))
        events.append(memory(index, size, CUDA, 0))
    profile = stepscope.load(write_trace(tmp_path, events))
    gpu = device(memory_profile(profile), "GPU:0")
    assert (gpu["peak_allocated_bytes"], gpu["peak_time_us"]) == (7777, 3001.0)
    timeline = points(gpu)
    assert len(timeline) <= MAX_TIMELINE_POINTS
    assert (3001.0, 7777) in timeline
    assert timeline[0] == levels[0] and timeline[-1] == levels[-1]
    # Every kept point is a real one, in time order, and both levels of each stretch survive.
    assert set(timeline) <= set(levels) and timeline == sorted(timeline)
    assert {value for _, value in timeline} == {0, 100, 7677, 7777}


# --- XSpace: MemoryAllocation / MemoryDeallocation --------------------------------------------------


def handmade_memory_space() -> xplane_pb2.XSpace:
    """One host thread, times in µs from its start (line timestamp 1000 ns).

    train step 0 [0, 50), step 1 [50, 100) (step_num stats); MatMul [10, 20); Relu [60, 70).
    GPU_0_bfc (1000 B in use before the profile)   bytes_allocated
      12  alloc 4096  addr 0x10  tf_op model/dense/MatMul   5096
      15  alloc 1024  addr 0x20  tf_op "(null)" -> in MatMul 6120
      30  free  1024  addr 0x20                             5096
      62  alloc 2048  addr 0x30  tf_op model/dense/Relu     7144  <- peak, step 1
      80  free  (no size) addr 0x10: its allocation's 4096  3048
    cpu
      65  alloc  512  addr 0x99  tf_op model/input           512  <- peak, step 1
      90  free   512  addr 0x99                                0
    bytes_reserved is 256 throughout; peak_bytes_in_use (the allocator's lifetime peak) 9000.
    """
    space = xplane_pb2.XSpace(hostnames=["host-1"])
    plane = space.planes.add(id=1, name="/host:CPU")
    stat_ids: dict[str, int] = {}
    for name in (
        "step_num",
        "allocator_name",
        "bytes_allocated",
        "bytes_reserved",
        "allocation_bytes",
        "requested_bytes",
        "addr",
        "tf_op",
        "peak_bytes_in_use",
    ):
        stat_ids[name] = len(stat_ids) + 1
        plane.stat_metadata[stat_ids[name]].CopyFrom(xplane_pb2.XStatMetadata(id=stat_ids[name], name=name))
    event_ids: dict[str, int] = {}
    for name in ("train", "MatMul", "Relu", "MemoryAllocation", "MemoryDeallocation"):
        event_ids[name] = len(event_ids) + 1
        plane.event_metadata[event_ids[name]].CopyFrom(xplane_pb2.XEventMetadata(id=event_ids[name], name=name))
    line = plane.lines.add(id=11, name="tf_executor", timestamp_ns=1000)

    def event(name: str, start_us: int, duration_us: int = 0, **stats: Any) -> None:
        added = line.events.add(metadata_id=event_ids[name], offset_ps=start_us * PS_PER_US, duration_ps=duration_us * PS_PER_US)
        for key, value in stats.items():
            if isinstance(value, str):
                added.stats.add(metadata_id=stat_ids[key], str_value=value)
            else:
                added.stats.add(metadata_id=stat_ids[key], int64_value=value)

    def alloc(start_us: int, free: bool, allocator: str, total: int, addr: int, size: int | None = None, tf_op: str | None = None) -> None:
        stats: dict[str, Any] = {"allocator_name": allocator, "bytes_allocated": total, "bytes_reserved": 256, "addr": addr, "peak_bytes_in_use": 9000}
        if size is not None:
            stats |= {"allocation_bytes": size, "requested_bytes": size}
        if tf_op is not None:
            stats["tf_op"] = tf_op
        event("MemoryDeallocation" if free else "MemoryAllocation", start_us, **stats)

    event("train", 0, 50, step_num=0)
    event("MatMul", 10, 10)
    alloc(12, False, "GPU_0_bfc", 5096, 0x10, 4096, "model/dense/MatMul")
    alloc(15, False, "GPU_0_bfc", 6120, 0x20, 1024, "(null)")
    alloc(30, True, "GPU_0_bfc", 5096, 0x20, 1024)
    event("train", 50, 50, step_num=1)
    event("Relu", 60, 10)
    alloc(62, False, "GPU_0_bfc", 7144, 0x30, 2048, "model/dense/Relu")
    alloc(65, False, "cpu", 512, 0x99, 512, "model/input")
    alloc(80, True, "GPU_0_bfc", 3048, 0x10)
    alloc(90, True, "cpu", 0, 0x99, 512)
    return space


def test_xspace_memory_events(tmp_path: Path):
    path = tmp_path / "host-1.xplane.pb"
    path.write_bytes(handmade_memory_space().SerializeToString())
    profile = stepscope.load(path)
    profile.validate()
    result = memory_profile(profile)
    assert [d["device"] for d in result.to_json()["devices"]] == ["GPU_0_bfc", "cpu"]

    gpu = device(result, "GPU_0_bfc")
    assert gpu["allocated_from"] == "bytes_allocated"
    assert points(gpu) == [(12.0, 5096), (15.0, 6120), (30.0, 5096), (62.0, 7144), (80.0, 3048)]
    assert (gpu["peak_allocated_bytes"], gpu["peak_time_us"], gpu["peak_step"]) == (7144, 62.0, 1)
    assert (gpu["peak_reserved_bytes"], gpu["lifetime_peak_bytes"]) == (256, 9000)
    # bytes_reserved (256 throughout) is beside the heap: in use peaks at 7144 + 256.
    assert (gpu["reserved_from"], gpu["peak_in_use_bytes"]) == ("bytes_reserved", 7400)
    # Live after 62 µs: 0x10 (4096, MatMul's tf_op) and 0x30 (2048); 7144 - 6144 = 1000 from before.
    assert holders(gpu) == [("model/dense/MatMul", 4096, 1), ("model/dense/Relu", 2048, 1), (BEFORE_PROFILE, 1000, 0)]
    # Step 0: level before the first event 5096 - 4096 = 1000; then 5096, 6120, 5096 -> 6120.
    # Step 1: from 5096; 7144, 3048 -> 7144.
    assert gpu["step_peaks"] == [{"step": 0, "peak_allocated_bytes": 6120}, {"step": 1, "peak_allocated_bytes": 7144}]

    cpu = device(result, "cpu")
    assert points(cpu) == [(65.0, 512), (90.0, 0)]
    assert (cpu["peak_allocated_bytes"], cpu["peak_time_us"], cpu["peak_step"]) == (512, 65.0, 1)
    assert holders(cpu) == [("model/input", 512, 1)]
    # Step 0 has no cpu event and starts from 512 - 512 = 0.
    assert cpu["step_peaks"] == [{"step": 0, "peak_allocated_bytes": 0}, {"step": 1, "peak_allocated_bytes": 512}]


def test_xspace_untitled_allocation_is_charged_to_its_enclosing_op(tmp_path: Path):
    # The 1024 B block at 0x20 has tf_op "(null)", so it is charged to the event around it,
    # MatMul. It is freed (30 µs) before the full profile's peak; cut the profile before that.
    space = handmade_memory_space()
    line = space.planes[0].lines[0]
    kept = [e for e in line.events if e.offset_ps < 30 * PS_PER_US]
    del line.events[:]
    line.events.extend(kept)
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(space.SerializeToString())
    gpu = device(memory_profile(stepscope.load(path)), "GPU_0_bfc")
    # 5096, 6120: peak 6120 at 15 µs; live 4096 (MatMul's tf_op) + 1024 (in the MatMul event).
    assert gpu["peak_allocated_bytes"] == 6120
    assert holders(gpu) == [("model/dense/MatMul", 4096, 1), ("MatMul", 1024, 1), (BEFORE_PROFILE, 1000, 0)]


# --- real profiles -----------------------------------------------------------------------------------


def _running_sums(events: list[dict[str, Any]]) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Per (Device Type, Device Id): (ts, allocated) after each [memory] event, in time order."""
    by_device: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    memory_events = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    totals: dict[tuple[int, int], int] = defaultdict(int)
    for event in memory_events:
        key = (event["args"]["Device Type"], event["args"]["Device Id"])
        totals[key] += event["args"]["Bytes"]
        by_device[key].append((event["ts"], totals[key]))
    return by_device


def test_legacy_trace_peaks_are_the_running_sums_maxima():
    path = shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz")
    events = read_json(path)["traceEvents"]
    sums = _running_sums(events)
    assert set(sums) == {(0, -1), (1, 0)}
    profile = stepscope.load(path)
    result = memory_profile(profile)
    steps = sorted((int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    for key, name in (((0, -1), "CPU"), ((1, 0), "GPU:0")):
        series = sums[key]
        entry = device(result, name)
        peak = max(value for _, value in series)
        peak_ts = next(ts for ts, value in series if value == peak)
        assert entry["events"] == len(series)
        assert entry["peak_allocated_bytes"] == peak
        assert profile.start_ns * 1000 + entry["peak_time_ps"] == peak_ts * PS_PER_US
        assert entry["peak_step"] == next(number for number, lo, hi in steps if lo <= peak_ts < hi)
        for got, (number, lo, hi) in zip(entry["step_peaks"], steps):
            before = [value for ts, value in series if ts < lo]
            inside = [value for ts, value in series if lo <= ts < hi]
            assert got == {"step": number, "peak_allocated_bytes": max([before[-1] if before else 0, *inside])}
        # No free before the peak lacks an allocation of its size, so the live blocks explain
        # the whole peak; every holder is an op of the trace.
        assert sum(h["bytes"] for h in entry["peak_holders"]) == peak
        op_names = {e["name"] for e in events if e.get("ph") == "X"}
        assert {h["op"] for h in entry["peak_holders"]} <= op_names
        assert len(entry["timeline"]) <= MAX_TIMELINE_POINTS
        assert (entry["peak_time_us"], peak) in points(entry)
    assert device(result, "GPU:0")["peak_allocated_bytes"] > 2_000_000_000  # ResNet-50 activations on a V100


def _tpu_memory_events() -> tuple[Any, dict[int, list]]:
    """The tool's result on the TPU file, and the file's memory events per chip
    (index_on_host), in time order, read with protobuf (independently of the tool)."""
    path = shared("xplane/tpu_v_inference_4chips.xplane.pb")
    space = read_xspace_independently(path)
    memory_events = sorted((e for e in space.events if e.name in ("MemoryAllocation", "MemoryDeallocation")), key=lambda e: e.start_ps)
    by_index: dict[int, list] = defaultdict(list)
    for event in memory_events:
        by_index[event.stats["index_on_host"]].append(event)
    return memory_profile(stepscope.load(path)), by_index


def test_tpu_xspace_peaks_and_holders_from_the_file_itself():
    result, by_index = _tpu_memory_events()
    assert sorted(d["device"] for d in result.to_json()["devices"]) == [f"device {i}" for i in sorted(by_index)]
    for index, events in by_index.items():
        entry = device(result, f"device {index}")
        peak = max(e.stats["bytes_allocated"] for e in events)
        assert entry["peak_allocated_bytes"] == peak
        assert entry["lifetime_peak_bytes"] == max(e.stats["peak_bytes_in_use"] for e in events)
        _check_xspace_holders(entry, events, peak)


def test_tpu_reserved_memory_is_the_files_bytes_reserved_beside_the_heap():
    """Issue 16: "reserved reads 0 while 15 GiB is allocated". The file's bytes_reserved is 0
    (then 5,414,912) while bytes_allocated climbs to 16 GB, and 21,491,712,000 only later: it
    is memory reserved beside the heap (allocated + reserved + available is the same on every
    event), not a pool holding the allocated bytes. The tool reports the file's figures."""
    result, by_index = _tpu_memory_events()
    for index, events in by_index.items():
        entry = device(result, f"device {index}")
        # The capacity the three figures share: one value per chip in the file.
        assert len({e.stats["bytes_allocated"] + e.stats["bytes_reserved"] + e.stats["bytes_available"] for e in events}) == 1
        assert entry["reserved_from"] == "bytes_reserved"
        assert entry["peak_reserved_bytes"] == max(e.stats["bytes_reserved"] for e in events)
        assert entry["peak_in_use_bytes"] == max(e.stats["bytes_allocated"] + e.stats["bytes_reserved"] for e in events)
        # Fewer events than MAX_TIMELINE_POINTS: every event is a point, with the file's figures.
        assert len(events) <= MAX_TIMELINE_POINTS
        # Times from the device's first memory event (the file's clock and the profile's differ by a constant).
        first_ps, first_us = events[0].start_ps, entry["timeline"][0]["time_us"]
        expected = sorted((round((e.start_ps - first_ps) / PS_PER_US, 3), e.stats["bytes_allocated"], e.stats["bytes_reserved"]) for e in events)
        got = sorted((round(p["time_us"] - first_us, 3), p["allocated_bytes"], p["reserved_bytes"]) for p in entry["timeline"])
        assert got == expected
        # At the allocated peak (its first event) reserved is what the file says there, not 21 GB.
        peak = max(e.stats["bytes_allocated"] for e in events)
        at_peak = next(e for e in events if e.stats["bytes_allocated"] == peak)
        assert next(p["reserved_bytes"] for p in entry["timeline"] if p["time_us"] == entry["peak_time_us"]) == at_peak.stats["bytes_reserved"]
    assert "beside the heap" in result.note


def test_tpu_allocations_are_the_largest_with_their_frees_from_the_file():
    result, by_index = _tpu_memory_events()
    for index, events in by_index.items():
        # Each MemoryAllocation, ended by the next MemoryDeallocation of its addr.
        made: list[list[Any]] = []  # [start_ps, bytes, end_ps or None]
        live: dict[int, list[Any]] = {}
        for event in events:
            if event.name == "MemoryAllocation":
                live[event.stats["addr"]] = record = [event.start_ps, event.stats["allocation_bytes"], None]
                made.append(record)
            elif event.stats["addr"] in live:
                live.pop(event.stats["addr"])[2] = event.start_ps
        largest = sorted(made, key=lambda r: (-r[1], r[0]))[: mp.MAX_ALLOCATIONS]
        entry = device(result, f"device {index}")
        assert len(made) > mp.MAX_ALLOCATIONS and len(entry["allocations"]) == mp.MAX_ALLOCATIONS
        assert [a["bytes"] for a in entry["allocations"]] == [r[1] for r in largest]
        assert [a["end_us"] is None for a in entry["allocations"]] == [r[2] is None for r in largest]
        lifetimes = [a["lifetime_us"] for a in entry["allocations"] if a["lifetime_us"] is not None]
        assert lifetimes == pytest.approx([(r[2] - r[0]) / PS_PER_US for r in largest if r[2] is not None], abs=1e-3)
        # Times from the device's first memory event (the file's clock and the profile's differ by a constant).
        offset_us = entry["timeline"][0]["time_us"] - events[0].start_ps / PS_PER_US
        assert [a["start_us"] for a in entry["allocations"]] == pytest.approx([r[0] / PS_PER_US + offset_us for r in largest], abs=1e-3)


def _check_xspace_holders(entry: dict[str, Any], events: list, peak: int) -> None:
    """The tool's holders against the allocations live just after the first peak event,
    matched by address in the file's own records (events in time order)."""
    peak_at = next(i for i, e in enumerate(events) if e.stats["bytes_allocated"] == peak)
    live: dict[int, Any] = {}
    for event in events[: peak_at + 1]:
        if event.name == "MemoryAllocation":
            live[event.stats["addr"]] = event
        else:
            live.pop(event.stats["addr"], None)
    by_tf_op: dict[str, int] = defaultdict(int)
    for event in live.values():
        if event.stats.get("tf_op") not in (None, "", "(null)"):
            by_tf_op[event.stats["tf_op"]] += event.stats["allocation_bytes"]
    got = {h["op"]: h["bytes"] for h in entry["peak_holders"]}
    for tf_op, total in by_tf_op.items():
        assert got[tf_op] == total
    live_bytes = sum(e.stats["allocation_bytes"] for e in live.values())
    assert sum(got.values()) - got.get(BEFORE_PROFILE, 0) == live_bytes
    # What the live blocks do not explain was allocated before the profile.
    assert got.get(BEFORE_PROFILE, 0) == max(peak - live_bytes, 0)


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_every_shared_trace_runs(path: Path):
    result = memory_profile(stepscope.load(path))
    document = json.loads(json.dumps(result.to_json()))
    assert set(document) == {"devices", "note"} and document["note"]
    events = read_json(path)["traceEvents"] if path.name.endswith(".json.gz") else None
    if events is not None and not any(e.get("name") == "[memory]" for e in events):
        assert document["devices"] == [] and document["note"] == mp.no_events_note(stepscope.load(path))
        assert "profile_memory=True" in document["note"]  # Kineto files are PyTorch's
    for entry in document["devices"]:
        assert entry["peak_allocated_bytes"] == max(p["allocated_bytes"] for p in entry["timeline"])
        assert entry["peak_holders"] == sorted(entry["peak_holders"], key=lambda h: (-h["bytes"], h["op"]))


# --- real framework runs on the CPU ------------------------------------------------------------------

TORCH_BODY = """
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
activities = [torch.profiler.ProfilerActivity.CPU]
with torch.profiler.profile(activities=activities, profile_memory=True) as prof:
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        prof.step()
path = OUT / "run.pt.trace.json"
prof.export_chrome_trace(str(path))
(OUT / "manifest.json").write_text(json.dumps({"trace": str(path)}))
"""


def test_torch_cpu_profile_memory(tmp_path: Path):
    manifest = run_framework_script(tmp_path, "torch", "import torch", TORCH_BODY, timeout=120)
    path = Path(manifest["trace"])
    document = read_json_exact(path)
    memory_events = [e for e in document["traceEvents"] if e.get("name") == "[memory]"]
    assert memory_events and all("Total Allocated" in e["args"] and "Addr" in e["args"] for e in memory_events)
    memory_events.sort(key=lambda e: e["ts"])
    profile = stepscope.load(path)
    entry = device(memory_profile(profile), "CPU")
    assert entry["allocated_from"] == "Total Allocated" and entry["events"] == len(memory_events)
    peak = max(e["args"]["Total Allocated"] for e in memory_events)
    first = next(i for i, e in enumerate(memory_events) if e["args"]["Total Allocated"] == peak)
    assert entry["peak_allocated_bytes"] == peak
    base_ns = int(document["baseTimeNanoseconds"])
    assert profile.start_ns * 1000 + entry["peak_time_ps"] == (base_ns + nearest_ns(memory_events[first]["ts"])) * 1000
    # Blocks allocated in the profile and live just after the peak, matched by Addr.
    live: dict[int, int] = {}
    for event in memory_events[: first + 1]:
        if event["args"]["Bytes"] > 0:
            live[event["args"]["Addr"]] = event["args"]["Bytes"]
        else:
            live.pop(event["args"]["Addr"], None)
    got = {h["op"]: h["bytes"] for h in entry["peak_holders"]}
    assert sum(b for op_name, b in got.items() if op_name != BEFORE_PROFILE) == sum(live.values())
    assert got.get(BEFORE_PROFILE, 0) == peak - sum(live.values())
    assert entry["peak_step"] is not None


TF_BODY = """
w = tf.Variable(tf.random.normal((256, 512)))
x = tf.random.normal((64, 256))

@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss

train_step(x)
logdir = OUT / "logdir"
tf.profiler.experimental.start(str(logdir))
for step in range(3):
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        train_step(x)
tf.profiler.experimental.stop()
(OUT / "manifest.json").write_text(json.dumps({"logdir": str(logdir)}))
"""


# TensorFlow's CPU allocator records MemoryAllocation events only with oneDNN's ops on,
# which TensorFlow turns on by itself only on CPUs with AVX-512 (seen: an AMD EPYC without
# it records none unless TF_ENABLE_ONEDNN_OPTS=1): the runs say which, so they do not
# depend on the machine's CPU.
ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "1"}
NO_ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "0"}


def test_tensorflow_cpu_allocator_events(tmp_path: Path):
    manifest = run_framework_script(tmp_path, "tensorflow", "import tensorflow as tf", TF_BODY, timeout=120, switches=ONEDNN)
    (path,) = find_files(Path(manifest["logdir"]), ".xplane.pb")
    space = read_xspace_independently(path)
    memory_events = [e for e in space.events if e.name in ("MemoryAllocation", "MemoryDeallocation")]
    assert memory_events
    result = memory_profile(stepscope.load(path))
    allocators = {e.stats["allocator_name"] for e in memory_events}
    assert {d["device"] for d in result.to_json()["devices"]} == allocators
    for allocator in allocators:
        events = sorted((e for e in memory_events if e.stats["allocator_name"] == allocator), key=lambda e: e.start_ps)
        entry = device(result, allocator)
        assert entry["peak_allocated_bytes"] == max(e.stats["bytes_allocated"] for e in events)
        assert entry["lifetime_peak_bytes"] == max(e.stats["peak_bytes_in_use"] for e in events)
        _check_xspace_holders(entry, events, entry["peak_allocated_bytes"])
        assert entry["peak_step"] in (0, 1, 2)


def test_same_result_after_an_xspace_round_trip(tmp_path: Path, legacy):
    # The Kineto profile saved as XSpace keeps [memory] events and their args as typed stats.
    profile = stepscope.load(write_trace(tmp_path, legacy_events()))
    saved = tmp_path / "round.xplane.pb"
    stepscope.save(profile, saved)
    again = memory_profile(stepscope.load(saved))
    assert again.to_json() == legacy.to_json()


# --- what records memory, per framework: stepscope's captures on the CPU -------------------------------

CAPTURE_BODY = """
from stepscope.capture.options import ProfilerOptions
level = {level}

def work():
{work}

logdir = OUT / "logdir"
with stepscope.profile(str(logdir), ProfilerOptions(host_tracer_level=level)):
    for number in range(3):
        with stepscope.step(number):
            work()
(OUT / "manifest.json").write_text(json.dumps({{"logdir": str(logdir)}}))
"""
CAPTURE_WORK = {
    "python": ("import stepscope", "    return [list(range(1000)) for _ in range(100)]"),
    "torch": ("import torch\nimport stepscope", "    x = torch.randn(128, 128)\n    return (x @ x).sum()"),
    "jax": ("import jax.numpy as jnp\nimport stepscope", "    x = jnp.ones((128, 128))\n    return (x @ x).block_until_ready()"),
    "tensorflow": (
        "import tensorflow as tf\nimport stepscope",
        "    x = tf.random.normal((256, 256))\n    for _ in range(3):\n        x = tf.matmul(x, x) / 256.0\n    return x",
    ),
}
# (framework, host_tracer_level, whether memory events are recorded, the empty page's line
# written out by hand from NO_EVENTS_WHY's claims, which these runs check).
CAPTURES = [
    (
        "python",
        3,
        False,
        "No memory events in this profile: a plain-Python capture records no allocations; "
        "stepscope records memory through PyTorch (host_tracer_level=3), TensorFlow, or JAX on a GPU or TPU.",
    ),
    (
        "torch",
        2,
        False,
        "No memory events in this profile: PyTorch records allocations only with "
        "torch.profiler.profile(profile_memory=True), which stepscope turns on at ProfilerOptions(host_tracer_level=3).",
    ),
    ("torch", 3, True, None),
    (
        "jax",
        3,
        False,
        "No memory events in this profile: JAX's CPU backend records no allocator events at any host_tracer_level; "
        "XLA's GPU and TPU allocators record MemoryAllocation events.",
    ),
    ("tensorflow", 2, True, None),
    (
        "tensorflow",
        2,
        False,
        "No memory events in this profile: TensorFlow's allocators record MemoryAllocation events at host_tracer_level 2 or more "
        "(its default), on the CPU only with oneDNN's ops on (TF_ENABLE_ONEDNN_OPTS=1, TensorFlow's default only on CPUs with AVX-512), "
        "so the profiled window allocated nothing through them or was recorded at a lower level or without oneDNN.",
    ),
]
# The TensorFlow runs' switch, by their order in CAPTURES: oneDNN on, then off.
TF_ENVS = iter([ONEDNN, NO_ONEDNN])
CAPTURE_ENVS = [next(TF_ENVS) if framework == "tensorflow" else None for framework, *_ in CAPTURES]


@pytest.mark.parametrize(
    ("framework", "level", "recorded", "line", "env"),
    [(*capture, env) for capture, env in zip(CAPTURES, CAPTURE_ENVS)],
    ids=[f"{c[0]}-level{c[1]}" + ({"1": "-onednn", "0": "-no-onednn"}[e["TF_ENABLE_ONEDNN_OPTS"]] if e else "") for c, e in zip(CAPTURES, CAPTURE_ENVS)],
)
def test_what_records_memory_and_the_line_an_empty_profile_shows(
    tmp_path: Path, framework: str, level: int, recorded: bool, line: str | None, env: dict[str, str] | None
):
    imports, work = CAPTURE_WORK[framework]
    manifest = run_framework_script(tmp_path, framework, imports, CAPTURE_BODY.format(level=level, work=work), timeout=180, switches=env)
    (path,) = find_files(Path(manifest["logdir"]), ".xplane.pb")
    # Memory events counted from the file itself (TSL's classes): the allocators' events, or
    # torch's [memory] instants as stepscope's XSpace carries them.
    names = {"MemoryAllocation", "MemoryDeallocation", "[memory]"}
    counted = sum(1 for event in read_xspace_independently(path).events if event.name in names)
    result = memory_profile(stepscope.load(path))
    assert (counted > 0) == recorded
    assert bool(result.devices) == recorded
    if not recorded:
        assert result.note == line
