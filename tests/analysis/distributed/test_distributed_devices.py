"""The distributed view over devices (``--by device``): each device plane of a profile a
unit. On the real 4-chip TPU profile, each chip's busy time is checked against the union
of its XLA ops decoded from the XSpace with the generated protobuf module; on a synthetic
4-GPU Kineto trace (written here with the standard library, every expected number worked
out in comments) one GPU is slowed in one step by a known amount, and the view must name
it, the step and the stage, on one host and on a run of two hosts (units host x device)."""

from __future__ import annotations

import json

import pytest

from stepscope.analysis.distributed import rank_tables, reduce_ranks
from stepscope.analysis.distributed.reduce import BY_AUTO, BY_DEVICE, BY_RANK
from stepscope.analysis.steps.breakdown import IDLE
from stepscope.engines import analyse_run
from stepscope.errors import StepscopeError
from stepscope.protos import xplane_pb2
from stepscope.trace.logdir import discover
from stepscope.trace.readers import load
from tests.support.device_runs import GPUS, NORMAL, SLOW_GPU, SLOW_STEP, SLOW_US, SLOWED, STEPS, write_node
from tests.support.distributed_runs import json_calls
from tests.support.intervals import union_length
from tests.support.traces import read_json, shared

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
RECSYS = "kineto/recsys_sampled_rank0_of_128.pt.trace.json.gz"
PS_PER_US = 1_000_000


def tpu_chip_busy_ps() -> dict[str, int]:
    """Each /device:TPU:N plane's XLA Ops line, its events' union in ps, from the raw XSpace."""
    space = xplane_pb2.XSpace.FromString(shared(TPU).read_bytes())
    busy = {}
    for plane in space.planes:
        if not plane.name.startswith("/device:TPU:"):
            continue
        intervals = []
        for line in plane.lines:
            if line.name != "XLA Ops":
                continue
            for event in line.events:
                start = line.timestamp_ns * 1000 + event.offset_ps
                intervals.append((start, start + event.duration_ps))
        busy[plane.name] = union_length(intervals)
    return busy


def test_tpu_chips_are_units_with_their_own_busy_time():
    expected = tpu_chip_busy_ps()
    assert sorted(expected) == [f"/device:TPU:{n}" for n in range(4)]
    profile = load(shared(TPU))
    tables = rank_tables(profile, "tpu")
    # The profile has no step markers: the whole profile is one window (step 0), as its overview has it.
    assert tables.step_source == "profiled window" and [step.number for step in tables.steps] == [0]
    assert [unit.device for unit in tables.devices] == sorted(expected)
    result = reduce_ranks("tpu", [tables], by=BY_DEVICE)
    assert result.unit == BY_DEVICE and result.world_size == 4
    assert [(row["rank"], row["device"], row["host_rank"]) for row in result.ranks] == [(n, f"/device:TPU:{n}", 0) for n in range(4)]
    window = profile.span_ps
    for row in result.steps:
        device = result.ranks[row["rank"]]["device"]
        assert row["step_time_ps"] == window
        # Busy = the window less the device's idle = compute + exposed collectives + copies.
        assert row["step_time_ps"] - row["breakdown"][IDLE] == expected[device]
        assert row["compute_ps"] + row["exposed_collective_ps"] + row["memcpy_ps"] == expected[device]
        assert sum(row["breakdown"].values()) == window
        # A device has no host time of its own.
        assert all(row["breakdown"][key] == 0 for key in ("input", "compile", "kernel_launch", "host_compute"))
    # auto: one profile of 4 chips is read by device.
    assert reduce_ranks("tpu", [tables], by=BY_AUTO).unit == BY_DEVICE
    assert reduce_ranks("tpu", [tables], by=BY_RANK).unit == BY_RANK


def _check_units(result, slow_unit: int) -> None:
    for row in result.steps:
        parts = SLOWED if (row["rank"], row["step"]) == (slow_unit, SLOW_STEP) else NORMAL
        got = {
            "compute": row["compute_ps"],
            "collective": row["collective_ps"],
            "exposed": row["exposed_collective_ps"],
            "hidden": row["overlap_ps"],
            "memcpy": row["memcpy_ps"],
            "idle": row["breakdown"][IDLE],
        }
        assert got == {key: value * PS_PER_US for key, value in parts.items()}, (row["rank"], row["step"])
        # All-reduce durations in the slowed step: 200 on every unit but the slow one's 50,
        # so each other unit waits 200 - 50 = 150 us; in the other steps all are 200: no wait.
        wait = 0 if row["step"] != SLOW_STEP or row["rank"] == slow_unit else 150
        assert row["collective_wait_ps"] == wait * PS_PER_US
    # The only straggler: the slow unit's work time (step less wait) in the slowed step is
    # 1000 - 0 against the others' 1000 - 150 = 850 (MAD 0, so the floor decides: 5% of
    # 1000 us = 50 us < 150 us); its stage is compute, 650 - 550 = 100 us over the others'.
    assert [(s["rank"], s["step"], s["signal"]) for s in result.stragglers] == [(slow_unit, SLOW_STEP, "work_time")]
    straggler = result.stragglers[0]
    assert straggler["excess_ps"] == 150 * PS_PER_US and straggler["excess_percent"] == pytest.approx(15.0)
    assert straggler["stage"] == "device_compute" and straggler["stage_excess_ps"] == 100 * PS_PER_US
    (allreduce,) = result.collectives
    units = len(result.ranks)
    assert allreduce["name"] == "AllReduce" and allreduce["calls"] == units * len(STEPS) and allreduce["matched"] == len(STEPS)
    assert (allreduce["wait_min_rank"], allreduce["wait_min_ps"]) == (slow_unit, 0)
    assert allreduce["wait_max_ps"] == allreduce["wait_skew_ps"] == 150 * PS_PER_US
    label = result.unit_label(slow_unit)
    assert f"/device:GPU:{SLOW_GPU}" in label and any(label in line for line in result.summary())


def test_one_slow_gpu_of_one_node_is_named(tmp_path):
    path = write_node(tmp_path / "node.pt.trace.json", slow=True)
    result = analyse_run(discover(path)[0], workers=1)  # auto: one file of 4 GPUs -> devices
    assert result.unit == BY_DEVICE
    assert [(row["rank"], row["device"]) for row in result.ranks] == [(n, f"/device:GPU:{n}") for n in range(GPUS)]
    _check_units(result, SLOW_GPU)


def test_two_nodes_are_host_by_device_units(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    write_node(folder / "node0.pt.trace.json", slow=False)
    write_node(folder / "node1.pt.trace.json", slow=True)
    run = discover(folder)[0]
    assert analyse_run(run, workers=1).unit == BY_RANK  # auto: several files -> ranks
    result = analyse_run(run, workers=1, by=BY_DEVICE)
    # Hosts in host order (node0, node1), then devices by ordinal: unit = 4 * host + gpu.
    assert [(row["rank"], row["host_rank"], row["device"]) for row in result.ranks] == [
        (4 * host + gpu, host, f"/device:GPU:{gpu}") for host in (0, 1) for gpu in range(GPUS)
    ]
    assert result.world_size == 8
    _check_units(result, 4 * 1 + SLOW_GPU)
    assert "host node1" in result.unit_label(4 + SLOW_GPU)


def _calls(units) -> list[tuple[int, str, int, int | None]]:
    """The calls of some units without their numbering, in one order: what both views hold."""
    return sorted((call.step, call.name, call.duration_ps, call.bytes) for unit in units for call in unit.collectives)


def test_the_rank_and_device_views_hold_the_same_collectives(tmp_path):
    """A rank's collectives (``--by rank``) and its devices' (``--by device``) are one set of
    calls, numbered two ways: all the rank's together, and each device's on its own."""
    tables = rank_tables(load(write_node(tmp_path / "node.pt.trace.json", slow=True)), "node")
    # By hand from device_runs: each GPU has one AllReduce per step, 800 - 600 = 200 us, but
    # the slow GPU's in the slow step starts SLOW_US later: 800 - 750 = 50 us. No bytes (the
    # kernels carry no size, and there is no nccl: annotation).
    for gpu, unit in enumerate(tables.devices):
        durations = [200 - (SLOW_US if (gpu, step) == (SLOW_GPU, SLOW_STEP) else 0) for step in STEPS]
        assert [(c.step, c.name, c.ordinal, c.duration_ps, c.bytes) for c in unit.collectives] == [
            (step, "AllReduce", 0, us * PS_PER_US, None) for step, us in zip(STEPS, durations, strict=True)
        ]
    # The rank's view: per step the four calls in start order (all at 600 us but the slow
    # one at 750 us, which comes last), numbered 0..3.
    assert [(c.step, c.ordinal, c.duration_ps) for c in tables.collectives] == [
        (step, ordinal, (50 if (step, ordinal) == (SLOW_STEP, GPUS - 1) else 200) * PS_PER_US) for step in STEPS for ordinal in range(GPUS)
    ]
    assert _calls([tables]) == _calls(tables.devices)
    # One GPU (a real rank): the device's calls are the rank's, numbering and all; as many
    # as the trace's NCCL kernels launched inside a step, by the annotations around them.
    real = rank_tables(load(shared(RECSYS)), "rank0")
    (device,) = real.devices
    assert device.collectives == real.collectives
    expected = sorted((call.step, call.name, call.bytes) for call in json_calls(read_json(shared(RECSYS))))
    assert sorted((call.step, call.name, call.bytes) for call in real.collectives) == expected and len(expected) == 10


def test_by_device_without_device_planes_is_one_line(tmp_path):
    path = tmp_path / "cpu.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]}))
    with pytest.raises(StepscopeError, match="no device planes"):
        analyse_run(discover(path)[0], workers=1, by=BY_DEVICE)
    with pytest.raises(StepscopeError, match="unknown unit"):
        analyse_run(discover(path)[0], workers=1, by="chip")
