"""A real ``tensorboard --logdir`` process on a free loopback port, with stepscope's plugin
loaded the way users get it (the ``tensorboard_plugins`` entry point of the installed
package), and plain HTTP calls to it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.dashboard.server import Answer, DashboardServer

# TensorBoard's line on stderr once it listens: "TensorBoard 2.21.0 at http://127.0.0.1:PORT/ (...)".
LISTENING = re.compile(r"TensorBoard \S+ at http://127\.0\.0\.1:(?P<port>\d+)/")
# Where TensorBoard serves the plugin's routes, and the dashboard's page there.
PREFIX = "/data/plugin/stepscope"
PAGE = f"{PREFIX}/index.html"
START_TIMEOUT_S = 180


class TensorBoardServer(DashboardServer):
    """``tensorboard --logdir LOGDIR --host 127.0.0.1 --port 0`` (TensorBoard binds where
    told). The dashboard's own paths (``/api/...``, ``/index.html``) given to the inherited
    helpers (``get``, ``ready``, ``wait_for_run``) go under the plugin's prefix, so the
    checks written for ``stepscope serve`` read the same API through TensorBoard."""

    def __init__(self, logdir: Path, cache_dir: Path, log: Path, *args: str) -> None:  # not super().__init__: that starts serve
        self.cache_dir = cache_dir
        self.host = "127.0.0.1"
        self.log = log
        tensorboard = Path(sys.executable).with_name("tensorboard")
        command = [str(tensorboard), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0", "--stepscope_cache_dir", str(cache_dir), *args]
        # stderr to a file: TensorBoard logs there as long as it runs, and a pipe nobody
        # reads would fill and stop it.
        with log.open("w") as stream:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stream, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        deadline = time.monotonic() + START_TIMEOUT_S
        while (match := LISTENING.search(log.read_text())) is None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"tensorboard did not start: {log.read_text()[-3000:]}")
            time.sleep(0.2)
        self.port = int(match["port"])
        self.root = f"http://127.0.0.1:{self.port}/"
        self.url = f"http://127.0.0.1:{self.port}{PAGE}"
        self.token = None

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> Answer:
        if path.startswith(("/api/", "/index.html")):
            path = PREFIX + path
        return super().request(method, path, body, headers)

    def stop(self) -> None:
        """Ctrl-C, as a user stops it (its exit handlers stop stepscope's workers), then kill."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
