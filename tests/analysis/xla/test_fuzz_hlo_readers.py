"""Fuzzing the HLO proto readers: a damaged XLA program gives the XLA tools a result or one
line, never another exception and never a hang.

Beside the profile readers' fuzzing (tests/trace/test_fuzz_readers.py), the same idea one
level down: each example takes a real program (the shared TPU profile's ``jit_f``: a heap
trace of 12 events over 25 logical buffers, 31 instructions) or a small one built here
whose heap shares memory, damages its ``HloProto`` and writes it into a profile of its own
(``hostile_hlo.write_profile``), then runs what reads the proto: ``memory_viewer`` (the heap
replay, ``heap_simulation``, and the shapes, ``hlo_shapes``) in two memory spaces and
``graph_viewer`` (``hlo_graph``) around a drawn instruction. Acceptable outcomes: a result,
or a ``StepscopeError`` of one line. Each example runs under a wall-clock bound
(``time_bound``): a loop fails the test instead of hanging it.

Damage, drawn by Hypothesis:
- bytes: the byte-level mutations of the reader fuzzing on the serialized proto (a proto
  that no longer parses must be the one-line "damaged" error);
- fields: any scalar field the tools read (stepscope's ``hlo_pb2`` holds only those) set to
  a drawn value: a small id (so ids collide and shares form cycles), an extreme int64, an
  unknown enum value, an empty or another instruction's name; a repeated field's element
  deleted, duplicated or added; a heap event appended on a drawn buffer.

Deterministic (``derandomize=True``), no shrinking: on failure Hypothesis prints each
mutation (``note``).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import currently_in_test_context, event, given, note, settings
from hypothesis import strategies as st

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.opstats import OpStats
from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2
from tests.support import hostile_hlo
from tests.support.fuzz import BYTE_OPS, mutate_bytes, position, time_bound
from tests.support.traces import shared
from tests.support.xla_memory import file_programs
from tests.support.xspaces import SETTINGS

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
# Seconds one example may take: the tools answer a 31-instruction program in milliseconds;
# the old heap replay never answered a share cycle.
EXAMPLE_SECONDS = 20

Event = hlo_pb2.HeapSimulatorTrace.Event
INT64_EXTREMES = (-1, 2**31, 2**32 + 1, 2**62, 2**63 - 1, -(2**63))
SMALL = st.integers(0, 30)  # ids and sizes that collide with the program's own
NUMBERS = {
    FieldDescriptor.CPPTYPE_INT64: SMALL | st.sampled_from(INT64_EXTREMES) | st.integers(-(2**63), 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT64: SMALL | st.sampled_from((2**63, 2**64 - 1)) | st.integers(0, 2**64 - 1),
    FieldDescriptor.CPPTYPE_INT32: SMALL | st.sampled_from((-1, 2**31 - 1, -(2**31))),
    FieldDescriptor.CPPTYPE_UINT32: SMALL | st.sampled_from((2**32 - 1,)),
    FieldDescriptor.CPPTYPE_ENUM: SMALL | st.sampled_from((-1, 999, 2**31 - 1)),
    FieldDescriptor.CPPTYPE_BOOL: st.booleans(),
    FieldDescriptor.CPPTYPE_DOUBLE: st.floats(),
    FieldDescriptor.CPPTYPE_FLOAT: st.floats(width=32),
}


@functools.cache
def _sources() -> dict[str, bytes]:
    """The programs damaged: the TPU profile's jit_f, and a small one with shared memory
    (buffer 2 reuses 1's memory, 3 reuses 2's) and dimensions to multiply."""
    jit_f = next(proto for label, proto in file_programs(shared(TPU)).items() if label.startswith("jit_f("))
    A, F, S = Event.ALLOC, Event.FREE, Event.SHARE_WITH
    small = hostile_hlo.program(4, [(A, 1, 0), (S, 2, 1), (A, 4, 0), (S, 3, 2), (F, 1, 0), (F, 2, 0), (F, 4, 0), (F, 3, 0)], (8, 128))
    return {"jit_f": jit_f.SerializeToString(), "small": small.SerializeToString()}


def _repeated(field: FieldDescriptor) -> bool:
    """(``is_repeated`` from protobuf 6 on; ``label`` before, gone in 7.)"""
    repeated = getattr(field, "is_repeated", None)
    return bool(repeated) if repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _fields(message: Any, where: str = "") -> list[tuple[Any, FieldDescriptor, str]]:
    """Every field of ``message`` and its sub-messages that is set or repeated: (message,
    field, path). Map fields (the schedule's sequences) are walked through their values."""
    found = []
    for field in message.DESCRIPTOR.fields:
        path = f"{where}.{field.name}"
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            for key in list(value):
                found += _fields(value[key], f"{path}[{key}]")
        elif _repeated(field):
            found.append((message, field, path))
            if field.message_type is not None:
                for index, child in enumerate(value):
                    found += _fields(child, f"{path}[{index}]")
        elif field.message_type is not None:
            if message.HasField(field.name):
                found += _fields(value, path)
        else:
            found.append((message, field, path))
    return found


def _value(data: st.DataObject, field: FieldDescriptor, names: list[str]) -> Any:
    if field.cpp_type == FieldDescriptor.CPPTYPE_STRING:
        if field.type == FieldDescriptor.TYPE_BYTES:
            return data.draw(st.binary(max_size=8), label="bytes")
        return data.draw(st.sampled_from(["", *names]) | st.text(max_size=8), label="text")
    return data.draw(NUMBERS[field.cpp_type], label="value")


def mutate_fields(data: st.DataObject, proto: hlo_pb2.HloProto) -> None:
    """One drawn field-level mutation (see the module's docstring)."""
    names = sorted({i.name for c in proto.hlo_module.computations for i in c.instructions})
    if data.draw(st.integers(0, 5), label="append a heap event?") == 0:
        traces = proto.buffer_assignment.heap_simulator_traces
        trace = traces[data.draw(st.integers(0, len(traces) - 1), label="trace")] if traces else traces.add()
        kind = data.draw(st.sampled_from((Event.ALLOC, Event.FREE, Event.SHARE_WITH)), label="kind")
        buffer, share = data.draw(SMALL, label="buffer"), data.draw(SMALL, label="share with")
        trace.events.add(kind=kind, buffer_id=buffer, share_with_canonical_id=share, instruction_name=data.draw(st.sampled_from(["", *names])))
        note(f"append heap event {Event.Kind.Name(kind)} buffer {buffer} share with {share}")
        return
    fields = _fields(proto)
    message, field, path = fields[position(data, len(fields), "field")]
    value = getattr(message, field.name)
    if not _repeated(field):
        new = _value(data, field, names)
        try:
            setattr(message, field.name, new)
        except ValueError:  # an enum value the field refuses
            return
        note(f"{path} = {new!r}")
        return
    op = data.draw(st.sampled_from(("delete", "duplicate", "add")), label="op")
    if op != "add" and not len(value):
        return
    if op == "delete":
        index = data.draw(st.integers(0, len(value) - 1), label="index")
        del value[index]
    elif op == "duplicate":
        index = data.draw(st.integers(0, len(value) - 1), label="index")
        if field.message_type is not None:
            value.add().CopyFrom(value[index])
        else:
            value.append(value[index])
    elif field.message_type is not None:
        value.add()
        index = len(value) - 1
    else:
        new = _value(data, field, names)
        try:
            value.append(new)
        except ValueError:
            return
        index = len(value) - 1
    note(f"{op} {path}[{index}]")


def _answer(stats: OpStats, tool: str, **options: Any) -> str:
    """The tool's result, or its one-line error (anything else propagates)."""
    try:
        run_tool(tool, stats, **options)
    except StepscopeError as error:
        message = str(error)
        assert message and "\n" not in message, message
        _record(f"{tool}: " + message.split(": ", 3)[-1][:40])
        return "error"
    _record(f"{tool}: result")
    return "result"


def _record(outcome: str) -> None:
    """Counts outcomes for ``pytest --hypothesis-show-statistics``."""
    if currently_in_test_context():
        event(outcome)


def damage_and_run(tmp_path: Path, data: st.DataObject, source: str) -> None:
    proto = hlo_pb2.HloProto()
    proto.ParseFromString(_sources()[source])
    if data.draw(st.booleans(), label="byte damage?"):
        buffer = bytearray(_sources()[source])
        for _ in range(data.draw(st.integers(1, 3), label="mutations")):
            mutate_bytes(data, buffer, BYTE_OPS)
        serialized = bytes(buffer)
    else:
        for _ in range(data.draw(st.integers(1, 6), label="mutations")):
            mutate_fields(data, proto)
        serialized = proto.SerializeToString()
    path = tmp_path / "damaged.xplane.pb"
    hostile_hlo.write_profile(path, serialized)
    names = [i.name for c in proto.hlo_module.computations for i in c.instructions] or [""]
    op = data.draw(st.sampled_from(["", *names]), label="op")
    hops = data.draw(st.integers(0, 3), label="hops")
    with time_bound(EXAMPLE_SECONDS):
        stats = OpStats(stepscope.load(path))
        for space in (0, 1):
            _answer(stats, "memory_viewer", memory_space=space)
        _answer(stats, "graph_viewer", op=op, hops=hops)


@settings(SETTINGS, max_examples=300)
@given(data=st.data())
def test_damaged_jit_f_gives_a_result_or_one_line(tmp_path: Path, data: st.DataObject) -> None:
    damage_and_run(tmp_path, data, "jit_f")


@settings(SETTINGS, max_examples=300)
@given(data=st.data())
def test_damaged_small_program_gives_a_result_or_one_line(tmp_path: Path, data: st.DataObject) -> None:
    damage_and_run(tmp_path, data, "small")


@pytest.mark.parametrize("source", ["jit_f", "small"])
def test_the_undamaged_programs_give_results(tmp_path: Path, source: str) -> None:
    """So that the fuzzing damages programs the tools read whole (not errors from the start)."""
    path = hostile_hlo.write_profile(tmp_path / "whole.xplane.pb", _sources()[source])
    stats = OpStats(stepscope.load(path))
    assert [_answer(stats, tool) for tool in ("memory_viewer", "graph_viewer")] == ["result", "result"]
    # jit_f's peak: four 5 GiB buffers (see test_memory_viewer's hand count; its 32-byte
    # output tuple too); the small program's: buffers 1 (shared by 2 and 3) and 4.
    expected = 4 * 5 * 2**30 + 32 if source == "jit_f" else 2 * hostile_hlo.BUFFER_BYTES
    assert run_tool("memory_viewer", stats).peak_bytes == expected


def test_time_bound_stops_a_loop() -> None:
    with pytest.raises(TimeoutError, match=r"^took more than 0\.2 s$"), time_bound(0.2):
        while True:
            pass
