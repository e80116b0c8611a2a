"""A warm-up for the XSpace reader: a few events read in bulk, so that a process that will
read XSpace files (a dashboard worker) imports the reader's modules and protobuf (~0.06 s
of a fresh process; the index built from the sample imports the analysis modules it needs,
~0.3 s more) before a user waits for them.

The sample is built with protobuf's message API (the writer would be imported for
nothing) and holds what sends the reader down each of its paths: nested events on a host
line (nesting), a kernel on a device line, every stat value kind, the hot id stats
(``correlation_id``, ``group_id``, ...) and a ``flow`` pair (flow pairing).
tests/trace/test_xspace_warm.py checks that reading real profiles after it imports no
module it did not.
"""

from __future__ import annotations

from pathlib import Path

from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.formats.xspace.read import read_xspace
from stepscope.trace.formats.xspace.schema import FLOW_IN, FLOW_OUT, HOT_STATS, encode_flow
from stepscope.trace.model import Profile

# What the warm-up's profile says it was read from (never a file).
SAMPLE_SOURCE = "<xspace warm-up>"
_LINE_NS = 1_700_000_000_000_000_000  # a UNIX-epoch line timestamp, as TSL writes them
_STATS = (names.FLOW, "text", "blob", "ratio", "size", *HOT_STATS)  # stat metadata ids 1..


def sample_space() -> bytes:
    """The serialized sample XSpace (see the module docstring)."""
    space = xplane_pb2.XSpace(hostnames=["warm-up"])
    host = _plane(space, 1, "/host:CPU", ["step", "op", "launch"])
    line = host.lines.add(id=1, name="main", timestamp_ns=_LINE_NS)
    _event(line, 1, 0, 10_000, {"group_id": ("int64_value", 1)})
    _event(line, 2, 1_000, 5_000, {"text": ("str_value", "a"), "ratio": ("double_value", 0.5), "blob": ("bytes_value", b"\x00")})
    _event(line, 3, 2_000, 1_000, {names.FLOW: ("uint64_value", encode_flow(7, FLOW_OUT)), names.CORRELATION_ID: ("int64_value", 7)})
    device = _plane(space, 2, "/device:GPU:0", ["kernel"])
    stream = device.lines.add(id=2, name="Stream #7", timestamp_ns=_LINE_NS)
    _event(stream, 1, 3_000, 2_000, {names.FLOW: ("uint64_value", encode_flow(7, FLOW_IN)), names.CORRELATION_ID: ("int64_value", 7), "size": ("ref_value", 2)})
    data: bytes = space.SerializeToString()
    return data


def warm() -> Profile:
    """Reads the sample as a file is read (the wire decoder where the kernels are compiled);
    the profile, for warming what follows a read (the trace viewer's index)."""
    return read_xspace(Path(SAMPLE_SOURCE), sample_space())


def _plane(space: xplane_pb2.XSpace, plane_id: int, name: str, event_names: list[str]) -> xplane_pb2.XPlane:
    plane = space.planes.add(id=plane_id, name=name)
    for metadata_id, event_name in enumerate(event_names, start=1):
        plane.event_metadata[metadata_id].CopyFrom(xplane_pb2.XEventMetadata(id=metadata_id, name=event_name))
    for metadata_id, stat_name in enumerate(_STATS, start=1):
        plane.stat_metadata[metadata_id].CopyFrom(xplane_pb2.XStatMetadata(id=metadata_id, name=stat_name))
    return plane


def _event(line: xplane_pb2.XLine, metadata_id: int, offset_ps: int, duration_ps: int, stats: dict[str, tuple[str, object]]) -> None:
    event = line.events.add(metadata_id=metadata_id, offset_ps=offset_ps, duration_ps=duration_ps)
    for stat_name, (field, value) in stats.items():
        stat = event.stats.add(metadata_id=_STATS.index(stat_name) + 1)
        setattr(stat, field, value)
