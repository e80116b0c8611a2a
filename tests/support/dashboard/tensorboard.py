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
from urllib.parse import urlencode, urlparse

import pytest

from tests.support.cli import as_in_a_terminal
from tests.support.dashboard.browser import CONTENT, READY_TIMEOUT_MS, foreign_requests
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

    def __init__(
        self, logdir: Path, cache_dir: Path, log: Path, *args: str, bin_dir: Path = Path(sys.executable).parent, env: dict[str, str] | None = None
    ) -> None:  # not super().__init__: that starts serve
        """``bin_dir``: the environment whose ``tensorboard`` runs (and so whose stepscope);
        ``env``: its environment variables."""
        self.cache_dir = cache_dir
        self.host = "127.0.0.1"
        self.log = log
        command = [str(bin_dir / "tensorboard"), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0", "--stepscope_cache_dir", str(cache_dir), *args]
        # stderr to a file: TensorBoard logs there as long as it runs, and a pipe nobody
        # reads would fill and stop it.
        with log.open("w") as stream:
            self.process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=stream, env=dict(env or os.environ, PYTHONUNBUFFERED="1"), preexec_fn=as_in_a_terminal
            )
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


# ---------------------------------------------------------------- the tab in Chromium


class TabWatch:
    """What the TensorBoard page and its frames did: console errors, page errors, and the
    requests and failed answers of the dashboard's frame."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.failed: list[str] = []
        page.on("console", lambda message: self.errors.append(f"{message.location.get('url')}: {message.text}") if message.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("response", lambda response: self.failed.append(f"{response.status} {response.url}") if response.status >= 400 else None)

    def check(self) -> None:
        assert self.errors == []
        assert self.failed == []
        assert foreign_requests(self.requests) == [], "the page fetched something from outside this machine"
        # Nothing left the plugin's prefix for the dashboard's own API (an absolute /api/).
        assert [url for url in self.requests if urlparse(url).path.startswith("/api/")] == []


def dashboard_frame(page):
    """The frame the stepscope tab turned into the dashboard's page."""
    for _ in range(READY_TIMEOUT_MS // 100):
        frame = next((frame for frame in page.frames if urlparse(frame.url).path == PAGE), None)
        if frame is not None:
            return frame
        page.wait_for_timeout(100)  # not time.sleep: Playwright sees new frames while it waits
    pytest.fail(f"no stepscope frame; frames: {[frame.url for frame in page.frames]}")


def open_tab(page, tensorboard):
    """TensorBoard's page on the stepscope tab; the dashboard's frame once its page is up."""
    page.goto(f"{tensorboard.root}#stepscope")
    page.get_by_text("stepscope", exact=True).first.wait_for(timeout=READY_TIMEOUT_MS)
    frame = dashboard_frame(page)
    frame.wait_for_selector('#tool[data-state="ready"]', timeout=READY_TIMEOUT_MS)
    return frame


def choose_tool(frame, tool: str) -> None:
    frame.select_option("#tool-select", tool)
    frame.wait_for_selector(f'#tool[data-tool="{tool}"][data-state="ready"]', timeout=READY_TIMEOUT_MS)


def go(frame, tensorboard, tool: str, **where: str) -> None:
    """A deep link, opened in the tab's frame."""
    frame.goto(f"{tensorboard.url}?{urlencode({**where, 'tool': tool})}")
    frame.wait_for_selector(f'#tool[data-tool="{tool}"][data-state="ready"]', timeout=READY_TIMEOUT_MS)


def shows_content(frame, what: str) -> None:
    panel = frame.locator("#tool")
    assert [item for item in panel.locator(CONTENT).all() if item.is_visible()], f"{what} shows nothing and says nothing"
    empty = [t.get_attribute("data-table") for t in panel.locator("table[data-table]").all() if t.is_visible() and t.locator("tbody tr").count() == 0]
    assert empty == [], f"{what} shows empty tables: {empty}"
