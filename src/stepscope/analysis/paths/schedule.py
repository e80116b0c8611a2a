"""The longest path through a dependency graph (``dependency_graph``), and its re-scheduling.

- ``binding``: for each node, the in-edge that set its start in the recorded run (the one
  whose ``end[src] + weight`` is latest) and its residual (how much later than that it
  started). Vectorised: a segmented max over the edges, grouped by destination.
- ``critical_paths``: the segments of each step's path, walked back from the step's end
  boundary node along binding edges (the kernel ``walk_chain``, C where it was built):
  each node's own time (its kind), and the gap between its binding predecessor's end and
  its start (the edge's gap kind: a launch's queueing, a synchronisation's return, idle).
  The segments tile ``[step start, step end]``, so their kinds add up to the step's
  duration exactly.
- ``schedule``: earliest starts in node order with changed durations (``fixed``; the pass
  is the kernel ``schedule_starts``, C where it was built): a node
  starts at the latest ``end + weight`` of its in-edges plus its residual; a node without
  in-edges where it was recorded. With the recorded durations it returns the recorded
  starts (``dependency_graph`` clips weights so that it must).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.paths.dependency_graph import Graph, NodeNames, build_graph
from stepscope.analysis.paths.path_kinds import Kind
from stepscope.analysis.steps.steps import Steps
from stepscope.trace.kernels import kernel
from stepscope.trace.model import Profile


@dataclass(frozen=True)
class Binding:
    """Per node: the binding in-edge (-1: none), its source (-1: none) and the residual ps."""

    edge: npt.NDArray[np.int64]
    pred: npt.NDArray[np.int64]
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
        # The latest reach within each destination (edges are grouped by it); at a tie, a
        # launch or sync edge (the dependency that explains the wait) before program or
        # stream order, then the first edge: the highest score, first of its group.
        score = reach * 2 + (graph.edge_gap_kind != Kind.IDLE)
        counts = np.diff(graph.edge_offsets)
        best = np.maximum.reduceat(score, graph.edge_offsets[:-1][counts > 0])
        winners = np.flatnonzero(score == np.repeat(best, counts[counts > 0]))
        first = winners[np.concatenate(([True], dst[winners][1:] != dst[winners][:-1]))]
        edge[dst[first]] = first
        bound[dst[first]] = reach[first]
    pred = np.where(edge >= 0, src[np.maximum(edge, 0)], -1) if len(src) else np.full(count, -1, dtype=np.int64)
    return Binding(edge, pred, graph.start_ps - bound)


@dataclass(frozen=True)
class StepGraph:
    """A profile's dependency graph with its recorded run's binding and node names: what
    every critical path and what-if reads (``OpStats.step_graph`` builds it once)."""

    graph: Graph
    bind: Binding
    names: NodeNames


def step_graph(profile: Profile, steps: Steps) -> StepGraph | None:
    """The profile's ``StepGraph``; None without steps or a thread to anchor them on."""
    graph = build_graph(profile, steps)
    if graph.anchor == (-1, -1) or not len(steps):
        return None
    return StepGraph(graph, binding(graph), graph.names(profile))


def schedule(graph: Graph, residual_ps: np.ndarray, fixed_ps: np.ndarray) -> npt.NDArray[np.int64]:
    """Earliest starts with durations ``fixed_ps`` (module docstring)."""
    starts = graph.start_ps.copy()
    _schedule_starts(graph.edge_offsets, graph.edge_src, graph.edge_weight_ps, residual_ps.astype(np.int64), fixed_ps.astype(np.int64), starts)
    return starts


@kernel("schedule_starts")
def _schedule_starts(offsets: np.ndarray, src: np.ndarray, weight: np.ndarray, residual: np.ndarray, fixed: np.ndarray, starts: np.ndarray) -> None:
    """In place, one pass in node order: each node with in-edges starts at the latest
    ``starts[src] + fixed[src] + weight`` of its in-edges (edges ``offsets[node]:offsets[node
    + 1]``) plus its residual; the others keep their start. Every in-edge of a DAG numbered
    in processing order comes from a lower-numbered node, so its source is final when read.
    The Python is the reference (and the fallback); the C (``kernels/schedule.c``) runs it
    200-300x faster (the DDP trace's 50,000 nodes: 0.20 ms against 55 ms): the four
    what-ifs were ~70% of the tool's time as this loop."""
    bounds, sources, weights, residuals, durations = (column.tolist() for column in (offsets, src, weight, residual, fixed))
    out = starts.tolist()
    for node in range(len(out)):
        lo, hi = bounds[node], bounds[node + 1]
        if lo < hi:
            out[node] = max([out[sources[k]] + durations[sources[k]] + weights[k] for k in range(lo, hi)]) + residuals[node]
    starts[:] = out


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


def critical_paths(graph: Graph, bind: Binding) -> list[Segments]:
    """The segments of every step (in the graph's step order; module docstring)."""
    floors = graph.start_ps[graph.step_start_node].tolist()
    room = np.empty(len(graph), dtype=np.int64)
    paths = []
    for end, floor in zip(graph.step_end_node.tolist(), floors):
        count = _walk_chain(bind.pred, graph.start_ps, end, floor, room)
        paths.append(_segments(graph, bind, room[:count].copy(), floor))
    return paths


def _segments(graph: Graph, bind: Binding, nodes: np.ndarray, floor: int) -> Segments:
    """One step's segments from its chain of binding predecessors (``_walk_chain``), numpy
    over the chain ``c_0`` (the end node), ``c_1``...: node ``c_i`` covers ``[start, min(its
    end, start of c_{i-1}))``, the gap before ``c_{i-1}`` is ``[end of c_i, start of
    c_{i-1})`` (its binding edge's gap kind), and a chain that stops above the step's start
    (a node without in-edges) is idle down to it; everything is clipped at the step's start."""
    starts = graph.start_ps[nodes]
    ends = starts + graph.fixed_ps[nodes]
    later = np.concatenate((starts[:1], starts[:-1]))  # each node's successor's start on the chain
    node_hi = np.minimum(later, ends)
    # Slot 2i: node c_i; slot 2i + 1: the gap below c_i (from c_{i+1}'s end), or for the last
    # node the idle time down to the step's start where it has no binding edge.
    gap_lo = np.append(ends[1:], floor if bind.edge[nodes[-1]] < 0 else starts[-1])
    gap_kind = np.full(len(nodes), Kind.IDLE, dtype=np.int8)
    bound = bind.edge[nodes[:-1]]
    gap_kind[:-1] = graph.edge_gap_kind[bound]
    lo = np.empty(2 * len(nodes), dtype=np.int64)
    hi, kind, node = lo.copy(), np.empty(2 * len(nodes), dtype=np.int8), np.repeat(nodes, 2)
    lo[0::2], hi[0::2], kind[0::2] = starts, node_hi, graph.kind[nodes]
    lo[1::2], hi[1::2], kind[1::2] = gap_lo, starts, gap_kind
    lo = np.maximum(lo, floor)
    keep = hi > lo
    return Segments(lo[keep], hi[keep], kind[keep], node[keep])


@kernel("walk_chain")
def _walk_chain(pred: np.ndarray, starts: np.ndarray, node: int, floor: int, out: np.ndarray) -> int:
    """Writes the binding predecessors from ``node`` back to the first one starting at or
    before ``floor`` (or without a predecessor) to ``out``; returns how many. A pointer
    chase: the Python is the reference (and the fallback, ~1.2 us a node on numpy's
    scalars); the C (``kernels/schedule.c``) walks the DDP trace's three chains (46,000 nodes)
    in 0.12 ms, not 53 ms (or the ~10 ms of the walk over Python lists it replaces)."""
    count = 0
    while True:
        out[count] = node
        count += 1
        if not (starts[node] > floor and pred[node] >= 0):
            return count
        node = int(pred[node])
