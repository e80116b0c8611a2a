"""The dashboard's ASGI application behind a WSGI server (TensorBoard's plugins are WSGI).

``AsgiBridge(app)`` is a WSGI application that runs ``app`` on one asyncio loop in a
background thread, the loop the app would have under uvicorn: its lifespan (worker pools
started, then closed at exit), its background threads and its async routes all run there,
while each WSGI request waits in its own server thread. What the dashboard needs from the
host, and how it is kept:

- **Streaming, with back-pressure.** Each ``http.response.body`` message becomes one chunk
  of the WSGI iterable, and the app's ``send`` returns only once the server has written it
  and asked for the next: a trace export of a gigabyte is never held in memory, and a slow
  client slows the producer instead of growing a queue.
- **Disconnects.** When the server closes the iterable early (the browser went away, an
  aborted ``fetch`` of a superseded view), the app's ``receive`` answers
  ``http.disconnect`` and its task is cancelled, so a streaming response releases its file
  at once rather than waiting forever on a send nobody reads.
- **Request bodies** are read before the app starts, up to ``max_body`` bytes (413 past
  it): the dashboard's only body is a capture request of a few hundred bytes, and reading
  ``wsgi.input`` on the loop would stall every other request.
- **Lifespan** runs on the first request, not when the host loads the plugin: a
  TensorBoard whose stepscope tab is never opened starts no worker process.
- **Errors.** An exception before the response started is a 500 ``{"error": ...}`` (and
  logged); after it started, it is raised into the server, which drops the connection
  (a half-sent body must not look complete).

Why not a library: the maintained converter (a2wsgi 1.10, read for this) neither runs the
app's lifespan, which starts and stops the dashboard's workers, nor ends the app's task
when the server closes the response early, which leaves an abandoned streaming response
(and the export cache's "being downloaded" mark) waiting forever. This module does both,
in ~250 lines, and adds no dependency for the users who never start TensorBoard.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from starlette.types import ASGIApp, Message, Scope

logger = logging.getLogger("stepscope.dashboard")

# WSGI's types, spelled out (wsgiref.types is Python 3.11+ only in name; this keeps it plain).
Environ = dict[str, Any]
StartResponse = Callable[..., Any]

MAX_BODY = 1 << 20
LIFESPAN_TIMEOUT_S = 60.0


def _text(value: str) -> str:
    """A WSGI string (bytes as latin-1, PEP 3333) as the text it encodes (UTF-8)."""
    return value.encode("latin-1").decode("utf-8", "replace")


def scope_for(environ: Environ) -> Scope:
    """The ASGI HTTP scope of a WSGI request. ``path`` includes ``root_path`` (the WSGI
    ``SCRIPT_NAME``), as ASGI servers give it; Starlette routes on the rest."""
    headers = [
        (name[5:].replace("_", "-").lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in environ.items()
        if name.startswith("HTTP_") and name not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH")
    ]
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            headers.append((name.replace("_", "-").lower().encode("latin-1"), environ[name].encode("latin-1")))
    root_path = _text(environ.get("SCRIPT_NAME", ""))
    client = (environ["REMOTE_ADDR"], int(environ.get("REMOTE_PORT") or 0)) if environ.get("REMOTE_ADDR") else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").partition("/")[2] or "1.1",
        "method": environ["REQUEST_METHOD"].upper(),
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": root_path + _text(environ.get("PATH_INFO", "")),
        "root_path": root_path,
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "client": client,
        "server": (environ.get("SERVER_NAME", ""), int(environ.get("SERVER_PORT") or 0)),
        "state": {},
    }


def _json_answer(start_response: StartResponse, status: int, message: str, exc_info: Any = None) -> list[bytes]:
    body = json.dumps({"error": message}).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))), ("X-Content-Type-Options", "nosniff")]
    start_response(f"{status} {HTTPStatus(status).phrase}", headers, exc_info)
    return [body]


@dataclass
class _Exchange:
    """One request between a WSGI server thread and the app's task on the loop."""

    loop: asyncio.AbstractEventLoop
    body: bytes
    # What the app sent, for the server thread: ("message", message, ack) (``ack`` is set
    # once the server thread has handled it), ("error", exception, None), ("done", None, None).
    outbox: queue.SimpleQueue[tuple[str, Any, asyncio.Future[None] | None]] = field(default_factory=queue.SimpleQueue)
    # Set (on the loop) once the response is over or the client is gone.
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    body_given: bool = False

    async def run(self, app: ASGIApp, scope: Scope) -> None:
        try:
            await app(scope, self.receive, self.send)
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            logger.error("stepscope: %s %s failed", scope["method"], scope["path"], exc_info=error)
            self.outbox.put(("error", error, None))
            return
        self.outbox.put(("done", None, None))

    async def receive(self) -> Message:
        if not self.body_given:
            self.body_given = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.disconnected.is_set():
            raise OSError("the client went away")
        ack: asyncio.Future[None] = self.loop.create_future()
        self.outbox.put(("message", message, ack))
        await ack

    def acknowledge(self, ack: asyncio.Future[None] | None) -> None:
        """From the server thread: the message is handled, the app's ``send`` returns."""
        if ack is not None:
            self.loop.call_soon_threadsafe(_resolve, ack)

    def hang_up(self) -> None:
        """From the server thread: the response is over, or abandoned."""
        self.loop.call_soon_threadsafe(self.disconnected.set)


def _resolve(ack: asyncio.Future[None]) -> None:
    if not ack.done():  # a cancelled send's is done already
        ack.set_result(None)


def _without_lifespan(task: asyncio.Future[None]) -> None:
    """An app whose lifespan raised has none (uvicorn's "lifespan unsupported")."""
    if not task.cancelled() and task.exception() is not None:
        logger.debug("stepscope: the app has no lifespan (%s)", task.exception())


class AsgiBridge:
    """A WSGI application serving the ASGI ``app`` (see the module's docstring)."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY, name: str = "stepscope-asgi") -> None:
        self.app = app
        self.max_body = max_body
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lifespan_in: asyncio.Queue[Message] | None = None
        self._lifespan_out: asyncio.Queue[Message] | None = None
        self._lifespan_task: asyncio.Future[None] | None = None

    # ------------------------------------------------------------ the loop and the lifespan

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self.name, daemon=True).start()
                self._loop = loop
                asyncio.run_coroutine_threadsafe(self._start_lifespan(), loop).result()
                self._lifespan(loop, "lifespan.startup")
                atexit.register(self.close)
            return self._loop

    async def _start_lifespan(self) -> None:
        events: asyncio.Queue[Message] = asyncio.Queue()
        answers: asyncio.Queue[Message] = asyncio.Queue()
        scope: Scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
        self._lifespan_in, self._lifespan_out = events, answers
        task = asyncio.ensure_future(self.app(scope, events.get, answers.put))
        task.add_done_callback(_without_lifespan)
        self._lifespan_task = task

    def _lifespan(self, loop: asyncio.AbstractEventLoop, event: str) -> None:
        """Sends ``event`` to the app's lifespan and waits for its answer. An app that
        returns or raises instead has no lifespan, and serves without one; a lifespan that
        fails is logged and the app still serves (both as uvicorn's ``lifespan="auto"``)."""
        events, answers, task = self._lifespan_in, self._lifespan_out, self._lifespan_task
        assert events is not None and answers is not None and task is not None

        async def exchange() -> Message | None:
            if task.done():
                return None
            await events.put({"type": event})
            answer = asyncio.ensure_future(answers.get())
            waited: set[asyncio.Future[Any]] = {answer, task}
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
            if answer.done():
                return answer.result()
            answer.cancel()
            return None

        try:
            answer = asyncio.run_coroutine_threadsafe(exchange(), loop).result(LIFESPAN_TIMEOUT_S)
        except (TimeoutError, concurrent.futures.TimeoutError):
            logger.error("stepscope: the dashboard's %s did not finish in %.0f s", event, LIFESPAN_TIMEOUT_S)
            return
        if answer is not None and not answer["type"].endswith(".complete"):
            logger.error("stepscope: the dashboard's %s failed: %s", event, answer.get("message", ""))

    def close(self) -> None:
        """Ends the app's lifespan (its worker processes stop), then the loop."""
        with self._lock:
            loop, self._loop = self._loop, None
            if loop is None:
                return
            try:
                self._lifespan(loop, "lifespan.shutdown")
            finally:
                loop.call_soon_threadsafe(loop.stop)

    # ------------------------------------------------------------ requests

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _json_answer(start_response, 400, "Content-Length is not a number")
        if length > self.max_body:
            return _json_answer(start_response, 413, f"the request body is larger than {self.max_body} bytes")
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        loop = self._started()
        exchange = _Exchange(loop, body)
        task = asyncio.run_coroutine_threadsafe(exchange.run(self.app, scope_for(environ)), loop)
        return self._respond(exchange, task, start_response)

    def _respond(self, exchange: _Exchange, task: concurrent.futures.Future[None], start_response: StartResponse) -> Iterator[bytes]:
        started = False
        finished = False
        try:
            while True:
                kind, message, ack = exchange.outbox.get()
                if kind == "error":
                    if started:
                        raise message
                    yield from _json_answer(
                        start_response, 500, f"stepscope failed: {type(message).__name__}: {message}", (type(message), message, message.__traceback__)
                    )
                    finished = True
                    return
                if kind == "done":  # the app returned without finishing its response
                    if not started:
                        yield from _json_answer(start_response, 500, "stepscope sent no answer")
                    finished = True
                    return
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    headers = [(bytes(name).decode("latin-1"), bytes(value).decode("latin-1")) for name, value in message.get("headers", [])]
                    start_response(f"{status} {_phrase(status)}", headers)
                    started = True
                    exchange.acknowledge(ack)
                elif message["type"] == "http.response.body":
                    chunk = bytes(message.get("body", b""))
                    if chunk:
                        yield chunk
                    exchange.acknowledge(ack)
                    if not message.get("more_body", False):
                        finished = True
                        return
                else:  # an extension this bridge does not offer (trailers, push): ignored
                    exchange.acknowledge(ack)
        finally:
            exchange.hang_up()
            if not finished:  # the server closed us early: the client is gone
                task.cancel()


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
