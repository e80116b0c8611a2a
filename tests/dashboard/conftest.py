"""The dashboard tests' fixtures: a log directory holding every kind of run the dashboard
meets (``tests.support.dashboard.logdir``), and a ``stepscope serve`` process on it."""

from __future__ import annotations

import pytest

from tests.support.dashboard.browser import chromium, watched_page
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
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser, server):
    with watched_page(browser) as opened:
        yield opened
