"""memory_viewer on the shared TPU profile and on a real JAX CPU capture made here: peaks
and live buffers against a plain replay of each program's HloProto read from the file
(tests/support/xla_memory.py), and against XProf's own memory_viewer on the same file; the
heap replay's reference counting (SHARE_WITH) on a small HloProto built here."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.xla.heap_simulation import replay
from stepscope.analysis.xla.hlo_shapes import ShapeTooLarge, dtype, unpadded_bytes
from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2
from stepscope.render import render
from tests.support import hostile_hlo
from tests.support.traces import shared
from tests.support.xla_memory import file_programs, plain_peak, xprof_memory_viewer

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
MIB = 2**20
GIB = 2**30
SMALL = 16384  # XProf folds buffers under this many bytes into one "small" entry


@pytest.fixture(scope="module")
def tpu_path() -> Path:
    return shared(TPU)


def _stats(path: Path) -> OpStats:
    return OpStats(stepscope.load(path))


def _check_against_the_file(path: Path) -> None:
    stats = _stats(path)
    programs = file_programs(path)
    assert programs, "the profile carries HLO protos"
    result = run_tool("memory_viewer", stats)
    rows = {row["program"]: row for row in result.to_json()["programs"]}
    assert set(rows) == set(programs) == set(result.program_names)
    for label, proto in programs.items():
        peak, at, live = plain_peak(proto)
        assert rows[label]["peak_bytes"] == peak, label
        assert rows[label]["peak_step"] == at, label
        shown = run_tool("memory_viewer", stats, program=label)
        assert shown.program == label and shown.peak_bytes == peak
        temporaries = [b["size_bytes"] for b in shown.to_json()["buffers"] if b["category"] == "Temporary"]
        assert temporaries == live, label
    # The default program is the largest peak; the list goes largest first.
    peaks = [row["peak_bytes"] for row in result.to_json()["programs"]]
    assert peaks == sorted(peaks, reverse=True) and result.peak_bytes == peaks[0]


def _check_against_xprof(path: Path) -> None:
    stats = _stats(path)
    xprof = xprof_memory_viewer(path)
    assert set(xprof) == set(run_tool("memory_viewer", stats).program_names)
    for label, theirs in xprof.items():
        ours = run_tool("memory_viewer", stats, program=label).to_json()
        assert ours["peak_mib"] == pytest.approx(theirs["peakHeapMib"], rel=1e-12), label
        if ours["peak_step"] is not None:
            assert ours["peak_step"] == theirs.get("peakHeapSizePosition", 0), label
        # XProf's heapSizes[i] is before event i (then one after the last); ours is after.
        heap = theirs.get("heapSizes", [])
        assert [p["mib"] for p in ours["points"]] == pytest.approx(heap[1:], rel=1e-12), label
        assert [p["instruction"] for p in ours["points"]] == theirs.get("hloInstructionNames", [""])[:-1], label
        # The buffers at the peak: XProf lists those of SMALL bytes or more, and one entry
        # summing the rest.
        big = {b["buffer_id"]: b for b in ours["buffers"] if b["size_bytes"] >= SMALL}
        # (XProf's JSON leaves out fields that are zero.)
        listed = {int(o.get("logicalBufferId", 0)): o for o in theirs["maxHeap"] if o.get("logicalBufferId", 0) != -1}
        assert set(big) == set(listed), label
        for buffer_id, o in listed.items():
            b = big[buffer_id]
            assert b["size_mib"] == pytest.approx(o["logicalBufferSizeMib"], rel=1e-12)
            assert b["unpadded_mib"] == pytest.approx(o.get("unpaddedShapeMib", 0), rel=1e-12)
            assert (b["instruction"], b["shape"], b["opcode"], b["category"]) == (o["instructionName"], o["shapeString"], o["opCode"], o["groupName"])
            assert b["op_name"] == o.get("tfOpName", "")
        small = sum(o["logicalBufferSizeMib"] for o in theirs["maxHeap"] if o.get("logicalBufferId", 0) == -1)
        assert sum(b["size_mib"] for b in ours["buffers"] if b["size_bytes"] < SMALL) == pytest.approx(small, rel=1e-12), label


def test_tpu_peaks_are_the_files_heap_traces(tpu_path: Path):
    _check_against_the_file(tpu_path)


def test_tpu_peak_by_hand(tpu_path: Path):
    result = run_tool("memory_viewer", _stats(tpu_path))
    # jit_f keeps three copies of a f32[5,1024,1024,256] (5 GiB each: 5*1024*1024*256*4
    # bytes) and one fusion output live at event 3 (four ALLOCs, no FREE yet), plus its
    # 32-byte output tuple (the only HBM allocation outside the heap; its parameters are in
    # host memory, space 5).
    assert result.program == "jit_f(12190760917235803885)"
    assert result.peak_bytes == 4 * 5 * GIB + 32 and result.peak_step == 3
    assert result.peak_instruction == "broadcast_add_fusion.2"
    top = result.to_json()["buffers"][0]
    assert (top["instruction"], top["shape"], top["dtype"], top["size_bytes"]) == ("copy-start{0}", "f32[5,1024,1024,256]{3,2,1,0:T(8,128)}", "f32", 5 * GIB)
    # The schedule position reached: the furthest entry position of the instructions the
    # events have named so far (the file's schedule, read here).
    proto = file_programs(tpu_path)[result.program]
    module = proto.hlo_module
    (entry,) = [c for c in module.computations if c.id == module.entry_computation_id]
    names = {i.id: i.name for i in entry.instructions}
    position = {names[i]: n for n, i in enumerate(module.schedule.sequences[entry.id].instruction_ids)}
    reached, expected = -1, []
    for event in proto.buffer_assignment.heap_simulator_traces[1].events:
        reached = max(reached, position[event.instruction_name])
        expected.append(reached)
    assert [p["sequence_index"] for p in result.to_json()["points"]] == expected
    assert expected[:4] == [3, 4, 5, 7]  # copy-start, -.2, -.4 after three parameters; the fusion after copy-done
    # In host memory (space 5) the three parameters live throughout: 15 GiB, no heap.
    host = run_tool("memory_viewer", _stats(tpu_path), program="jit_f", memory_space=5)
    assert host.peak_bytes == 3 * 5 * GIB and host.peak_step is None and host.points == []


def test_tpu_matches_xprofs_memory_viewer(tpu_path: Path):
    _check_against_xprof(tpu_path)


@pytest.mark.framework
def test_jax_cpu_peaks_are_the_files_heap_traces(jax_path: Path):
    _check_against_the_file(jax_path)
    result = run_tool("memory_viewer", _stats(jax_path))
    assert result.program.startswith("jit_train_step(")
    # train_step(w f32[32,32], x f32[8,32]): parameters 4096 + 1024 bytes, outputs and
    # constants beside them, one 1024-byte temporary (f32[8,32]) in the heap at its peak.
    assert result.to_json()["programs"][0]["temporary_peak_mib"] * MIB == 8 * 32 * 4


@pytest.mark.framework
def test_jax_cpu_matches_xprofs_memory_viewer(jax_path: Path):
    _check_against_xprof(jax_path)


def test_program_option_and_errors(tpu_path: Path):
    stats = _stats(tpu_path)
    by_id = run_tool("memory_viewer", stats, program="9646411105960254074")
    assert by_id.program == "jit__psum(9646411105960254074)"
    # psum: its 5 GiB parameter and its 5 GiB output, no heap trace.
    assert by_id.peak_bytes == 2 * 5 * GIB and by_id.points == []
    with pytest.raises(StepscopeError, match="memory_viewer: no program 'nope'"):
        run_tool("memory_viewer", stats, program="nope")
    text = render([by_id], "text")
    assert "jit__psum(9646411105960254074): peak 10,240.000 MiB" in text


def test_a_profile_without_hlo_protos_has_no_programs():
    path = shared("kineto/cpu_only_rank34.pt.trace.json.gz")
    result = run_tool("memory_viewer", stepscope.load(path))
    assert result.programs == [] and result.summary() == ["No XLA programs with an HLO proto in this profile."]


def _proto(events: list[tuple[int, int, int]]) -> hlo_pb2.HloProto:
    """A program with buffers 1..3 (100, 10, 1 bytes) in one temporary allocation and a
    heap trace of (kind, buffer, share_with) events."""
    proto = hlo_pb2.HloProto()
    entry = proto.hlo_module.computations.add(name="main", id=1)
    for i in (1, 2, 3):
        entry.instructions.add(name=f"op{i}", opcode="add", id=i).shape.element_type = hlo_pb2.F32
    allocation = proto.buffer_assignment.buffer_allocations.add(index=0, size=111)
    for i, size in ((1, 100), (2, 10), (3, 1)):
        proto.buffer_assignment.logical_buffers.add(id=i, size=size).defined_at.instruction_id = i
        allocation.assigned.add(logical_buffer_id=i, size=size)
    trace = proto.buffer_assignment.heap_simulator_traces.add()
    for kind, buffer, share in events:
        trace.events.add(kind=kind, buffer_id=buffer, share_with_canonical_id=share, computation_name="main", instruction_name=f"op{buffer}")
    return proto


def test_shared_buffers_stay_live_until_the_last_sharer_is_freed():
    E = hlo_pb2.HeapSimulatorTrace.Event
    heap = replay(_proto([(E.ALLOC, 1, 0), (E.SHARE_WITH, 2, 1), (E.FREE, 1, 0), (E.ALLOC, 3, 0), (E.FREE, 2, 0), (E.FREE, 3, 0)]), 0, "test")
    # op2 reuses op1's 100 bytes: freeing op1 keeps them (op2 still refers), op3 adds 1,
    # freeing op2 releases the 100, then op3's 1: 100, 100, 100, 101, 1, 0.
    assert [p.bytes for p in heap.points] == [100, 100, 100, 101, 1, 0]
    assert heap.peak_bytes == 101 and heap.peak_step == 3 and heap.live_at_peak == [1, 3]
    # A share after the canonical buffer was freed brings its memory back.
    again = replay(_proto([(E.ALLOC, 1, 0), (E.FREE, 1, 0), (E.SHARE_WITH, 2, 1), (E.FREE, 2, 0)]), 0, "test")
    assert [p.bytes for p in again.points] == [100, 0, 100, 0]


def test_a_damaged_heap_trace_is_one_line():
    E = hlo_pb2.HeapSimulatorTrace.Event
    with pytest.raises(StepscopeError, match="prog: heap event 2 frees logical buffer 1 more often"):
        replay(_proto([(E.ALLOC, 1, 0), (E.FREE, 1, 0), (E.FREE, 1, 0)]), 0, "prog")


def test_shape_sizes_past_int64_are_one_line(tmp_path: Path):
    # f32[2^62 x 20]: 2^1240 elements of 4 bytes; XLA's sizes are int64 (2^63 - 1 at most).
    huge = hlo_pb2.ShapeProto(element_type=hlo_pb2.F32, dimensions=hostile_hlo.HUGE_DIMENSIONS)
    with pytest.raises(ShapeTooLarge, match=r"^its shape f32\[20 dimensions\] holds more than 9,223,372,036,854,775,807 bytes$"):
        unpadded_bytes(huge)
    # 2^61 f32 elements are 2^63 bytes, one past the limit; 2^63 - 1 of s8 fit.
    with pytest.raises(ShapeTooLarge):
        unpadded_bytes(hlo_pb2.ShapeProto(element_type=hlo_pb2.F32, dimensions=[2**61]))
    assert unpadded_bytes(hlo_pb2.ShapeProto(element_type=hlo_pb2.S8, dimensions=[2**63 - 1])) == 2**63 - 1
    # A zero dimension empties the array whatever the others; a negative (unbounded dynamic)
    # one has no static size; an element type this XLA does not know is named by number.
    assert unpadded_bytes(hlo_pb2.ShapeProto(element_type=hlo_pb2.F32, dimensions=[2**62] * 20 + [0])) == 0
    assert unpadded_bytes(hlo_pb2.ShapeProto(element_type=hlo_pb2.F32, dimensions=[4, -(2**63)])) is None
    assert dtype(hlo_pb2.ShapeProto(element_type=999)) == "type999"
    path = hostile_hlo.huge_shape(tmp_path / "huge.xplane.pb")
    with pytest.raises(StepscopeError) as error:
        run_tool("memory_viewer", _stats(path))
    assert str(error.value) == (
        f"{path}: memory_viewer: program 'jit_hostile(1)': instruction 'op1': its shape f32[20 dimensions] holds more than "
        "9,223,372,036,854,775,807 bytes; the HLO proto is damaged"
    )
