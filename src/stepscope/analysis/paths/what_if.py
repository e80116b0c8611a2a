"""What-ifs on a step's dependency graph: each changes node durations (never dependencies),
and the whole graph is re-scheduled (``schedule``) to predict each step's time.

Shared by the ``critical_path`` tool (its ``what_if`` rows) and the overview's findings
(``findings.finding_gains``: what fixing each finding would buy).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.paths.dependency_graph import Graph, NodeNames
from stepscope.analysis.paths.path_kinds import KIND_NAMES, Kind
from stepscope.analysis.paths.schedule import Binding, schedule

KINDS = [KIND_NAMES[kind] for kind in Kind]
# What-if names (``Change.name``).
INPUT_FREE, LAUNCH_HALVED, FASTER, COLLECTIVES_OVERLAPPED = "input_free", "launch_halved", "faster", "collectives_overlapped"


@dataclass(frozen=True)
class Change:
    """A what-if: its name, what it says, and the durations it gives the graph's nodes."""

    name: str
    description: str
    durations: Callable[[Graph, NodeNames], np.ndarray]  # (graph, node names) -> fixed_ps


def _scaled(mask: np.ndarray, graph: Graph, divisor: int) -> np.ndarray:
    fixed = graph.fixed_ps.copy()
    fixed[mask] //= divisor
    return fixed


def changes(faster: str, factor: int) -> list[Change]:
    """The what-ifs: input free, launch calls halved (CUDA graphs), ``faster`` (a kind, or a
    regular expression over op and kernel names) ``factor`` x faster, collectives overlapped.
    ``faster`` neither a kind nor a regular expression raises ``re.error``."""
    if faster in KINDS:
        kind = Kind(KINDS.index(faster))

        def chosen(graph: Graph, node_names: NodeNames) -> np.ndarray:
            same: np.ndarray = graph.kind == kind
            return same

        what = f"{faster} time"
    else:
        pattern = re.compile(faster, re.IGNORECASE)

        def chosen(graph: Graph, node_names: NodeNames) -> np.ndarray:
            matches = np.asarray([bool(pattern.search(name)) for name in node_names.table], dtype=bool)
            picked: np.ndarray = (graph.row >= 0) & matches[node_names.code]
            return picked

        what = f"ops and kernels matching {faster!r}"
    return [
        Change(INPUT_FREE, "input were free (no input wait)", lambda graph, _: _scaled(graph.kind == Kind.INPUT, graph, 1 << 62)),
        Change(LAUNCH_HALVED, "launch calls took half as long (CUDA graphs)", lambda graph, _: _scaled(graph.kind == Kind.LAUNCH, graph, 2)),
        Change(FASTER, f"{what} were {factor}x faster", lambda graph, node_names: _scaled(chosen(graph, node_names), graph, factor)),
        Change(COLLECTIVES_OVERLAPPED, "collectives were hidden behind compute", lambda graph, _: _scaled(graph.kind == Kind.COLLECTIVE, graph, 1 << 62)),
    ]


def predicted_steps(graph: Graph, bind: Binding, fixed_ps: np.ndarray) -> np.ndarray:
    """Each step's time between its boundary nodes once re-scheduled with ``fixed_ps``."""
    starts = schedule(graph, bind.residual_ps, fixed_ps)
    return starts[graph.step_end_node] - starts[graph.step_start_node]
