"""The critical path's kernels: the schedule pass (``schedule._schedule_starts``) and the walk
back along binding predecessors (``schedule._walk_chain``). The C (``kernels/schedule.c``)
gives the Python reference's starts, to the picosecond, and its chains, node for node, on
random DAGs and on the graph of every shared trace (starts with recorded and with changed
durations; the chain of every step)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import stepscope
from stepscope import _kernels
from stepscope.analysis.paths import schedule
from stepscope.analysis.paths.dependency_graph import build_graph
from stepscope.analysis.paths.path_kinds import Kind
from stepscope.analysis.steps.steps import find_steps
from stepscope.trace import kernels
from tests.support.traces import ALL_SHARED_TRACES

PYTHON = kernels.PYTHON["schedule_starts"]
PYTHON_CHAIN = kernels.PYTHON["walk_chain"]


def both(offsets, src, weight, residual, fixed, starts) -> tuple[np.ndarray, np.ndarray]:
    compiled, reference = starts.copy(), starts.copy()
    _kernels.schedule_starts(offsets, src, weight, residual, fixed, compiled)
    PYTHON(offsets, src, weight, residual, fixed, reference)
    return compiled, reference


def chains(pred, starts, node, floor) -> tuple[list[int], list[int]]:
    compiled, reference = np.full(len(pred), -1), np.full(len(pred), -1)
    count = _kernels.walk_chain(pred, starts, node, floor, compiled)
    assert PYTHON_CHAIN(pred, starts, node, floor, reference) == count
    return compiled[:count].tolist(), reference[:count].tolist()


def test_the_module_calls_the_c():
    assert schedule._schedule_starts is _kernels.schedule_starts and PYTHON.__module__ == schedule.__name__
    assert schedule._walk_chain is _kernels.walk_chain and PYTHON_CHAIN.__module__ == schedule.__name__


def test_a_hand_made_chain():
    # Predecessors 4 -> 2 -> 1 -> 0 (0 has none), 3 -> 1; starts 0, 10, 20, 25, 30.
    pred, starts = np.array([-1, 0, 1, 1, 2]), np.array([0, 10, 20, 25, 30])
    # From 4 above floor 5: 4 (30 > 5), 2 (20 > 5), 1 (10 > 5), 0 (no predecessor): all four.
    assert chains(pred, starts, 4, 5) == ([4, 2, 1, 0], [4, 2, 1, 0])
    # Floor 20: 4 (30 > 20), then 2 starts at 20, not after the floor: the walk stops there.
    assert chains(pred, starts, 4, 20) == ([4, 2], [4, 2])
    # From 3 with floor 30: 3 starts at 25 <= 30, so it is the whole chain.
    assert chains(pred, starts, 3, 30) == ([3], [3])


@pytest.mark.parametrize("seed", range(10))
def test_random_chains(seed: int):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(2, 2000))
    # Each node's predecessor a random lower-numbered node, or none (-1) for about 1 in 50;
    # starts rising with the node number (as in a graph numbered in processing order).
    pred = (rng.random(count) * np.arange(count)).astype(np.int64)
    pred[rng.random(count) < 0.02] = -1
    pred[0] = -1
    starts = np.cumsum(rng.integers(0, 100, count))
    for node, floor in ((count - 1, int(starts[count // 3])), (int(rng.integers(0, count)), -1)):
        compiled, reference = chains(pred, starts, node, floor)
        assert compiled == reference and compiled[0] == node
        # Each node after the first is its predecessor's; the walk stopped at a node at or
        # before the floor or without a predecessor.
        assert all(pred[a] == b for a, b in itertools.pairwise(compiled))
        assert starts[compiled[-1]] <= floor or pred[compiled[-1]] < 0


def test_a_hand_made_diamond():
    # 0 -> 1 (weight 1), 0 -> 2 (weight 0), 1 -> 3 and 2 -> 3 (weight 0); durations 10, 5, 20,
    # 1; node 3's residual 2. Node 0 keeps its start 100 (no in-edges): ends 110; node 1 at
    # 111, ends 116; node 2 at 110, ends 130; node 3 at max(116, 130) + 2 = 132.
    offsets = np.array([0, 0, 1, 2, 4])
    src, weight = np.array([0, 0, 1, 2]), np.array([1, 0, 0, 0])
    compiled, reference = both(offsets, src, weight, np.array([0, 0, 0, 2]), np.array([10, 5, 20, 1]), np.array([100, 0, 0, 0]))
    assert compiled.tolist() == reference.tolist() == [100, 111, 110, 132]


@pytest.mark.parametrize("seed", range(20))
def test_random_dags(seed: int):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 400))
    # Each node's in-edges from random lower-numbered nodes (0-5 of them), some sources
    # repeated; weights and residuals may be negative, durations up to 2**40 ps.
    degree = rng.integers(0, 6, count)
    degree[0] = 0
    dst = np.repeat(np.arange(count), degree)
    src = (rng.random(len(dst)) * dst).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(degree))).astype(np.int64)
    weight = rng.integers(-(10**6), 10**9, len(dst))
    residual = rng.integers(-1000, 10**6, count)
    fixed = rng.integers(0, 1 << 40, count)
    starts = rng.integers(0, 1 << 50, count)
    compiled, reference = both(offsets, src, weight, residual, fixed, starts)
    assert np.array_equal(compiled, reference)
    # Spot check against the definition: a node with in-edges starts at its latest reach.
    node = int(np.flatnonzero(degree)[-1]) if degree.any() else 0
    if degree[node]:
        edges = range(offsets[node], offsets[node + 1])
        assert compiled[node] == max(compiled[src[k]] + fixed[src[k]] + weight[k] for k in edges) + residual[node]


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda path: path.name.split(".")[0])
def test_every_shared_traces_graph(path):
    profile = stepscope.load(path)
    graph = build_graph(profile, find_steps(profile))
    bind = schedule.binding(graph)
    halved = graph.fixed_ps.copy()
    halved[graph.kind == Kind.KERNEL] //= 2
    halved[graph.kind == Kind.HOST_COMPUTE] //= 3
    for fixed in (graph.fixed_ps, halved):
        compiled, reference = both(graph.edge_offsets, graph.edge_src, graph.edge_weight_ps, bind.residual_ps, fixed, graph.start_ps.copy())
        assert np.array_equal(compiled, reference)
    recorded, _ = both(graph.edge_offsets, graph.edge_src, graph.edge_weight_ps, bind.residual_ps, graph.fixed_ps, graph.start_ps.copy())
    assert np.array_equal(recorded, graph.start_ps)
    for end, first in zip(graph.step_end_node.tolist(), graph.step_start_node.tolist()):
        compiled_chain, reference_chain = chains(bind.pred, graph.start_ps, end, int(graph.start_ps[first]))
        assert compiled_chain == reference_chain and compiled_chain[0] == end
