"""A program's memory in use over its HLO sequence, from XLA's buffer assignment.

XLA's compiler assigns every value an instruction defines (a *logical buffer*) to a
*buffer allocation*, and simulates the heap of temporaries in program order: its
``HeapSimulatorTrace`` lists, per scheduled instruction, which buffers are allocated,
freed, or reuse another's memory (``SHARE_WITH``, an in-place update). Replaying that
trace gives the bytes of temporaries live after each event. Allocations outside the heap
live for the whole program ("indefinite": entry parameters, constants, outputs that may
be live out) and are added to every point. Definitions, for one memory space (the
``color`` of allocations and buffers; 0 is the device's main memory, e.g. HBM):

    indefinite     allocations of the color that are an entry parameter, a constant, or
                   maybe live out; counted at their allocation's size.
    traced heap    the heap trace of the color's temporary allocation: the trace whose
                   first event's buffer lies in a non-indefinite allocation of the color,
                   else the trace with the most events on buffers of the color (a trace's
                   own ``buffer_allocation_index`` is not reliable: JAX CPU writes a
                   thread-local allocation's index on a trace of another allocation).
    untraced       temporary allocations of the color with no trace: counted whole at
                   every point (their lifetimes are unknown; XLA CPU programs without a
                   heap trace have only indefinite allocations in practice).
    thread-local   per-thread scratch of called computations: not program memory, left out.
    point i        after heap event i: the live traced bytes + indefinite + untraced.
    peak           the largest point (the first, on ties); before any event the memory is
                   indefinite + untraced, which is the peak of a program with no trace.
    live at peak   the traced buffers live after the peak event, plus each indefinite
                   allocation's largest logical buffer.

A buffer freed while others share its memory stays live until the last sharer is freed:
reference counts on the canonical (first) buffer, as XLA's heap simulator means them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2

Event = hlo_pb2.HeapSimulatorTrace.Event


def is_indefinite(allocation: hlo_pb2.BufferAllocationProto) -> bool:
    return bool(allocation.is_entry_computation_parameter or allocation.is_constant or allocation.maybe_live_out)


def category(allocation: hlo_pb2.BufferAllocationProto) -> str:
    """What the allocation holds, the first that applies (XProf's names)."""
    if allocation.is_entry_computation_parameter:
        return "Parameter"
    if allocation.maybe_live_out:
        return "Output"
    if allocation.is_thread_local:
        return "Thread-local"
    if allocation.is_constant:
        return "Constant"
    return "Temporary"


@dataclass(frozen=True)
class HeapPoint:
    step: int  # the heap event's index
    instruction: str  # the instruction the event belongs to
    computation: str
    kind: str  # "alloc" | "free" | "share"
    buffer_id: int
    bytes: int  # in use after the event


@dataclass
class Heap:
    """The replayed heap of one program and memory space (see the module docstring)."""

    color: int
    trace_index: int | None = None  # into the buffer assignment's heap_simulator_traces
    indefinite_bytes: int = 0
    untraced_bytes: int = 0
    points: list[HeapPoint] = field(default_factory=list)
    peak_bytes: int = 0
    peak_step: int | None = None  # None: the peak is before any event (no trace)
    live_at_peak: list[int] = field(default_factory=list)  # traced buffers, in allocation order
    indefinite_buffers: list[int] = field(default_factory=list)  # the largest of each allocation

    @property
    def base_bytes(self) -> int:
        return self.indefinite_bytes + self.untraced_bytes


def _trace_index(
    assignment: hlo_pb2.BufferAssignmentProto, color: int, allocation_of: dict[int, hlo_pb2.BufferAllocationProto], size_color: dict[int, int]
) -> int | None:
    for i, trace in enumerate(assignment.heap_simulator_traces):
        if trace.events:
            owner = allocation_of.get(trace.events[0].buffer_id)
            if owner is not None and owner.color == color and not is_indefinite(owner):
                return i
    best, best_count = None, 0
    for i, trace in enumerate(assignment.heap_simulator_traces):
        count = sum(1 for event in trace.events if size_color.get(event.buffer_id) == color)
        if count > best_count:
            best, best_count = i, count
    return best


def replay(proto: hlo_pb2.HloProto, color: int, where: str) -> Heap:
    """The heap of ``proto``'s program in memory space ``color``; ``where`` names the program
    in errors (a trace that frees a buffer twice or refers to no buffer is damaged)."""
    assignment = proto.buffer_assignment
    sizes = {buffer.id: buffer.size for buffer in assignment.logical_buffers}
    colors = {buffer.id: buffer.color for buffer in assignment.logical_buffers}
    allocation_of = {assigned.logical_buffer_id: allocation for allocation in assignment.buffer_allocations for assigned in allocation.assigned}
    heap = Heap(color)
    heap.trace_index = _trace_index(assignment, color, allocation_of, colors)
    traced = assignment.heap_simulator_traces[heap.trace_index] if heap.trace_index is not None else None
    traced_allocations = {id(allocation_of[e.buffer_id]) for e in traced.events if e.buffer_id in allocation_of} if traced else set()
    for allocation in assignment.buffer_allocations:
        if allocation.color != color or allocation.is_thread_local:
            continue
        if is_indefinite(allocation):
            heap.indefinite_bytes += allocation.size
            ids = [a.logical_buffer_id for a in allocation.assigned if a.logical_buffer_id in sizes]
            if ids:
                heap.indefinite_buffers.append(max(ids, key=lambda b: (sizes[b], -ids.index(b))))
        elif id(allocation) not in traced_allocations:
            heap.untraced_bytes += allocation.size
    heap.peak_bytes = heap.base_bytes
    if traced is None:
        return heap
    _walk(heap, traced, sizes, where)
    return heap


def _walk(heap: Heap, trace: hlo_pb2.HeapSimulatorTrace, sizes: dict[int, int], where: str) -> None:
    canonical: dict[int, int] = {}  # a sharing buffer -> the buffer whose memory it uses
    refs: dict[int, int] = {}  # canonical buffer -> live references
    live: dict[int, None] = {}  # live canonical buffers, in allocation order
    in_use = 0

    def root(buffer: int) -> int:
        while buffer in canonical:
            buffer = canonical[buffer]
        return buffer

    for step, event in enumerate(trace.events):
        buffer = event.buffer_id
        if buffer not in sizes:
            raise StepscopeError(f"{where}: heap event {step} refers to logical buffer {buffer}, which the buffer assignment lacks")
        if event.kind == Event.ALLOC:
            refs[buffer] = refs.get(buffer, 0) + 1
            live[buffer] = None
            in_use += sizes[buffer]
            kind = "alloc"
        elif event.kind == Event.FREE:
            owner = root(buffer)
            refs[owner] = refs.get(owner, 0) - 1
            if refs[owner] < 0:
                raise StepscopeError(f"{where}: heap event {step} frees logical buffer {buffer} more often than it was allocated")
            if refs[owner] == 0:
                live.pop(owner, None)
                in_use -= sizes[owner]
            kind = "free"
        else:
            owner = root(event.share_with_canonical_id)
            if owner not in sizes:
                raise StepscopeError(f"{where}: heap event {step} shares logical buffer {owner}, which the buffer assignment lacks")
            canonical[buffer] = owner
            refs[owner] = refs.get(owner, 0) + 1
            if refs[owner] == 1:  # shares memory already freed: it is in use again
                live[owner] = None
                in_use += sizes[owner]
            kind = "share"
        total = in_use + heap.base_bytes
        heap.points.append(HeapPoint(step, event.instruction_name, event.computation_name, kind, buffer, total))
        if total > heap.peak_bytes:
            heap.peak_bytes, heap.peak_step, heap.live_at_peak = total, step, list(live)
