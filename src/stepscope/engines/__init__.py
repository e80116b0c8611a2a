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

from collections.abc import Callable, Sequence
from typing import Protocol

from stepscope.analysis.distributed import DEFAULT_RULE, DistributedResult, RankTables, Rule, reduce_ranks
from stepscope.analysis.distributed.reduce import BY_AUTO
from stepscope.engines.local import default_workers, local_engine
from stepscope.engines.ray_engine import RAY, ray_engine
from stepscope.engines.tasks import Outcome, RankFailure, RankTask, analyse_rank, rank_tasks
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import Run
from stepscope.trace.remote import UrlRun

Progress = Callable[[], None]


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
    return reduce_ranks(run.name, tables, failures, rule, by)


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
]
