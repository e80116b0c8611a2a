"""Hostile XLA programs: profiles whose ``/host:metadata`` plane carries one ``HloProto``
that costs the XLA tools (memory_viewer, graph_viewer) more than it should.

- ``self_share`` / ``share_cycle``: a heap trace whose SHARE_WITH names the buffer itself,
  or two buffers that share each other's memory (before the fix: an endless loop);
- ``allocations``: ``count`` buffers allocated one after the other and never freed (every
  event a new peak; before the fix O(count^2): 100,000 took 91 s);
- ``huge_shape``: a live buffer defined by an ``f32[2^62 x 20]`` (a size past int64).

Each is written as an XSpace of a ``/host:CPU`` plane with one event (so that the file is a
profile) and the metadata plane, with stepscope's generated protobuf classes.
"""

from __future__ import annotations

from pathlib import Path

from stepscope.protos import hlo_pb2, xplane_pb2
from stepscope.trace import names

Event = hlo_pb2.HeapSimulatorTrace.Event
LABEL = "jit_hostile(1)"  # the program's label on the metadata plane: <module>(<program id>)
BUFFER_BYTES = 1_024  # every logical buffer's size


def write_profile(path: Path, proto: hlo_pb2.HloProto | bytes) -> Path:
    """An XSpace holding ``proto`` (or bytes that may not parse as one) as the program ``LABEL``."""
    space = xplane_pb2.XSpace()
    host = space.planes.add(id=1, name=names.HOST_PLANE)
    host.event_metadata[1].CopyFrom(xplane_pb2.XEventMetadata(id=1, name="op"))
    host.lines.add(id=1, name="main", timestamp_ns=1_000).events.add(metadata_id=1, offset_ps=0, duration_ps=1_000)
    metadata = space.planes.add(id=2, name=names.METADATA_PLANE)
    metadata.stat_metadata[1].CopyFrom(xplane_pb2.XStatMetadata(id=1, name=names.HLO_PROTO))
    entry = metadata.event_metadata[1]
    entry.id, entry.name = 1, LABEL
    entry.stats.add(metadata_id=1, bytes_value=proto if isinstance(proto, bytes) else proto.SerializeToString())
    path = Path(path)
    path.write_bytes(space.SerializeToString())
    return path


def program(buffers: int, events: list[tuple[int, int, int]], dimensions: tuple[int, ...] = (256,)) -> hlo_pb2.HloProto:
    """A program of ``buffers`` instructions ``op1..opN`` (f32 of ``dimensions``), each
    defining logical buffer i of ``BUFFER_BYTES``, all in one temporary allocation, and a
    heap trace of ``(kind, buffer, share_with)`` events."""
    proto = hlo_pb2.HloProto()
    module = proto.hlo_module
    module.name, module.entry_computation_id, module.entry_computation_name = "jit_hostile", 1, "main"
    entry = module.computations.add(name="main", id=1)
    assignment = proto.buffer_assignment
    allocation = assignment.buffer_allocations.add(index=0, size=buffers * BUFFER_BYTES)
    for i in range(1, buffers + 1):
        instruction = entry.instructions.add(name=f"op{i}", opcode="add", id=i)
        instruction.shape.element_type = hlo_pb2.F32
        instruction.shape.dimensions.extend(dimensions)
        if i > 1:
            instruction.operand_ids.append(i - 1)
        assignment.logical_buffers.add(id=i, size=BUFFER_BYTES).defined_at.instruction_id = i
        allocation.assigned.add(logical_buffer_id=i, size=BUFFER_BYTES)
    entry.root_id = buffers
    trace = assignment.heap_simulator_traces.add()
    for kind, buffer, share in events:
        trace.events.add(kind=kind, buffer_id=buffer, share_with_canonical_id=share, computation_name="main", instruction_name=f"op{buffer}")
    return proto


def self_share(path: Path) -> Path:
    return write_profile(path, program(1, [(Event.ALLOC, 1, 0), (Event.SHARE_WITH, 1, 1), (Event.FREE, 1, 0)]))


def share_cycle(path: Path) -> Path:
    """Buffer 2 uses buffer 1's memory, then buffer 1 claims to use buffer 2's."""
    return write_profile(path, program(2, [(Event.ALLOC, 1, 0), (Event.SHARE_WITH, 2, 1), (Event.SHARE_WITH, 1, 2), (Event.FREE, 1, 0)]))


def allocations(path: Path, count: int) -> Path:
    return write_profile(path, program(count, [(Event.ALLOC, i, 0) for i in range(1, count + 1)]))


HUGE_DIMENSIONS = (2**62,) * 20


def huge_shape(path: Path) -> Path:
    """One buffer, live at the peak, defined by an ``f32[2^62 x 20]``: 2^1242 bytes."""
    return write_profile(path, program(1, [(Event.ALLOC, 1, 0)], HUGE_DIMENSIONS))
