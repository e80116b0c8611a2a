"""Playwright on Debian's Chromium (/usr/bin/chromium), never a browser Playwright downloads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlencode, urlparse

import playwright.sync_api as playwright_api

from tests.support.traces import ROOT

CHROMIUM = "/usr/bin/chromium"
# Flags for a sandbox with no network: without the background-networking ones Chromium
# keeps trying Google's hosts.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "screenshots"
# What a tool's page shows when it has something to show (figures, tables, charts, the
# timeline) and the one-line notices it shows instead when it has not.
CONTENT = "[data-metric], table[data-table] tbody tr, canvas, .note, #tool-unavailable"


@contextmanager
def chromium() -> Iterator[playwright_api.Browser]:
    """One headless Chromium (a launch costs seconds: a test folder shares one)."""
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@contextmanager
def watched_page(browser: playwright_api.Browser, viewport: tuple[int, int] = (1280, 900)) -> Iterator[playwright_api.Page]:
    """A page in a fresh context (no cookies, storage or listeners from another test) of
    ``viewport`` (width, height) that, when the test is done, must have fetched nothing from
    outside the server and raised no error."""
    width, height = viewport
    context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
    opened = context.new_page()
    requested: list[str] = []
    errors: list[str] = []
    opened.on("request", lambda request: requested.append(request.url))
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert foreign_requests(requested) == [], "the page fetched something from outside stepscope"
    assert errors == [], errors


def page_url(base: str, **params: str) -> str:
    return base + ("?" + urlencode(params) if params else "")


def foreign_requests(urls: list[str]) -> list[str]:
    """Requests the page made anywhere but the stepscope server (must be none: offline)."""
    return [url for url in urls if urlparse(url).hostname not in ("127.0.0.1",) and not url.startswith(("data:", "blob:"))]


# ---------------------------------------------------------------- a tool page in the browser

READY_TIMEOUT_MS = 240_000


def open_tool(page, server, tool: str, **where: str):
    page.goto(page_url(server.url, **where, tool=tool))
    return wait_ready(page, tool)


def wait_ready(page, tool: str):
    page.wait_for_selector(f'#tool[data-tool="{tool}"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
    return page


def offered(page, server, run: str, host: str) -> list[str]:
    """The tools the menu offers for a run/host once its analysis is done (not greyed out:
    the menu greys some out once the server has checked, on every run here: kernel stats
    on a TPU or CPU run, HLO op stats on a PyTorch one)."""
    open_tool(page, server, "overview_page", run=run, host=host)
    page.wait_for_function("() => [...document.querySelectorAll('#tool-select option')].some(o => o.disabled)", timeout=60_000)
    return page.locator("#tool-select option:not([disabled])").evaluate_all("options => options.map(o => o.value)")


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def chart(page, name: str) -> list[dict]:
    """The datasets the page gave the chart (labels and data), read from Chart.js."""
    return page.evaluate(
        """name => { const chart = window.__stepscope.charts[name];
                     return {labels: chart.data.labels, datasets: chart.data.datasets.map(d => ({label: d.label, data: d.data}))}; }""",
        name,
    )


def data(server, tool: str, **where: str) -> dict:
    answer = server.ready("/api/data", **where, tool=tool)
    assert answer.status == 200
    return answer.json()
