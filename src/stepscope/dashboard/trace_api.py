"""The trace viewer's routes (docs/dashboard.md, "Trace viewer API").

Queries run in the server process on the memory-mapped index (fast, no profile loaded);
details, flows and exports go to ``profile_jobs``'s worker. Parameters are parsed here
into integers; the viewer's own ValueErrors (a negative time, an end before the start)
become 400 answers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from stepscope.dashboard.analysis_cache import Ready
from stepscope.dashboard.profile_jobs import event_json, export_range
from stepscope.dashboard.worker import INDEX_FOLDER
from stepscope.errors import StepscopeError
from stepscope.viewer import TraceIndex, find, query, summarize

EXPORTS_FOLDER = "exports"
# Indexes kept open (each is a set of memory maps: cheap, but not free).
KEPT_INDEXES = 16


class BadParameter(StepscopeError):
    """A parameter that is missing or not what it should be: 400."""


class Indexes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: OrderedDict[Path, TraceIndex] = OrderedDict()

    def get(self, folder: Path) -> TraceIndex:
        with self._lock:
            index = self._open.pop(folder, None)
            if index is None:
                index = TraceIndex.load(folder)
            self._open[folder] = index
            while len(self._open) > KEPT_INDEXES:
                self._open.popitem(last=False)
            return index


def _int(request: Request, name: str, default: int | None = None) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        if default is None:
            raise BadParameter(f"give {name} (an integer)")
        return default
    try:
        return int(value)
    except ValueError:
        raise BadParameter(f"{name} must be an integer, not {value!r}") from None


def _tracks(request: Request) -> list[int] | None:
    value = request.query_params.get("tracks")
    if not value:
        return None
    try:
        return [int(part) for part in value.split(",") if part]
    except ValueError:
        raise BadParameter(f"tracks must be comma-separated integers, not {value!r}") from None


def _ready(request: Request) -> tuple[Ready, Path] | Response:
    """The finished analysis of the requested profile, or the answer to give instead."""
    from stepscope.dashboard.app import analysis_status

    status = analysis_status(request)
    if isinstance(status, Response):
        return status
    return status, status.folder / INDEX_FOLDER


def _index(request: Request) -> TraceIndex | Response:
    found = _ready(request)
    if isinstance(found, Response):
        return found
    return request.app.state.indexes.get(found[1])


def _viewer_errors(function):
    """ValueError from the viewer (a bad range, an unknown track) -> 400."""

    def endpoint(request: Request) -> Response:
        try:
            return function(request)
        except ValueError as error:
            return JSONResponse({"error": str(error)}, status_code=400)

    endpoint.__name__ = function.__name__
    return endpoint


@_viewer_errors
def trace_tracks(request: Request) -> Response:
    index = _index(request)
    return index if isinstance(index, Response) else JSONResponse(index.tracks_json())


@_viewer_errors
def trace_query(request: Request) -> Response:
    index = _index(request)
    if isinstance(index, Response):
        return index
    answer = query(
        index,
        _int(request, "start_ps"),
        _int(request, "end_ps"),
        _int(request, "width_px"),
        tracks=_tracks(request),
        name_filter=request.query_params.get("filter") or None,
    )
    return Response(answer, media_type="application/octet-stream", headers={"Cache-Control": "no-store"})


@_viewer_errors
def trace_find(request: Request) -> Response:
    index = _index(request)
    if isinstance(index, Response):
        return index
    text = request.query_params.get("text", "")
    after_ps = request.query_params.get("after_ps")
    after_id = request.query_params.get("after_id")
    match = find(
        index,
        text,
        after_ps=_int(request, "after_ps") if after_ps else None,
        before=request.query_params.get("before") in ("1", "true"),
        after_id=_int(request, "after_id") if after_id else None,
    )
    return JSONResponse({"match": match.to_json() if match else None})


@_viewer_errors
def trace_summary(request: Request) -> Response:
    index = _index(request)
    if isinstance(index, Response):
        return index
    result = summarize(index, _int(request, "start_ps"), _int(request, "end_ps"), _tracks(request), request.query_params.get("filter") or None)
    return JSONResponse(result)


@_viewer_errors
def trace_event(request: Request) -> Response:
    found = _ready(request)
    if isinstance(found, Response):
        return found
    host = request.app.state.dashboard.host(request)
    return JSONResponse(request.app.state.profile_jobs.run(event_json, str(host.path), str(found[1]), _int(request, "id")))


@_viewer_errors
def trace_export(request: Request) -> Response:
    found = _ready(request)
    if isinstance(found, Response):
        return found
    ready, _ = found
    start_ps, end_ps = _int(request, "start_ps"), _int(request, "end_ps")
    if start_ps < 0 or end_ps < start_ps:
        raise BadParameter("give 0 <= start_ps <= end_ps")
    host = request.app.state.dashboard.host(request)
    target = ready.folder.parent / f"{ready.folder.name}.{EXPORTS_FOLDER}" / f"{start_ps}_{end_ps}.json.gz"
    target.parent.mkdir(exist_ok=True)
    request.app.state.profile_jobs.run(export_range, str(host.path), start_ps, end_ps, str(target))
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{request.query_params['run']}_{host.name}_{start_ps}_{end_ps}")
    return FileResponse(target, media_type="application/gzip", filename=f"{name}.json.gz")


ROUTES = [
    Route("/api/trace/tracks", trace_tracks),
    Route("/api/trace/query", trace_query),
    Route("/api/trace/find", trace_find),
    Route("/api/trace/summary", trace_summary),
    Route("/api/trace/event", trace_event),
    Route("/api/trace/export", trace_export),
]
