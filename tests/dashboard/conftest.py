"""The dashboard tests' fixtures: a log directory holding every kind of run the dashboard
meets (``tests.support.dashboard.logdir``), and a ``stepscope serve`` process on it."""

from __future__ import annotations

import pytest

from tests.support.dashboard.logdir import Logdir, make_logdir
from tests.support.dashboard.server import DashboardServer


@pytest.fixture(scope="session")
def logdir(tmp_path_factory) -> Logdir:
    return make_logdir(tmp_path_factory.mktemp("dashboard") / "logs")


@pytest.fixture(scope="session")
def server(logdir: Logdir, tmp_path_factory):
    running = DashboardServer(logdir.root, tmp_path_factory.mktemp("cache"))
    yield running
    running.stop()
