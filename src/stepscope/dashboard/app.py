"""The dashboard's HTTP application: the JSON API of docs/dashboard.md and the built page.

Runs and hosts are looked up by name among what ``discover`` finds in the logdir and
served only when their file resolves inside it; a request parameter is never joined to a
path. Every error is ``{"error": "<one line>"}``, and one bad profile never stops the
others from being served.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from stepscope.analysis import tool_names
from stepscope.dashboard import trace_api
from stepscope.dashboard.analysis_cache import AnalysisCache, Failed, Pending, Ready
from stepscope.dashboard.captures import CaptureRequest, Captures
from stepscope.dashboard.profile_jobs import ProfileJobs
from stepscope.dashboard.security import STATE_CHANGING_METHODS, Access, Guard, state_changing
from stepscope.dashboard.worker import TRACE_VIEWER, table_from_json
from stepscope.errors import StepscopeError
from stepscope.render.formats import table_csv
from stepscope.trace.logdir import Host, Run, discover

STATIC_DIR = Path(__file__).parent / "static"
# How long a listing of the logdir is reused: a burst of requests walks the folder once,
# and a new run still shows within a second.
DISCOVERY_TTL_S = 1.0
NOT_BUILT = "stepscope's web page is not built: run `make web` (or `cd web && npm ci && npm run build`) and reload.\n"


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class NotFound(StepscopeError):
    """An unknown run, host, tool or table: 404."""


@dataclass
class Dashboard:
    logdir: Path
    cache: AnalysisCache
    captures: Captures

    def __post_init__(self) -> None:
        self._root = self.logdir.resolve()
        self._lock = threading.Lock()
        self._listing: tuple[float, list[Run]] = (0.0, [])

    def runs(self) -> list[Run]:
        with self._lock:
            taken, runs = self._listing
            if time.monotonic() - taken > DISCOVERY_TTL_S:
                try:
                    found = discover(self.logdir)
                except StepscopeError:  # an empty logdir is fine: runs appear later
                    found = []
                runs = [run for run in (self._inside(run) for run in found) if run.hosts]
                self._listing = (time.monotonic(), runs)
            return runs

    def _inside(self, run: Run) -> Run:
        """The run without hosts whose file (through symlinks) lies outside the logdir."""
        inside = [host for host in run.hosts if host.path.resolve().is_relative_to(self._root)]
        return Run(run.name, run.path, inside)

    def host(self, request: Request) -> Host:
        run_name, host_name = request.query_params.get("run"), request.query_params.get("host")
        if not run_name or not host_name:
            raise NotFound("give run and host")
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


def dashboard_tools() -> list[str]:
    """The analysis tools, then the trace viewer (its data: the index's tracks)."""
    return [*tool_names(), TRACE_VIEWER]


def analysis_status(request: Request) -> Ready | Response:
    """The finished analysis of the requested run/host, or the answer to give instead:
    202 with progress while it runs, 422 when the profile cannot be read."""
    dashboard: Dashboard = request.app.state.dashboard
    status = dashboard.cache.status(dashboard.host(request).path)
    if isinstance(status, Pending):
        return JSONResponse(status.progress.to_json(), status_code=202)
    if isinstance(status, Failed):
        return error(422, status.message)
    return status


def _ready(dashboard: Dashboard, request: Request) -> tuple[Ready, str] | Response:
    tool = dashboard.tool(request)
    status = analysis_status(request)
    return status if isinstance(status, Response) else (status, tool)


def _tool_file(path: Path) -> Response:
    """A cached result file; a tool that failed left ``{"error": ...}`` there (500)."""
    data = path.read_bytes()
    failed = data.startswith(b'{"error":')
    return Response(data, status_code=500 if failed else 200, media_type="application/json")


def api_runs(request: Request) -> Response:
    dashboard: Dashboard = request.app.state.dashboard
    runs = [{"name": run.name, "hosts": [host.name for host in run.hosts]} for run in dashboard.runs()]
    return JSONResponse({"logdir": str(dashboard.logdir), "runs": runs})


def api_tools(request: Request) -> Response:
    request.app.state.dashboard.host(request)
    return JSONResponse({"tools": dashboard_tools()})


def api_data(request: Request) -> Response:
    found = _ready(request.app.state.dashboard, request)
    return found if isinstance(found, Response) else _tool_file(found[0].tool_file(found[1]))


def api_tables(request: Request) -> Response:
    found = _ready(request.app.state.dashboard, request)
    return found if isinstance(found, Response) else _tool_file(found[0].tables_file(found[1]))


def api_csv(request: Request) -> Response:
    found = _ready(request.app.state.dashboard, request)
    if isinstance(found, Response):
        return found
    ready, tool = found
    document = json.loads(ready.tables_file(tool).read_bytes())
    if "error" in document:
        return error(500, document["error"])
    name = request.query_params.get("table", "")
    table = next((t for t in document["tables"] if t["name"] == name), None)
    if table is None:
        raise NotFound(f"tool {tool!r} has no table {name!r} (tables: {', '.join(t['name'] for t in document['tables'])})")
    parts = [request.query_params["run"], request.query_params["host"], tool, name]
    filename = "_".join(part.replace("/", "_") for part in parts) + ".csv"
    filename = "".join(c if c.isalnum() or c in "._-" else "_" for c in filename)
    return PlainTextResponse(
        table_csv(table_from_json(table)),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@state_changing  # POST of JSON from this server's own page only
async def api_capture_start(request: Request) -> Response:
    try:
        body = await request.json()
    except ValueError:
        return error(400, "the capture request is not valid JSON")
    job = request.app.state.dashboard.captures.start(CaptureRequest.from_json(body))
    return JSONResponse({"id": job.id}, status_code=202)


def api_capture_status(request: Request) -> Response:
    job = request.app.state.dashboard.captures.get(request.path_params["id"])
    if job is None:
        raise NotFound(f"no capture {request.path_params['id']!r}")
    return JSONResponse(job.to_json())


def page(request: Request) -> Response:
    index = STATIC_DIR / "index.html"
    if not index.exists():
        return PlainTextResponse(NOT_BUILT, status_code=503)
    return FileResponse(index, headers={"Cache-Control": "no-cache"})


async def not_found(request: Request, exc: Exception) -> Response:
    return error(404, str(exc))


async def bad_request(request: Request, exc: Exception) -> Response:
    return error(400, str(exc))


async def unknown_api(request: Request) -> Response:
    return error(404, f"no API {request.url.path!r} (see docs/dashboard.md)")


def create_app(logdir: Path, cache: AnalysisCache, access: Access | None = None) -> Starlette:
    """The application for ``logdir``. ``access`` says which Host names are answered and
    whether a token is needed (default: a server on 127.0.0.1, no token); see
    ``stepscope.dashboard.security``."""
    dashboard = Dashboard(Path(logdir), cache, Captures(Path(logdir)))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        cache.close()
        app.state.profile_jobs.close()

    routes = [
        Route("/", page),
        Route("/api/runs", api_runs),
        Route("/api/tools", api_tools),
        Route("/api/data", api_data),
        Route("/api/tables", api_tables),
        Route("/api/csv", api_csv),
        Route("/api/capture", api_capture_start, methods=STATE_CHANGING_METHODS),
        Route("/api/capture/{id}", api_capture_status),
        *trace_api.ROUTES,
        Route("/api/{rest:path}", unknown_api),
    ]
    if STATIC_DIR.is_dir():  # the built page's assets (without a build, "/" says how to make one)
        routes.append(Mount("/", StaticFiles(directory=STATIC_DIR)))
    middleware = [Middleware(Guard, access=access or Access.for_bind("127.0.0.1", 0))]
    # Fast compression: trace answers are megabytes of floats on a local link.
    middleware.append(Middleware(GZipMiddleware, minimum_size=4096, compresslevel=1))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={NotFound: not_found, StepscopeError: bad_request},
        lifespan=lifespan,
    )
    app.state.dashboard = dashboard
    app.state.indexes = trace_api.Indexes()
    app.state.profile_jobs = ProfileJobs()
    app.state.exports = trace_api.Exports(cache.root.parent / trace_api.EXPORTS_FOLDER)
    return app
