"""A real `stepscope serve` process on an ephemeral loopback port, and plain HTTP calls to it."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

# The startup line: "stepscope: serving LOGDIR at http://HOST:PORT/[?token=T][ (notes)]".
STARTUP_LINE = re.compile(
    r"^stepscope: serving (?P<logdir>\S+) at (?P<url>http://(?P<host>[^:/]+):(?P<port>\d+)/)(?:\?token=(?P<token>[0-9a-f]+))?(?P<notes>.*)$"
)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


class DashboardServer:
    def __init__(
        self,
        logdir: Path,
        cache_dir: Path,
        *args: str,
        host: str = "127.0.0.1",
        env: dict[str, str] | None = None,
        preexec_fn=None,
        python: str = sys.executable,
    ) -> None:
        """``args``: more ``serve`` options; ``env`` and ``preexec_fn`` as for
        ``subprocess.Popen`` (settings, resource limits); ``python``: the interpreter (and so
        the installed stepscope) that serves."""
        self.cache_dir = cache_dir
        self.host = host
        self.process = subprocess.Popen(
            [python, "-m", "stepscope.cli", "serve", "--logdir", str(logdir), "--host", host, "--port", "0", "--cache-dir", str(cache_dir), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=preexec_fn,
        )
        self.line = self.process.stdout.readline().rstrip("\n")
        match = STARTUP_LINE.match(self.line)
        if match is None:
            self.process.kill()
            raise RuntimeError(f"serve printed {self.line!r}; stderr: {self.process.stderr.read()}")
        self.url, self.port, self.token = match["url"], int(match["port"]), match["token"]

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Answer:
        """One request on a fresh connection; the path is sent exactly as given, and a
        ``Host`` in ``headers`` replaces the real one."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            headers = dict(headers or {})
            connection.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
            for name, value in {**headers, **({"Content-Length": str(len(body))} if body is not None else {})}.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
        finally:
            connection.close()

    def get(self, path: str, **params: str) -> Answer:
        return self.request("GET", path + ("?" + urlencode(params) if params else ""))

    def ready(self, path: str, timeout_s: float = 240, **params: str) -> Answer:
        """Asks until the analysis is done (202 while it runs)."""
        deadline = time.monotonic() + timeout_s
        while True:
            answer = self.get(path, **params)
            if answer.status != 202 or time.monotonic() > deadline:
                return answer
            time.sleep(0.2)

    def wait_for_run(self, name: str, timeout_s: float = 60) -> None:
        """Until the run list holds ``name`` (the server rescans the logdir every second or so)."""
        deadline = time.monotonic() + timeout_s
        while not any(run["name"] == name for run in self.get("/api/runs").json()["runs"]):
            assert time.monotonic() < deadline, f"run {name} never appeared"
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
