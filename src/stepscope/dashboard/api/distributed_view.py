"""The distributed view of a run (``GET /api/distributed?run=R``; ``tool=distributed``
through ``/api/data``, ``/api/tables`` and ``/api/csv``): every host of the run a rank.

The distributed analysis is a map over ranks (one profile -> its ``RankTables``) and a
reduce. The dashboard already analyses each host in its analysis workers, with the
``OpStats`` every tool shares, so the map runs there: the worker leaves the rank's tables
beside the tools' results (``worker.RANK_FILE``, written by ``worker.write_rank_tables``), and the view
of a run is the reduce of its hosts' cached tables, done in the request's worker thread
(milliseconds for hundreds of ranks: a few numbers per step and per collective call); on
runs of a few ranks the job's critical path across them is added (``engines.with_job_paths``,
which loads each rank's profile again in that thread: tens of ms a rank). The
map is the local engine's own (``rank_tables``), so the answer is the one ``stepscope
distributed`` gives; a test checks that, number for number.

A host that failed to analyse is the reduce's failure line (the other ranks still show);
a run whose every host failed is one 422. The answer is kept per set of finished
analyses, so a rewritten profile (a new analysis key) is never answered from an old view.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path

import msgspec

from stepscope import jsonform
from stepscope.analysis.distributed import RankTables, reduce_ranks
from stepscope.analysis.distributed.reduce import BY_AUTO
from stepscope.dashboard.api_errors import AnalysisPending, ProfileFailed
from stepscope.dashboard.jobs.analysis_cache import Failed, Pending, Ready, Status
from stepscope.dashboard.jobs.profile_jobs import ProfileJobs, rank_tables_job
from stepscope.dashboard.jobs.worker import RANK_FILE, Progress, tables_json
from stepscope.engines import with_job_paths
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import Run

KEPT_VIEWS = 8  # runs' answers kept in the server's memory


def load_rank_tables(ready: Ready, host: str, path: Path, jobs: ProfileJobs) -> RankTables | str:
    """A host's cached rank tables, named as the run names it; the error line where its
    tables failed. A cache folder from before the file existed is filled in by the
    profile worker (which loads the profile once for it)."""
    if os.path.lexists(ready.folder / RANK_FILE):
        data = ready.read(RANK_FILE)
        if data.startswith(b'{"error":'):
            return str(json.loads(data)["error"])
        tables = msgspec.json.decode(data, type=RankTables)
    else:
        tables = jobs.run(f"the rank tables of {path}", rank_tables_job, str(path))
    named = tables.host or host
    devices = [dataclasses.replace(unit, host=unit.host or host, file_host=host) for unit in tables.devices]
    return dataclasses.replace(tables, host=named, file_host=host, devices=devices)


def pending_progress(statuses: list[Status]) -> Progress:
    """One progress for the run: the mean over its hosts (a finished one counts 1), and how
    many are done, with the first running host's own message."""
    done = sum(1 for status in statuses if not isinstance(status, Pending))
    running = [status.progress for status in statuses if isinstance(status, Pending)]
    fraction = (done + sum(progress.fraction for progress in running)) / len(statuses)
    state = "analysing" if any(progress.state != "queued" for progress in running) or done else "queued"
    return Progress(state, fraction, f"{done} of {len(statuses)} ranks analysed; {running[0].message}")


class DistributedViews:
    def __init__(self, jobs: ProfileJobs) -> None:
        self._jobs = jobs
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, ...], tuple[bytes, bytes]] = OrderedDict()

    def documents(self, run: Run, statuses: list[Status], by: str = BY_AUTO) -> tuple[bytes, bytes]:
        """(JSON, tables) of the run's distributed view; ``statuses``: its hosts' analyses,
        in ``run.hosts`` order; ``by``: the unit, a rank or each device of each (the cached
        tables hold both, ``RankTables.devices``). Raises AnalysisPending while any host is analysed, and
        ProfileFailed when no rank can be shown. Call from a worker thread."""
        done = [status for status in statuses if not isinstance(status, Pending)]
        if len(done) < len(statuses):
            raise AnalysisPending(pending_progress(statuses).to_json())
        key = (run.name, by, *(status.folder.name if isinstance(status, Ready) else f"failed:{status.message}" for status in done))
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        tables: list[RankTables] = []
        paths: list[str] = []
        failures: list[str] = []
        for host, status in zip(run.hosts, done, strict=True):
            found = status.message if isinstance(status, Failed) else load_rank_tables(status, host.name, host.path, self._jobs)
            if isinstance(found, str):
                failures.append(found)
            else:
                tables.append(found)
                paths.append(str(host.path))
        try:
            result = with_job_paths(reduce_ranks(run.name, tables, failures, by=by), paths, tables)
        except StepscopeError as error:
            raise ProfileFailed(str(error)) from None
        answer = (jsonform.encode(result.to_json()), jsonform.encode(tables_json(result.tables())))
        with self._lock:
            self._kept[key] = answer
            while len(self._kept) > KEPT_VIEWS:
                self._kept.popitem(last=False)
        return answer
