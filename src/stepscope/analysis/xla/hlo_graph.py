"""The HLO graph of one compiled program around one instruction: the instructions within
``hops`` steps of it (an operand or a user is one step) in its computation, and the
operand -> user edges among them. What graph_viewer draws; times are added there.

Only the instruction's own computation is walked. A fusion (or a while loop, a call) is
one node, as XProf draws a fusion before it is expanded: its called computations' names
are kept, and a fusion's node counts the instructions of its fused computation. A fused
instruction itself (inside a fusion computation) can be the centre too: then the walk is
inside that fusion computation.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from stepscope.protos import hlo_pb2

FUSION = "fusion"


@dataclass(frozen=True)
class Neighbourhood:
    computation: hlo_pb2.HloComputationProto
    centre: hlo_pb2.HloInstructionProto
    # instruction id -> hops from the centre, in the computation's instruction order
    distance: dict[int, int]
    edges: list[tuple[int, int]]  # (operand id, user id), each pair once, in user order


def find_instruction(module: hlo_pb2.HloModuleProto, name: str) -> tuple[hlo_pb2.HloComputationProto, hlo_pb2.HloInstructionProto] | None:
    """The computation holding the instruction named ``name`` (names are unique in a
    module), and the instruction; None when no instruction has that name."""
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.name == name:
                return computation, instruction
    return None


def neighbourhood(computation: hlo_pb2.HloComputationProto, centre: hlo_pb2.HloInstructionProto, hops: int) -> Neighbourhood:
    """Breadth-first from ``centre`` over operands and users, at most ``hops`` steps."""
    users: dict[int, list[int]] = {}
    for instruction in computation.instructions:
        for operand in instruction.operand_ids:
            users.setdefault(operand, []).append(instruction.id)
    known = {instruction.id for instruction in computation.instructions}
    reached = {centre.id: 0}
    operands = {instruction.id: list(instruction.operand_ids) for instruction in computation.instructions}
    queue = deque([centre.id])
    while queue:
        at = queue.popleft()
        if reached[at] == hops:
            continue
        for other in [*operands.get(at, []), *users.get(at, [])]:
            if other in known and other not in reached:
                reached[other] = reached[at] + 1
                queue.append(other)
    distance = {i.id: reached[i.id] for i in computation.instructions if i.id in reached}
    edges: list[tuple[int, int]] = []
    for instruction in computation.instructions:
        if instruction.id not in distance:
            continue
        for operand in dict.fromkeys(instruction.operand_ids):
            if operand in distance:
                edges.append((operand, instruction.id))
    return Neighbourhood(computation, centre, distance, edges)


def computations_by_id(module: hlo_pb2.HloModuleProto) -> dict[int, hlo_pb2.HloComputationProto]:
    return {c.id: c for c in module.computations}


def fused_count(computations: dict[int, hlo_pb2.HloComputationProto], instruction: hlo_pb2.HloInstructionProto) -> int | None:
    """How many instructions a fusion's fused computation holds; None for other opcodes."""
    if instruction.opcode != FUSION:
        return None
    return sum(len(computations[c].instructions) for c in instruction.called_computation_ids if c in computations)


def called_names(computations: dict[int, hlo_pb2.HloComputationProto], instruction: hlo_pb2.HloInstructionProto) -> list[str]:
    return [computations[c].name if c in computations else str(c) for c in instruction.called_computation_ids]
