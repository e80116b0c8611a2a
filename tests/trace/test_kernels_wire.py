"""The C wire decoder (``src/stepscope/kernels/scan.c``, ``lines.c``) returns what its Python
(``trace/formats/xspace/wire.py``) returns, call by call: every field scan_fields finds and
the count, error and position it returns; every (error, position, state) decode_lines
returns, ROOM included, and every value of every output array, the rooms it never reached
included. On the shared TPU profile (whole, cut and damaged), on generated spaces (whole
and damaged) and on the hand-made wire-format corners.

The driver below walks a file as ``decode.py`` does (the space's fields, each plane's, its
lines' events), with small outputs that grow when the decoder asks, so that every kind of
ROOM is met on the way.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope import _kernels
from stepscope.protos import xplane_pb2
from stepscope.trace import kernels
from stepscope.trace.formats.xspace import wire
from tests.support.fuzz import BYTE_OPS, mutate_bytes, source_bytes
from tests.support.xspaces import EVENT, SETTINGS, WIRE_CASES, space_with_event, tag, xspace

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
SENTINEL = 121  # what the outputs hold where nothing was written (fits every dtype, uint8 too)
# decode_lines' outputs after (buf, line_start, line_end, state): dtype, row shape, first rows.
OUTPUTS = [
    (np.int64, (), 1),  # event_metadata
    (np.int64, (), 1),  # event_offset
    (np.int64, (), 1),  # event_duration
    (np.int32, (), 1),  # event_line
    (np.int64, (), 1),  # stat_event
    (np.int64, (), 1),  # stat_metadata
    (np.int8, (), 1),  # stat_kind
    (np.int64, (), 1),  # stat_bits
    (np.uint8, (), 3),  # out_text
    (np.int64, (), 2),  # out_text_offsets
    (np.int64, (3,), 1),  # out_heads
]
GROUPS = ((0, 1, 2, 3), (4, 5, 6, 7), (8,), (9,), (10,))  # the arrays of ROOM_EVENTS, _STATS, _TEXT, _TEXTS, _HEADS


def grown(array: np.ndarray, need: int) -> np.ndarray:
    bigger = np.full((max(need, 2 * len(array)), *array.shape[1:]), SENTINEL, dtype=array.dtype)
    bigger[: len(array)] = array
    return bigger


def run(scan_fields: Callable[..., Any], decode_lines: Callable[..., Any], data: bytes) -> list:
    """Everything the decoder returns for ``data``, in order."""
    buf = np.frombuffer(data, dtype=np.uint8)
    record: list = []

    def fields(start: int, end: int, depth: int) -> np.ndarray | None:
        out = np.full((5, 3), SENTINEL, dtype=np.int64)  # room for 3: larger messages are scanned twice
        count, error, at = scan_fields(buf, start, end, depth, out)
        record.append(("fields", start, end, count, error, at, out.tolist()))
        if error:
            return None
        if count > 3:
            out = np.full((5, count), SENTINEL, dtype=np.int64)
            record.append(("again", scan_fields(buf, start, end, depth, out), out.tolist()))
        return out[:, :count].T

    space = fields(0, len(buf), wire.DEPTH_LIMIT)
    if space is None:
        return record
    for _, _, _, start, end in space[(space[:, 0] == 1) & (space[:, 1] == 2)].tolist():
        plane = fields(start, end, wire.PLANE_DEPTH)
        if plane is None:
            continue
        lines = plane[(plane[:, 0] == 3) & (plane[:, 1] == 2)]
        line_start, line_end = np.ascontiguousarray(lines[:, 3]), np.ascontiguousarray(lines[:, 4])
        outputs = [np.full((rows, *shape), SENTINEL, dtype=dtype) for dtype, shape, rows in OUTPUTS]
        line_events = np.full(len(lines), SENTINEL, dtype=np.int64)
        state = wire.new_state()
        while True:
            error, at = decode_lines(buf, line_start, line_end, state, *outputs, line_events)
            record.append(("lines", int(error), int(at), state.tolist()))
            if error != wire.ROOM:
                break
            for index in GROUPS[state[wire.STATE_ROOM_FOR]]:
                outputs[index] = grown(outputs[index], int(state[wire.STATE_ROOM_NEED]))
        record.append(("outputs", [array.tolist() for array in outputs], line_events.tolist()))
    return record


def check_same(data: bytes) -> list:
    """The C's record is the Python's; returns it."""
    c = run(_kernels.scan_fields, _kernels.decode_lines, data)
    python = run(kernels.PYTHON["scan_fields"], kernels.PYTHON["decode_lines"], data)
    assert c == python
    return c


def errors(record: list) -> list[tuple[int, int]]:
    """The (error, position) pairs of a record, ROOM left out."""
    found = [(entry[4], entry[5]) for entry in record if entry[0] == "fields" and entry[4]]
    return found + [(entry[1], entry[2]) for entry in record if entry[0] == "lines" and entry[1] not in (0, wire.ROOM)]


# --- the shared profile --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tpu_record() -> list:
    return check_same(source_bytes(TPU))


def test_the_shared_profile_decodes_the_same(tpu_record: list):
    # Each of its planes' events and stats, counted by protobuf, are the final state's counts.
    finals = [entry[3] for entry in tpu_record if entry[0] == "lines" and entry[1] == 0]
    planes = xplane_pb2.XSpace.FromString(source_bytes(TPU)).planes
    assert [state[wire.STATE_EVENTS] for state in finals] == [sum(len(line.events) for line in plane.lines) for plane in planes]
    assert [state[wire.STATE_STATS] for state in finals] == [sum(len(e.stats) for line in plane.lines for e in line.events) for plane in planes]
    assert sum(state[wire.STATE_EVENTS] for state in finals) == 26_723  # (what stepscope.load counts)
    assert any(entry[0] == "lines" and entry[1] == wire.ROOM for entry in tpu_record)  # (the outputs grew on the way)


@pytest.mark.parametrize("cut", [3, 1000, 431_000])
def test_the_shared_profile_cut_short_decodes_the_same(cut: int):
    # The cut ends the space inside a plane field: scan_fields finds it truncated.
    assert errors(check_same(source_bytes(TPU)[:cut]))[0][0] == wire.TRUNCATED


def test_the_shared_profile_damaged_decodes_the_same():
    """Damaged copies, each with a byte set at a seeded place past the first 1% (where the
    planes' metadata lies) to a value that makes a long varint, a group start or a plain
    change. (The Python decoder takes ~10 s for the whole file: three copies; the damaged
    generated spaces below meet every kind of damage.)"""
    data = source_bytes(TPU)
    rng = random.Random(5)
    for value in (0xFF, 0x0B, 0x7F):
        damaged = bytearray(data)
        damaged[rng.randrange(len(data) // 100, len(data))] = value
        check_same(bytes(damaged))


# --- generated and hand-made spaces ------------------------------------------------------------


@settings(SETTINGS, max_examples=150)
@given(space=xspace())
def test_generated_spaces_decode_the_same(space: xplane_pb2.XSpace):
    record = check_same(space.SerializeToString())
    assert not errors(record)


@settings(SETTINGS, max_examples=300)
@given(space=xspace(), data=st.data())
def test_damaged_generated_spaces_decode_the_same(space: xplane_pb2.XSpace, data: st.DataObject):
    buffer = bytearray(space.SerializeToString())
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        mutate_bytes(data, buffer, BYTE_OPS)
    check_same(bytes(buffer))


@pytest.mark.parametrize("event", list(WIRE_CASES.values()), ids=list(WIRE_CASES))
def test_wire_format_corners_decode_the_same(event: bytes):
    for extra in (b"", tag(15, 0) + b"\x01" + tag(11, 2) + b"\x00"):  # also with line fields after the events
        check_same(space_with_event(event, line_extra=extra))


# Corners whose error is known by hand, each found at the field after EVENT, where the
# corner begins (in a group, protobuf's parser and the decoder name the outermost start):
# (98 groups: the line leaves 98 levels, the event 97, its groups the rest.)
KNOWN_ERRORS = {
    "wire type 6": wire.BAD_WIRE_TYPE,
    "end group alone": wire.BAD_GROUP,
    "varint of 11 bytes": wire.LONG_VARINT,
    "tag of 6 bytes": wire.BAD_TAG,
    "truncated fixed64": wire.TRUNCATED,
    "groups 98 deep (past it)": wire.TOO_DEEP,
}


@pytest.mark.parametrize("name", list(KNOWN_ERRORS))
def test_errors_are_found_where_they_are(name: str):
    data = space_with_event(WIRE_CASES[name])
    corner = data.index(WIRE_CASES[name]) + len(EVENT)
    assert errors(check_same(data)) == [(KNOWN_ERRORS[name], corner)]
