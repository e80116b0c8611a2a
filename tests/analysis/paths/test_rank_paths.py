"""Critical paths across ranks (``rank_paths``): two hand-made ranks joined at their
all-reduce, the path of the rank that waited running through the straggler's work, and
"one rank's straggle removed" derived by hand (times in us; tools/test_critical_path.py's
conventions, one Kineto file per rank)."""

from __future__ import annotations

import numpy as np

import stepscope
from stepscope.analysis.paths.path_kinds import KIND_NAMES, Kind
from stepscope.analysis.paths.rank_paths import join_ranks, step_times, straggle_removed
from stepscope.analysis.paths.schedule import Segments, binding, critical_paths, schedule
from stepscope.analysis.steps.steps import find_steps
from tests.support.critical_paths import US, two_ranks
from tests.support.traces import shared


def test_the_rank_that_waited_has_the_stragglers_work_on_its_path(tmp_path):
    joined = join_ranks(two_ranks(tmp_path))
    bind = binding(joined.graph)
    # Recorded durations give back the recorded steps: 100 us on both ranks.
    assert step_times(joined, bind).tolist() == [[100 * US], [100 * US]]
    zero, one = critical_paths(joined.graph, bind)
    # The all-reduce's transfer is the shorter member, 10 us: [80, 90) on both ranks.
    # Rank 0: add 5 (host) <- the sync's return [90, 95): 5 <- its all-reduce [80, 90): 10
    # <- (no gap) rank 1's compute [6, 80): 74 <- its queueing [5, 6): launch 1 <- rank 1's
    # launch [0, 5): 5. Rank 1: the same, its own all-reduce in the middle.
    expected = {"host_compute": 5 * US, "sync": 5 * US, "collective": 10 * US, "kernel": 74 * US, "launch": 6 * US}
    for path in (zero, one):
        assert by_kind(path) == expected
    assert set(joined.rank[zero.node].tolist()) == {0, 1}  # rank 0's path crosses to rank 1


def test_one_ranks_straggle_removed(tmp_path):
    joined = join_ranks(two_ranks(tmp_path))
    removed = {entry.rank: entry.predicted_step_ps for entry in straggle_removed(joined)}
    # Without rank 1's straggle, rank 0's all-reduce starts after its own launch [30, 35)
    # (its 1 us queueing was a wait for rank 1, not kept): [35, 45), the sync returns at 50,
    # the add ends at 55. Rank 0's straggle removed: rank 1 never waited for rank 0: 100.
    assert removed == {1: 55 * US, 0: 100 * US}


def by_kind(path: Segments) -> dict[str, int]:
    return {KIND_NAMES[Kind(index)]: ps for index, ps in enumerate(path.by_kind().tolist()) if ps}


def test_the_shared_recsys_ranks_joined_replay_their_recorded_steps():
    """Two real ranks of the 128-rank recsys job: joined at their all_to_alls, re-scheduled
    with the recorded durations, every node starts where it did and each rank's steps
    last what its own step markers say."""
    profiles = [stepscope.load(shared(f"kineto/recsys_sampled_rank{number}_of_128.pt.trace.json.gz")) for number in (0, 1)]
    joined = join_ranks(profiles)
    bind = binding(joined.graph)
    assert joined.cross.any()
    assert np.array_equal(schedule(joined.graph, bind.residual_ps, joined.graph.fixed_ps), joined.graph.start_ps)
    recorded = [find_steps(profile).duration_ps.tolist() for profile in profiles]
    assert step_times(joined, bind).tolist() == recorded
