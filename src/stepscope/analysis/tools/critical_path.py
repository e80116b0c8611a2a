"""The ``critical_path`` tool: for every step, the chain of work and waits that set its
length, its time by kind, and what a change would buy (docs/tools/critical_path.md).

The graph is ``dependency_graph``'s, the path and the re-scheduling ``schedule``'s, the
what-ifs ``what_if``'s. Each what-if changes durations (never dependencies) and
re-schedules the whole graph; its ``predicted_step_ps`` is the mean over steps of the
predicted time between each step's boundary nodes. For the page: ``steps[i].segments``
are the path's pieces in profile time (plane and line indexes as the trace viewer's),
latest first, as columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np

from stepscope.analysis.opstats import OpStats
from stepscope.analysis.paths.dependency_graph import Graph, NodeNames
from stepscope.analysis.paths.schedule import Segments as PathPieces
from stepscope.analysis.paths.schedule import critical_paths
from stepscope.analysis.paths.what_if import KINDS, changes, predicted_steps
from stepscope.analysis.registry import Option, OptionError, ToolResult, tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us

TOOL = "critical_path"
TOP_OPS = 10


class PathOp(TypedDict):
    """An op or kernel on a step's path, and its time there."""

    name: str
    kind: str
    ps: int


class Segments(TypedDict):
    """The path's pieces, as columns (entry i of each is piece i's; latest first): piece i
    is ``[start_ps[i], end_ps[i])`` of kind ``kind[i]`` on line ``line[i]`` of plane
    ``plane[i]``, in op, kernel or gap ``name[i]``. Columns, not one object a piece: a step's
    path has tens of thousands of pieces (46,000 on the DDP trace's three steps), and making and
    writing an object for each cost as much as the rest of the tool."""

    start_ps: list[int]
    end_ps: list[int]
    kind: list[str]
    plane: list[int]
    line: list[int]
    name: list[str]


class StepPath(TypedDict):
    step: int
    start_ps: int
    duration_ps: int
    by_kind_ps: dict[str, int]  # every kind in ``KINDS``; the values add up to duration_ps
    top: list[PathOp]
    segments: Segments


class WhatIf(TypedDict):
    change: str
    description: str
    predicted_step_ps: int  # the mean over steps of the re-scheduled step time
    predicted_steps_ps: list[int]  # per step, in ``steps`` order


@dataclass
class CriticalPathResult(ToolResult):
    steps: list[StepPath] = field(default_factory=list)
    what_if: list[WhatIf] = field(default_factory=list)
    mean_step_ps: int = 0
    anchor: str = ""  # the line the steps are measured on: "plane / line"
    kinds: list[str] = field(default_factory=lambda: list(KINDS))

    def tables(self) -> list[Table]:
        step_columns = (Column("step", "Step"), Column("duration_ps", "Duration (ps)"), *(Column(kind, f"{kind} (ps)") for kind in self.kinds))
        steps = [{"step": step["step"], "duration_ps": step["duration_ps"], **step["by_kind_ps"]} for step in self.steps]
        top_columns = (
            Column("step", "Step"),
            Column("name", "Op or kernel", "string"),
            Column("kind", "Kind", "string"),
            Column("ps", "Time on the path (ps)"),
        )
        tops = [{"step": step["step"], **op} for step in self.steps for op in step["top"]]
        what_columns = (
            Column("change", "Change", "string"),
            Column("description", "What changes", "string"),
            Column("predicted_step_ps", "Predicted step (ps)"),
        )
        return [Table.of("steps", step_columns, steps), Table.of("top", top_columns, tops), Table.of("what_if", what_columns, self.what_if)]

    def summary(self) -> list[str]:
        if not self.steps:
            return ["No steps with a critical path in this profile."]
        total = sum(step["duration_ps"] for step in self.steps)
        shares = {kind: sum(step["by_kind_ps"][kind] for step in self.steps) for kind in self.kinds}
        parts = ", ".join(f"{kind} {percent(ps, total):.1f}%" for kind, ps in sorted(shares.items(), key=lambda item: -item[1]) if ps)
        lines = [f"{len(self.steps)} steps, mean {ps_to_us(self.mean_step_ps) / 1000:,.3f} ms on {self.anchor}; critical path: {parts}"]
        for change in self.what_if:
            gain = percent(self.mean_step_ps - change["predicted_step_ps"], self.mean_step_ps)
            lines.append(
                f"what if {change['description']}: {ps_to_us(self.mean_step_ps) / 1000:,.3f} -> {ps_to_us(change['predicted_step_ps']) / 1000:,.3f} ms (-{gain:.1f}%)"
            )
        return lines


def _step_path(graph: Graph, node_names: NodeNames, segments: PathPieces, number: int, start: int, duration: int) -> StepPath:
    by_kind = segments.by_kind()
    lengths = segments.end_ps - segments.start_ps
    # The path's time by (name code, kind), summed in numpy; then by (name, kind) over the
    # few distinct pairs (two planes may hold types of the same name).
    key = node_names.code[segments.node] * len(KINDS) + segments.kind
    order = np.argsort(key, kind="stable")
    first = np.flatnonzero(np.concatenate(([True], key[order][1:] != key[order][:-1]))) if len(key) else np.zeros(0, dtype=np.int64)
    sums = np.add.reduceat(lengths[order], first) if len(key) else np.zeros(0, dtype=np.int64)
    totals: dict[tuple[str, int], int] = {}
    for pair, ps in zip(key[order][first].tolist(), sums.tolist()):
        name_kind = (node_names.table[pair // len(KINDS)], pair % len(KINDS))
        totals[name_kind] = totals.get(name_kind, 0) + ps
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0][0]))[:TOP_OPS]
    return StepPath(
        step=number,
        start_ps=start,
        duration_ps=duration,
        by_kind_ps={KINDS[kind]: int(by_kind[kind]) for kind in range(len(KINDS))},
        top=[PathOp(name=name, kind=KINDS[kind], ps=ps) for (name, kind), ps in ranked],
        segments=Segments(
            start_ps=segments.start_ps.tolist(),
            end_ps=segments.end_ps.tolist(),
            kind=[KINDS[kind] for kind in segments.kind.tolist()],
            plane=graph.plane[segments.node].tolist(),
            line=graph.line[segments.node].tolist(),
            name=node_names.of(segments.node),
        ),
    )


@tool(
    TOOL,
    title="Critical path",
    order=69,  # after flame_graph (68): XProf has no critical path
    description="What chain of work and waits sets each step's length, and what would a change buy?",
    options=(
        Option("faster", str, "kernel", "the what-if's faster work: a kind (kernel, copy, host_compute...) or a regular expression over op and kernel names"),
        Option("factor", int, 2, "how many times faster the what-if makes it", minimum=1),
    ),
)
def critical_path_tool(stats: OpStats, faster: str = "kernel", factor: int = 2) -> CriticalPathResult:
    profile, steps, built = stats.profile, stats.steps, stats.step_graph
    if built is None:
        return CriticalPathResult()
    graph, bind, node_names = built.graph, built.bind, built.names
    durations = steps.duration_ps
    paths = [
        _step_path(graph, node_names, segments, int(steps.number[index]), int(steps.start_ps[index]), int(durations[index]))
        for index, segments in enumerate(critical_paths(graph, bind))
    ]
    mean = round(float(durations.mean()))
    try:
        what_ifs = changes(faster, factor)
    except re.error as error:
        raise OptionError(f"{TOOL}: option faster is neither a kind ({', '.join(KINDS)}) nor a regular expression: {error}") from None
    what_if = []
    for change in what_ifs:
        predicted = predicted_steps(graph, bind, change.durations(graph, node_names))
        what_if.append(
            WhatIf(change=change.name, description=change.description, predicted_step_ps=round(float(predicted.mean())), predicted_steps_ps=predicted.tolist())
        )
    plane = profile.planes[graph.anchor[0]]
    return CriticalPathResult(steps=paths, what_if=what_if, mean_step_ps=mean, anchor=f"{plane.name} / {plane.lines[graph.anchor[1]].label}")
