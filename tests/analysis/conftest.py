"""Fixtures shared by the analysis tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope


@pytest.fixture(scope="session")
def jax_path(jax_run: dict) -> Path:
    """The ``.xplane.pb`` of the session's JAX capture (``tests/conftest.py`` jax_run): the XLA
    tools' tests (hlo_stats, roofline, memory_viewer, graph_viewer) all read it."""
    (run_folder,) = stepscope.discover(jax_run["logdir"])
    (host,) = run_folder.hosts
    return host.path
