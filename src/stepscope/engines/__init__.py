"""Engines: where the map of a many-rank analysis runs (a registry, name -> engine).

An engine takes the rank tasks (``tasks.RankTask``: a file each) and returns each task's
outcome (``tasks.analyse_rank``: the rank's tables, or why not), in task order, calling
``progress`` once per finished rank. The reduce always runs on the caller's side
(``analyse_run``), so the caller never holds a rank's events. ``local`` is a process pool
(``local``), ``ray`` Ray tasks on a cluster (``ray_engine``; Ray imported only when it
runs); both have one signature, and ``stepscope distributed --engine NAME`` picks one by
name. ``workers`` is None for the engine's own default (local: one per core; ray: every
rank in flight, scheduled on the cluster's CPUs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol

from stepscope.analysis.distributed import DEFAULT_RULE, DistributedResult, RankTables, Rule, reduce_ranks
from stepscope.analysis.distributed.job_paths import MAX_JOINED_RANKS, job_paths
from stepscope.analysis.distributed.reduce import BY_AUTO, BY_RANK, assign_ranks
from stepscope.engines.local import default_workers, local_engine
from stepscope.engines.ray_engine import RAY, ray_engine
from stepscope.engines.tasks import Outcome, RankFailure, RankTask, analyse_rank, rank_tasks
from stepscope.errors import StepscopeError
from stepscope.trace.kinds import CLOCK_RELATIVE
from stepscope.trace.logdir import Run
from stepscope.trace.readers import load
from stepscope.trace.remote import UrlRun

Progress = Callable[[], object]  # called once per rank done: what it returns is ignored
MAX_SPAN_PS = 1 << 62  # between the ranks' starts: the joined graph's times stay within int64


class Engine(Protocol):
    def __call__(self, tasks: Sequence[RankTask], workers: int | None, progress: Progress) -> list[Outcome]: ...


ENGINES: dict[str, Engine] = {}
LOCAL = "local"


def register_engine(name: str, engine: Engine) -> Engine:
    if name in ENGINES:
        raise ValueError(f"engine {name!r} registered twice")
    ENGINES[name] = engine
    return engine


def engine(name: str) -> Engine:
    try:
        return ENGINES[name]
    except KeyError:
        raise StepscopeError(f"unknown engine {name!r} (engines: {', '.join(sorted(ENGINES))})") from None


def _no_progress() -> None:
    pass


def analyse_run(
    run: Run | UrlRun,
    engine_name: str = LOCAL,
    workers: int | None = None,
    progress: Progress = _no_progress,
    rule: Rule = DEFAULT_RULE,
    by: str = BY_AUTO,
) -> DistributedResult:
    """Map the run's ranks on the named engine, reduce them here; ``by``: the unit (a rank,
    or each device of each rank: one map gives both, ``RankTables.devices``)."""
    tasks = rank_tasks(run)
    outcomes = engine(engine_name)(tasks, workers, progress)
    tables = [outcome for outcome in outcomes if isinstance(outcome, RankTables)]
    failures = [outcome.message for outcome in outcomes if isinstance(outcome, RankFailure)]
    result = reduce_ranks(run.name, tables, failures, rule, by)
    paths = [task.path for task, outcome in zip(tasks, outcomes, strict=True) if isinstance(outcome, RankTables)]
    return with_job_paths(result, paths, tables)


def with_job_paths(result: DistributedResult, paths: Sequence[str], tables: Sequence[RankTables]) -> DistributedResult:
    """``result`` with the job's critical path across its ranks (``job_paths``): each rank's
    file (``paths``, in ``tables`` order) loaded again here, where the graphs are joined
    (the map ships small tables, not graphs); on runs by rank of 2 to MAX_JOINED_RANKS
    ranks, else a note saying why not. A file that no longer loads is the note too."""
    if result.unit != BY_RANK:
        note = "by rank only (not by device)"
    elif not 2 <= len(tables) <= MAX_JOINED_RANKS:
        note = f"made for 2 to {MAX_JOINED_RANKS} ranks (each rank's whole graph is joined in one process), not {len(tables)}"
    elif any(table.clock == CLOCK_RELATIVE for table in tables):
        note = "the ranks' clocks are not aligned (a profile's times are relative)"
    elif (max(table.start_ns for table in tables) - min(table.start_ns for table in tables)) * 1000 > MAX_SPAN_PS:
        note = "the ranks' profiles start too far apart to be one job's (picoseconds between them pass 2**62)"
    else:
        numbers, _source = assign_ranks(tables)
        order = sorted(range(len(tables)), key=numbers.__getitem__)
        try:
            profiles = [load(paths[index]) for index in order]
        except StepscopeError as error:
            return dataclasses.replace(result, job_paths_note=f"not made: {error}")
        steps, removed = job_paths(profiles, [numbers[index] for index in order])
        return dataclasses.replace(result, job_steps=steps, straggle_removed=removed)
    return dataclasses.replace(result, job_paths_note=note)


register_engine(LOCAL, local_engine)
register_engine(RAY, ray_engine)

__all__ = [
    "ENGINES",
    "LOCAL",
    "RAY",
    "Engine",
    "RankFailure",
    "RankTask",
    "analyse_rank",
    "analyse_run",
    "default_workers",
    "engine",
    "rank_tasks",
    "register_engine",
    "with_job_paths",
]
