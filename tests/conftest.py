"""Fixtures shared across the test folders."""

from __future__ import annotations

import pytest

from tests.support.demo_runs import DemoRun, run_demo
from tests.support.framework_loops import JAX_BODY, JAX_IMPORTS
from tests.support.frameworks import run_framework_script


@pytest.fixture(scope="session")
def jax_run(tmp_path_factory) -> dict:
    """The manifest of one real JAX CPU capture of the shared training loop
    (``framework_loops.JAX_BODY``). The trace tests check what the profiler wrote and the
    XLA tools' tests read its XSpace, none of them writing beside it (XProf runs on a
    copy), so the loop runs once per session, not once per folder."""
    return run_framework_script(tmp_path_factory.mktemp("jax_capture"), "jax", JAX_IMPORTS, JAX_BODY)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> DemoRun:
    """One ``stepscope demo --no-serve`` of ``demo_runs.DEMO_STEPS`` steps, run as a user runs
    it. tests/test_demo.py checks its report and runs; the dashboard's logdir copies its two
    runs (the compare view's pair). Neither writes into its logdir, so the demo (two real
    torch loops, the longest child of the suite) runs once per session, not twice."""
    return run_demo(tmp_path_factory.mktemp("demo") / "demo")
