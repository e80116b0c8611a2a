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

A damaged or forged proto is a one-line error naming the program, never a loop or a
traceback: an event on a buffer the assignment lacks, a FREE without its ALLOC, a
SHARE_WITH whose canonical buffer is the sharing buffer itself or already uses the sharing
buffer's memory (a cycle: XLA shares a new buffer with an older one, never the reverse;
XProf's converter loops forever on one), a negative size, and a peak past int64 bytes.
The replay is linear in the events (copying the live buffers at each new peak
made it quadratic).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2
from stepscope.trace.stat_types import INT64_MAX  # XLA's sizes are int64: more is a damaged proto

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
    negative = next((b for b in assignment.logical_buffers if b.size < 0), None)
    if negative is not None:
        raise StepscopeError(f"{where}: logical buffer {negative.id} has a negative size ({negative.size} bytes)")
    colors = {buffer.id: buffer.color for buffer in assignment.logical_buffers}
    allocation_of = {assigned.logical_buffer_id: allocation for allocation in assignment.buffer_allocations for assigned in allocation.assigned}
    heap = Heap(color)
    heap.trace_index = _trace_index(assignment, color, allocation_of, colors)
    traced = assignment.heap_simulator_traces[heap.trace_index] if heap.trace_index is not None else None
    traced_allocations = {id(allocation_of[e.buffer_id]) for e in traced.events if e.buffer_id in allocation_of} if traced else set()
    for allocation in assignment.buffer_allocations:
        if allocation.color != color or allocation.is_thread_local:
            continue
        if allocation.size < 0:
            raise StepscopeError(f"{where}: buffer allocation {allocation.index} has a negative size ({allocation.size} bytes)")
        if is_indefinite(allocation):
            heap.indefinite_bytes += allocation.size
            ids = [a.logical_buffer_id for a in allocation.assigned if a.logical_buffer_id in sizes]
            if ids:  # the largest, the first of equals
                heap.indefinite_buffers.append(ids[max(range(len(ids)), key=lambda i: (sizes[ids[i]], -i))])
        elif id(allocation) not in traced_allocations:
            heap.untraced_bytes += allocation.size
    heap.peak_bytes = heap.base_bytes
    if traced is not None:
        _walk(heap, traced, sizes, where)
    if heap.peak_bytes > INT64_MAX:
        raise StepscopeError(f"{where}: its memory in use reaches {heap.peak_bytes:,} bytes, more than {INT64_MAX:,} (XLA's sizes are int64)")
    return heap


class _Replay:
    """The heap's state as events are applied: reference counts on canonical buffers, the
    live canonical buffers in allocation order, and the bytes they hold."""

    def __init__(self, sizes: dict[int, int], where: str) -> None:
        self.sizes, self.where = sizes, where
        self.canonical: dict[int, int] = {}  # a sharing buffer -> the buffer whose memory it uses
        self.refs: dict[int, int] = {}  # canonical buffer -> live references
        self.live: dict[int, None] = {}  # live canonical buffers, in allocation order
        self.in_use = 0

    def root(self, buffer: int) -> int:
        """The canonical buffer whose memory ``buffer`` uses; the chain is shortened as it
        is walked (path halving), so a long chain of shares costs its length once."""
        canonical = self.canonical
        while buffer in canonical:
            parent = canonical[buffer]
            grandparent = canonical.get(parent)
            if grandparent is not None:
                canonical[buffer] = grandparent
            buffer = parent
        return buffer

    def apply(self, step: int, event: hlo_pb2.HeapSimulatorTrace.Event) -> str:
        """Applies heap event ``step``; returns its kind ("alloc", "free", "share")."""
        buffer, sizes, refs = event.buffer_id, self.sizes, self.refs
        if buffer not in sizes:
            raise StepscopeError(f"{self.where}: heap event {step} refers to logical buffer {buffer}, which the buffer assignment lacks")
        if event.kind == Event.ALLOC:
            refs[buffer] = refs.get(buffer, 0) + 1
            self.live[buffer] = None
            self.in_use += sizes[buffer]
            return "alloc"
        if event.kind == Event.FREE:
            owner = self.root(buffer)
            refs[owner] = refs.get(owner, 0) - 1
            if refs[owner] < 0:
                raise StepscopeError(f"{self.where}: heap event {step} frees logical buffer {buffer} more often than it was allocated")
            if refs[owner] == 0:
                self.live.pop(owner, None)
                self.in_use -= sizes[owner]
            return "free"
        owner = self.root(event.share_with_canonical_id)
        if owner not in sizes:
            raise StepscopeError(f"{self.where}: heap event {step} shares logical buffer {owner}, which the buffer assignment lacks")
        if owner == buffer:  # XLA shares a new buffer with an earlier one, never with itself
            shared = event.share_with_canonical_id
            whose = "itself" if shared == buffer else f"logical buffer {shared}, which already uses its memory"
            raise StepscopeError(f"{self.where}: heap event {step} shares logical buffer {buffer} with {whose} (a cycle)")
        self.canonical[buffer] = owner
        refs[owner] = refs.get(owner, 0) + 1
        if refs[owner] == 1:  # shares memory already freed: it is in use again
            self.live[owner] = None
            self.in_use += sizes[owner]
        return "share"


def _walk(heap: Heap, trace: hlo_pb2.HeapSimulatorTrace, sizes: dict[int, int], where: str) -> None:
    """The points and the peak in one pass; the buffers live at the peak by a second pass up
    to it (copying the live set at every new peak cost O(events x live buffers): the report
    of 100,000 allocations took 103 s)."""
    state = _Replay(sizes, where)
    base, peak, peak_step = heap.base_bytes, heap.peak_bytes, None
    points = heap.points
    for step, event in enumerate(trace.events):
        kind = state.apply(step, event)
        total = state.in_use + base
        points.append(HeapPoint(step, event.instruction_name, event.computation_name, kind, event.buffer_id, total))
        if total > peak:
            peak, peak_step = total, step
    heap.peak_bytes, heap.peak_step = peak, peak_step
    if peak_step is not None:
        again = _Replay(sizes, where)
        for step, event in zip(range(peak_step + 1), trace.events):
            again.apply(step, event)
        heap.live_at_peak = list(again.live)
