"""What one unit of the distributed view is, as the reduce reads it: a rank's (or one
device's) steps and collective calls (``RankTables``), small and picklable. Built by
``rank_tables`` (a whole profile) and ``device_tables`` (each device plane of one)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stepscope.analysis.distributed.collectives import CollectiveCall
from stepscope.analysis.steps.breakdown import BREAKDOWN, IDLE
from stepscope.analysis.steps.steps import Steps

CATEGORIES = (*BREAKDOWN.values(), IDLE)


@dataclass(frozen=True)
class RankStep:
    number: int
    start_ns: int  # UNIX epoch ns (or the rank's own clock, see RankTables.clock)
    start_ps: int  # from the rank's profile start: where its trace viewer shows the step
    step_time_ps: int
    breakdown: dict[str, int]  # the overview's categories (CATEGORIES), ps; they sum to step_time_ps
    collective_ps: int  # all collective time in the step, hidden behind compute or not
    set_aside: bool  # the overview sets it aside (warm-up or one-off outlier)


def step_rows(start_ns: int, steps: Steps, breakdown: dict[str, np.ndarray], collective: np.ndarray, kept: np.ndarray) -> list[RankStep]:
    """A unit's steps: ``steps`` with their breakdown and collective time (per step, ps),
    the ones the overview keeps marked; ``start_ns``: the profile's start. A rank and each
    of its devices share the host's steps and differ in the unions these were cut from."""
    return [
        RankStep(
            number=int(steps.number[index]),
            start_ns=start_ns + int(steps.start_ps[index]) // 1000,
            start_ps=int(steps.start_ps[index]),
            step_time_ps=int(steps.duration_ps[index]),
            breakdown={key: int(breakdown[key][index]) for key in CATEGORIES},
            collective_ps=int(collective[index]),
            set_aside=not bool(kept[index]),
        )
        for index in range(len(steps))
    ]


@dataclass(frozen=True)
class RankTables:
    """One rank, as the reduce needs it."""

    path: str
    host: str  # XSpace's host name where the file has one, else the run's name for the file
    rank: int | None  # distributedInfo.rank, where the trace has it
    world_size: int | None  # distributedInfo.world_size
    format: str
    start_ns: int
    clock: str  # one of trace.kinds' CLOCK_* methods
    step_source: str
    steps: list[RankStep]
    collectives: list[CollectiveCall]
    warnings: list[str] = field(default_factory=list)
    # The run's name for the file (``logdir.Host.name``): what the dashboard's host
    # selector and trace viewer address name, which XSpace's own host name may not be.
    file_host: str = ""
    # A device unit (``device_tables``): its plane's name (``/device:TPU:2``); "" for a
    # whole host. A host's own tables carry its device units here, so one map serves both
    # ``--by rank`` and ``--by device``.
    device: str = ""
    devices: list[RankTables] = field(default_factory=list)
