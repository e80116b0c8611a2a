"""The trace viewer's routes (docs/dashboard.md, "Trace viewer API").

Queries run in the server process on the memory-mapped index (fast, no profile loaded);
details, flows and exports go to ``profile_jobs``'s worker. Parameters are parsed here
into integers, strictly (ASCII digits, within int64, else 400 naming the parameter); the
viewer's own ValueErrors (a negative time, an end before the start) become 400 answers.
What a route cannot answer is raised (``api_errors``) and answered by the app's handler.

Exports are clamped to the profile's span and cached by the clamped range, so every range
that covers the whole profile is one file; the files share a size budget (``Exports``).
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from stepscope.dashboard.api.responses import JsonResponse
from stepscope.dashboard.api.state import analysis_status
from stepscope.dashboard.api_errors import BadParameter, JobFailed
from stepscope.dashboard.jobs.analysis_cache import CacheDamaged, Ready
from stepscope.dashboard.jobs.profile_jobs import event_json, export_range
from stepscope.dashboard.jobs.worker import INDEX_FOLDER
from stepscope.sizes import size_setting, size_text
from stepscope.viewer import TraceIndex, find, query, summarize
from stepscope.viewer.storage import IndexFormatError

EXPORTS_FOLDER = "exports"  # <cache>/exports/<analysis key>.<start_ps>_<end_ps><suffix>


@dataclass(frozen=True)
class ExportFormat:
    """What ``/api/trace/export?format=<name>`` answers: the file's suffix (which picks
    ``trace.writers``' writer) and its media type."""

    suffix: str
    media_type: str


# format= -> the export's file: Chrome trace JSON (gzipped) by default, or Perfetto's own
# protobuf trace, which Perfetto opens without converting and which is several times smaller.
EXPORT_FORMATS = {
    "json": ExportFormat(".json.gz", "application/gzip"),
    "pftrace": ExportFormat(".pftrace", "application/octet-stream"),
}
DEFAULT_EXPORT_FORMAT = "json"
EXPORT_SUFFIXES = tuple(form.suffix for form in EXPORT_FORMATS.values())
# The setting (environment variable) for the exports' size budget ("2G", bytes, "none").
EXPORT_BUDGET_SETTING = "STEPSCOPE_EXPORT_CACHE"
# Room for a few exports of a large range of a large profile (a 10M-event profile's
# whole export is a few hundred MB gzipped), and small beside the analysis cache.
DEFAULT_EXPORT_BUDGET = 1 << 30
# A temporary export file older than this was left by a worker that was killed.
STALE_TEMPORARY_S = 3600
CHUNK_BYTES = 1 << 20
# Indexes kept open (each is a set of memory maps: cheap, but not free).
KEPT_INDEXES = 16
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_INTEGER = re.compile(r"-?[0-9]{1,19}")


class Indexes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: OrderedDict[Path, TraceIndex] = OrderedDict()

    def get(self, folder: Path) -> TraceIndex:
        with self._lock:
            index = self._open.pop(folder, None)
            if index is None:
                try:
                    index = TraceIndex.load(folder)
                except (IndexFormatError, KeyError, TypeError) as error:  # a damaged manifest: KeyError, TypeError
                    raise CacheDamaged(folder.parent, f"{folder.name}: {error}") from None
            self._open[folder] = index
            while len(self._open) > KEPT_INDEXES:
                self._open.popitem(last=False)
            return index


class Exports:
    """The export files of every profile in one folder, under a size budget: when a new
    file takes the folder past it, the least recently used files go (a served file is
    touched, so "used" is its modification time, which survives a restart and is shared
    with other servers on the same cache). A file being streamed is never removed: the
    answer opens it before anything is evicted and holds it until sent, and eviction
    passes over the files this server has open. Files are written atomically (``save``
    renames a finished temporary file into place), so a reader never sees half of one.

    ``budget``: bytes (None: ``STEPSCOPE_EXPORT_CACHE``, else ``DEFAULT_EXPORT_BUDGET``;
    0: no budget).
    """

    def __init__(self, root: Path, budget: int | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.budget = size_setting(EXPORT_BUDGET_SETTING, DEFAULT_EXPORT_BUDGET) if budget is None else budget or None
        self._lock = threading.Lock()
        self._open: collections.Counter[Path] = collections.Counter()
        # Before the budget, each profile had a <key>.exports folder beside its analysis,
        # never cleaned: those go.
        for legacy in (self.root.parent / "analysis").glob(f"*.{EXPORTS_FOLDER}"):
            shutil.rmtree(legacy, ignore_errors=True)

    def path(self, key: str, start_ps: int, end_ps: int, suffix: str = EXPORT_FORMATS[DEFAULT_EXPORT_FORMAT].suffix) -> Path:
        return self.root / f"{key}.{start_ps}_{end_ps}{suffix}"

    def open(self, path: Path) -> OpenExport | None:
        """The file, opened and marked used (None when it is not there)."""
        with self._lock:
            try:
                stream = open(path, "rb")  # noqa: SIM115 - OpenExport streams it to the response and closes it when done
            except FileNotFoundError:
                return None
            with contextlib.suppress(OSError):
                os.utime(path)
            self._open[path] += 1
            return OpenExport(self, path, stream)

    def _closed(self, path: Path) -> None:
        with self._lock:
            self._open[path] -= 1
            if self._open[path] <= 0:
                del self._open[path]

    def evict(self) -> None:
        """Removes least recently used files until the folder fits the budget (files in
        use stay, even if they alone are over it), and stale temporary files."""
        if self.budget is None:
            return
        with self._lock:
            files, now = [], time.time()
            for entry in os.scandir(self.root):
                with contextlib.suppress(OSError):
                    stat = entry.stat()
                    if entry.name.endswith(EXPORT_SUFFIXES) and not entry.name.startswith("."):
                        files.append((stat.st_mtime_ns, stat.st_size, Path(entry.path)))
                    elif entry.name.startswith(".") and now - stat.st_mtime > STALE_TEMPORARY_S:
                        os.unlink(entry.path)
            total = sum(size for _, size, _ in files)
            for _, size, path in sorted(files):
                if total <= self.budget:
                    break
                if self._open[path]:
                    continue
                with contextlib.suppress(FileNotFoundError, PermissionError):  # Windows: open elsewhere
                    path.unlink()
                    total -= size

    def describe(self) -> str:
        return size_text(self.budget) if self.budget else "no budget"


class OpenExport:
    """An export file held open for an answer: its chunks, then closed. Closed also when
    the answer is dropped unsent (a client that went away), so the file can be evicted."""

    def __init__(self, exports: Exports, path: Path, stream: BinaryIO) -> None:
        self.exports, self.path, self.file = exports, path, stream
        self.size = os.fstat(stream.fileno()).st_size

    def __iter__(self) -> Iterator[bytes]:
        try:
            while chunk := self.file.read(CHUNK_BYTES):
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        if not self.file.closed:
            self.file.close()
            self.exports._closed(self.path)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _int(request: Request, name: str, default: int | None = None) -> int:
    """The parameter as an integer: ASCII digits with an optional "-", within int64."""
    value = request.query_params.get(name)
    if value is None or value == "":
        if default is None:
            raise BadParameter(f"give {name} (an integer)")
        return default
    return _integer(name, value)


def _integer(name: str, value: str) -> int:
    if _INTEGER.fullmatch(value) and INT64_MIN <= (number := int(value)) <= INT64_MAX:
        return number
    raise BadParameter(f"{name} must be an integer from -2^63 to 2^63-1, not {_shown(value)!r}")


def _shown(value: str) -> str:
    """A parameter's value as an error quotes it: at most 40 characters of it."""
    return value if len(value) <= 40 else f"{value[:40]}... ({len(value)} characters)"


def _tracks(request: Request) -> list[int] | None:
    value = request.query_params.get("tracks")
    if not value:
        return None
    try:
        return [_integer("tracks", part) for part in value.split(",") if part]
    except BadParameter:
        raise BadParameter(f"tracks must be comma-separated integers, not {_shown(value)!r}") from None


def _ready(request: Request) -> tuple[Ready, Path]:
    """The finished analysis of the requested profile and its index's folder (raises the
    ApiError to answer instead: not found, still running, failed)."""
    status = analysis_status(request)
    return status, status.folder / INDEX_FOLDER


def _index(request: Request) -> TraceIndex:
    index: TraceIndex = request.app.state.indexes.get(_ready(request)[1])
    return index


def _viewer_errors(function: Callable[[Request], Response]) -> Callable[[Request], Response]:
    """ValueError from the viewer (a bad range, an unknown track) -> BadParameter (400).
    (A job whose worker died or ran out of memory raises JobFailed: 422.)"""

    def endpoint(request: Request) -> Response:
        try:
            return function(request)
        except ValueError as error:
            raise BadParameter(str(error)) from error

    endpoint.__name__ = function.__name__
    return endpoint


@_viewer_errors
def trace_tracks(request: Request) -> Response:
    return JsonResponse(_index(request).tracks_json())


@_viewer_errors
def trace_query(request: Request) -> Response:
    index = _index(request)
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
    return JsonResponse({"match": match.to_json() if match else None})


@_viewer_errors
def trace_summary(request: Request) -> Response:
    index = _index(request)
    result = summarize(index, _int(request, "start_ps"), _int(request, "end_ps"), _tracks(request), request.query_params.get("filter") or None)
    return JsonResponse(result)


@_viewer_errors
def trace_event(request: Request) -> Response:
    _, index_folder = _ready(request)
    event_id = _int(request, "id")
    host = request.app.state.dashboard.host(request)
    return JsonResponse(request.app.state.profile_jobs.run(f"event {event_id} of {host.path}", event_json, str(host.path), str(index_folder), event_id))


def export_range_of(request: Request, span_ps: int) -> tuple[int, int]:
    """The requested ``[start_ps, end_ps)``, checked and clamped to the profile: to
    ``[0, span_ps + 1)``, which holds every event (an instant at ``span_ps`` too)."""
    start_ps, end_ps = _int(request, "start_ps"), _int(request, "end_ps")
    if start_ps < 0:
        raise BadParameter(f"start_ps must not be negative (got {start_ps})")
    if end_ps <= start_ps:
        raise BadParameter(f"end_ps ({end_ps}) must be after start_ps ({start_ps})")
    if start_ps > span_ps:
        raise BadParameter(f"start_ps ({start_ps}) is past the profile's end ({span_ps} ps)")
    return start_ps, min(end_ps, span_ps + 1)


@_viewer_errors
def trace_export(request: Request) -> Response:
    ready, index_folder = _ready(request)
    start_ps, end_ps = export_range_of(request, request.app.state.indexes.get(index_folder).span_ps)
    form = _export_format(request)
    host = request.app.state.dashboard.host(request)
    exports: Exports = request.app.state.exports
    target = exports.path(ready.folder.name, start_ps, end_ps, form.suffix)
    opened = exports.open(target)
    for _ in range(2):  # made, then evicted by another request before it was opened: once more
        if opened is not None:
            break
        request.app.state.profile_jobs.run(f"export of {host.path}", export_range, str(host.path), start_ps, end_ps, str(target))
        opened = exports.open(target)
    if opened is None:
        raise JobFailed(f"export of {host.path}: the file was removed as soon as written (export cache budget {exports.describe()})")
    exports.evict()  # after opening: this file is safe, whatever the budget
    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{request.query_params['run']}_{host.name}_{start_ps}_{end_ps}")
    headers = {"Content-Disposition": f'attachment; filename="{name}{form.suffix}"', "Content-Length": str(opened.size)}
    return StreamingResponse(iter(opened), media_type=form.media_type, headers=headers)


def _export_format(request: Request) -> ExportFormat:
    name = request.query_params.get("format") or DEFAULT_EXPORT_FORMAT
    if name not in EXPORT_FORMATS:
        raise BadParameter(f"format must be one of {', '.join(EXPORT_FORMATS)}, not {_shown(name)!r}")
    return EXPORT_FORMATS[name]


ROUTES = [
    Route("/api/trace/tracks", trace_tracks),
    Route("/api/trace/query", trace_query),
    Route("/api/trace/find", trace_find),
    Route("/api/trace/summary", trace_summary),
    Route("/api/trace/event", trace_event),
    Route("/api/trace/export", trace_export),
]
