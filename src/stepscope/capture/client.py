"""Remote capture: ``stepscope capture ADDR[,ADDR...]`` and ``stepscope.capture_remote``.

Sends TSL's ``ProfileRequest`` to every address at once (stepscope's, TensorFlow's or JAX's
profiler server) with one start time for all (``opts.start_timestamp_ns`` = now +
``delay_ms``), so the hosts' profiles cover the same window. Each capture gets a session
folder of its own (created here first, ``<session>_1`` ... when the second is taken, so
two captures never share one); each server writes ``<host>.xplane.pb`` there where it sees
the logdir, and where it cannot (another machine, a full disk) the XSpace it returns in the
response is written here. Nothing is overwritten.

Retries are only for failures *before* a server has the request (nothing listens yet, no
answer): a capture that may be running, or may still land, is never sent again. Once sent,
the client waits as long as the server is working: it polls stepscope's
``CaptureStatus/Get`` (phase and progress, shown by the CLI), and a server without it
(TensorFlow's, JAX's) answering UNIMPLEMENTED still shows it is alive; only a server that
stops answering for ``LOST_AFTER_S`` ends the wait. The report says per host what
happened, in words (connection refused, no answer, an HTTP server on the port, the
server's own write error), never just "failed".
"""

from __future__ import annotations

import errno
import os
import re
import socket
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import session_name
from stepscope.errors import StepscopeError
from stepscope.protos import capture_status_pb2, profiler_options_pb2, profiler_service_pb2
from stepscope.trace import names
from stepscope.trace.files import atomic_write
from stepscope.trace.logdir import PLUGIN_DIR, XPLANE_SUFFIX, safe_host

# How long a connection attempt may take before the address counts as not answering.
CONNECT_TIMEOUT_S = 10.0
# How often the client asks a server how its capture goes.
POLL_S = 0.5
# A server that answers nothing (not even "unimplemented") for this long is taken as gone.
LOST_AFTER_S = 60.0
# The longest the client waits beyond the capture window, while the server answers.
MAX_ANSWER_S = 3600.0
# The first bytes of an HTTP/2 connection (RFC 9113 3.4) and an empty SETTINGS frame.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_SETTINGS_FRAME = 4

# (address, phase, elapsed ms, duration ms) as each server reports it.
Progress = Callable[[str, str, int, int], None]


@dataclass(frozen=True)
class HostResult:
    address: str
    ok: bool
    path: Path | None
    message: str  # "ok", or why not: "connection refused (...)", "no trace events collected", ...
    attempts: int
    # What the capture missed or the server could not do, in the server's words.
    notes: tuple[str, ...] = field(default=())
    local_error: bool = False  # the profile arrived but could not be written here


def host_name_for(address: str) -> str:
    """A file name for an address: ``10.0.0.3:6009`` -> ``10.0.0.3_6009``."""
    return safe_host(re.sub(r"[:/]", "_", address.removeprefix("grpc://")))


def _request(duration_ms: int, start_ns: int, options: ProfilerOptions, repository: Path, session: str, host: str) -> profiler_service_pb2.ProfileRequest:
    opts = profiler_options_pb2.ProfileOptions(
        version=1,
        host_tracer_level=options.host_tracer_level,
        python_tracer_level=options.python_tracer_level,
        device_tracer_level=options.device_tracer_level,
        start_timestamp_ns=start_ns,
        duration_ms=duration_ms,
    )
    return profiler_service_pb2.ProfileRequest(
        duration_ms=duration_ms,
        opts=opts,
        repository_root=str(repository),
        session_id=session,
        host_name=host,
        tools=["trace_viewer"],
    )


def _split(address: str) -> tuple[str, int]:
    target = address.removeprefix("grpc://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise StepscopeError(f"{address!r} is not host:port (e.g. localhost:6009)")
    return host.strip("[]"), int(port)


def probe(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """None when an HTTP/2 (gRPC) server answers at ``address``; else what is there
    instead, in words. Connecting is all it does: no capture starts."""
    host, port = _split(address)
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except socket.gaierror as error:
        return f"cannot resolve {host} ({error.strerror})"
    except ConnectionRefusedError:
        return "connection refused: no profiler server listens on that port"
    except TimeoutError:
        return f"no answer within {timeout_s:.0f} s (a wrong address, or a firewall drops the packets)"
    except OSError as error:
        return f"cannot connect ({error.strerror or error})"
    with sock:
        try:
            sock.settimeout(timeout_s)
            sock.sendall(_HTTP2_PREFACE)
            head = sock.recv(64)
        except TimeoutError:
            return f"the port accepts connections but says nothing within {timeout_s:.0f} s (not a profiler server?)"
        except OSError as error:
            return f"the connection broke at once ({error.strerror or error})"
    if head.startswith(b"HTTP/") or head.lstrip().startswith(b"<"):  # a status line, or an HTML error page
        return "an HTTP/1 server answers on that port, not a profiler server (the dashboard's port?)"
    if len(head) < 4 or head[3] != _SETTINGS_FRAME:
        return "something that does not speak gRPC answers on that port"
    return None


def _retryable(problem: str) -> bool:
    return problem.startswith(("connection refused", "no answer", "cannot connect"))


def _describe(error: grpc.RpcError) -> str:
    """The failure of a Profile call the server had received (so never retried)."""
    code = error.code()
    detail = error.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"the connection was lost during the capture (did the job end or crash?): {detail}"
    if code == grpc.StatusCode.ALREADY_EXISTS:
        return f"busy: {detail or 'another capture is running there'}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "no answer before the deadline"
    return f"{code.name.lower().replace('_', ' ')}: {detail}"


def _metadata(call: grpc.Call, key: str) -> list[str]:
    """The values of text key ``key`` in the call's trailing metadata (a "-bin" key's would be bytes)."""
    try:
        trailing = call.trailing_metadata() or ()
    except Exception:
        return []
    return [value for name, value in trailing if name == key and isinstance(value, str)]


class _Watch:
    """Polls the server's capture status while the Profile call is out."""

    def __init__(self, channel: grpc.Channel, address: str, progress: Progress | None) -> None:
        self._call = channel.unary_unary(
            f"/{names.CAPTURE_STATUS_SERVICE}/Get",
            request_serializer=capture_status_pb2.CaptureStatusRequest.SerializeToString,
            response_deserializer=capture_status_pb2.CaptureStatusResponse.FromString,
        )
        self.address = address
        self.progress = progress
        self.last_answer = time.monotonic()

    def poll(self) -> None:
        try:
            status = self._call(capture_status_pb2.CaptureStatusRequest(), timeout=max(POLL_S * 4, 2.0))
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.UNIMPLEMENTED:  # TensorFlow's or JAX's server: alive
                self.last_answer = time.monotonic()
            return
        self.last_answer = time.monotonic()
        if self.progress is not None:
            self.progress(self.address, status.phase, int(status.elapsed_ms), int(status.duration_ms))

    def lost(self) -> bool:
        return time.monotonic() - self.last_answer > LOST_AFTER_S


def _capture_one(address: str, request: profiler_service_pb2.ProfileRequest, window_s: float, attempts: int, progress: Progress | None) -> HostResult:
    expected = Path(request.repository_root) / request.session_id / f"{request.host_name}{XPLANE_SUFFIX}"
    for attempt in range(1, attempts + 1):
        problem = probe(address)
        if problem is None:
            break
        if not _retryable(problem) or attempt == attempts:
            return HostResult(address, False, None, problem, attempt)
        time.sleep(min(0.5 * 2 ** (attempt - 1), 5.0))
    channel = grpc.insecure_channel(address.removeprefix("grpc://"), options=[("grpc.max_receive_message_length", -1)])
    try:
        call = channel.unary_unary(
            f"/{names.PROFILER_SERVICE}/Profile",
            request_serializer=profiler_service_pb2.ProfileRequest.SerializeToString,
            response_deserializer=profiler_service_pb2.ProfileResponse.FromString,
        )
        pending = call.future(request, timeout=window_s + MAX_ANSWER_S)
        watch = _Watch(channel, address, progress)
        while not pending.done():
            try:
                pending.result(timeout=POLL_S)
            except (futures.TimeoutError, grpc.FutureTimeoutError):
                watch.poll()  # after the first wait: the request has reached the server
                if watch.lost():
                    pending.cancel()
                    return HostResult(address, False, None, f"the server stopped answering during the capture; it may still write {expected}", attempt)
            except grpc.RpcError:
                break
        notes = tuple(_metadata(pending, names.CAPTURE_WARNING_KEY))
        try:
            response = pending.result()
        except grpc.RpcError as error:
            return HostResult(address, False, None, _describe(error), attempt, notes)
        server_error = _metadata(pending, names.CAPTURE_WRITE_ERROR_KEY)
    finally:
        channel.close()
    notes += tuple(f"the server could not write the profile: {text}" for text in server_error)
    data = next((tool.data for tool in response.tool_data if tool.name.endswith(XPLANE_SUFFIX.lstrip("."))), b"")
    if expected.exists() and not server_error:
        return HostResult(address, True, expected, "ok", attempt, notes)
    if not data:
        if response.empty_trace:
            return HostResult(address, False, None, "no trace events collected", attempt, notes)
        return HostResult(address, False, None, f"the server wrote {expected} where this machine cannot see it", attempt, notes)
    try:
        atomic_write(expected, data, replace=False)
    except FileExistsError:
        return HostResult(address, False, None, f"{expected} exists and was left as it is; the capture was not saved", attempt, notes, True)
    except OSError as error:
        return HostResult(address, False, None, f"could not write {expected}: {_os_error(error)}", attempt, notes, True)
    return HostResult(address, True, expected, "ok", attempt, notes)


def _os_error(error: OSError) -> str:
    return f"{error.strerror or error} ({errno.errorcode.get(error.errno or 0, 'error')})"


def reserve_session(repository: Path, name: str) -> str:
    """Creates the session folder ``repository/name`` (or ``name_1``, ``name_2``, ... when
    taken) and returns its name: each capture writes into a folder of its own."""
    try:
        repository.mkdir(parents=True, exist_ok=True)
        for suffix in range(10_000):
            candidate = name if suffix == 0 else f"{name}_{suffix}"
            try:
                (repository / candidate).mkdir()
            except FileExistsError:
                continue
            return candidate
    except OSError as error:
        raise StepscopeError(f"{repository}: cannot create a session folder: {_os_error(error)}") from None
    raise StepscopeError(f"{repository}: no free session folder name for {name}")


def capture_remote(
    addresses: list[str],
    logdir: str | Path,
    duration_ms: int = 2000,
    delay_ms: int = 0,
    options: ProfilerOptions | None = None,
    attempts: int = 3,
    progress: Progress | None = None,
) -> list[HostResult]:
    """Captures every address at once into one new session folder of ``logdir``."""
    options = options or ProfilerOptions()
    for address in addresses:
        _split(address)
    repository = Path(logdir).resolve().joinpath(*PLUGIN_DIR)
    session = reserve_session(repository, session_name())
    start_ns = time.time_ns() + delay_ms * 1_000_000 if delay_ms else 0
    window_s = (duration_ms + delay_ms) / 1000
    with futures.ThreadPoolExecutor(max_workers=max(len(addresses), 1)) as pool:
        jobs = [
            pool.submit(
                _capture_one, address, _request(duration_ms, start_ns, options, repository, session, host_name_for(address)), window_s, attempts, progress
            )
            for address in addresses
        ]
        results = [job.result() for job in jobs]
    folder = repository / session
    if not any(folder.iterdir()):
        os.rmdir(folder)  # nothing landed: leave no empty run behind
    return results
