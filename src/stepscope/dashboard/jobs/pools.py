"""The dashboard's worker processes: a pool that charges a crash to the job that caused it.

``concurrent.futures.ProcessPoolExecutor`` cannot tell which job killed a worker: when one
dies (out of memory, a segfault in a reader) it marks the pool broken and fails every job
it holds, queued ones included. ``WorkerPool`` instead gives each worker process one job at
a time over its own pipe, and keeps the queue in the server, so when a worker dies the job
it held is known and is the only one touched: it is retried once on a fresh worker (a
worker may die for reasons that are not the job's: another process made the kernel's OOM
killer pick it), and fails with ``WorkerFailed`` if it kills that one too. The other
workers, and the jobs queued behind it, never notice.

Each worker caps its own address space (``memory_limit``), so one bad file cannot take the
machine: an allocation past the cap raises MemoryError in the worker, which charges that
job (``WorkerFailed``, no retry: the same file would hit the same cap) and is replaced.

Each job has a time limit (``time_limit``, counted from when its worker is ready, so a
fresh worker's start is not charged to its first job): a job still running past it (a file
that sends a tool into an endless loop) has its worker stopped and replaced, and fails with
``WorkerFailed`` (no retry: the same file would loop again), so one file cannot hold a
worker, and every profile queued behind it, for ever.

spawn, not fork: the server has threads (uvicorn, capture jobs) that a fork would copy in
whatever state they are in.

A fresh process pays for imports before its first job can start (the XSpace reader,
protobuf and the analysis modules: ~0.35 s). ``warm`` is run by each worker as it starts, and
``prestart`` starts the first worker before any job, so a server can have one ready by
the time the page asks for its first profile.
"""

from __future__ import annotations

import collections
import contextlib
import multiprocessing
import os
import pickle
import re
import signal
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any, TypeVar, TypeVarTuple

from stepscope.errors import StepscopeError
from stepscope.sizes import NO_LIMIT, size_setting, size_text
from stepscope.trace import limits
from stepscope.trace.files import confine_reads
from stepscope.trace.store import keep_stores_in

R = TypeVar("R")
Ts = TypeVarTuple("Ts")

# The setting (environment variable) that caps each worker's memory: a size ("8G", "512M",
# bytes), or "none" for no cap.
MEMORY_SETTING = "STEPSCOPE_WORKER_MEMORY"
# Times a job is retried after its worker died under it: once, so a job that kills every
# worker it lands on fails on its second worker instead of looping.
RETRIES = 1
# The status a worker exits with after a MemoryError (it is then replaced: a process that
# ran out of memory half way through may hold broken state).
OUT_OF_MEMORY_EXIT = 86
CGROUP_MEMORY_MAX = Path("/sys/fs/cgroup/memory.max")
# The setting that limits each job's time in a worker: seconds, or a number with s, m or h
# ("90s", "30m", "2h"); "none" for no limit.
TIME_SETTING = "STEPSCOPE_WORKER_TIME"
# Generous, for big profiles on slow machines (a fresh worker's warm-up, ~0.35 s, counts
# towards its first job), and short enough that a looping file frees its worker within the
# hour; raise it for profiles that take longer.
DEFAULT_TIME_LIMIT_S = 30 * 60.0
_TIME = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([smh]?)", re.IGNORECASE)
_TIME_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}


class WorkerFailed(StepscopeError):
    """The job's worker ran out of memory, or died under it on every try. ``str()`` reads
    "the worker ...", for the caller to put after what was being done."""


def default_memory_limit() -> int | None:
    """Each worker's cap on its address space: ``STEPSCOPE_WORKER_MEMORY`` when set, else
    half of the machine's memory (the container's limit when lower).

    Half, because the other half is what the cap protects: the server, the OS and often
    the very training job that wrote the profile, which a runaway worker must not push into
    swap or the OOM killer's reach. A fixed number would be wrong on every machine but one:
    a laptop cannot give 32 GB, and a 1 TB host should not refuse a profile that needs 20.
    The cap is on address space (``RLIMIT_AS``: the one limit every allocation, malloc,
    mmap or numpy's, fails against cleanly, on every Linux), which runs a little above
    resident memory: a worker reserves ~150 MB before it does anything. Several workers can
    still add up to more than the machine has; then the kernel kills one, and the pool
    charges that one job and retries it once.
    """
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        physical = 0
    with contextlib.suppress(OSError, ValueError):
        physical = min(physical or 1 << 62, int(CGROUP_MEMORY_MAX.read_text().strip()))  # "max" -> ValueError
    return size_setting(MEMORY_SETTING, physical // 2 if physical else None)


def default_time_limit() -> float | None:
    """Each job's time limit in seconds: ``STEPSCOPE_WORKER_TIME`` when set ("none", "off" or
    "0": no limit), else ``DEFAULT_TIME_LIMIT_S``."""
    text = os.environ.get(TIME_SETTING, "").strip()
    if not text:
        return DEFAULT_TIME_LIMIT_S
    if text.lower() in NO_LIMIT:
        return None
    match = _TIME.fullmatch(text)
    if match is None:
        raise StepscopeError(f"{TIME_SETTING}: {text!r} is not a duration (give seconds, or a number with s, m or h); or 'none' for no limit")
    return float(match.group(1)) * _TIME_UNITS[match.group(2).lower()]


def time_text(seconds: float) -> str:
    """``90 s``, ``30 min``, ``1.5 h``: a time limit for a message."""
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    if seconds >= 60:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _limit_memory(limit: int | None) -> None:
    """In the worker: caps its address space (the soft limit; never above the hard one)."""
    if limit is None:
        return
    try:
        import resource
    except ImportError:  # no such limit on this platform
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    # A profile too big for the cap is refused by name before it is loaded (trace.limits).
    limits.name_address_space_limit("the worker's memory cap leaves", f"limit {MEMORY_SETTING}={limit}; raise it to read larger profiles")


def _portable(error: BaseException) -> BaseException:
    """The job's exception, or a RuntimeError with its text when it cannot be sent back."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def _worker_main(connection: Connection, memory_limit: int | None, confine: str | None, stores: str | None, warm: Callable[[], None] | None) -> None:
    """A worker process: confines its reads of profiles to ``confine`` (a folder; None:
    anywhere), keeps the profiles it loads as stores in ``stores`` (``trace.store``; None:
    reads each from its file), warms up, then runs the jobs it is sent, one at a time,
    until its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's; it stops us
    _limit_memory(memory_limit)
    confine_reads(confine)
    keep_stores_in(stores)
    if warm is not None:
        with contextlib.suppress(Exception):  # nothing lost: the first job pays what the warm-up would have
            warm()
    try:
        connection.send_bytes(READY)  # the jobs' time limits start here, not at the spawn
    except OSError:  # the server is gone
        return
    while True:
        try:
            message = connection.recv_bytes()
        except (EOFError, OSError):  # the server is gone
            return
        try:
            function, args = pickle.loads(message)
            answer = (True, function(*args))
        except MemoryError:
            os._exit(OUT_OF_MEMORY_EXIT)
        except BaseException as error:  # the job's failure is its answer; the worker lives on
            error.add_note("in the worker process:\n" + "".join(traceback.format_exception(error)))
            answer = (False, _portable(error))
        del message
        try:
            data = pickle.dumps(answer)
        except MemoryError:
            os._exit(OUT_OF_MEMORY_EXIT)
        except Exception as error:
            data = pickle.dumps((False, RuntimeError(f"the job's result could not be sent back ({type(error).__name__}: {error})")))
        del answer
        try:
            connection.send_bytes(data)
        except OSError:  # the server is gone
            return


# What a worker sends once it has started and warmed up, before its first job.
READY = b"ready"
# How long a worker may take to start and warm up: far above a loaded machine's seconds; a
# start that takes longer is stuck, and counts as the worker's death (the job is retried
# on a fresh one).
START_LIMIT_S = 300.0


class TimedOut:
    """What ``_Worker.run`` returns when the job ran past its time limit."""


TIMED_OUT = TimedOut()


@dataclass
class _Job:
    future: Future[Any]
    function: Callable[..., object]
    args: tuple[object, ...]
    deaths: list[str] = field(default_factory=list)


class _Worker:
    """One worker process and the server's end of its pipe."""

    def __init__(
        self, context: SpawnContext, memory_limit: int | None, confine: str | None, stores: str | None, name: str, warm: Callable[[], None] | None
    ) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, memory_limit, confine, stores, warm), name=name, daemon=True)
        self.process.start()
        child.close()
        self.ready = False

    def run(self, data: bytes, time_limit: float | None) -> tuple[bool, Any] | TimedOut | None:
        """Sends a job and waits for its answer; None when the process died first,
        ``TIMED_OUT`` when ``time_limit`` (seconds) passed first (the process still runs).

        The limit counts from the worker's ``READY``, so that a fresh worker's spawn, imports
        and warm-up (seconds on a loaded machine) are not charged to its first job; a start
        that never ends is bounded by ``START_LIMIT_S`` (None, as a death)."""
        try:
            if not self.ready:
                if not wait([self.connection, self.process.sentinel], timeout=START_LIMIT_S) or self.connection.recv_bytes() != READY:
                    return None
                self.ready = True
            self.connection.send_bytes(data)
            if not wait([self.connection, self.process.sentinel], timeout=time_limit):
                return TIMED_OUT
            answer: tuple[bool, Any] = pickle.loads(self.connection.recv_bytes())  # (ok, result or exception)
            return answer
        except (EOFError, OSError):
            return None
        except Exception as error:  # an answer that does not unpickle here
            return False, RuntimeError(f"the job's answer could not be read ({type(error).__name__}: {error})")

    def death(self, memory_limit: int | None) -> str:
        """Why the process ended, completing "the worker ..."."""
        self.process.join(timeout=5)
        code = self.process.exitcode
        if code == OUT_OF_MEMORY_EXIT:
            limit = f" (its limit is {size_text(memory_limit)}; {MEMORY_SETTING} sets it)" if memory_limit else ""
            return f"ran out of memory{limit}"
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = "unknown"
            hint = ": out of memory? the kernel's OOM killer sends it" if -code == signal.SIGKILL else ""
            return f"was killed by signal {-code} ({name}{hint})"
        return f"exited with status {code}" if code is not None else "stopped answering"

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.connection.close()


class WorkerPool:
    """``workers`` worker processes, started on the first job and replaced when one dies.

    ``submit`` returns a ``concurrent.futures.Future``: the job's result, its exception (the
    worker lives on), or ``WorkerFailed`` when the worker ran out of memory or died under
    it on every try, or the job ran past ``time_limit`` seconds (None: none). A death never
    touches another job. ``warm``: a module-level function each worker process runs as it
    starts, before its first job (its failure is ignored). ``confine``: the folder the
    workers read profiles from (``files.confine_reads``; None: anywhere). ``stores``: the
    folder of the stores the workers keep the profiles they load in and share (``trace.store``;
    None: each reads its profiles from their files).
    """

    def __init__(
        self,
        workers: int,
        memory_limit: int | None = None,
        name: str = "stepscope-worker",
        warm: Callable[[], None] | None = None,
        time_limit: float | None = None,
        confine: str | None = None,
        stores: str | None = None,
    ) -> None:
        self.workers, self.memory_limit, self.name, self.warm, self.time_limit = workers, memory_limit, name, warm, time_limit
        self.confine, self.stores = confine, stores
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Condition()
        self._queue: collections.deque[_Job] = collections.deque()
        self._threads: list[threading.Thread] = []
        self._running: dict[int, _Worker] = {}
        self._free = 0  # slots not running a job: waiting for one, or starting their worker
        self._closed = False

    def submit(self, function: Callable[[*Ts], R], *args: *Ts) -> Future[R]:
        future: Future[R] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            self._queue.append(_Job(future, function, args))
            if len(self._queue) > self._free and len(self._threads) < self.workers:
                self._start_slot(eager=False)
            self._lock.notify()
        return future

    def prestart(self) -> None:
        """Starts the first worker process now, before any job, so that it has warmed up
        when the first job comes. One, not all: each holds its imports' memory (~150 MB)."""
        with self._lock:
            if not self._closed and not self._threads:
                self._start_slot(eager=True)

    def _start_slot(self, eager: bool) -> None:
        """(Under the lock.) One more slot, whose worker starts now (``eager``) or with its
        first job."""
        number = len(self._threads)
        self._free += 1
        thread = threading.Thread(target=self._serve, args=(number, eager), name=f"{self.name}-{number}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _next(self, finished: _Job | None) -> _Job | None:
        """The slot's next job, once it has ``finished`` the last one (None: none yet)."""
        with self._lock:
            if finished is not None:
                self._free += 1
            while not self._queue and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            self._free -= 1
            return self._queue.popleft()

    def _serve(self, number: int, eager: bool) -> None:
        """One slot: takes jobs off the queue and runs each on this slot's worker process."""
        worker: _Worker | None = None
        if eager:
            with contextlib.suppress(Exception):  # (then started with the first job, which reports why not)
                worker = self._new_worker(number)
        job: _Job | None = None
        try:
            while (job := self._next(job)) is not None:
                if not job.deaths and not job.future.set_running_or_notify_cancel():
                    continue  # cancelled while queued (a retried job is running already)
                try:
                    data = pickle.dumps((job.function, job.args))
                except Exception as error:
                    job.future.set_exception(error)
                    continue
                if worker is None:
                    try:
                        worker = self._new_worker(number)
                    except Exception as error:  # no process to be had (out of memory, of pids)
                        job.future.set_exception(WorkerFailed(f"the worker could not be started ({type(error).__name__}: {error})"))
                        continue
                with self._lock:
                    if self._closed:
                        job.future.set_exception(WorkerFailed("the worker was stopped: the server is closing"))
                        return
                    self._running[number] = worker
                answer = worker.run(data, self.time_limit)
                with self._lock:
                    self._running.pop(number, None)
                    closed = self._closed
                if isinstance(answer, TimedOut):  # replaced; not retried: the same job would loop again
                    worker.stop()
                    worker = None
                    assert self.time_limit is not None
                    job.future.set_exception(
                        WorkerFailed(f"the worker ran past its time limit of {time_text(self.time_limit)} and was replaced ({TIME_SETTING} sets the limit)")
                    )
                    continue
                if answer is not None:
                    ok, value = answer
                    if ok:
                        job.future.set_result(value)
                    else:
                        job.future.set_exception(value)
                    continue
                reason = "was stopped: the server is closing" if closed else worker.death(self.memory_limit)
                worker.stop()
                worker = None
                job.deaths.append(reason)
                if closed or reason.startswith("ran out of memory") or len(job.deaths) > RETRIES:
                    job.future.set_exception(WorkerFailed(f"the worker {reason}"))
                    continue
                with self._lock:  # first in line again, on a fresh worker
                    self._queue.appendleft(job)
                    self._lock.notify()
        finally:
            if worker is not None:
                worker.stop()

    def _new_worker(self, number: int) -> _Worker:
        return _Worker(self._context, self.memory_limit, self.confine, self.stores, f"{self.name}-{number}", self.warm)

    def close(self) -> None:
        """Ends the worker processes now, busy or not; queued jobs are cancelled and a
        running one fails with ``WorkerFailed``."""
        with self._lock:
            self._closed = True
            queued, self._queue = list(self._queue), collections.deque()
            running = list(self._running.values())
            self._lock.notify_all()
        for job in queued:
            if not job.future.cancel():  # a retried job: running, so not cancellable
                job.future.set_exception(WorkerFailed("the worker was stopped: the server is closing"))
        for worker in running:
            if worker.process.is_alive():
                worker.process.terminate()
        for thread in self._threads:
            thread.join(timeout=10)


def spawn_pool(
    workers: int,
    memory_limit: int | None = None,
    warm: Callable[[], None] | None = None,
    time_limit: float | None = None,
    confine: str | None = None,
    stores: str | None = None,
) -> WorkerPool:
    return WorkerPool(workers, memory_limit, warm=warm, time_limit=time_limit, confine=confine, stores=stores)


def stop_pool(pool: WorkerPool | None) -> None:
    """Ends a pool's worker processes now, busy or not."""
    if pool is not None:
        pool.close()
