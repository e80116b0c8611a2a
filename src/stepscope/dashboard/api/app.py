"""The dashboard's HTTP application: the JSON API of docs/dashboard.md and the built page.

Runs and hosts are looked up by name among what ``discover`` finds in the logdir and
served only when their file resolves inside it; a request parameter is never joined to a
path. Every error is ``{"error": "<one line>"}``, and one bad profile never stops the
others from being served. The routes raise what they cannot answer (``api_errors``: not
found, a bad parameter, an analysis still running, a profile or job that failed; any other
StepscopeError is a bad request) and the handlers here turn it into the response.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from stepscope.analysis import Inputs, analysis_spec, analysis_specs, spec, specs
from stepscope.analysis.diff.compare import TOOL as DIFF
from stepscope.analysis.distributed import TOOL as DISTRIBUTED
from stepscope.analysis.distributed import UNIT_OPTION
from stepscope.analysis.distributed.reduce import BY_AUTO, UNITS
from stepscope.analysis.registry import OptionError, ToolsAnswer
from stepscope.analysis.tools.flame_graph import TOOL as FLAME_GRAPH
from stepscope.dashboard.api import trace_api
from stepscope.dashboard.api.diffs import Diffs
from stepscope.dashboard.api.distributed_view import DistributedViews
from stepscope.dashboard.api.responses import JsonResponse
from stepscope.dashboard.api.security import STATE_CHANGING_METHODS, Access, Guard, state_changing
from stepscope.dashboard.api.state import Dashboard, analysis_status
from stepscope.dashboard.api_errors import ApiError, BadParameter, NotFound, TooLarge
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache, CacheDamaged, Ready
from stepscope.dashboard.jobs.captures import CaptureRequest, Captures
from stepscope.dashboard.jobs.profile_jobs import ProfileJobs, flame_file
from stepscope.dashboard.jobs.tool_runs import ToolRuns
from stepscope.dashboard.jobs.worker import Progress, table_from_json
from stepscope.errors import StepscopeError
from stepscope.render.flame import COLLAPSED, FLAME_FORMATS, FLAME_SUFFIXES
from stepscope.render.formats import table_csv
from stepscope.sizes import size_text

STATIC_DIR = Path(__file__).parents[1] / "static"
# A capture request is a few numbers and at most captures.MAX_ADDRESSES host:port strings
# (a few kB); its body is refused past this before it is read whole.
MAX_CAPTURE_BODY = 64 << 10
NOT_BUILT = "stepscope's web page is not built: run `make web` (or `cd web && npm ci && npm run build`) and reload.\n"


def error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status_code=status)


def _ready(dashboard: Dashboard, request: Request) -> tuple[Ready, str]:
    """The requested tool and the finished analysis of the requested profile (raises the
    ApiError to answer instead)."""
    tool = dashboard.tool(request)
    return analysis_status(request), tool


def _options(tool: str, request: Request) -> dict[str, Any]:
    """The tool's options among the query parameters (the others are the route's own),
    typed by the registry; only those that differ from the defaults."""
    entry = spec(tool)
    given = {option.name: request.query_params[option.name] for option in entry.options if option.name in request.query_params}
    try:
        return entry.parse_options(given)
    except OptionError as error:
        raise BadParameter(str(error)) from None


# The query parameters naming the compare view's two profiles (run, host): the base is
# base_run/base_host; the new one is run/host in /api/tables and /api/csv (with tool=diff:
# the page's table component asks for them as for any tool), new_run/new_host in /api/diff.
BASE = ("base_run", "base_host")
NEW = ("new_run", "new_host")
CURRENT = ("run", "host")


def _diff_documents(request: Request, new_names: tuple[str, str] = CURRENT) -> tuple[bytes, bytes]:
    """The diff of base_run/base_host against the ``new_names`` run/host (``diffs``); each
    profile's analysis must be finished (202 with its progress while either runs). A
    missing name is 400 and an unknown one 404, each saying which side it is: never a
    diff against a run picked instead."""
    missing = [name for name in (*BASE, *new_names) if not request.query_params.get(name)]
    if missing:
        raise BadParameter(f"diff: give {', '.join(missing)} (base_run/base_host: the run and host to compare against)")
    dashboard: Dashboard = request.app.state.dashboard
    labels = []
    for names, side in ((BASE, "base"), (new_names, "new")):
        try:
            host = dashboard.host(request, names)
        except NotFound as error:
            raise NotFound(f"diff: the {side} profile ({names[0]}={request.query_params[names[0]]!r}): {error}") from None
        labels.append(f"{request.query_params[names[0]]}/{host.name}")
    base, new = analysis_status(request, BASE), analysis_status(request, new_names)
    diffs: Diffs = request.app.state.diffs
    return diffs.documents(base, new, labels[0], labels[1])


def _distributed_documents(request: Request) -> tuple[bytes, bytes]:
    """The distributed view of the request's run, every host a rank (``distributed_view``);
    202 with the run's progress while any host's analysis runs."""
    dashboard: Dashboard = request.app.state.dashboard
    run = dashboard.run(request)
    views: DistributedViews = request.app.state.distributed
    by = request.query_params.get(UNIT_OPTION, BY_AUTO)
    if by not in UNITS:
        raise BadParameter(f"by={by!r}: the unit is one of {', '.join(UNITS)}")
    return views.documents(run, [dashboard.cache.status(host.path) for host in run.hosts], by)


# How the dashboard answers each analysis over several profiles of the registry (by name):
# from what its analysis workers cached for each profile (the diff: the four tool results
# of both; the distributed view: every host's rank tables), so no profile is loaded again.
ANALYSIS_VIEWS: dict[str, Callable[[Request], tuple[bytes, bytes]]] = {
    DIFF: _diff_documents,
    DISTRIBUTED: _distributed_documents,
}


def _documents(request: Request) -> tuple[str, bytes, bytes]:
    """(tool, JSON, tables) of the request: the cached files at the default options, a run
    with the request's options otherwise (``tool_runs``); an analysis over several profiles
    (the registry's ``analysis_specs``) is its view's (``ANALYSIS_VIEWS``): ``tool=diff``
    (the compare view's tables and CSV), the diff of base_run/base_host against run/host;
    ``tool=distributed``, the run's distributed view (the host is not needed)."""
    entry = analysis_spec(request.query_params.get("tool", ""))
    if entry is not None:
        view = ANALYSIS_VIEWS.get(entry.name)
        if view is None:
            raise NotFound(f"{entry.name} is not served by the dashboard")
        return entry.name, *view(request)
    dashboard: Dashboard = request.app.state.dashboard
    ready, tool = _ready(dashboard, request)
    options = _options(tool, request)
    if not options:
        return tool, ready.tool_document(tool), ready.tables_document(tool)
    runs: ToolRuns = request.app.state.tool_runs
    document, tables = runs.documents(str(dashboard.host(request).path), ready.folder.name, tool, options)
    return tool, document, tables


def _tool_answer(data: bytes) -> Response:
    """A tool's document; a tool that failed left ``{"error": ...}`` there: 500, or the
    document's ``status`` (422: the tool rejected the profile, see ``worker``)."""
    status = _failure_status(json.loads(data)) if data.startswith(b'{"error":') else 200
    return Response(data, status_code=status, media_type="application/json")


def _failure_status(document: dict[str, object]) -> int:
    status = document.get("status")
    return status if isinstance(status, int) else 500


def api_runs(request: Request) -> Response:
    dashboard: Dashboard = request.app.state.dashboard
    found = dashboard.listing()
    runs = [{"name": run.name, "hosts": [host.name for host in run.hosts]} for run in found.runs]
    # Paths relative to the logdir the page already shows: nothing about the disk beyond it.
    skipped = [{"path": str(entry.path.relative_to(dashboard.logdir)), "why": entry.why} for entry in found.skipped]
    return JsonResponse({"logdir": str(dashboard.logdir), "runs": runs, "skipped": skipped})


def api_tools(request: Request) -> Response:
    """Every tool, and which have nothing to show for the host's profile (``ToolsAnswer``):
    known once its analysis is done (``checked``), which this request starts if nobody has.
    The analyses over several profiles are listed apart (``analyses``); one of a run (the
    distributed view) is the run's: a run of several hosts has ranks to compare."""
    dashboard: Dashboard = request.app.state.dashboard
    run, status = dashboard.run(request), dashboard.cache.status(dashboard.host(request).path)
    unavailable, checked = {}, isinstance(status, Ready)
    if isinstance(status, Ready):
        try:
            unavailable = status.unavailable()
        except CacheDamaged as damaged:  # analysed again; the page asks again after its data
            dashboard.cache.discard(damaged.folder)
            checked = False
    if len(run.hosts) > 1:
        for entry in analysis_specs(Inputs.RUN):
            unavailable.pop(entry.name, None)
    return JsonResponse(
        ToolsAnswer(
            tools=[entry.to_json() for entry in specs()],
            analyses=[entry.to_json() for entry in analysis_specs()],
            unavailable=unavailable,
            checked=checked,
        )
    )


def api_data(request: Request) -> Response:
    return _tool_answer(_documents(request)[1])


def api_diff(request: Request) -> Response:
    """``/api/diff?base_run=&base_host=&new_run=&new_host=``: the diff's JSON, as
    ``stepscope diff --format json`` gives it (its "diff" value)."""
    return _tool_answer(_diff_documents(request, NEW)[0])


def api_distributed(request: Request) -> Response:
    """``/api/distributed?run=R[&by=device]``: the run's distributed view, as ``stepscope distributed
    --format json`` gives it."""
    return _tool_answer(_distributed_documents(request)[0])


def api_tables(request: Request) -> Response:
    return _tool_answer(_documents(request)[2])


def api_csv(request: Request) -> Response:
    tool, _, tables = _documents(request)
    document = json.loads(tables)
    if "error" in document:
        return error(_failure_status(document), document["error"])
    name = request.query_params.get("table", "")
    table = next((t for t in document["tables"] if t["name"] == name), None)
    if table is None:
        raise NotFound(f"tool {tool!r} has no table {name!r} (tables: {', '.join(t['name'] for t in document['tables'])})")
    # An analysis of a run (the distributed view) is the run's, not one host's.
    entry = analysis_spec(tool)
    host = "" if entry is not None and entry.inputs is Inputs.RUN else request.query_params.get("host", "")
    parts = [request.query_params["run"], host, tool, name]
    filename = "_".join(part.replace("/", "_") for part in parts if part) + ".csv"
    filename = "".join(c if c.isalnum() or c in "._-" else "_" for c in filename)
    return PlainTextResponse(
        table_csv(table_from_json(table)),
        media_type="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def api_flame(request: Request) -> Response:
    """The flame graph tool's stacks as a file to download (``stepscope flame``'s): ``format``
    collapsed (the default) or speedscope, for the tool's options (thread, step, window).
    The profile worker makes it; a bad option is 400 naming it."""
    form = request.query_params.get("format") or COLLAPSED
    if form not in FLAME_FORMATS:
        raise BadParameter(f"format must be one of {', '.join(FLAME_FORMATS)}, not {form[:40]!r}")
    options = _options(FLAME_GRAPH, request)
    dashboard: Dashboard = request.app.state.dashboard
    host = dashboard.host(request)
    jobs: ProfileJobs = request.app.state.profile_jobs
    try:
        data = jobs.run(f"flame graph of {host.path}", flame_file, str(host.path), form, options)
    except ApiError:
        raise
    except StepscopeError as error:
        raise BadParameter(str(error)) from None
    parts = [request.query_params["run"], host.name, FLAME_GRAPH, *(str(value) for value in options.values())]
    filename = "".join(c if c.isalnum() or c in "._-" else "_" for c in "_".join(parts)) + FLAME_SUFFIXES[form]
    return Response(data, media_type="application/octet-stream", headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@state_changing  # POST of JSON from this server's own page only
async def api_capture_start(request: Request) -> Response:
    access: Access = request.app.state.access
    if not access.captures:
        return error(
            403,
            "captures are off: this TensorBoard listens beyond loopback with no access control, so anyone who reaches it "
            "could start one; start tensorboard with --stepscope_captures to allow them (docs/security.md)",
        )
    body = await _json_body(request, MAX_CAPTURE_BODY, "the capture request")
    job = request.app.state.dashboard.captures.start(CaptureRequest.from_json(body))
    return JsonResponse({"id": job.id}, status_code=202)


async def _json_body(request: Request, limit: int, what: str) -> Any:
    """The request's JSON body, read no further than ``limit`` bytes (413 past it: a body
    is never held whole before it is known to be small) and decoded without a traceback
    (400 for invalid JSON and for JSON nested past the decoder's recursion limit)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"{what} is {size_text(int(declared))}, more than {size_text(limit)}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise TooLarge(f"{what} is more than {size_text(limit)}")
    try:
        return json.loads(body)
    except RecursionError:
        raise BadParameter(f"{what} is nested too deeply") from None
    except ValueError:
        raise BadParameter(f"{what} is not valid JSON") from None


def api_capture_status(request: Request) -> Response:
    job = request.app.state.dashboard.captures.get(request.path_params["id"])
    if job is None:
        raise NotFound(f"no capture {request.path_params['id']!r}")
    return JsonResponse(job.to_json())


def page(request: Request) -> Response:
    index = STATIC_DIR / "index.html"
    if not index.exists():
        return PlainTextResponse(NOT_BUILT, status_code=503)
    return FileResponse(index, headers={"Cache-Control": "no-cache"})


async def api_error(request: Request, exc: ApiError) -> Response:
    """What a route raised as its answer (``api_errors``): its status and JSON body."""
    return JsonResponse(exc.body, status_code=exc.status)


async def damaged_cache(request: Request, exc: Exception) -> Response:
    """A cached analysis found damaged while answering (``analysis_cache.CacheDamaged``):
    the folder goes, and the answer is the one of a profile being analysed (202), which the
    page polls until the new analysis is ready."""
    assert isinstance(exc, CacheDamaged)
    request.app.state.dashboard.cache.discard(exc.folder)
    return JsonResponse(Progress("queued", 0.0, str(exc)).to_json(), status_code=202)


async def bad_request(request: Request, exc: Exception) -> Response:
    """Any other StepscopeError (a capture request that is not valid, ...): 400."""
    return error(400, str(exc))


async def unknown_api(request: Request) -> Response:
    return error(404, f"no API {request.url.path!r} (see docs/dashboard.md)")


def create_app(logdir: Path, cache: AnalysisCache, access: Access | None = None) -> Starlette:
    """The application for ``logdir``. ``access`` says which Host names are answered and
    whether a token is needed (default: a server on 127.0.0.1, no token); see
    ``stepscope.dashboard.api.security``."""
    dashboard = Dashboard(Path(logdir), cache, Captures(Path(logdir)))
    # The workers read profiles inside the logdir only, checked on the file they open.
    cache.confine_to(dashboard.logdir)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The first analysis worker starts and warms up while the page starts: the first
        # profile opened waits 0.1-0.2 s, not the 0.7-1.0 s of a worker started for it
        # (the shared TPU XSpace, measured when the reader still loaded numba; the warm-up
        # now saves the ~0.35 s of a worker's imports).
        cache.prestart()
        yield
        cache.close()
        app.state.profile_jobs.close()

    access = access or Access.for_bind("127.0.0.1", 0)
    routes: list[BaseRoute] = [
        Route("/", page),
        # The page's own name: TensorBoard cannot route its plugin's folder ("/data/plugin/
        # stepscope/" is matched without its slash), so there the page is index.html.
        Route("/index.html", page),
        Route("/api/runs", api_runs),
        Route("/api/tools", api_tools),
        Route("/api/data", api_data),
        Route("/api/diff", api_diff),
        Route("/api/distributed", api_distributed),
        Route("/api/tables", api_tables),
        Route("/api/csv", api_csv),
        Route("/api/flame", api_flame),
        Route("/api/capture", api_capture_start, methods=STATE_CHANGING_METHODS),
        Route("/api/capture/{id}", api_capture_status),
        *trace_api.ROUTES,
        Route("/api/{rest:path}", unknown_api),
    ]
    if STATIC_DIR.is_dir():  # the built page's assets (without a build, "/" says how to make one)
        routes.append(Mount("/", StaticFiles(directory=STATIC_DIR)))
    middleware = [Middleware(Guard, access=access)]
    # Fast compression: trace answers are megabytes of floats on a local link.
    middleware.append(Middleware(GZipMiddleware, minimum_size=4096, compresslevel=1))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        # The most specific class's handler answers: ApiError's before StepscopeError's.
        # (Starlette types a handler as taking any Exception; each is registered for its own class.)
        exception_handlers={ApiError: api_error, CacheDamaged: damaged_cache, StepscopeError: bad_request},  # type: ignore[dict-item]
        lifespan=lifespan,
    )
    app.state.dashboard = dashboard
    app.state.access = access
    app.state.indexes = trace_api.Indexes()
    app.state.profile_jobs = ProfileJobs(confine=dashboard.logdir, stores=cache.stores)
    app.state.tool_runs = ToolRuns(app.state.profile_jobs)
    app.state.diffs = Diffs()
    app.state.distributed = DistributedViews(app.state.profile_jobs)
    app.state.exports = trace_api.Exports(cache.root.parent / trace_api.EXPORTS_FOLDER)
    return app
