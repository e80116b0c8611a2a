"""Remote capture: ``stepscope capture ADDR[,ADDR...]`` and ``stepscope.capture_remote``.

Sends TSL's ``ProfileRequest`` to every address at once (stepscope's, TensorFlow's or JAX's
profiler server) with one start time for all (``opts.start_timestamp_ns`` = now +
``delay_ms``), so the hosts' profiles cover the same window. Each server writes
``<logdir>/plugins/profile/<session>/<host>.xplane.pb`` where it can see the logdir; where
it cannot (another machine), the XSpace it returns in the response is written here.
Transient failures (connection refused, timeouts) are retried; the report says per host
what happened.
"""

from __future__ import annotations

import re
import time
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import session_name
from stepscope.protos import profiler_options_pb2, profiler_service_pb2
from stepscope.trace import names
from stepscope.trace.files import atomic_write
from stepscope.trace.logdir import PLUGIN_DIR, XPLANE_SUFFIX, safe_host

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
# Time allowed beyond the capture itself for the server to write and answer.
ANSWER_MARGIN_S = 60.0


@dataclass(frozen=True)
class HostResult:
    address: str
    ok: bool
    path: Path | None
    message: str  # "ok", or why not: "no trace events collected", "connection refused", ...
    attempts: int


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


def _describe(error: grpc.RpcError) -> str:
    code = error.code()
    detail = error.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        return "connection refused" if "refused" in detail.lower() or "connect" in detail.lower() else f"unavailable ({detail})"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "timed out"
    return f"{code.name.lower().replace('_', ' ')}: {detail}"


def _capture_one(address: str, request: profiler_service_pb2.ProfileRequest, timeout_s: float, attempts: int) -> HostResult:
    expected = Path(request.repository_root) / request.session_id / f"{request.host_name}{XPLANE_SUFFIX}"
    message = "not tried"
    for attempt in range(1, attempts + 1):
        channel = grpc.insecure_channel(address.removeprefix("grpc://"), options=[("grpc.max_receive_message_length", -1)])
        call = channel.unary_unary(
            f"/{names.PROFILER_SERVICE}/Profile",
            request_serializer=profiler_service_pb2.ProfileRequest.SerializeToString,
            response_deserializer=profiler_service_pb2.ProfileResponse.FromString,
        )
        try:
            response = call(request, timeout=timeout_s)
        except grpc.RpcError as error:
            message = _describe(error)
            if error.code() in RETRYABLE and attempt < attempts:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 5.0))
                continue
            return HostResult(address, False, None, message, attempt)
        finally:
            channel.close()
        if expected.exists():
            return HostResult(address, True, expected, "ok", attempt)
        data = next((tool.data for tool in response.tool_data if tool.name.endswith(XPLANE_SUFFIX.lstrip("."))), b"")
        if data:
            atomic_write(expected, data)
            return HostResult(address, True, expected, "ok", attempt)
        return HostResult(address, False, None, "no trace events collected", attempt)
    return HostResult(address, False, None, message, attempts)


def capture_remote(
    addresses: list[str],
    logdir: str | Path,
    duration_ms: int = 2000,
    delay_ms: int = 0,
    options: ProfilerOptions | None = None,
    attempts: int = 3,
) -> list[HostResult]:
    """Captures every address at once into one session folder of ``logdir``."""
    options = options or ProfilerOptions()
    repository = Path(logdir).resolve().joinpath(*PLUGIN_DIR)
    session = session_name()
    start_ns = time.time_ns() + delay_ms * 1_000_000 if delay_ms else 0
    timeout_s = (duration_ms + delay_ms) / 1000 + ANSWER_MARGIN_S
    with futures.ThreadPoolExecutor(max_workers=max(len(addresses), 1)) as pool:
        jobs = [
            pool.submit(_capture_one, address, _request(duration_ms, start_ns, options, repository, session, host_name_for(address)), timeout_s, attempts)
            for address in addresses
        ]
        return [job.result() for job in jobs]
