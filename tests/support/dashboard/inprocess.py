"""The dashboard app served by uvicorn on a thread of the test process, for tests that
inject a fake at a seam (the analysis function, the profile jobs, the export budget); the
same plain-HTTP calls as ``DashboardServer``."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import uvicorn

from stepscope.dashboard.api.app import create_app
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache
from tests.support.dashboard.server import DashboardServer


class InProcessServer(DashboardServer):
    def __init__(self, logdir: Path, cache: AnalysisCache) -> None:  # not super().__init__: that starts a process
        self.cache_dir = cache.root.parent
        self.host = "127.0.0.1"
        self.app = create_app(logdir, cache)
        sock = socket.create_server(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", access_log=False, timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the in-process dashboard did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stops uvicorn, which closes the app's worker pools (its lifespan)."""
        self.server.should_exit = True
        self.thread.join(timeout=30)
