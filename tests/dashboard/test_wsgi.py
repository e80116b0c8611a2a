"""The ASGI-to-WSGI bridge (``stepscope.dashboard.wsgi``) behind a real WSGI server (the
standard library's, threaded, on 127.0.0.1) and real HTTP: streaming without buffering,
a client that goes away, request bodies, the lifespan, errors, and the dashboard's app
mounted under a prefix as TensorBoard mounts it.

No test waits on a clock: where one side must wait for the other, it waits on an event,
with a generous limit that only turns a hang into a failure.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

from stepscope.dashboard.api.app import create_app
from stepscope.dashboard.api.security import Access
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache
from stepscope.dashboard.wsgi import AsgiBridge
from tests.support.traces import shared

LIMIT_S = 60


class ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


@contextmanager
def served(wsgi_app, prefix: str = "") -> Iterator[int]:
    """``wsgi_app`` on a free loopback port; with ``prefix``, mounted there (the prefix
    moves from PATH_INFO to SCRIPT_NAME, as TensorBoard's plugin does)."""

    def mounted(environ, start_response):
        path = environ["PATH_INFO"]
        if prefix and path.startswith(prefix):
            environ = dict(environ, SCRIPT_NAME=prefix, PATH_INFO=path[len(prefix) :])
        return wsgi_app(environ, start_response)

    server = make_server("127.0.0.1", 0, mounted, server_class=ThreadingServer, handler_class=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


def connect(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=LIMIT_S)


def get(port: int, path: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None):
    connection = connect(port)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    return response.status, dict(response.getheaders()), response.read()


async def start(send, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or [(b"content-type", b"text/plain")]})


def test_chunks_reach_the_client_as_they_are_sent():
    """The second chunk is made only after the client has read the first: a bridge that
    collected the body before answering would never let the client read it."""
    first_read = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return  # no lifespan: the bridge serves without one
        await start(send)
        await send({"type": "http.response.body", "body": b"first;", "more_body": True})
        await asyncio.get_running_loop().run_in_executor(None, first_read.wait, LIMIT_S)
        assert first_read.is_set(), "the client never got the first chunk"
        await send({"type": "http.response.body", "body": b"second", "more_body": False})

    with served(AsgiBridge(app)) as port:
        connection = connect(port)
        connection.request("GET", "/")
        response = connection.getresponse()
        assert response.read(len(b"first;")) == b"first;"
        first_read.set()
        assert response.read() == b"second"


def test_a_client_that_goes_away_ends_the_response():
    """A stream nobody reads any more: the app's task ends (its send fails or it is
    cancelled) instead of waiting forever, so what it holds (an export's file) is let go."""
    ended = threading.Event()
    sent = threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            raise RuntimeError("no lifespan here")  # the bridge serves without one
        try:
            await start(send)
            while True:
                await send({"type": "http.response.body", "body": b"x" * 65536, "more_body": True})
                sent.set()
        finally:
            ended.set()

    with served(AsgiBridge(app)) as port:
        client = socket.create_connection(("127.0.0.1", port), timeout=LIMIT_S)
        client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert client.recv(65536)
        assert sent.wait(LIMIT_S)
        client.shutdown(socket.SHUT_RDWR)
        client.close()
        assert ended.wait(LIMIT_S), "the app kept streaming to a client that was gone"


def test_request_body_and_its_limit():
    async def echo(scope, receive, send):
        if scope["type"] != "http":
            return
        message = await receive()
        headers = dict(scope["headers"])
        await start(send, headers=[(b"content-type", b"application/json")])
        answer = {"body": message["body"].decode(), "more": message["more_body"], "type": headers[b"content-type"].decode(), "method": scope["method"]}
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})

    with served(AsgiBridge(echo, max_body=64)) as port:
        status, _, body = get(port, "/", "POST", b'{"a": 1}', {"Content-Type": "application/json"})
        assert status == 200
        assert json.loads(body) == {"body": '{"a": 1}', "more": False, "type": "application/json", "method": "POST"}
        status, _, body = get(port, "/", "POST", b"x" * 65, {"Content-Type": "application/json"})
        assert status == 413 and "64 bytes" in json.loads(body)["error"]


def test_the_lifespan_starts_at_the_first_request_and_ends_at_close():
    events: list[str] = []

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                events.append(message["type"])
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        await start(send)
        await send({"type": "http.response.body", "body": ",".join(events).encode()})

    bridge = AsgiBridge(app)
    assert events == []  # nothing runs until the first request
    with served(bridge) as port:
        assert get(port, "/")[2] == b"lifespan.startup"
        assert get(port, "/")[2] == b"lifespan.startup"  # once
    bridge.close()
    assert events == ["lifespan.startup", "lifespan.shutdown"]


def test_errors_before_and_after_the_answer_started():
    async def fails_at_once(scope, receive, send):
        if scope["type"] == "http":
            raise RuntimeError("broken")

    async def fails_midway(scope, receive, send):
        if scope["type"] == "http":
            await start(send, headers=[(b"content-type", b"text/plain"), (b"content-length", b"100")])
            await send({"type": "http.response.body", "body": b"half", "more_body": True})
            raise RuntimeError("broken midway")

    with served(AsgiBridge(fails_at_once)) as port:
        status, _, body = get(port, "/")
        assert status == 500 and "RuntimeError: broken" in json.loads(body)["error"]
    with served(AsgiBridge(fails_midway)) as port:
        connection = connect(port)
        connection.request("GET", "/")
        response = connection.getresponse()
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead):  # cut short, never passed off as whole
            response.read()


def test_the_dashboard_mounted_under_a_prefix(tmp_path):
    """The dashboard's app under TensorBoard's kind of mount: routed below the prefix, the
    page and API answered there, the API's cross-site check still applied, and captures
    refused where the access rules turn them off (a TensorBoard beyond loopback)."""
    logdir = tmp_path / "logs" / "run"
    logdir.mkdir(parents=True)
    (logdir / "cpu.pt.trace.json.gz").write_bytes(shared("kineto/cpu_only_rank34.pt.trace.json.gz").read_bytes())
    prefix = "/data/plugin/stepscope"
    access = Access.for_tensorboard(None, bind_all=True)
    bridge = AsgiBridge(create_app(tmp_path / "logs", AnalysisCache(tmp_path / "cache", workers=1), access))
    try:
        with served(bridge, prefix) as port:
            status, _, body = get(port, f"{prefix}/api/runs")
            assert status == 200 and json.loads(body)["runs"] == [{"name": "run", "hosts": ["cpu"]}]
            status, headers, body = get(port, f"{prefix}/index.html")
            assert status in (200, 503)  # 503: the page is not built here; the route is the page's
            assert "frame-ancestors" not in headers["content-security-policy"]
            assert get(port, f"{prefix}/api/runs", headers={"Sec-Fetch-Site": "cross-site"})[0] == 403
            assert get(port, f"{prefix}/api/nope")[0] == 404
            capture = json.dumps({"addresses": ["127.0.0.1:1"]}).encode()
            status, _, body = get(port, f"{prefix}/api/capture", "POST", capture, {"Content-Type": "application/json"})
            assert status == 403 and "--stepscope_captures" in json.loads(body)["error"]
    finally:
        bridge.close()
