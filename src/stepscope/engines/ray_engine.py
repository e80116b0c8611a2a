"""The ``ray`` engine: the map as Ray tasks, one per rank, on a Ray cluster (or a local Ray).

Each task is ``tasks.analyse_rank`` run where Ray places it: it reads its rank's file where
the file lies (a path on a filesystem the cluster shares, or a URL such as ``s3://...``
read through fsspec, :mod:`stepscope.trace.remote`) and returns the rank's ``RankTables``
(kilobytes) or a ``RankFailure``, never events; the reduce runs on the driver. A rank
whose file cannot be read is a ``RankFailure`` exactly as on the local engine (the same
function makes it); a worker that dies (killed for memory, its node lost) after Ray's
retries is one StepscopeError naming the rank's file and how far the map got, like the
local engine's dead pool.

Ray is an optional dependency (``pip install stepscope[ray]``) imported only here, only
when this engine runs: ``import stepscope`` never needs it. The cluster's workers import
stepscope themselves, so it is installed there (the same version as the driver's).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

from stepscope.engines.tasks import Outcome, RankTask, analyse_rank
from stepscope.errors import StepscopeError

RAY = "ray"
INSTALL_HINT = "the ray engine needs Ray: pip install stepscope[ray]"
ADDRESS_ENV = "RAY_ADDRESS"  # Ray's own variable: where ray.init() attaches by default
# A local Ray started here is told loopback (its node address), with no dashboard; its
# servers still bind every interface (Ray has no option against it), hence LOCAL_RAY.
LOOPBACK = "127.0.0.1"
RAY_CLIENT_SCHEME = "ray://"
PROBE_S = 5.0  # how long a --ray-address gets to accept a TCP connection
LOCAL_RAY = "local"  # --ray-address local: start a Ray on this machine (see connect)
NO_ADDRESS = (
    "--engine ray: no Ray cluster given: pass --ray-address ADDR (or set $RAY_ADDRESS), or --ray-address local "
    "to start a local Ray, whose servers listen on every interface (on one machine --engine local needs none)"
)


def import_ray() -> Any:
    """The ``ray`` module, or the one-line StepscopeError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise StepscopeError(INSTALL_HINT) from None
    return ray


def connect(address: str | None = None) -> None:
    """Attaches this process to Ray: at ``address`` (``ray://head:10001``, ``head:6379`` or
    ``auto``), else at ``$RAY_ADDRESS``; ``local`` starts a local Ray with one worker per
    core. Nothing to do when this process is attached already (a test's session, or a
    user's own ``ray.init``).

    A local Ray is started only when asked for by name: its servers (GCS, raylet, object
    store) listen on every interface whatever ``_node_ip_address`` says, and stepscope
    starts nothing that listens beyond loopback unless the user asks (on one machine the
    local engine does the same work without a server)."""
    ray = import_ray()
    if ray.is_initialized():
        return
    address = address or os.environ.get(ADDRESS_ENV) or None
    if address is None:
        raise StepscopeError(NO_ADDRESS)
    if address == LOCAL_RAY:
        address = None
    # Worker output is not the report's: the CLI's stdout carries JSON or CSV.
    quiet = dict(log_to_driver=False, logging_level=logging.WARNING)
    if address:
        _check_reachable(address)
    try:
        if address:
            ray.init(address=address, **quiet)
        else:
            ray.init(include_dashboard=False, _node_ip_address=LOOPBACK, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as error:
        what = f"{address}: cannot attach to Ray" if address else "cannot start a local Ray"
        raise StepscopeError(f"{what} ({_first_line(error)})") from None


def _check_reachable(address: str) -> None:
    """A ``HOST:PORT`` (or ``ray://HOST:PORT``) that answers no TCP connection is an error
    at once: ``ray.init`` would retry it for minutes before giving up."""
    host, colon, port = address.removeprefix(RAY_CLIENT_SCHEME).rpartition(":")
    if not colon or not port.isdigit():
        return  # "auto", or a form Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_S).close()
    except OSError as error:
        raise StepscopeError(f"{address}: cannot attach to Ray (nothing answers at {host}:{port}: {error.strerror or error})") from None


def ray_engine(tasks: Sequence[RankTask], workers: int | None, progress: Callable[[], object]) -> list[Outcome]:
    """At most ``workers`` tasks in flight (None: all of them; Ray's scheduler then runs
    as many as the cluster has CPUs), results put back in task order."""
    ray = import_ray()
    connect()
    remote = ray.remote(num_cpus=1)(analyse_rank)
    limit = len(tasks) if workers is None else max(1, workers)
    died = _died_errors(ray)
    pending: dict[Any, int] = {}
    results: dict[int, Outcome] = {}
    submitted = 0
    while submitted < len(tasks) or pending:
        while submitted < len(tasks) and len(pending) < limit:
            pending[remote.remote(tasks[submitted])] = submitted
            submitted += 1
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            index = pending.pop(ref)
            try:
                results[index] = ray.get(ref)
            except died as error:
                for other in pending:
                    ray.cancel(other)
                raise StepscopeError(
                    f"{tasks[index].path}: the ray engine's worker died ({len(results)} of {len(tasks)} ranks done): {_first_line(error)}"
                ) from None
            progress()
    return [results[index] for index in range(len(tasks))]


def _died_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Ray's errors for a task whose worker or node went away (not the task's own error,
    which ``ray.get`` re-raises as the original exception type, as the local pool does)."""
    names = ("WorkerCrashedError", "OutOfMemoryError", "NodeDiedError", "TaskUnschedulableError", "ObjectLostError")
    return tuple(getattr(ray.exceptions, name) for name in names if hasattr(ray.exceptions, name))


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
