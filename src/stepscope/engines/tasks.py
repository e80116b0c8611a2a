"""The unit of work an engine runs: one rank's file -> its tables (or why not).

Everything here crosses a process (or, with a cluster engine, a machine) boundary, so it
is small and picklable: the task names a file, the outcome is ``RankTables`` (kilobytes)
or a ``RankFailure`` (a line of text: some exceptions do not unpickle intact).
"""

from __future__ import annotations

from dataclasses import dataclass

from stepscope.analysis.distributed import RankTables, rank_tables
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import Run
from stepscope.trace.readers import load
from stepscope.trace.remote import UrlRun


@dataclass(frozen=True)
class RankTask:
    """What a worker needs to analyse one rank: where the file is and its name in the run."""

    path: str
    host: str  # the run's host name for the file (``logdir.Host.name``)


@dataclass(frozen=True)
class RankFailure:
    """A rank whose file could not be analysed, and the one-line reason."""

    path: str
    error: str

    @property
    def message(self) -> str:
        return self.error if self.error.startswith(self.path) else f"{self.path}: {self.error}"


Outcome = RankTables | RankFailure


def rank_tasks(run: Run | UrlRun) -> list[RankTask]:
    """One task per host file of the run (a path, or a URL that ``load`` reads through fsspec)."""
    return [RankTask(str(host.path), host.name) for host in run.hosts]


def analyse_rank(task: RankTask) -> Outcome:
    """The map step: load, build the OpStats, keep the tables; a bad file is a RankFailure."""
    try:
        profile = load(task.path)
    except StepscopeError as error:
        return RankFailure(task.path, str(error))
    return rank_tables(profile, task.host)
