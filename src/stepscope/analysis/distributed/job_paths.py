"""The job's critical path across ranks, for the distributed view: the ranks' dependency
graphs joined at their collectives (``rank_paths``), each step's path on the slowest rank,
and what the job's step would be without each rank's straggle.

Unlike the rest of the distributed view (a map of small per-rank tables), this needs every
rank's whole graph in one process, and the what-if re-schedules the joined graph once per
rank: so it is made only for runs of at most ``MAX_JOINED_RANKS`` ranks, by rank (not by
device), by whoever can load the profiles (``stepscope.engines.with_job_paths``, for the
CLI and the dashboard's distributed view). docs/tools/distributed.md defines every number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

from stepscope.analysis.paths.path_kinds import KIND_NAMES, Kind
from stepscope.analysis.paths.rank_paths import join_ranks, step_times, straggle_removed
from stepscope.analysis.paths.schedule import binding, critical_paths
from stepscope.analysis.steps.steps import find_steps
from stepscope.trace.model import Profile

MAX_JOINED_RANKS = 8


class JobStepPath(TypedDict):
    """Step ``step`` of the job (the ranks' steps matched by position): the slowest rank's
    step and the path that set it, which may run through other ranks' work (a collective
    ends when its last rank joins it)."""

    step: int  # the step's number on the first rank
    step_ps: int  # the job's step: the slowest rank's
    slowest_rank: int
    setting_rank: int  # the rank whose work holds the most time on the slowest rank's path
    kind: str  # the kind with the most time on that path
    by_rank_ps: dict[str, int]  # rank -> its time on the path (every rank with any)
    by_kind_ps: dict[str, int]  # kind -> its time on the path (every kind with any); adds up to step_ps


class StraggleRemovedRow(TypedDict):
    """What if rank ``rank``'s straggle were removed: the other ranks stop waiting for it."""

    rank: int
    predicted_step_ps: int  # the mean over steps of the job's predicted step (the slowest other rank's)
    predicted_steps_ps: list[int]  # per step, in ``JobStepPath`` order


def job_paths(profiles: Sequence[Profile], ranks: Sequence[int]) -> tuple[list[JobStepPath], list[StraggleRemovedRow]]:
    """The job's steps and straggle what-ifs of ``profiles`` (one per rank, numbered ``ranks``)."""
    joined = join_ranks(profiles)
    bind = binding(joined.graph)
    times = step_times(joined, bind)
    paths = critical_paths(joined.graph, bind)
    first = np.cumsum([0, *joined.steps])[:-1]  # each rank's first path in ``paths``
    numbers = find_steps(profiles[0]).number
    steps = []
    for index in range(times.shape[1]):
        slowest = int(np.argmax(times[:, index]))
        path = paths[first[slowest] + index]
        lengths = path.end_ps - path.start_ps
        by_rank = np.bincount(joined.rank[path.node], weights=lengths, minlength=len(profiles)).astype(np.int64)
        by_kind = path.by_kind()
        steps.append(
            JobStepPath(
                step=int(numbers[index]),
                step_ps=int(times[slowest, index]),
                slowest_rank=ranks[slowest],
                setting_rank=ranks[int(np.argmax(by_rank))],
                kind=KIND_NAMES[Kind(int(np.argmax(by_kind)))],
                by_rank_ps={str(ranks[rank]): int(ps) for rank, ps in enumerate(by_rank.tolist()) if ps},
                by_kind_ps={KIND_NAMES[Kind(kind)]: int(ps) for kind, ps in enumerate(by_kind.tolist()) if ps},
            )
        )
    removed = [
        StraggleRemovedRow(rank=ranks[entry.rank], predicted_step_ps=entry.predicted_step_ps, predicted_steps_ps=entry.predicted_steps_ps)
        for entry in straggle_removed(joined)
    ]
    return steps, removed
