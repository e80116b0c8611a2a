"""memory_viewer: a compiled XLA program's memory over its HLO sequence, its peak, and the
largest buffers live at the peak (XProf's memory viewer), from the ``HloProto`` each
program carries on the profile's metadata plane (``hlo_programs``).

What is counted and when is ``heap_simulation``'s docstring. The result:

    programs   every program of the profile with its peak in the chosen memory space,
               largest peak first; ``program`` is the one shown (option ``program``: its
               label ``name(id)``, its program id or its module name; default the largest).
    points     after each heap-simulator event of the program (``step``, its index): the
               instruction that defines the event's buffer (XLA's trace names the
               producer, for a FREE too), the entry computation's HLO schedule position
               the simulation has reached (``sequence_index``, see ``_points``; null
               before any entry instruction or without a schedule), and the bytes in use.
               The x axis is program order, not time: XLA simulated this heap at compile
               time; nothing here was measured.
    buffers    the logical buffers live at the peak, largest first (at most ``top``): the
               instruction that defines each (``name{shape index}`` for a tuple element),
               its opcode, shape, dtype, size (padded, as allocated) and unpadded size,
               and what it is (Parameter, Output, Constant, Temporary).

MiB are 2**20 bytes, as XProf shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from stepscope.analysis import applicability
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import Option, ToolResult, tool
from stepscope.analysis.tables import Column, Table
from stepscope.analysis.xla import heap_simulation as heaps
from stepscope.analysis.xla.hlo_programs import Program, hlo_programs
from stepscope.analysis.xla.hlo_shapes import ShapeTooLarge, dtype, shape_text, subshape, unpadded_bytes
from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2

TOOL = "memory_viewer"
MIB = 2**20

PROGRAM_COLUMNS = (
    Column("program", "Program", "string"),
    Column("peak_mib", "Peak (MiB)"),
    Column("peak_step", "Peak at event"),
    Column("peak_instruction", "Peak at instruction", "string"),
    Column("indefinite_mib", "Parameters, outputs, constants (MiB)"),
    Column("temporary_peak_mib", "Temporaries at peak (MiB)"),
    Column("heap_events", "Heap events"),
    Column("peak_bytes", "Peak (bytes)"),
    Column("program_id", "Program id", "string"),
)

POINT_COLUMNS = (
    Column("step", "Event"),
    Column("sequence_index", "HLO sequence index"),
    Column("instruction", "Instruction", "string"),
    Column("kind", "Event kind", "string"),
    Column("mib", "In use (MiB)"),
    Column("bytes", "In use (bytes)"),
    Column("computation", "Computation", "string"),
)

BUFFER_COLUMNS = (
    Column("rank", "Rank"),
    Column("instruction", "Defined by", "string"),
    Column("opcode", "Opcode", "string"),
    Column("shape", "Shape", "string"),
    Column("dtype", "Dtype", "string"),
    Column("size_mib", "Size (MiB)"),
    Column("unpadded_mib", "Unpadded (MiB)"),
    Column("category", "Kind", "string"),
    Column("op_name", "Framework op", "string"),
    Column("size_bytes", "Size (bytes)"),
    Column("unpadded_bytes", "Unpadded (bytes)"),
    Column("buffer_id", "Logical buffer"),
    Column("allocation", "Allocation"),
)


class ProgramRow(TypedDict):
    program: str
    name: str
    program_id: str
    peak_bytes: int
    peak_mib: float
    peak_step: int | None
    peak_instruction: str
    indefinite_bytes: int
    indefinite_mib: float
    untraced_bytes: int
    temporary_peak_mib: float
    heap_events: int


class PointRow(TypedDict):
    step: int
    sequence_index: int | None
    instruction: str
    computation: str
    kind: str  # "alloc" | "free" | "share"
    buffer_id: int
    bytes: int
    mib: float


class BufferRow(TypedDict):
    rank: int
    buffer_id: int
    instruction: str
    opcode: str
    shape: str
    dtype: str
    size_bytes: int
    size_mib: float
    unpadded_bytes: int | None
    unpadded_mib: float | None
    category: str
    allocation: int
    op_name: str
    source: str


@dataclass
class MemoryViewerResult(ToolResult):
    program: str = ""  # the label of the program shown; "" when the profile has none
    memory_space: int = 0
    program_names: list[str] = field(default_factory=list)
    peak_bytes: int = 0
    peak_mib: float = 0.0
    peak_step: int | None = None
    peak_instruction: str = ""
    indefinite_bytes: int = 0
    untraced_bytes: int = 0
    live_buffers_at_peak: int = 0
    programs: list[ProgramRow] = field(default_factory=list)
    points: list[PointRow] = field(default_factory=list)
    buffers: list[BufferRow] = field(default_factory=list)

    def tables(self) -> list[Table]:
        return [
            Table.of("programs", PROGRAM_COLUMNS, self.programs),
            Table.of("buffers_at_peak", BUFFER_COLUMNS, self.buffers),
            Table.of("memory_over_sequence", POINT_COLUMNS, self.points),
        ]

    def summary(self) -> list[str]:
        if not self.programs:
            return ["No XLA programs with an HLO proto in this profile."]
        where = f"memory space {self.memory_space}"
        at = (
            f" at heap event {self.peak_step} ({self.peak_instruction})"
            if self.peak_step is not None
            else " (no heap trace: parameters, outputs and constants only)"
        )
        lines = [f"{self.program}: peak {self.peak_mib:,.3f} MiB in {where}{at}; {len(self.programs)} program(s)"]
        if self.buffers:
            top = self.buffers[0]
            lines.append(f"Largest buffer at the peak: {top['instruction']} {top['shape']} ({top['size_mib']:,.3f} MiB, {top['category']})")
        return lines


def _mib(value: int) -> float:
    return value / MIB


def _program_row(program: Program, heap: heaps.Heap) -> ProgramRow:
    peak_instruction = heap.points[heap.peak_step].instruction if heap.peak_step is not None else ""
    return ProgramRow(
        program=program.label,
        name=program.name,
        program_id=program.program_id,
        peak_bytes=heap.peak_bytes,
        peak_mib=_mib(heap.peak_bytes),
        peak_step=heap.peak_step,
        peak_instruction=peak_instruction,
        indefinite_bytes=heap.indefinite_bytes,
        indefinite_mib=_mib(heap.indefinite_bytes),
        untraced_bytes=heap.untraced_bytes,
        temporary_peak_mib=_mib(heap.peak_bytes - heap.base_bytes),
        heap_events=len(heap.points),
    )


def _points(module: hlo_pb2.HloModuleProto, heap: heaps.Heap) -> list[PointRow]:
    """The heap's points, each with the entry computation's schedule position reached.

    A heap event names the instruction that *defines* its buffer (a FREE names the buffer's
    producer, not the instruction after which it dies), and the events come in program
    order: so the position reached is the furthest schedule position of the entry
    computation's instructions named so far. Events of called computations (a while body)
    happen inside the entry's current instruction and keep its position.
    """
    entry = next((c for c in module.computations if c.id == module.entry_computation_id or c.name == module.entry_computation_name), None)
    position: dict[str, int] = {}
    if entry is not None and entry.id in module.schedule.sequences:
        names = {ins.id: ins.name for ins in entry.instructions}
        for i, instruction_id in enumerate(module.schedule.sequences[entry.id].instruction_ids):
            position.setdefault(names.get(instruction_id, ""), i)
    reached: int | None = None
    rows: list[PointRow] = []
    for p in heap.points:
        at = position.get(p.instruction) if entry is not None and p.computation == entry.name else None
        if at is not None:
            reached = at if reached is None else max(reached, at)
        rows.append(
            PointRow(
                step=p.step,
                sequence_index=reached,
                instruction=p.instruction,
                computation=p.computation,
                kind=p.kind,
                buffer_id=p.buffer_id,
                bytes=p.bytes,
                mib=_mib(p.bytes),
            )
        )
    return rows


def _buffers(program: Program, heap: heaps.Heap, top: int) -> list[BufferRow]:
    proto = program.proto
    assignment = proto.buffer_assignment
    logical = {b.id: b for b in assignment.logical_buffers}
    allocation_of = {a.logical_buffer_id: allocation for allocation in assignment.buffer_allocations for a in allocation.assigned}
    instructions = {ins.id: ins for c in proto.hlo_module.computations for ins in c.instructions}
    # The ``top`` largest, program order among equals (a stable sort), before their rows
    # are made: a heap can hold 100,000s of buffers at its peak.
    listed = sorted([*heap.indefinite_buffers, *heap.live_at_peak], key=lambda b: -logical[b].size)[:top]
    rows: list[BufferRow] = []
    for rank, buffer_id in enumerate(listed, start=1):
        buffer = logical[buffer_id]
        instruction = instructions.get(buffer.defined_at.instruction_id)
        index = list(buffer.defined_at.shape_index)
        name = instruction.name if instruction is not None else buffer.defined_at.instruction_name
        shape = subshape(instruction.shape, index) if instruction is not None else hlo_pb2.ShapeProto()
        try:
            unpadded = unpadded_bytes(shape) if instruction is not None else None
        except ShapeTooLarge as error:
            raise StepscopeError(f"{program.where}: instruction {name!r}: {error}; the HLO proto is damaged") from None
        allocation = allocation_of.get(buffer_id)  # None: a traced buffer no allocation holds (a damaged proto)
        metadata = instruction.metadata if instruction is not None else hlo_pb2.OpMetadata()
        rows.append(
            BufferRow(
                rank=rank,
                buffer_id=buffer_id,
                instruction=name + ("{" + ",".join(map(str, index)) + "}" if index else ""),
                opcode=instruction.opcode if instruction is not None else "",
                shape=shape_text(shape) if instruction is not None else "",
                dtype=dtype(shape) if instruction is not None else "",
                size_bytes=buffer.size,
                size_mib=_mib(buffer.size),
                unpadded_bytes=unpadded,
                unpadded_mib=_mib(unpadded) if unpadded is not None else None,
                category=heaps.category(allocation) if allocation is not None else "",
                allocation=allocation.index if allocation is not None else -1,
                op_name=metadata.op_name,
                source=f"{metadata.source_file}:{metadata.source_line}" if metadata.source_file else "",
            )
        )
    return rows


def _chosen(programs: list[Program], peaks: list[heaps.Heap], wanted: str) -> int:
    if not wanted:
        return max(range(len(programs)), key=lambda i: (peaks[i].peak_bytes, -i))
    for key in ("label", "program_id", "name"):
        matches = [i for i, p in enumerate(programs) if getattr(p, key) == wanted]
        if matches:
            return matches[0]
    choices = ", ".join(p.label for p in programs)
    raise StepscopeError(f"{TOOL}: no program {wanted!r} (choose from {choices})")


@tool(
    TOOL,
    title="Memory viewer",
    order=67,  # after roofline_model (64), leaving graph_viewer its XProf place before it
    description="How much memory does each compiled XLA program need at its peak, and which buffers make up the peak?",
    options=(
        Option(
            "program", str, "", "the program to show: its label name(id), program id or module name (default: the largest peak)", choices_from="program_names"
        ),
        Option("memory_space", int, 0, "the memory space (XLA's buffer color): 0 is the device's main memory (HBM)", minimum=0),
        Option("top", int, 100, "how many of the largest buffers live at the peak to list", minimum=1),
    ),
    applies=applicability.xla_modules,
)
def memory_viewer(stats: OpStats, program: str = "", memory_space: int = 0, top: int = 100) -> MemoryViewerResult:
    programs = hlo_programs(stats.profile, TOOL)
    result = MemoryViewerResult(memory_space=memory_space, program_names=[p.label for p in programs])
    if not programs:
        if program:
            raise StepscopeError(f"{TOOL}: no program {program!r} (this profile has no HLO protos)")
        return result
    peaks = [heaps.replay(p.proto, memory_space, p.where) for p in programs]
    chosen = _chosen(programs, peaks, program)
    heap, shown = peaks[chosen], programs[chosen]
    order = sorted(range(len(programs)), key=lambda i: (-peaks[i].peak_bytes, programs[i].label))
    row = _program_row(shown, heap)
    result.program = shown.label
    result.peak_bytes, result.peak_mib, result.peak_step = heap.peak_bytes, row["peak_mib"], heap.peak_step
    result.peak_instruction = row["peak_instruction"]
    result.indefinite_bytes, result.untraced_bytes = heap.indefinite_bytes, heap.untraced_bytes
    result.live_buffers_at_peak = len(heap.indefinite_buffers) + len(heap.live_at_peak)
    result.programs = [_program_row(programs[i], peaks[i]) for i in order]
    result.points = _points(shown.proto.hlo_module, heap)
    result.buffers = _buffers(shown, heap, top)
    return result
