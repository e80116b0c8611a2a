"""The profiler service: a gRPC server in the training job that captures on request.

It speaks TensorFlow/JAX's ``tensorflow.ProfilerService`` (``Profile`` and ``Terminate``
with TSL's messages), so ``stepscope capture``, TensorFlow's
``tf.profiler.experimental.client.trace`` and XProf's capture button can all capture a
stepscope job. A ``Profile`` request runs a capture session for ``duration_ms`` (starting
at ``opts.start_timestamp_ns`` when set, for a synchronised multi-host start), writes
``<repository_root>/<session_id>/<host_name>.xplane.pb`` as TSL does, and also returns the
XSpace bytes in the response (``tool_data``) so a client on another machine gets the
profile without a shared filesystem.

There is one server per process, kept in this module (as JAX and TensorFlow keep theirs),
so ``stepscope.start_server(6009)`` without keeping the result serves until the job ends
or ``stepscope.stop_server()``. Starting it again on the same port returns the running
one; on another port is an error. A forked child has no server.

It listens on 127.0.0.1 unless told otherwise (TensorFlow's and JAX's servers listen on
every interface). A capture while another runs is refused with ALREADY_EXISTS; one longer
than ``max_duration_ms`` with INVALID_ARGUMENT, and so is one whose strings are longer than
a path or a file name; a request over ``MAX_REQUEST_BYTES`` is refused by grpc before it is
held (RESOURCE_EXHAUSTED): the job's memory never depends on what a client sends. Anything failing inside a capture is
answered with an error status; the training job goes on. A job that ends during a capture
ends the capture: the client gets what was recorded, and the job's exit is not held up.

Nothing is overwritten: the profile is linked into place only where no file of that name
exists. The answer carries the profile (``tool_data``) unless the client shares this
filesystem and the file was written: stepscope's client creates the session folder before
asking, so a server that finds the folder there knows the client will find the file too,
and a big capture is not serialised and sent a second time (in a busy job that cost more
than the stop itself). TSL's clients make no folder and always get the copy. When the file
cannot be written (disk full, read-only logdir) the copy goes back with the reason in the
trailing metadata (``stepscope-write-error``), beside what the capture missed
(``stepscope-warning``).
Besides TSL's calls it answers ``stepscope.CaptureStatus/Get`` (phase, elapsed time), which
stepscope's client polls to wait exactly as long as a capture is being written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc

from stepscope.capture import handoff
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import DONE, RECORDING, STOPPING, WAITING, WRITING, CaptureSession, prepare_step_boundaries
from stepscope.capture.tracers.host import warm_up
from stepscope.errors import StepscopeError
from stepscope.protos import capture_status_pb2, profiler_options_pb2, profiler_service_pb2
from stepscope.trace import names
from stepscope.trace.files import atomic_write
from stepscope.trace.formats.xspace.write import xspace_chunks
from stepscope.trace.logdir import XPLANE_SUFFIX, safe_host

DEFAULT_MAX_DURATION_MS = 10 * 60 * 1000
# How far ahead a synchronised start may be asked for.
MAX_START_DELAY_S = 300
TOOL_DATA_NAME = XPLANE_SUFFIX.lstrip(".")
IDLE = "idle"
# The GIL switch interval while a remote capture runs (Python's default is 5 ms), restored
# when it is answered. The capture's own thread needs the GIL to start on time, wake at the
# end of the window and stop; a training thread that holds the GIL and releases it only
# briefly (torch ops, syscalls) wins it back at every release, and the capture thread waits
# out a whole interval each time, again and again: measured, a 2 s wait in such a job
# returned 0.3-2.2 s late, and a 500k-event stop took 114-212 s against 0.6 s in an idle
# job. At 0.5 ms the same wait is 1 ms late and the stop ~2-3 s (bench/remote_stop.py).
# It costs the job more frequent switches only where two of its threads want the GIL.
CAPTURE_SWITCH_INTERVAL_S = 0.0005
# How long the job's exit waits for a running capture to hand over the main thread's part.
EXIT_WAIT_S = 10.0
# How long a capture cut short by the job's exit has to answer its client.
EXIT_GRACE_S = 60.0
# What a client may send: a ProfileRequest is a few numbers and three short strings (TSL's
# clients send well under 1 kB), so anything bigger is refused by grpc as it arrives
# (RESOURCE_EXHAUSTED), never held. Without it one 1 GB request took a job from 182 MB to
# 6.77 GB and left it holding 1.5 GB. Answers (the profile) are not capped.
MAX_REQUEST_BYTES = 64 << 10
MESSAGE_LIMITS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", MAX_REQUEST_BYTES)]
# Calls handled at once; more are refused (RESOURCE_EXHAUSTED): a capture, its status polls
# and a Terminate need a handful.
MAX_CONCURRENT_CALLS = 16
# The longest string fields accepted (characters): a path, and a file name's part.
MAX_PATH_CHARS = 4096
MAX_NAME_CHARS = 255


def options_from_proto(opts: profiler_options_pb2.ProfileOptions) -> ProfilerOptions:
    """TSL's ProfileOptions as ours. ``version`` 0 means an old client that set no levels:
    TSL's defaults then apply."""
    if opts.version == 0:
        return ProfilerOptions()
    return ProfilerOptions(
        host_tracer_level=min(int(opts.host_tracer_level), 3),
        python_tracer_level=min(int(opts.python_tracer_level), 1),
        device_tracer_level=min(int(opts.device_tracer_level), 1),
    )


class ProfilerServicer:
    """The ``Profile``, ``Terminate`` and ``CaptureStatus/Get`` calls."""

    def __init__(self, max_duration_ms: int, host: str | None = None) -> None:
        self.max_duration_ms = max_duration_ms
        self.host = host or socket.gethostname()
        self._lock = threading.Lock()
        self._busy = False
        self._terminate = threading.Event()
        self._session: CaptureSession | None = None  # the capture running, once started
        self._since = 0.0
        self._duration_ms = 0
        self.server: grpc.Server | None = None  # set once serving, to stop it at the job's exit

    def profile(self, request: profiler_service_pb2.ProfileRequest, context: grpc.ServicerContext) -> profiler_service_pb2.ProfileResponse:
        for name, value, limit in (
            ("repository_root", request.repository_root, MAX_PATH_CHARS),
            ("session_id", request.session_id, MAX_NAME_CHARS),
            ("host_name", request.host_name, MAX_NAME_CHARS),
        ):
            if len(value) > limit:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{name} is {len(value)} characters, more than {limit}")
        duration_ms = int(request.duration_ms or request.opts.duration_ms)
        if duration_ms <= 0 or duration_ms > self.max_duration_ms:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"duration_ms must be 1..{self.max_duration_ms}, not {duration_ms}")
        wait_s = (request.opts.start_timestamp_ns - time.time_ns()) / 1e9 if request.opts.start_timestamp_ns else 0.0
        if wait_s > MAX_START_DELAY_S:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"start_timestamp_ns is more than {MAX_START_DELAY_S} s ahead")
        try:
            options = options_from_proto(request.opts)
        except StepscopeError as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        with self._lock:
            if self._busy:
                context.abort(grpc.StatusCode.ALREADY_EXISTS, "a capture is already running in this process")
            self._busy = True
            self._terminate.clear()
            self._session, self._since, self._duration_ms = None, time.monotonic(), duration_ms
        previous = sys.getswitchinterval()
        sys.setswitchinterval(CAPTURE_SWITCH_INTERVAL_S)
        try:
            return self._capture(request, options, duration_ms, max(wait_s, 0.0), context)
        finally:
            sys.setswitchinterval(previous)
            with self._lock:
                self._busy, self._session = False, None

    def _capture(
        self, request: profiler_service_pb2.ProfileRequest, options: ProfilerOptions, duration_ms: int, wait_s: float, context: grpc.ServicerContext
    ) -> profiler_service_pb2.ProfileResponse:
        host = safe_host(request.host_name or self.host)
        output = None
        if request.repository_root:
            output = Path(request.repository_root) / safe_host(request.session_id or "session") / f"{host}{XPLANE_SUFFIX}"
        if wait_s and self._terminate.wait(wait_s):
            return profiler_service_pb2.ProfileResponse(empty_trace=True)
        session = CaptureSession(output.parent if output else Path("."), options, host=host, output=output, remote=True)
        try:
            session.start()
        except StepscopeError as error:  # a capture started in-process by the job itself
            context.abort(grpc.StatusCode.ALREADY_EXISTS, str(error))
        self._session = session
        self._terminate.wait(duration_ms / 1000)  # cut short by Terminate or the job's end
        return self._finish(session, output, context)

    def _finish(self, session: CaptureSession, output: Path | None, context: grpc.ServicerContext) -> profiler_service_pb2.ProfileResponse:
        """Stops the capture, writes it where the client asked and answers with it."""
        # The client made the session folder before asking: it sees this filesystem, and
        # needs no copy of a profile written there (see the module's docstring).
        shared = output is not None and output.parent.is_dir()
        profile = session.collect()
        metadata = [(names.CAPTURE_WARNING_KEY, _ascii(text)) for text in session.warnings]
        if profile is None:
            context.set_trailing_metadata(tuple(metadata))
            return profiler_service_pb2.ProfileResponse(empty_trace=True)
        session.phase = WRITING
        try:
            data = b"".join(xspace_chunks(profile))
        except Exception as error:
            context.abort(grpc.StatusCode.INTERNAL, f"could not encode the profile: {error}")
        problem = _write(output, data) if output is not None else ""
        if problem:
            metadata.append((names.CAPTURE_WRITE_ERROR_KEY, _ascii(problem)))
        context.set_trailing_metadata(tuple(metadata))
        session.phase = DONE
        response = profiler_service_pb2.ProfileResponse(empty_trace=False)
        if not shared or problem:
            # TSL's clients (TensorFlow's, XProf's) save each entry as <host>.<name>: so
            # "xplane.pb" lands on the very file the server wrote (or makes it, remotely).
            response.tool_data.add(name=TOOL_DATA_NAME, data=data)
        return response

    def status(self, request: capture_status_pb2.CaptureStatusRequest, context: grpc.ServicerContext) -> capture_status_pb2.CaptureStatusResponse:
        with self._lock:
            busy, session, since, duration_ms = self._busy, self._session, self._since, self._duration_ms
        if not busy:
            return capture_status_pb2.CaptureStatusResponse(phase=IDLE)
        phase = session.phase if session is not None else WAITING
        elapsed_ms = int((time.monotonic() - since) * 1000)
        return capture_status_pb2.CaptureStatusResponse(phase=phase, elapsed_ms=elapsed_ms, duration_ms=duration_ms, captures=1)

    def end_captures(self) -> None:
        """At the job's exit (on its main thread): ends a running capture, and runs here
        what the capture hands to this thread (halting torch's profiler, see handoff.py),
        since the main thread reaches no step boundary any more."""
        self._terminate.set()
        if self.server is not None:
            # New calls are refused from now on (a status poll arriving while Python shuts
            # down would make grpc print a traceback); the capture's answer still goes out.
            self.server.stop(EXIT_GRACE_S)
        deadline = time.monotonic() + EXIT_WAIT_S
        while self._busy and time.monotonic() < deadline:
            session = self._session
            if session is not None and session.phase not in (WAITING, RECORDING, STOPPING):
                break
            handoff.run_pending()
            time.sleep(0.005)

    def terminate(self, request: profiler_service_pb2.TerminateRequest, context: grpc.ServicerContext) -> profiler_service_pb2.TerminateResponse:
        self._terminate.set()
        return profiler_service_pb2.TerminateResponse()


def _write(path: Path, data: bytes) -> str:
    """Writes the profile where the client asked, never over an existing file; returns
    why it could not ('' when written)."""
    try:
        atomic_write(path, data, replace=False)
    except FileExistsError:
        return f"{path} already exists; it was left as it is"
    except OSError as error:
        code = errno.errorcode.get(error.errno or 0, "error")
        return f"could not write {path}: {error.strerror or error} ({code})"
    return ""


def _ascii(text: str) -> str:
    """gRPC metadata values are printable ASCII."""
    return text.encode("ascii", "backslashreplace").decode("ascii").replace("\n", " ")


class ProfilerServer:
    """The running profiler server; ``port`` is the bound port (useful with port 0)."""

    def __init__(self, server: grpc.Server, port: int, host: str) -> None:
        self._server = server
        self.port = port
        self.host = host

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self, grace_s: float = 1.0) -> None:
        global _running
        with _server_lock:
            if _running is self:
                _running = None
        self._server.stop(grace_s).wait()


_server_lock = threading.Lock()
_running: ProfilerServer | None = None  # this process's server (grpc stops one that is collected)


def _after_fork_in_child() -> None:
    global _server_lock, _running
    _server_lock, _running = threading.Lock(), None  # the server's threads stayed in the parent


os.register_at_fork(after_in_child=_after_fork_in_child)


def start_server(port: int, host: str = "127.0.0.1", max_duration_ms: int = DEFAULT_MAX_DURATION_MS) -> ProfilerServer:
    """Starts this process's profiler service on a background thread (``host="0.0.0.0"``
    to expose it); it serves until the process ends or ``stop_server()``, whether or not
    the result is kept. Again with the same port (or 0) and host: returns the running one."""
    global _running
    with _server_lock:
        if _running is not None:
            if port in (0, _running.port) and host == _running.host:
                return _running
            raise StepscopeError(
                f"a stepscope profiler server already runs in this process on {_running.address};"
                f" call stepscope.stop_server() before starting one on {host}:{port}"
            )
        _running = _start(port, host, max_duration_ms)
        return _running


def _warm_up() -> None:
    with contextlib.suppress(Exception):
        warm_up()


def stop_server(grace_s: float = 1.0) -> None:
    """Stops this process's profiler server, if one runs (a capture in progress is cut)."""
    server = _running
    if server is not None:
        server.stop(grace_s)


def _start(port: int, host: str, max_duration_ms: int) -> ProfilerServer:
    servicer = ProfilerServicer(max_duration_ms)
    handlers = {
        "Profile": grpc.unary_unary_rpc_method_handler(
            servicer.profile,
            request_deserializer=profiler_service_pb2.ProfileRequest.FromString,
            response_serializer=profiler_service_pb2.ProfileResponse.SerializeToString,
        ),
        "Terminate": grpc.unary_unary_rpc_method_handler(
            servicer.terminate,
            request_deserializer=profiler_service_pb2.TerminateRequest.FromString,
            response_serializer=profiler_service_pb2.TerminateResponse.SerializeToString,
        ),
    }
    status = {
        "Get": grpc.unary_unary_rpc_method_handler(
            servicer.status,
            request_deserializer=capture_status_pb2.CaptureStatusRequest.FromString,
            response_serializer=capture_status_pb2.CaptureStatusResponse.SerializeToString,
        )
    }
    # Few workers: captures run one at a time; the rest only answer "busy", status or Terminate.
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="stepscope-profiler"),
        options=MESSAGE_LIMITS,
        maximum_concurrent_rpcs=MAX_CONCURRENT_CALLS,
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(names.PROFILER_SERVICE, handlers),
            grpc.method_handlers_generic_handler(names.CAPTURE_STATUS_SERVICE, status),
        )
    )
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as error:  # grpc raises when the port is taken or the address is bad
        raise StepscopeError(f"cannot listen on {host}:{port} ({error})") from None
    if bound == 0:
        raise StepscopeError(f"cannot listen on {host}:{port}")
    server.start()
    servicer.server = server
    # Framework step boundaries (torch's optimizer step) are installed now, from the job's
    # own thread, before its loop runs (see capture/handoff.py).
    prepare_step_boundaries()
    # The stop's modules are imported now, once, on the job's thread (0.13-0.20 s): on a
    # background thread a busy training loop starved such imports for seconds (each of an
    # import's many syscalls gives the GIL away), and during a capture it would compete
    # with the job being measured.
    _warm_up()
    # When the job's main thread ends, Python joins the server's worker threads before it
    # exits; end a running capture first so the exit is not held up. (The hook runs at that
    # point, before the joins, which atexit does not; concurrent.futures relies on it too.)
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(servicer.end_captures)
    return ProfilerServer(server, bound, host)
