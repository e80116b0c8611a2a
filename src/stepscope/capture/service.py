"""The profiler service: a gRPC server in the training job that captures on request.

It speaks TensorFlow/JAX's ``tensorflow.ProfilerService`` (``Profile`` and ``Terminate``
with TSL's messages), so ``stepscope capture``, TensorFlow's
``tf.profiler.experimental.client.trace`` and XProf's capture button can all capture a
stepscope job. A ``Profile`` request runs a capture session for ``duration_ms`` (starting
at ``opts.start_timestamp_ns`` when set, for a synchronised multi-host start), writes
``<repository_root>/<session_id>/<host_name>.xplane.pb`` as TSL does, and also returns the
XSpace bytes in the response (``tool_data``) so a client on another machine gets the
profile without a shared filesystem.

It listens on 127.0.0.1 unless told otherwise (TensorFlow's and JAX's servers listen on
every interface). A capture while another runs is refused with ALREADY_EXISTS; one longer
than ``max_duration_ms`` with INVALID_ARGUMENT. Anything failing inside a capture is
answered with an error status; the training job goes on. A job that ends during a capture
ends the capture: the client gets what was recorded, and the job's exit is not held up.
"""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import CaptureSession
from stepscope.errors import StepscopeError
from stepscope.protos import profiler_options_pb2, profiler_service_pb2
from stepscope.trace import names
from stepscope.trace.logdir import XPLANE_SUFFIX, safe_host

DEFAULT_MAX_DURATION_MS = 10 * 60 * 1000
# How far ahead a synchronised start may be asked for.
MAX_START_DELAY_S = 300
TOOL_DATA_NAME = XPLANE_SUFFIX.lstrip(".")
UNLIMITED_MESSAGES = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


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
    """The ``Profile`` and ``Terminate`` calls."""

    def __init__(self, max_duration_ms: int, host: str | None = None) -> None:
        self.max_duration_ms = max_duration_ms
        self.host = host or socket.gethostname()
        self._lock = threading.Lock()
        self._busy = False
        self._terminate = threading.Event()

    def profile(self, request: profiler_service_pb2.ProfileRequest, context: grpc.ServicerContext) -> profiler_service_pb2.ProfileResponse:
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
        try:
            return self._capture(request, options, duration_ms, max(wait_s, 0.0), context)
        finally:
            with self._lock:
                self._busy = False

    def _capture(self, request, options, duration_ms, wait_s, context) -> profiler_service_pb2.ProfileResponse:
        host = safe_host(request.host_name or self.host)
        with tempfile.TemporaryDirectory(prefix="stepscope-service-") as scratch:
            if request.repository_root:
                output = Path(request.repository_root) / safe_host(request.session_id or "session") / f"{host}{XPLANE_SUFFIX}"
            else:
                output = Path(scratch) / f"{host}{XPLANE_SUFFIX}"
            if wait_s and self._terminate.wait(wait_s):
                return profiler_service_pb2.ProfileResponse(empty_trace=True)
            session = CaptureSession(output.parent, options, host=host, output=output)
            try:
                session.start()
            except StepscopeError as error:  # a capture started in-process by the job itself
                context.abort(grpc.StatusCode.ALREADY_EXISTS, str(error))
            self._wait(duration_ms / 1000)
            path = session.stop()
            if path is None:
                return profiler_service_pb2.ProfileResponse(empty_trace=True)
            response = profiler_service_pb2.ProfileResponse(empty_trace=False)
            # TSL's clients (TensorFlow's, XProf's) save each entry as <host>.<name>: so
            # "xplane.pb" lands on the very file the server wrote (or makes it, remotely).
            response.tool_data.add(name=TOOL_DATA_NAME, data=path.read_bytes())
            return response

    def _wait(self, seconds: float) -> None:
        """The capture's duration, cut short by Terminate or by the job ending (see
        ``start_server``): the capture keeps what it has rather than hold the exit up."""
        self._terminate.wait(seconds)

    def end_captures(self) -> None:
        self._terminate.set()

    def terminate(self, request: profiler_service_pb2.TerminateRequest, context: grpc.ServicerContext) -> profiler_service_pb2.TerminateResponse:
        self._terminate.set()
        return profiler_service_pb2.TerminateResponse()


class ProfilerServer:
    """A running profiler server; ``port`` is the bound port (useful with port 0)."""

    def __init__(self, server: grpc.Server, port: int, host: str) -> None:
        self._server = server
        self.port = port
        self.host = host

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self, grace_s: float = 1.0) -> None:
        self._server.stop(grace_s)


def start_server(port: int, host: str = "127.0.0.1", max_duration_ms: int = DEFAULT_MAX_DURATION_MS) -> ProfilerServer:
    """Starts the profiler service on a background thread (``host="0.0.0.0"`` to expose it)."""
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
    # Few workers: captures run one at a time; the rest only answer "busy" or Terminate.
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="stepscope-profiler"), options=UNLIMITED_MESSAGES)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(names.PROFILER_SERVICE, handlers),))
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise StepscopeError(f"cannot listen on {host}:{port}")
    server.start()
    # When the job's main thread ends, Python joins the server's worker threads before it
    # exits; end a running capture first so the exit is not held up. (The hook runs at that
    # point, before the joins, which atexit does not; concurrent.futures relies on it too.)
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(servicer.end_captures)
    return ProfilerServer(server, bound, host)
