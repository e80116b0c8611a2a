"""The dashboard tests' fixtures: a log directory holding every kind of run the dashboard
meets (``tests.support.dashboard.logdir``), and a ``stepscope serve`` process on it."""

from __future__ import annotations

import playwright.sync_api as playwright_api
import pytest

from tests.support.dashboard.browser import CHROMIUM, CHROMIUM_ARGS, foreign_requests
from tests.support.dashboard.logdir import Logdir, make_logdir
from tests.support.dashboard.server import DashboardServer
from tests.support.demo_runs import DemoRun


@pytest.fixture(scope="session")
def logdir(tmp_path_factory, demo_run: DemoRun) -> Logdir:
    return make_logdir(tmp_path_factory.mktemp("dashboard") / "logs", demo_run)


@pytest.fixture(scope="session")
def server(logdir: Logdir, tmp_path_factory):
    running = DashboardServer(logdir.root, tmp_path_factory.mktemp("cache"))
    yield running
    running.stop()


@pytest.fixture(scope="package")
def browser():
    """One Chromium for the dashboard tests (a launch costs seconds); each test's ``page`` gets
    a fresh context, so no cookies, storage or listeners pass from one test to the next.
    Package-scoped, not session-scoped: Playwright's sync API holds an asyncio loop as the
    main thread's running loop while it is open, which tests outside this folder need not meet."""
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    opened = context.new_page()
    requested: list[str] = []
    errors: list[str] = []
    opened.on("request", lambda request: requested.append(request.url))
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert foreign_requests(requested) == [], "the page fetched something from outside stepscope"
    assert errors == [], errors
