"""Engines: where the map of a many-rank analysis runs (a registry, name -> engine).

An engine takes the rank tasks (``tasks.RankTask``: a file each) and returns each task's
outcome (``tasks.analyse_rank``: the rank's tables, or why not), in task order, calling
``progress`` once per finished rank. The reduce always runs on the caller's side
(``analyse_run``), so the caller never holds a rank's events. ``local`` is a process pool
(``local``); a cluster engine (Ray) registers itself here under its name with the same
signature, and ``stepscope distributed --engine NAME`` (later the dashboard) picks it by
name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Protocol

from stepscope.analysis.distributed import DEFAULT_RULE, DistributedResult, RankTables, Rule, reduce_ranks
from stepscope.engines.local import local_engine
from stepscope.engines.tasks import Outcome, RankFailure, RankTask, analyse_rank, rank_tasks
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import Run

Progress = Callable[[], None]


class Engine(Protocol):
    def __call__(self, tasks: Sequence[RankTask], workers: int, progress: Progress) -> list[Outcome]: ...


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


def default_workers(tasks: int) -> int:
    """One per core, at most one per rank."""
    return max(1, min(tasks, os.cpu_count() or 1))


def _no_progress() -> None:
    pass


def analyse_run(
    run: Run, engine_name: str = LOCAL, workers: int | None = None, progress: Progress = _no_progress, rule: Rule = DEFAULT_RULE
) -> DistributedResult:
    """Map the run's ranks on the named engine, reduce them here."""
    tasks = rank_tasks(run)
    outcomes = engine(engine_name)(tasks, workers if workers is not None else default_workers(len(tasks)), progress)
    tables = [outcome for outcome in outcomes if isinstance(outcome, RankTables)]
    failures = [outcome.message for outcome in outcomes if isinstance(outcome, RankFailure)]
    return reduce_ranks(run.name, tables, failures, rule)


register_engine(LOCAL, local_engine)

__all__ = ["ENGINES", "LOCAL", "Engine", "RankFailure", "RankTask", "analyse_rank", "analyse_run", "default_workers", "engine", "rank_tasks", "register_engine"]
