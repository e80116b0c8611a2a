"""The longest path through a dependency graph (``dependency_graph``), and its re-scheduling.

- ``binding``: for each node, the in-edge that set its start in the recorded run (the one
  whose ``end[src] + weight`` is latest) and its residual (how much later than that it
  started). Vectorised: one sort of the edges.
- ``critical_path``: the segments of one step's path, walked back from the step's end
  boundary node along binding edges: each node's own time (its kind), and the gap between
  its binding predecessor's end and its start (the edge's gap kind: a launch's queueing,
  a synchronisation's return, idle). The segments tile ``[step start, step end]``, so
  their kinds add up to the step's duration exactly.
- ``schedule``: earliest starts in node order with changed durations (``fixed``): a node
  starts at the latest ``end + weight`` of its in-edges plus its residual; a node without
  in-edges where it was recorded. With the recorded durations it returns the recorded
  starts (``dependency_graph`` clips weights so that it must).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.dependency_graph import Graph, Kind


@dataclass(frozen=True)
class Binding:
    """Per node: the binding in-edge (-1: none) and the residual ps."""

    edge: npt.NDArray[np.int64]
    residual_ps: npt.NDArray[np.int64]


def binding(graph: Graph) -> Binding:
    """The binding in-edge and residual of every node in the recorded run."""
    count = len(graph)
    dst = graph.edge_dst
    src = graph.edge_src
    reach = graph.start_ps[src] + graph.fixed_ps[src] + graph.edge_weight_ps
    edge = np.full(count, -1, dtype=np.int64)
    bound = graph.start_ps.copy()
    if len(dst):
        # Latest reach first within each destination; at a tie, a launch or sync edge (the
        # dependency that explains the wait) before program or stream order.
        preference = (graph.edge_gap_kind == Kind.IDLE).astype(np.int8)
        order = np.lexsort((preference, -reach, dst))
        first = order[np.concatenate(([True], dst[order][1:] != dst[order][:-1]))]
        edge[dst[first]] = first
        bound[dst[first]] = reach[first]
    return Binding(edge, graph.start_ps - bound)


def schedule(graph: Graph, residual_ps: np.ndarray, fixed_ps: np.ndarray) -> npt.NDArray[np.int64]:
    """Earliest starts with durations ``fixed_ps`` (module docstring). One pass in node
    order: every in-edge comes from a lower-numbered node."""
    offsets = graph.edge_offsets.tolist()
    src = graph.edge_src.tolist()
    weight = graph.edge_weight_ps.tolist()
    residual = residual_ps.tolist()
    fixed = fixed_ps.tolist()
    starts = graph.start_ps.tolist()
    ends = [0] * len(starts)
    for node in range(len(starts)):
        lo, hi = offsets[node], offsets[node + 1]
        if lo < hi:
            reach = max([ends[src[k]] + weight[k] for k in range(lo, hi)])
            starts[node] = reach + residual[node]
        ends[node] = starts[node] + fixed[node]
    return np.asarray(starts, dtype=np.int64)


@dataclass(frozen=True)
class Segments:
    """One step's critical path, latest first: ``[start_ps, end_ps)`` of kind ``kind``,
    on node ``node`` (its line is the node's; a gap lies on the line of the node that
    waited)."""

    start_ps: npt.NDArray[np.int64]
    end_ps: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    node: npt.NDArray[np.int64]

    def by_kind(self) -> npt.NDArray[np.int64]:
        """ps of each ``Kind`` (indexed by its value)."""
        return np.bincount(self.kind, weights=self.end_ps - self.start_ps, minlength=len(Kind)).astype(np.int64)


def critical_path(graph: Graph, bind: Binding, step: int) -> Segments:
    """The segments of step ``step`` (index into the graph's steps; module docstring)."""
    floor = int(graph.start_ps[graph.step_start_node[step]])
    node = int(graph.step_end_node[step])
    cursor = int(graph.start_ps[node])
    starts = graph.start_ps
    fixed = graph.fixed_ps
    edges = bind.edge
    src = graph.edge_src
    gap_kind = graph.edge_gap_kind
    kinds = graph.kind
    out_start: list[int] = []
    out_end: list[int] = []
    out_kind: list[int] = []
    out_node: list[int] = []

    def emit(lo: int, hi: int, kind: int, at: int) -> None:
        lo = max(lo, floor)
        if hi > lo:
            out_start.append(lo)
            out_end.append(hi)
            out_kind.append(kind)
            out_node.append(at)

    while cursor > floor:
        begin = int(starts[node])
        emit(begin, min(cursor, begin + int(fixed[node])), int(kinds[node]), node)
        cursor = min(cursor, begin)
        if cursor <= floor:
            break
        edge = int(edges[node])
        if edge < 0:
            emit(floor, cursor, Kind.IDLE, node)
            break
        before = int(src[edge])
        reach = int(starts[before]) + int(fixed[before])
        if reach < cursor:
            emit(reach, cursor, int(gap_kind[edge]), node)
            cursor = reach
        node = before
    return Segments(
        np.asarray(out_start, dtype=np.int64), np.asarray(out_end, dtype=np.int64), np.asarray(out_kind, dtype=np.int8), np.asarray(out_node, dtype=np.int64)
    )
