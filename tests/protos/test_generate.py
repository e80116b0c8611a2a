"""The committed generated protobuf code is what the pinned protoc makes of the .proto files."""

from __future__ import annotations

from pathlib import Path

from stepscope.protos import generate


def test_generated_code_is_current(tmp_path: Path):
    written = generate.generate(tmp_path)
    for fresh in written:
        committed = generate.PROTO_DIR / fresh.name
        assert committed.exists(), f"{committed.name} is missing; run `make protos`"
        assert committed.read_text() == fresh.read_text(), f"{committed.name} is stale; run `make protos`"


def test_wire_format_matches_tsl_field_numbers():
    """Field numbers are the format: spot-check the ones every XSpace reader relies on."""
    from stepscope.protos import profiler_service_pb2, xplane_pb2

    fields = {
        (message.DESCRIPTOR.name, field.name): field.number
        for message in (xplane_pb2.XSpace, xplane_pb2.XPlane, xplane_pb2.XLine, xplane_pb2.XEvent, xplane_pb2.XStat)
        for field in message.DESCRIPTOR.fields
    }
    assert fields[("XPlane", "event_metadata")] == 4 and fields[("XPlane", "stats")] == 6
    assert fields[("XLine", "timestamp_ns")] == 3 and fields[("XLine", "display_name")] == 11
    assert fields[("XEvent", "offset_ps")] == 2 and fields[("XEvent", "num_occurrences")] == 5
    assert fields[("XStat", "ref_value")] == 7
    request = {f.name: f.number for f in profiler_service_pb2.ProfileRequest.DESCRIPTOR.fields}
    assert request == {
        "duration_ms": 1,
        "max_events": 2,
        "tools": 3,
        "opts": 4,
        "repository_root": 5,
        "session_id": 6,
        "host_name": 7,
        "tool_options": 8,
    }
