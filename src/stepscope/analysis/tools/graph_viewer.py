"""graph_viewer: the HLO graph of a compiled program around one op, n hops out, each node
with the time the op took (XProf's graph viewer, with op time on the nodes).

The graph is ``hlo_graph``'s (read its docstring: one computation, fusions as one node with
their fused instruction count). Options:

    program   the program: its label ``name(id)``, program id or module name (default: the
              program with the most HLO op self time; the first program when none ran).
    op        an HLO instruction name of that program (default: its op with the most self
              time; the entry computation's root when none ran).
    hops      how far out from the op: operands and users are one hop (default 2).

Per node, the times are hlo_stats' row for the op in that program (``hlo_ops``: summed over
every device that ran it): occurrences, total and self time, and ``self_time_percent``, the
op's share of the program's HLO op self time. They are null for an instruction that never
ran as an op of its own (parameters, tuples, constants, and the instructions inside a
fusion, which run as the fusion). ``flops``/``bytes_accessed`` are XLA's cost analysis
summed likewise, null where the source records none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TypedDict

from stepscope.analysis import applicability
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import Option, ToolResult, tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.analysis.xla import hlo_graph
from stepscope.analysis.xla.hlo_ops import ALL, OpGroups, group
from stepscope.analysis.xla.hlo_programs import Program, hlo_programs
from stepscope.analysis.xla.hlo_shapes import shape_text
from stepscope.analysis.xla.xla_selection import known
from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2

TOOL = "graph_viewer"
DEFAULT_HOPS = 2
LISTED = 5  # valid names a bad option's error lists

NODE_COLUMNS = (
    Column("name", "HLO op", "string"),
    Column("opcode", "Opcode", "string"),
    Column("distance", "Hops from the op"),
    Column("shape", "Shape", "string"),
    Column("self_time_percent", "Self time % of program"),
    Column("total_self_time_us", "Total self time (us)"),
    Column("total_time_us", "Total time (us)"),
    Column("occurrences", "Occurrences"),
    Column("fused_instructions", "Fused instructions"),
    Column("flops", "FLOPs"),
    Column("bytes_accessed", "Bytes accessed"),
    Column("category", "Category", "string"),
    Column("op_name", "Framework op", "string"),
)


class GraphNode(TypedDict):
    """One HLO instruction of the neighbourhood, with its op time where it ran."""

    id: int  # the instruction's id in its module
    name: str
    opcode: str
    shape: str
    distance: int  # hops from the chosen op
    operands: int  # how many operands it has in all (some may lie outside the graph)
    users: int  # likewise, its users in the computation
    fused_instructions: int | None  # a fusion's fused computation's instruction count
    called_computations: list[str]
    op_name: str  # the framework op XLA's metadata names
    category: str | None  # hlo_stats' category; null when it never ran
    occurrences: int | None
    total_time_ps: int | None
    total_time_us: float | None
    total_self_time_ps: int | None
    total_self_time_us: float | None
    self_time_percent: float | None
    flops: float | None
    bytes_accessed: float | None


class GraphEdge(TypedDict):
    """An operand -> user edge: ``source`` is an operand of ``target`` (instruction names)."""

    source: str
    target: str


@dataclass
class GraphViewerResult(ToolResult):
    program: str = ""  # the label of the program shown; "" when the profile has none
    program_names: list[str] = field(default_factory=list)
    op: str = ""
    op_names: list[str] = field(default_factory=list)  # the program's ops that ran, most self time first
    hops: int = DEFAULT_HOPS
    computation: str = ""
    program_self_time_ps: int = 0
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)

    def tables(self) -> list[Table]:
        return [Table.of("nodes", NODE_COLUMNS, self.nodes)]

    def summary(self) -> list[str]:
        if not self.program:
            return ["No XLA programs with an HLO proto in this profile."]
        centre = next(node for node in self.nodes if node["distance"] == 0)
        share = f"{centre['self_time_percent']:.1f}% of the program's op time" if centre["self_time_percent"] is not None else "never ran as an op"
        return [
            f"{self.program}: {self.op} ({centre['opcode']}, {share}) in {self.computation}",
            f"{len(self.nodes)} instruction(s) and {len(self.edges)} edge(s) within {self.hops} hop(s)",
        ]


def _choose_program(programs: list[Program], groups: OpGroups, wanted: str) -> Program:
    if wanted:
        for key in ("label", "program_id", "name"):
            matches = [p for p in programs if getattr(p, key) == wanted]
            if matches:
                return matches[0]
        listed = ", ".join(p.label for p in programs[:LISTED])
        raise StepscopeError(f"{TOOL}: no program {wanted!r} (choose from {listed}{', ...' if len(programs) > LISTED else ''})")
    time = {p.label: int(groups.self_ps[_rows_of(groups, p)].sum()) for p in programs}
    return max(programs, key=lambda p: (time[p.label], -programs.index(p)))


def _rows_of(groups: OpGroups, program: Program) -> list[int]:
    """The op groups of the program: those whose program is its label, or (a source that
    names ops' programs by id alone) its program id."""
    return [i for i in range(len(groups)) if groups.program[i] == program.label or (program.program_id != "" and groups.program[i] == program.program_id)]


@dataclass
class _OpTime:
    """One op's sums in the program (hlo_stats' row; NaN FLOPs/bytes where none recorded)."""

    category: str
    occurrences: int = 0
    time_ps: int = 0
    self_ps: int = 0
    flops: float = math.nan
    bytes_accessed: float = math.nan


def _add(total: float, value: float) -> float:
    return total if not math.isfinite(value) else value if not math.isfinite(total) else total + value


def _op_times(groups: OpGroups, program: Program) -> tuple[dict[str, _OpTime], list[str], int]:
    """The program's ops by name (summed over categories, of which a name has one), their
    names most self time first, and the program's total self time."""
    times: dict[str, _OpTime] = {}
    for i in _rows_of(groups, program):
        entry = times.setdefault(groups.name[i], _OpTime(groups.category[i]))
        entry.occurrences += int(groups.occurrences[i])
        entry.time_ps += int(groups.time_ps[i])
        entry.self_ps += int(groups.self_ps[i])
        entry.flops = _add(entry.flops, float(groups.flops[i]))
        entry.bytes_accessed = _add(entry.bytes_accessed, float(groups.bytes_accessed[i]))
    ordered = sorted(times, key=lambda name: (-times[name].self_ps, name))
    return times, ordered, sum(entry.self_ps for entry in times.values())


def _default_op(program: Program, ordered: list[str]) -> str:
    module = program.proto.hlo_module
    for name in ordered:
        if hlo_graph.find_instruction(module, name) is not None:
            return name
    entry = next((c for c in module.computations if c.id == module.entry_computation_id or c.name == module.entry_computation_name), None)
    if entry is None or not entry.instructions:
        raise StepscopeError(f"{TOOL}: program {program.label!r} has no entry computation")
    return str(next((i.name for i in entry.instructions if i.id == entry.root_id), entry.instructions[-1].name))


def _node(
    instruction: hlo_pb2.HloInstructionProto,
    distance: int,
    users: int,
    computations: dict[int, hlo_pb2.HloComputationProto],
    entry: _OpTime | None,
    total_self: int,
) -> GraphNode:
    return GraphNode(
        id=int(instruction.id),
        name=instruction.name,
        opcode=instruction.opcode,
        shape=shape_text(instruction.shape),
        distance=distance,
        operands=len(instruction.operand_ids),
        users=users,
        fused_instructions=hlo_graph.fused_count(computations, instruction),
        called_computations=hlo_graph.called_names(computations, instruction),
        op_name=instruction.metadata.op_name,
        category=entry.category if entry else None,
        occurrences=entry.occurrences if entry else None,
        total_time_ps=entry.time_ps if entry else None,
        total_time_us=ps_to_us(entry.time_ps) if entry else None,
        total_self_time_ps=entry.self_ps if entry else None,
        total_self_time_us=ps_to_us(entry.self_ps) if entry else None,
        self_time_percent=percent(entry.self_ps, total_self) if entry else None,
        flops=known(entry.flops) if entry else None,
        bytes_accessed=known(entry.bytes_accessed) if entry else None,
    )


@tool(
    TOOL,
    title="Graph viewer",
    order=65,  # XProf's place: after roofline_model (64), before memory_viewer (67)
    description="What does an HLO op take from and feed into, and how long do its neighbours take?",
    options=(
        Option(
            "program",
            str,
            "",
            "the program: its label name(id), program id or module name (default: the most op time)",
            choices_from="program_names",
            resets=("op",),
        ),
        Option("op", str, "", "the HLO instruction at the centre (default: the program's op with the most self time)", choices_from="op_names"),
        Option("hops", int, DEFAULT_HOPS, "how many operand/user steps out from the op to show", minimum=0),
    ),
    applies=applicability.xla_modules,
)
def graph_viewer(stats: OpStats, program: str = "", op: str = "", hops: int = DEFAULT_HOPS) -> GraphViewerResult:
    programs = hlo_programs(stats.profile, TOOL)
    result = GraphViewerResult(hops=hops, program_names=[p.label for p in programs])
    if not programs:
        if program or op:
            raise StepscopeError(f"{TOOL}: no program {program or op!r} (this profile has no HLO protos)")
        return result
    xla = stats.xla_ops
    groups = group(xla, xla.select(ALL))
    shown = _choose_program(programs, groups, program)
    times, ordered, total_self = _op_times(groups, shown)
    module = shown.proto.hlo_module
    name = op or _default_op(shown, ordered)
    found = hlo_graph.find_instruction(module, name)
    if found is None:
        listed = ", ".join((ordered or [i.name for c in module.computations for i in c.instructions])[:LISTED])
        raise StepscopeError(f"{TOOL}: no op {name!r} in program {shown.label!r} (ops include {listed}, ...)")
    computation, centre = found
    graph = hlo_graph.neighbourhood(computation, centre, hops)
    computations = hlo_graph.computations_by_id(module)
    users: dict[int, int] = {}
    for instruction in computation.instructions:
        for operand in dict.fromkeys(instruction.operand_ids):
            users[operand] = users.get(operand, 0) + 1
    by_id = {i.id: i for i in computation.instructions}
    result.program, result.op, result.op_names, result.computation = shown.label, name, ordered, computation.name
    result.program_self_time_ps = total_self
    result.nodes = [_node(by_id[i], d, users.get(i, 0), computations, times.get(by_id[i].name), total_self) for i, d in graph.distance.items()]
    result.edges = [GraphEdge(source=by_id[a].name, target=by_id[b].name) for a, b in graph.edges]
    return result
