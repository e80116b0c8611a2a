"""XSpaces made for the tests: one by hand, protobuf wire-format pieces, and Hypothesis
strategies of generated spaces full of edge cases (extreme times and ids, missing and
dangling metadata, every stat kind).
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from stepscope.protos import xplane_pb2
from stepscope.trace import names

# Deterministic (no example database), no deadline, no shrinking.
SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


def handmade_space() -> xplane_pb2.XSpace:
    """One plane, two lines with different timestamps, a ref_value stat, a metadata stat."""
    space = xplane_pb2.XSpace(hostnames=["worker-3"])
    plane = space.planes.add(id=5, name="/device:GPU:0")
    plane.stat_metadata[1].CopyFrom(xplane_pb2.XStatMetadata(id=1, name="correlation_id"))
    plane.stat_metadata[2].CopyFrom(xplane_pb2.XStatMetadata(id=2, name="tf_op"))
    plane.stat_metadata[3].CopyFrom(xplane_pb2.XStatMetadata(id=3, name="model/dense/MatMul"))
    plane.stat_metadata[4].CopyFrom(xplane_pb2.XStatMetadata(id=4, name="flops"))
    plane.stat_metadata[5].CopyFrom(xplane_pb2.XStatMetadata(id=5, name="flow"))
    meta = plane.event_metadata[40]
    meta.id, meta.name, meta.display_name = 40, "gemm_kernel", "gemm"
    meta.stats.add(metadata_id=4, uint64_value=2**40)
    plane.event_metadata[41].CopyFrom(xplane_pb2.XEventMetadata(id=41, name="memcpy"))
    first = plane.lines.add(id=7, name="stream 7", timestamp_ns=1_000)
    kernel = first.events.add(metadata_id=40, offset_ps=500, duration_ps=2_000)
    kernel.stats.add(metadata_id=1, int64_value=99)
    kernel.stats.add(metadata_id=2, ref_value=3)  # the string "model/dense/MatMul"
    kernel.stats.add(metadata_id=5, uint64_value=(12 << 2) | 1)  # flow 12, direction in
    second = plane.lines.add(id=8, name="stream 8", timestamp_ns=1_002)
    copy = second.events.add(metadata_id=41, offset_ps=250, duration_ps=100)
    copy.stats.add(metadata_id=5, uint64_value=(12 << 2) | 2)  # flow 12, direction out
    return space


# --- the wire format, byte by byte ----------------------------------------------------------


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return tag(field, 2) + varint(len(payload)) + payload


def tag(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def space_with_event(event: bytes, line_extra: bytes = b"", plane_extra: bytes = b"") -> bytes:
    """An XSpace of one plane and line holding the XEvent ``event`` (its bytes), with
    ``line_extra`` after the events and ``plane_extra`` after the metadata."""
    meta = ld(4, tag(1, 0) + b"\x01" + ld(2, tag(1, 0) + b"\x01" + ld(2, b"op")))
    stat_meta = ld(5, tag(1, 0) + b"\x02" + ld(2, tag(1, 0) + b"\x02" + ld(2, b"correlation_id")))
    line = ld(2, b"line") + tag(3, 0) + varint(1000) + ld(4, event) + line_extra
    plane = ld(2, b"/host:CPU") + ld(3, line) + meta + stat_meta + plane_extra
    return ld(1, plane)


# An XEvent's fields (metadata 1, offset 5, duration 7), an XStat's (metadata 2, int64 42),
# and events of every wire-format corner the decoders must treat as protobuf does.
EVENT = tag(1, 0) + b"\x01" + tag(2, 0) + b"\x05" + tag(3, 0) + b"\x07"
STAT = tag(1, 0) + b"\x02" + tag(4, 0) + b"\x2a"
WIRE_CASES = {
    "plain": EVENT + ld(4, STAT),
    "unknown varint, fixed32, fixed64, bytes": EVENT + tag(9, 0) + b"\x01" + tag(10, 5) + b"\0" * 4 + tag(11, 1) + b"\0" * 8 + ld(12, b"xy"),
    "unknown group": EVENT + tag(9, 3) + tag(1, 0) + b"\x01" + tag(9, 4),
    "nested groups": EVENT + tag(9, 3) + tag(8, 3) + tag(8, 4) + tag(9, 4),
    "groups 97 deep (the limit)": EVENT + tag(9, 3) * 97 + tag(9, 4) * 97,
    "groups 98 deep (past it)": EVENT + tag(9, 3) * 98 + tag(9, 4) * 98,
    "mismatched end group": EVENT + tag(9, 3) + tag(8, 4),
    "end group alone": EVENT + tag(9, 4),
    "unterminated group": EVENT + tag(9, 3),
    "known field, wrong wire type": tag(1, 2) + varint(1) + b"\x05" + tag(2, 5) + b"\0" * 4 + EVENT,
    "offset then num_occurrences": EVENT + tag(5, 0) + b"\x03",
    "num_occurrences then offset": tag(5, 0) + b"\x03" + EVENT,
    "field given twice": EVENT + tag(3, 0) + b"\x09",
    "stat: last value wins": EVENT + ld(4, STAT + ld(5, b"text") + tag(3, 0) + b"\x08"),
    "stat: value types": EVENT + ld(4, tag(2, 1) + b"\0" * 7 + b"\x7f") + ld(4, ld(6, b"\xff")) + ld(4, tag(7, 0) + b"\x02"),
    "stat: bad utf-8": EVENT + ld(4, ld(5, b"\xed\xa0\x80")),
    "stat: utf-8 split across stats": EVENT + ld(4, ld(5, b"\xc3")) + ld(4, ld(5, b"\xa9")),
    "stat: good utf-8": EVENT + ld(4, ld(5, "é€😀".encode())),
    "varint of 10 bytes": EVENT + tag(3, 0) + b"\xff" * 9 + b"\x01",
    "varint of 10 bytes, high bits": EVENT + tag(3, 0) + b"\xff" * 9 + b"\x7f",
    "varint of 11 bytes": EVENT + tag(3, 0) + b"\xff" * 10 + b"\x01",
    "tag of 5 bytes": EVENT + b"\x88\x80\x80\x80\x00" + b"\x01",
    "tag of 6 bytes": EVENT + b"\x88\x80\x80\x80\x80\x00" + b"\x01",
    "tag past 32 bits": EVENT + b"\x88\x80\x80\x80\x10\x01",
    "field number 0": EVENT + b"\x00\x01",
    "wire type 6": EVENT + b"\x0e",
    "wire type 7": EVENT + b"\x0f",
    "length of 5 bytes": EVENT + tag(12, 2) + b"\x81\x80\x80\x80\x00" + b"a",
    "length of 6 bytes": EVENT + tag(12, 2) + b"\x81\x80\x80\x80\x80\x00" + b"a",
    "length past the event": EVENT + tag(12, 2) + b"\x05ab",
    "truncated fixed64": EVENT + tag(11, 1) + b"\0" * 3,
    "truncated varint": EVENT + tag(3, 0) + b"\x80",
}


# --- generated spaces ----------------------------------------------------------------------

INT64 = st.sampled_from((0, 1, -1, 7, 1000, 2**31, 2**53 + 1, 2**62, 2**63 - 1, -(2**63), 10**15, 10**18)) | st.integers(-(2**63), 2**63 - 1)
SMALL = st.integers(0, 10**9)
STAT_NAMES = ("correlation_id", "group_id", "step_num", "external_id", "flow", "tf_op", "_c", "flops", "correlation_id", "stat_9")
TIMESTAMPS = st.sampled_from((0, 5, 10**6, 10**17 - 1, 10**17, 1_700_000_000_000_000_000, -(10**9))) | st.integers(0, 10**12)


@st.composite
def xstat(draw, stat_ids: list[int]) -> xplane_pb2.XStat:
    stat = xplane_pb2.XStat(metadata_id=draw(st.sampled_from(stat_ids)))
    kind = draw(st.sampled_from(("int64", "uint64", "double", "str", "bytes", "ref", "none", "flow")))
    if kind == "int64":
        stat.int64_value = draw(INT64)
    elif kind == "uint64":
        stat.uint64_value = draw(st.sampled_from((0, 2**63, 2**64 - 1)) | st.integers(0, 2**64 - 1))
    elif kind == "double":
        stat.double_value = draw(st.sampled_from((math.nan, math.inf, -math.inf, -0.0, 1e308)) | st.floats())
    elif kind == "str":
        stat.str_value = draw(st.text(max_size=8))
    elif kind == "bytes":
        stat.bytes_value = draw(st.binary(max_size=8))
    elif kind == "ref":
        stat.ref_value = draw(st.sampled_from(stat_ids) | st.integers(0, 2**64 - 1)) % 2**64
    elif kind == "flow":  # a well-formed flow endpoint: id 1-3, direction in, out or both
        stat.uint64_value = draw(st.integers(1, 3)) << 2 | draw(st.integers(1, 3))
    return stat


@st.composite
def xspace(draw) -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace()
    space.hostnames.extend(draw(st.lists(st.text(max_size=5), max_size=2)))
    space.errors.extend(draw(st.lists(st.text(max_size=5), max_size=1)))
    plane_names = st.sampled_from(("/host:CPU", "/device:GPU:0", "/device:TPU:1", names.TASK_ENVIRONMENT_PLANE, ""))
    for _ in range(draw(st.integers(1, 3))):
        plane = space.planes.add(id=draw(st.integers(-3, 3)), name=draw(plane_names))
        stat_ids = draw(st.lists(st.sampled_from((1, 2, 3, 4, 5, 17, -4, 2**40)), min_size=1, max_size=6, unique=True))
        for stat_id in stat_ids:
            if draw(st.integers(0, 5)):  # sometimes missing
                plane.stat_metadata[stat_id].CopyFrom(xplane_pb2.XStatMetadata(id=stat_id, name=draw(st.sampled_from(STAT_NAMES))))
        if plane.name == names.TASK_ENVIRONMENT_PLANE and draw(st.booleans()):
            plane.stat_metadata[99].CopyFrom(xplane_pb2.XStatMetadata(id=99, name=names.PROFILE_START_TIME))
            plane.stats.add(metadata_id=99, uint64_value=draw(st.sampled_from((1_700_000_000_000_000_000, 5, 10**17))))
        for _ in range(draw(st.integers(0, 2))):
            plane.stats.append(draw(xstat(stat_ids)))
        event_ids = draw(st.lists(st.sampled_from((1, 2, 3, 9, 0, -1, 2**33)), min_size=1, max_size=4, unique=True))
        for event_id in event_ids:
            if draw(st.integers(0, 4)):
                meta = plane.event_metadata[event_id]
                meta.id, meta.name = event_id, draw(st.sampled_from(("op", "kernel", "op", "")))
                meta.display_name = draw(st.sampled_from(("", "shown")))
                meta.metadata = draw(st.binary(max_size=3))
                if draw(st.booleans()):
                    meta.stats.append(draw(xstat(stat_ids)))
        for _ in range(draw(st.integers(0, 3))):
            line = plane.lines.add(id=draw(st.integers(-2, 5)), name=draw(st.sampled_from(("thread 1", "stream 7", ""))))
            line.display_name = draw(st.sampled_from(("", "Stream #7")))
            line.timestamp_ns = draw(TIMESTAMPS)
            line.duration_ps = draw(SMALL)
            for _ in range(draw(st.integers(0, 5))):
                event = line.events.add(metadata_id=draw(st.sampled_from(event_ids)))
                choice = draw(st.integers(0, 9))
                if choice == 0:
                    event.num_occurrences = draw(st.integers(0, 5))
                elif choice == 1:
                    event.offset_ps = draw(INT64)
                else:
                    event.offset_ps = draw(st.integers(-(10**6), 10**9))
                event.duration_ps = draw(st.integers(-1, 10**6) if draw(st.integers(0, 9)) else INT64)
                for _ in range(draw(st.integers(0, 3))):
                    event.stats.append(draw(xstat(stat_ids)))
    return space


def without_xprof_hints(space: xplane_pb2.XSpace) -> xplane_pb2.XSpace:
    """``space`` less what stepscope's writer adds for XProf (docs/format.md, "XProf and
    TensorBoard"), found by the format's marks alone: the stats under stat metadata
    described as XProf hints, the steps line (its id and name) and its event metadata, then
    every stat metadata entry nothing refers to any more (a writer that adds nothing makes
    none). What is left is what the writer wrote before it added hints: a copy where there
    were hints, ``space`` itself where there were none."""

    def hinted(plane: xplane_pb2.XPlane) -> bool:
        marked = any(meta.description == names.XPROF_HINT_DESCRIPTION for meta in plane.stat_metadata.values())
        return marked or any(line.id == names.XPROF_STEPS_ID and line.name == names.XPROF_STEPS_LINE for line in plane.lines)

    if not any(hinted(plane) for plane in space.planes):
        return space
    space = xplane_pb2.XSpace.FromString(space.SerializeToString())
    for plane in space.planes:
        marked = {key for key, meta in plane.stat_metadata.items() if meta.description == names.XPROF_HINT_DESCRIPTION}
        kept_lines = [line for line in plane.lines if not (line.id == names.XPROF_STEPS_ID and line.name == names.XPROF_STEPS_LINE)]
        if len(kept_lines) == len(plane.lines) and not marked:
            continue
        del plane.lines[:]
        plane.lines.extend(kept_lines)
        if names.XPROF_STEPS_ID in plane.event_metadata:
            del plane.event_metadata[names.XPROF_STEPS_ID]
        for line in plane.lines:
            for event in line.events:
                kept = [stat for stat in event.stats if stat.metadata_id not in marked]
                if len(kept) != len(event.stats):
                    del event.stats[:]
                    event.stats.extend(kept)
        stats = [*plane.stats, *(stat for meta in plane.event_metadata.values() for stat in meta.stats)]
        stats += [stat for line in plane.lines for event in line.events for stat in event.stats]
        used = {stat.metadata_id for stat in stats} | {stat.ref_value for stat in stats if stat.WhichOneof("value") == "ref_value"}
        for key in [key for key in plane.stat_metadata if key not in used]:
            del plane.stat_metadata[key]
    return space
