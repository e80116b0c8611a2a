"""What the memory_viewer tests compare against, read without stepscope's loader or tool:
each program's HloProto straight from the file's ``/host:metadata`` plane (the protobuf
classes), the peak of memory by a plain replay of its heap trace, and XProf's own
memory_viewer on a copy of the file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from stepscope.protos import hlo_pb2, xplane_pb2

ALLOC, FREE = hlo_pb2.HeapSimulatorTrace.Event.ALLOC, hlo_pb2.HeapSimulatorTrace.Event.FREE


def file_programs(path: Path) -> dict[str, hlo_pb2.HloProto]:
    """Program label (the metadata entry's name) -> its HloProto, from the raw XSpace."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    programs = {}
    for plane in space.planes:
        if plane.name != "/host:metadata":
            continue
        for metadata in plane.event_metadata.values():
            for stat in metadata.stats:
                if plane.stat_metadata[stat.metadata_id].name == "Hlo Proto":
                    proto = hlo_pb2.HloProto()
                    proto.ParseFromString(stat.bytes_value)
                    programs[metadata.name] = proto
    return programs


def plain_peak(proto: hlo_pb2.HloProto, color: int = 0) -> tuple[int, int | None, list[int]]:
    """(peak bytes, the event index of the peak, the sizes live in the heap then), by the
    simplest replay: every allocation of ``color`` that is a parameter, output or constant
    counts throughout; of the heap trace whose buffers have that color, ALLOC adds a
    buffer's size and FREE takes it away (these files have no SHARE_WITH events: asserted)."""
    assignment = proto.buffer_assignment
    sizes = {b.id: b.size for b in assignment.logical_buffers}
    colors = {b.id: b.color for b in assignment.logical_buffers}
    always = sum(
        a.size
        for a in assignment.buffer_allocations
        if a.color == color and not a.is_thread_local and (a.is_entry_computation_parameter or a.maybe_live_out or a.is_constant)
    )
    traces = [t for t in assignment.heap_simulator_traces if t.events and colors[t.events[0].buffer_id] == color]
    assert len(traces) <= 1, "one heap trace per memory space in these files"
    peak, at, live_then = always, None, []
    live: dict[int, int] = {}
    for i, event in enumerate(traces[0].events if traces else []):
        assert event.kind in (ALLOC, FREE)
        if event.kind == ALLOC:
            live[event.buffer_id] = sizes[event.buffer_id]
        else:
            del live[event.buffer_id]
        if always + sum(live.values()) > peak:
            peak, at, live_then = always + sum(live.values()), i, sorted(live.values(), reverse=True)
    return peak, at, live_then


def xprof_memory_viewer(path: Path) -> dict[str, dict]:
    """Program label -> XProf's memory_viewer JSON for it (memory space 0). XProf first
    writes each program's ``<label>.hlo_proto.pb`` beside its input when listing the tools,
    then reads that file per program; all of it in a temp folder."""
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GLOG_minloglevel", "3")
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        raw_to_tool_data.xspace_to_tool_names([str(copy)])
        for proto in sorted(Path(folder).glob("*.hlo_proto.pb")):
            label = proto.name.removesuffix(".hlo_proto.pb")
            data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], "memory_viewer", {"use_saved_result": False, "module_name": label})
            out[label] = json.loads(data)
    return out
