"""Critical paths across ranks: the dependency graphs of several ranks' profiles joined at
their collectives, and the what-if "one rank's straggle removed".

Each rank's graph (``dependency_graph``) is shifted to one clock (the profiles' ``start_ns``)
and the graphs are merged in start order (a stable merge: each rank keeps its own order,
so every edge still points forward). A collective ends when the last rank joins it: the
k-th collective of a name on every rank is one collective (each rank of a process group
issues them in the same order: ``distributed.collectives``), and each rank's node of it
becomes its transfer part, the shortest of the members' durations (the last arrival's,
which did not wait), ending where it ended. Every member then depends on every other
member's arrival: the in-edges of a member (its launch, its stream's previous work) are
added to every other member. Re-scheduled with the recorded durations, the joined graph
gives back the recorded times (weights are clipped as in ``dependency_graph``).

"Rank q's straggle removed": the other ranks stop waiting for q (the edges from q's work
into other ranks' collectives are dropped); each other rank's steps re-scheduled, and the
job's step is the slowest rank's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.paths.dependency_graph import Graph, build_graph
from stepscope.analysis.paths.path_kinds import Kind
from stepscope.analysis.paths.schedule import Binding, binding, schedule
from stepscope.analysis.steps.steps import find_steps
from stepscope.trace.model import Profile

# An edge muted by a what-if: so early that it never binds.
MUTED = -(1 << 60)


@dataclass(frozen=True, eq=False)
class RankGraph:
    """All ranks' nodes in one graph (one clock); ``rank`` of each node; ``cross`` marks
    the edges (in the graph's CSR order) from one rank's work into another's collective.
    The graph's step nodes are rank 0's steps, then rank 1's...; ``steps`` how many each
    rank has (the paths of ``schedule.critical_paths`` come in that order)."""

    graph: Graph
    rank: npt.NDArray[np.int64]
    cross: npt.NDArray[np.bool_]
    steps: list[int]


def join_ranks(profiles: Sequence[Profile]) -> RankGraph:
    """The joined graph of ``profiles`` (one per rank, in rank order; module docstring)."""
    base_ns = min(profile.start_ns for profile in profiles)
    graphs = []
    for profile in profiles:
        graph = build_graph(profile, find_steps(profile))
        graphs.append(dataclasses.replace(graph, start_ps=graph.start_ps + (profile.start_ns - base_ns) * 1000))
    node_offset = np.cumsum([0, *(len(graph) for graph in graphs)])
    start = np.concatenate([graph.start_ps for graph in graphs])
    fixed = np.concatenate([graph.fixed_ps for graph in graphs])
    src = np.concatenate([graph.edge_src + offset for graph, offset in zip(graphs, node_offset)])
    dst = np.concatenate([graph.edge_dst + offset for graph, offset in zip(graphs, node_offset)])
    weight = np.concatenate([graph.edge_weight_ps for graph in graphs])
    gap = np.concatenate([graph.edge_gap_kind for graph in graphs])
    extra_src, extra_dst = _collective_edges(profiles, graphs, node_offset, start, fixed, src, dst)
    cross = np.concatenate((np.zeros(len(src), dtype=bool), np.ones(len(extra_src), dtype=bool)))
    src, dst = np.concatenate((src, extra_src)), np.concatenate((dst, extra_dst))
    weight = np.concatenate((weight, np.zeros(len(extra_src), dtype=np.int64)))
    gap = np.concatenate((gap, np.full(len(extra_src), Kind.COLLECTIVE, dtype=np.int8)))
    # Merge in start order (stable: each rank's own order kept), renumber, keep forward edges.
    order = np.argsort(start, kind="stable")
    position = np.empty(len(start), dtype=np.int64)
    position[order] = np.arange(len(start))
    src, dst = position[src], position[dst]
    forward = src < dst
    src, dst, weight, gap, cross = src[forward], dst[forward], weight[forward], gap[forward], cross[forward]
    start, fixed = start[order], fixed[order]
    weight = np.minimum(weight, start[dst] - (start[src] + fixed[src]))
    by_dst = np.argsort(dst, kind="stable")

    def column(name: str) -> np.ndarray:
        return np.concatenate([getattr(graph, name) for graph in graphs])[order]

    graph = Graph(
        start_ps=start,
        duration_ps=column("duration_ps"),
        fixed_ps=fixed,
        kind=column("kind"),
        plane=column("plane"),
        line=column("line"),
        row=column("row"),
        edge_offsets=np.searchsorted(dst[by_dst], np.arange(len(start) + 1)).astype(np.int64),
        edge_src=src[by_dst],
        edge_weight_ps=weight[by_dst],
        edge_gap_kind=gap[by_dst],
        anchor=graphs[0].anchor,
        step_start_node=np.concatenate([position[graph.step_start_node + offset] for graph, offset in zip(graphs, node_offset)]),
        step_end_node=np.concatenate([position[graph.step_end_node + offset] for graph, offset in zip(graphs, node_offset)]),
    )
    rank = np.repeat(np.arange(len(graphs)), np.diff(node_offset))[order]
    return RankGraph(graph, rank, cross[by_dst], [len(graph.step_start_node) for graph in graphs])


def _collective_edges(
    profiles: Sequence[Profile], graphs: list[Graph], node_offset: np.ndarray, start: np.ndarray, fixed: np.ndarray, src: np.ndarray, dst: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Matches each rank's collectives (k-th of a name), makes each member its transfer
    part (``start`` and ``fixed`` changed in place) and returns the edges from every
    member's in-edge sources to every other member."""
    members: dict[tuple[str, int], list[int]] = {}
    for graph, profile, offset in zip(graphs, profiles, node_offset):
        collectives = np.flatnonzero((graph.kind == Kind.COLLECTIVE) & (graph.row >= 0))
        seen: dict[str, int] = {}
        for node, name in zip(collectives.tolist(), graph.names(profile).of(collectives)):
            ordinal = seen.get(name, 0)
            seen[name] = ordinal + 1
            members.setdefault((name, ordinal), []).append(int(node + offset))
    by_dst = np.argsort(dst, kind="stable")
    dst_sorted, src_sorted = dst[by_dst], src[by_dst]
    out_src: list[np.ndarray] = []
    out_dst: list[np.ndarray] = []
    for group in members.values():
        if len(group) != len(graphs):
            continue  # not every rank joined it (a rank's profile missed it): left alone
        nodes = np.asarray(group)
        transfer = int(fixed[nodes].min())
        start[nodes] = start[nodes] + fixed[nodes] - transfer
        fixed[nodes] = transfer
        for member in group:
            arrivals = src_sorted[np.searchsorted(dst_sorted, member) : np.searchsorted(dst_sorted, member, "right")]
            for other in group:
                if other != member and len(arrivals):
                    out_src.append(arrivals)
                    out_dst.append(np.full(len(arrivals), other, dtype=np.int64))
    if not out_src:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(out_src), np.concatenate(out_dst)


@dataclass(frozen=True)
class StraggleRemoved:
    """Without rank ``rank``'s straggle: each step's predicted time (the slowest other
    rank's), and their mean."""

    rank: int
    predicted_steps_ps: list[int]
    predicted_step_ps: int


def step_times(joined: RankGraph, bind: Binding, fixed_ps: np.ndarray | None = None, mute: np.ndarray | None = None) -> np.ndarray:
    """Per rank (rows) and step (columns, the fewest any rank has), the re-scheduled step
    time with ``fixed_ps`` (default: the recorded) and the edges ``mute`` dropped."""
    graph = joined.graph
    if mute is not None:
        graph = dataclasses.replace(graph, edge_weight_ps=np.where(mute, MUTED, graph.edge_weight_ps))
    starts = schedule(graph, bind.residual_ps, graph.fixed_ps if fixed_ps is None else fixed_ps)
    times = starts[graph.step_end_node] - starts[graph.step_start_node]
    count = min(joined.steps)
    bounds = np.cumsum([0, *joined.steps])
    return np.stack([times[lo : lo + count] for lo in bounds[:-1]])


def straggle_removed(joined: RankGraph) -> list[StraggleRemoved]:
    """For each rank: the job's steps if the others did not wait for it."""
    bind = binding(joined.graph)
    source_rank = joined.rank[joined.graph.edge_src]
    out = []
    for rank in range(len(joined.steps)):
        times = step_times(joined, bind, mute=joined.cross & (source_rank == rank))
        others = np.delete(times, rank, axis=0).max(axis=0) if len(times) > 1 else times[0]
        out.append(StraggleRemoved(rank, others.tolist(), round(float(others.mean())) if len(others) else 0))
    return out
