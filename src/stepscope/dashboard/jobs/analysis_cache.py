"""Tool data computed once per profile, in worker processes, cached outside the logdir.

A profile's cache key is its absolute path, size, modification time and the stepscope
version: a rewritten profile, or a new stepscope, is analysed again; nothing is written
to the log directory. States a request can find:

- ready: ``<cache>/<key>/`` exists (the worker renames it into place when complete);
- failed: ``<cache>/<key>.error.json`` holds the one-line reason (a corrupt profile stays
  failed until the file changes, without being read again on every request); or, when
  the worker ran out of memory or time, or died on it twice, the reason is kept in memory only
  (the file may be fine on a bigger machine, or with a higher ``STEPSCOPE_WORKER_MEMORY``:
  a restarted server tries again);
- pending: a worker is on it; ``<cache>/<key>.progress.json`` says how far.

A cache is a cache: what is read from a ready folder is checked first (a tool's answer
against the size and CRC-32 the worker recorded, ``worker.CHECKSUMS_FILE``; the trace
index's files by ``viewer.storage``), opened without blocking and never through a link. A
file that fails (truncated, missing, a directory or a FIFO in its place) raises
``CacheDamaged``: the route answers 202 and the folder is discarded, so the next request
analyses the profile again. The cache root is private to its user (0700).

The first request for a profile submits it; later ones only look. A server ``prestart``s
the first worker, which warms up (``worker.warm_up``) before any request. Workers are separate
processes (see ``worker``), at most ``workers`` at a time, so a slow conversion never
blocks the server's other requests, and a profile that kills its worker fails alone
(``pools.WorkerPool``): the profiles queued behind it are analysed as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from stepscope import __version__
from stepscope.dashboard.jobs.pools import WorkerFailed, WorkerPool, default_memory_limit, default_time_limit, spawn_pool, stop_pool
from stepscope.dashboard.jobs.worker import (
    APPLIES_FILE,
    CHECKSUMS_FILE,
    ERROR_FILE,
    PROGRESS_FILE,
    TABLES_SUFFIX,
    TOOL_SUFFIX,
    Progress,
    analyse,
    checksum,
    read_progress,
    remove_abandoned_staging,
    warm_up,
)
from stepscope.errors import StepscopeError
from stepscope.trace.array_folder import discard_folder
from stepscope.trace.files import atomic_write, read_cache_file

# What a cached analysis holds, beyond the release: bumped whenever a cached file's content
# changes without a new version number (a tool's new fields, the distributed view's device
# units, 4: the checksums file, 5: the overview's device_kind, 6: what each tool has to
# show, 7: each overview finding's predicted gain, 8: the overview's top ops' full_name), so
# an older cache folder is never read as the current one.
ANALYSIS_FORMAT = 8
# The profile stores (``trace.store``) the workers share, beside the analyses, in a folder
# per release (whose readers may read a file differently).
STORES_FOLDER = "profiles"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "stepscope"


class CacheDamaged(StepscopeError):
    """A file of a ready analysis folder is not what the worker wrote; ``folder`` is to be
    discarded and analysed again (``AnalysisCache.discard``)."""

    def __init__(self, folder: Path, problem: str) -> None:
        super().__init__(f"the cached analysis {folder.name} is damaged ({problem}); analysing the profile again")
        self.folder = folder


@dataclass(frozen=True)
class Ready:
    folder: Path

    def read(self, name: str) -> bytes:
        """The file ``name`` of the folder, checked against the size and CRC-32 recorded
        when it was written; CacheDamaged when it is not that file."""
        try:
            sums = json.loads(read_cache_file(self.folder / CHECKSUMS_FILE))
            size, crc = sums[name]
            data = read_cache_file(self.folder / name)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise CacheDamaged(self.folder, f"{name}: {type(error).__name__}: {error}") from None
        if checksum(data) != [size, crc]:
            raise CacheDamaged(self.folder, f"{name}: {len(data)} bytes, not the {size} written, or changed since")
        return data

    def unavailable(self) -> dict[str, str]:
        """Tool -> why it has nothing to show for the profile, for those that have not."""
        reasons: dict[str, str] = json.loads(self.read(APPLIES_FILE))
        return {tool: why for tool, why in reasons.items() if why}

    def tool_document(self, tool: str) -> bytes:
        return self.read(f"{tool}{TOOL_SUFFIX}")

    def tables_document(self, tool: str) -> bytes:
        return self.read(f"{tool}{TABLES_SUFFIX}")


@dataclass(frozen=True)
class Pending:
    progress: Progress


@dataclass(frozen=True)
class Failed:
    message: str


Status = Ready | Pending | Failed


class AnalysisCache:
    """``workers``: analyses at a time (default: half the CPUs). ``memory_limit``: each
    worker's cap in bytes (None: ``pools.default_memory_limit()``; 0: no cap).
    ``time_limit``: each analysis's, in seconds (None: ``pools.default_time_limit()``; 0: none).
    ``analyse``: what a worker runs on a profile, ``worker.analyse``; tests inject a fake
    here (a module-level function: it is sent to the worker process by name). ``warm``:
    what each worker runs as it starts (None: nothing)."""

    def __init__(
        self,
        cache_dir: Path,
        workers: int | None = None,
        memory_limit: int | None = None,
        analyse: Callable[[str, str, str], None] = analyse,
        warm: Callable[[], None] | None = warm_up,
        time_limit: float | None = None,
    ) -> None:
        self.root = Path(cache_dir) / "analysis"
        self.stores = Path(cache_dir) / STORES_FOLDER / __version__
        for private in (self.root, self.stores.parent, self.stores):
            private.mkdir(parents=True, exist_ok=True)
            os.chmod(private, 0o700)  # only this user may reach (and so truncate or replace) what the server and workers map
        self.workers = workers or max(1, (os.cpu_count() or 2) // 2)
        self.memory_limit = default_memory_limit() if memory_limit is None else memory_limit or None
        self.time_limit = default_time_limit() if time_limit is None else time_limit or None
        self.confine: str | None = None  # the folder the workers read profiles from (``confine``)
        self._analyse, self._warm = analyse, warm
        self._lock = threading.Lock()
        self._jobs: dict[str, Future[None]] = {}
        self._pool: WorkerPool | None = None
        self._failed: dict[str, str] = {}  # key -> why its worker died (not written to disk)

    def key(self, path: Path) -> str:
        stat = path.stat()
        identity = f"{__version__}\0{ANALYSIS_FORMAT}\0{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}"
        return hashlib.sha256(identity.encode()).hexdigest()[:32]

    def status(self, path: Path) -> Status:
        """Where the profile's analysis stands; starts it when nobody has."""
        try:
            key = self.key(path)
        except OSError as error:
            return Failed(f"{path}: {error.strerror or error}")
        folder, error_file = self.root / key, self.root / f"{key}.{ERROR_FILE}"
        with self._lock:
            if folder.is_dir():
                return Ready(folder)
            if error_file.exists():
                return Failed(_read_error(error_file))
            if key in self._failed:
                return Failed(self._failed[key])
            job = self._jobs.get(key)
            if job is None:
                self._submit(key, path)
                return Pending(Progress("queued", 0.0, f"waiting for a worker for {path.name}"))
        progress = read_progress(self.root / f"{key}.{PROGRESS_FILE}")
        return Pending(progress or Progress("queued", 0.0, f"waiting for a worker for {path.name}"))

    def confine_to(self, logdir: Path) -> None:
        """Its workers read profiles inside ``logdir`` only (``files.confine_reads``): a
        profile swapped for a link elsewhere after the listing is refused. Before any job."""
        self.confine = str(logdir)

    def prestart(self) -> None:
        """Starts the first worker now, to warm up while nobody waits (see ``pools``)."""
        with self._lock:
            self._started_pool().prestart()

    def _started_pool(self) -> WorkerPool:
        if self._pool is None:
            self._pool = spawn_pool(self.workers, self.memory_limit, self._warm, self.time_limit, self.confine, str(self.stores))
        return self._pool

    def _submit(self, key: str, path: Path) -> None:
        if os.path.lexists(self.root / key):  # not a folder (is_dir said so): whatever took its place goes
            with contextlib.suppress(OSError):
                os.unlink(self.root / key)
        progress_file = self.root / f"{key}.{PROGRESS_FILE}"
        job = self._started_pool().submit(self._analyse, str(path), str(self.root / key), str(progress_file))
        self._jobs[key] = job
        job.add_done_callback(lambda done: self._finished(key, path, done))

    def _finished(self, key: str, path: Path, job: Future[None]) -> None:
        error = None if job.cancelled() else job.exception()  # cancelled: the server is closing
        with self._lock:
            self._jobs.pop(key, None)
            if isinstance(error, WorkerFailed):
                # Out of memory, out of time, or killed twice: maybe not the file's fault (the
                # machine, the caps), so remembered until the server restarts, not on disk.
                self._failed[key] = f"analysis of {path} stopped: {error}"
            elif error is not None:
                atomic_write(self.root / f"{key}.{ERROR_FILE}", json.dumps({"error": _describe(path, error)}).encode())
        if isinstance(error, WorkerFailed):
            remove_abandoned_staging(self.root / key)
        (self.root / f"{key}.{PROGRESS_FILE}").unlink(missing_ok=True)

    def discard(self, folder: Path) -> None:
        """Moves a damaged analysis folder out of the way (the next request analyses its
        profile again) and removes it; what the server still maps of it stays valid."""
        if folder.parent == self.root:
            discard_folder(folder)

    def close(self) -> None:
        with self._lock:
            stop_pool(self._pool)
            self._pool = None


def _describe(path: Path, error: BaseException) -> str:
    if isinstance(error, StepscopeError):
        return str(error)
    return f"{path}: could not be analysed ({type(error).__name__}: {error})"


def _read_error(error_file: Path) -> str:
    try:
        error: str = json.loads(error_file.read_bytes())["error"]
        return error
    except (OSError, ValueError, KeyError, TypeError):
        return f"{error_file}: unreadable error record"
