"""Fixtures shared by the analysis tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.opstats import OpStats


@pytest.fixture(scope="session")
def jax_path(jax_run: dict) -> Path:
    """The ``.xplane.pb`` of the session's JAX capture (``tests/conftest.py`` jax_run): the XLA
    tools' tests (hlo_stats, roofline, memory_viewer, graph_viewer) all read it."""
    (run_folder,) = stepscope.discover(jax_run["logdir"])
    (host,) = run_folder.hosts
    return host.path


@pytest.fixture(scope="session")
def cpu_capture_path(tmp_path_factory) -> Path:
    """A real stepscope capture of a plain Python loop: host events only, no device."""
    logdir = tmp_path_factory.mktemp("capture")
    with stepscope.profile(logdir):
        for number in range(3):
            with stepscope.step(number), stepscope.trace("work"):
                sum(range(10_000))
    (path,) = logdir.rglob("*.xplane.pb")
    return path


@pytest.fixture(scope="module")
def jax_stats(jax_path: Path) -> OpStats:
    """The JAX capture's ``OpStats``, one per test module (hlo_stats' and roofline_model's)."""
    return OpStats(stepscope.load(jax_path))
