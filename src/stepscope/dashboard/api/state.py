"""The dashboard's state (``app.state.dashboard``: the logdir's runs, the analysis cache,
the captures) and the lookups every route makes with it: a request's run and host, its
tool, the finished analysis of its profile. Shared by the app's routes
(:mod:`stepscope.dashboard.api.app`) and the trace viewer's (:mod:`stepscope.dashboard.api.trace_api`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request

from stepscope.analysis import tool_names
from stepscope.dashboard.api_errors import AnalysisPending, NotFound, ProfileFailed
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache, Failed, Pending, Ready
from stepscope.dashboard.jobs.captures import Captures
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import Discovery, Host, Run, Skipped, find_profiles

# How long a listing of the logdir is reused: a burst of requests walks the folder once,
# and a new run still shows within a second.
DISCOVERY_TTL_S = 1.0


@dataclass
class Dashboard:
    logdir: Path
    cache: AnalysisCache
    captures: Captures

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._listing: tuple[float, Discovery] = (0.0, Discovery([], []))

    def listing(self) -> Discovery:
        """The logdir's servable runs and the files skipped, listed at most once a second."""
        with self._lock:
            taken, found = self._listing
            if time.monotonic() - taken > DISCOVERY_TTL_S:
                found = servable_runs(self.logdir)
                self._listing = (time.monotonic(), found)
            return found

    def runs(self) -> list[Run]:
        return self.listing().runs

    def run(self, request: Request, name: str = "run") -> Run:
        """The run named by the query parameter ``name`` (the distributed view's: a run)."""
        run_name = request.query_params.get(name)
        if not run_name:
            raise NotFound(f"give {name}")
        run = next((run for run in self.runs() if run.name == run_name), None)
        if run is None:
            raise NotFound(f"no run named {run_name!r}")
        return run

    def host(self, request: Request, names: tuple[str, str] = ("run", "host")) -> Host:
        """The request's run and host, given in the query parameters ``names`` (the
        compare view names two: ``base_run`` and ``base_host`` beside them)."""
        run_param, host_param = names
        run_name, host_name = request.query_params.get(run_param), request.query_params.get(host_param)
        if not run_name or not host_name:
            raise NotFound(f"give {run_param} and {host_param}")
        run = next((run for run in self.runs() if run.name == run_name), None)
        if run is None:
            raise NotFound(f"no run named {run_name!r}")
        host = run.host(host_name)
        if host is None:
            raise NotFound(f"run {run_name!r} has no host {host_name!r}")
        return host

    def tool(self, request: Request) -> str:
        name = request.query_params.get("tool", "")
        if name not in dashboard_tools():
            raise NotFound(f"unknown tool {name!r} (tools: {', '.join(dashboard_tools())})")
        return name


def servable_runs(logdir: Path) -> Discovery:
    """The runs of ``logdir`` the dashboard serves: each with the hosts whose file (through
    symlinks) lies inside it, runs left with none left out; none for an empty logdir (runs
    appear later) or one that is not there. The files left out are listed with the reason."""
    try:
        found = find_profiles(logdir)
    except StepscopeError:
        return Discovery([], [])
    root = Path(logdir).resolve()
    runs, skipped = [], list(found.skipped)
    for run in found.runs:
        inside = [host for host in run.hosts if host.path.resolve().is_relative_to(root)]
        skipped.extend(Skipped(host.path, "lies outside the log directory (through a link)") for host in run.hosts if host not in inside)
        if inside:
            runs.append(Run(run.name, run.path, inside))
    return Discovery(runs, sorted(skipped, key=lambda entry: entry.path))


def dashboard_tools() -> list[str]:
    """Every tool of the registry, of every output kind, in menu order."""
    return tool_names(None)


def analysis_status(request: Request, names: tuple[str, str] = ("run", "host")) -> Ready:
    """The finished analysis of the requested run/host (``names``: as ``Dashboard.host``).
    Raises ``AnalysisPending`` (202 with progress) while it runs, ``ProfileFailed`` (422)
    when the profile cannot be read, ``NotFound`` for an unknown run or host."""
    dashboard: Dashboard = request.app.state.dashboard
    status = dashboard.cache.status(dashboard.host(request, names).path)
    if isinstance(status, Pending):
        raise AnalysisPending(status.progress.to_json())
    if isinstance(status, Failed):
        raise ProfileFailed(status.message)
    return status
