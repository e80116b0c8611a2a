"""XSpace reading and writing: the real TPU profile, a hand-built XSpace, round trips."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.stat_types import StatKind
from tests.support.traces import KINETO_TRACES, shared
from tests.support.xspaces import handmade_space

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"


def session_start_ns(space: xplane_pb2.XSpace) -> int:
    """TSL stores line timestamps relative to the session, whose UNIX start is the
    "Task Environment" plane's profile_start_time stat."""
    for plane in space.planes:
        if plane.name == "Task Environment":
            stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
            for stat in plane.stats:
                if stat_names[stat.metadata_id] == "profile_start_time":
                    return stat.uint64_value
    return 0


def reference_events(space: xplane_pb2.XSpace) -> Counter:
    """(plane, line, name, absolute start ps, duration ps) straight from the protobuf."""
    result = Counter()
    session = session_start_ns(space)
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                start = (session + line.timestamp_ns) * 1000 + event.offset_ps
                result[(plane.name, line.name, name, start, event.duration_ps)] += 1
    return result


def loaded_events(profile: stepscope.Profile) -> Counter:
    result = Counter()
    for plane in profile.planes:
        events = plane.events
        for row in range(len(events)):
            start = profile.start_ns * 1000 + int(events.start_ps[row])
            line = plane.lines[int(events.line[row])].name
            result[(plane.name, line, plane.event_name(row), start, int(events.duration_ps[row]))] += 1
    return result


def test_tpu_profile_events_times_and_planes():
    path = shared(TPU)
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    profile = stepscope.load(path)
    profile.validate()
    assert profile.format == "xspace"
    # The file's line timestamps start at 0: session-relative; the session began 2025-03-11.
    assert session_start_ns(space) == 1741722099081044120
    # The "Task Environment" plane (capture-wide facts, no lines) is kept in Profile.info.
    assert [plane.name for plane in profile.planes] == [plane.name for plane in space.planes if plane.name != "Task Environment"]
    assert profile.info["task_environment"] == {"profile_start_time": 1741722099081044120, "profile_stop_time": 1741722197726153802}
    assert loaded_events(profile) == reference_events(space)
    assert profile.event_count == sum(len(line.events) for plane in space.planes for line in plane.lines)
    assert [p.name for p in profile.device_planes] == [f"/device:TPU:{i}" for i in range(4)]


def test_tpu_metadata_stats_are_kept():
    """XLA ops carry flops / bytes_accessed on their event metadata; the model keeps them."""
    path = shared(TPU)
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    plane_proto = next(p for p in space.planes if p.name == "/device:TPU:0")
    stat_names = {k: v.name for k, v in plane_proto.stat_metadata.items()}
    expected = {}
    for meta in plane_proto.event_metadata.values():
        for stat in meta.stats:
            if stat_names[stat.metadata_id] == names.FLOPS:
                expected[meta.name] = stat.uint64_value or stat.int64_value or stat.double_value
    assert expected, "the TPU profile is known to carry flops on its XLA op metadata"
    plane = stepscope.load(path).plane("/device:TPU:0")
    got = {}
    for index, stats in enumerate(plane.metadata.stats):
        for stat in stats:
            if stat.name == names.FLOPS:
                got[plane.metadata.names[index]] = stat.value
    assert got == expected


def test_handmade_space_resolves_refs_and_relative_times(tmp_path: Path):
    path = tmp_path / "worker.xplane.pb"
    path.write_bytes(handmade_space().SerializeToString())
    profile = stepscope.load(path)
    profile.validate()
    assert profile.host == "worker-3"
    # Absolute starts: 1_000 ns + 500 ps = 1_000_500 ps; 1_002 ns + 250 ps = 1_002_250 ps.
    # Time zero is the earliest start floored to a ns: 1_000 ns.
    assert profile.start_ns == 1_000
    plane = profile.planes[0]
    assert plane.events.start_ps.tolist() == [500, 2_250]
    assert plane.events.duration_ps.tolist() == [2_000, 100]
    assert plane.metadata.display_names[plane.events.metadata_id[0]] == "gemm"
    stats = {s.name: s for s in plane.event_stats(0)}
    assert stats["tf_op"].value == "model/dense/MatMul" and stats["tf_op"].kind == StatKind.STR
    assert stats["flops"].value == 2**40 and stats["flops"].kind == StatKind.UINT64
    assert plane.events.correlation_id.tolist() == [99, -1]
    # The flow goes out of the copy (row 1) into the kernel (row 0).
    flows = profile.flows
    assert (int(flows.src_event[0]), int(flows.dst_event[0])) == (1, 0) and len(flows) == 1


def test_gzip_compressed_xspace(tmp_path: Path):
    path = tmp_path / "worker.xplane.pb.gz"
    path.write_bytes(gzip.compress(handmade_space().SerializeToString()))
    assert stepscope.load(path).event_count == 2


def _columns(profile: stepscope.Profile) -> list[tuple]:
    result = []
    for plane in profile.planes:
        events = plane.events
        result.append(
            (
                plane.name,
                [line.name for line in plane.lines],
                events.start_ps.tolist(),
                events.duration_ps.tolist(),
                [plane.event_name(r) for r in range(len(events))],
                events.correlation_id.tolist(),
                events.external_id.tolist(),
                events.parent.tolist(),
            )
        )
    return result


@pytest.mark.parametrize("path", [*KINETO_TRACES, shared(TPU)], ids=lambda p: p.name)
def test_xspace_round_trip_keeps_everything(path: Path, tmp_path: Path):
    original = stepscope.load(path)
    out = tmp_path / "out.xplane.pb"
    stepscope.save(original, out)
    again = stepscope.load(out)
    again.validate()
    assert again.start_ns == original.start_ns
    assert _columns(again) == _columns(original)
    assert len(again.flows) == len(original.flows)
    for plane, copy in zip(original.planes, again.planes):
        assert plane.metadata.categories == copy.metadata.categories
        assert plane.plane_stats == copy.plane_stats
        rows = np.linspace(0, len(plane.events) - 1, num=min(len(plane.events), 25), dtype=int).tolist()
        for row in rows if len(plane.events) else []:
            own = [s for s in plane.event_stats(row) if s.name != names.FLOW]
            assert [s for s in copy.event_stats(row) if s.name != names.FLOW] == own
