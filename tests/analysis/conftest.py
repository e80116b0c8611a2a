"""Fixtures shared by the analysis tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from tests.support.framework_loops import JAX_BODY, JAX_IMPORTS
from tests.support.frameworks import run_framework_script


@pytest.fixture(scope="session")
def jax_path(tmp_path_factory) -> Path:
    """One real JAX CPU capture of the shared training loop (``framework_loops.JAX_BODY``),
    its ``.xplane.pb``: the XLA tools' tests (hlo_stats, roofline, memory_viewer,
    graph_viewer) all read it, so the loop runs once per session, not once per module."""
    run = run_framework_script(tmp_path_factory.mktemp("jax_xla_capture"), "jax", JAX_IMPORTS, JAX_BODY)
    (run_folder,) = stepscope.discover(run["logdir"])
    (host,) = run_folder.hosts
    return host.path
