"""XLA's serialized ``memory_access_breakdown`` stat in words, not "<12 bytes>"."""

from __future__ import annotations

from stepscope.protos import xplane_pb2
from stepscope.trace.readers import load
from stepscope.trace.stat_messages import readable
from stepscope.viewer.details import details
from tests.support.traces import shared

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
# f32[5,1024,1024,256]: the broadcast's output and the all-reduce's input and output.
TENSOR_BYTES = 5 * 1024 * 1024 * 256 * 4
assert TENSOR_BYTES == 5_368_709_120


def test_a_breakdown_written_by_hand_reads_as_words():
    # Field 1 (memory_accessed, length 10) holding: field 1 operation_type = 2 (WRITE),
    # field 2 memory_space = 1, field 3 bytes_accessed = varint 80 80 80 80 14 = 0x14 << 28.
    data = bytes([0x0A, 0x0A, 0x08, 0x02, 0x10, 0x01, 0x18, 0x80, 0x80, 0x80, 0x80, 0x14])
    assert TENSOR_BYTES == 0x14 << 28
    assert readable("memory_access_breakdown", data) == "write, HBM (memory space 1): 5,368,709,120 bytes"
    # An entry with an unnamed space (7) and a read of 2**64 - 1 bytes: exact, no float.
    big = bytes([0x08, 0x01, 0x10, 0x07, 0x18]) + b"\xff" * 9 + b"\x01"
    assert readable("memory_access_breakdown", bytes([0x0A, len(big)]) + big) == f"read, memory space 7: {2**64 - 1:,} bytes"
    assert readable("memory_access_breakdown", b"") == "none"


def test_other_values_and_broken_bytes_are_left_as_they_are():
    assert readable("memory_access_breakdown", b"\x0a\x05\x08") == b"\x0a\x05\x08"  # cut short
    assert readable("Hlo Proto", b"\x01\x02") == b"\x01\x02"  # not a registered message
    assert readable("memory_access_breakdown", 12) == 12


def test_the_details_of_tpu_ops_decode_their_breakdown():
    """Every op of the real TPU profile that carries the stat shows it decoded: the bytes
    read by hand from the file (protobuf's XSpace) decoded by the rule above."""
    space = xplane_pb2.XSpace.FromString(shared(TPU).read_bytes())
    raw: dict[str, bytes] = {}
    for plane in space.planes:
        ids = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for meta in plane.event_metadata.values():
            for stat in meta.stats:
                if ids[stat.metadata_id] == "memory_access_breakdown":
                    raw[meta.name] = stat.bytes_value
    assert len(raw) > 0
    profile = load(shared(TPU))
    shown: dict[str, str] = {}
    for number, plane in enumerate(profile.planes):
        for row in range(len(plane.events)):
            name = plane.event_name(row)
            if name in raw and name not in shown:
                stats = {stat["name"]: stat["value"] for stat in details(profile, [number, row])["stats"]}
                shown[name] = stats["memory_access_breakdown"]
    assert len(shown) >= 2
    broadcast = next(name for name in shown if name.startswith("%broadcast.2 = f32[5,1024,1024,256]"))
    assert shown[broadcast] == f"write, HBM (memory space 1): {TENSOR_BYTES:,} bytes"
    all_reduce = next(name for name in shown if name.startswith("%all-reduce = f32[5,1024,1024,256]"))
    assert shown[all_reduce] == f"read, HBM (memory space 1): {TENSOR_BYTES:,} bytes; write, HBM (memory space 1): {TENSOR_BYTES:,} bytes"
    assert not any(value.startswith("<") for value in shown.values())
