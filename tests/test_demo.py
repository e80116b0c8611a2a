"""`stepscope demo --no-serve`: the first run is diagnosed input-bound, the second (the
recommendation applied) spends a smaller share of its step on input. Figures are compared
between the two runs as measured, never against fixed timings."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.loader_settings import RECORDED, LoaderSettings, loader_settings
from stepscope.demo import DEFAULT_LOGDIR_PREFIX, RUN_AFTER, RUN_BEFORE, DemoConfig, comparison, figures
from tests.support.demo_runs import DEMO_STEPS, DemoRun

STEPS = DEMO_STEPS

pytestmark = pytest.mark.framework


def test_demo_diagnoses_input_bound_then_shows_the_fix(demo_run: DemoRun):
    logdir, result = demo_run.logdir, demo_run
    assert result.returncode == 0, result.stderr
    runs = {run.name.split("/")[0]: run for run in stepscope.discover(logdir)}
    assert sorted(runs) == [RUN_BEFORE, RUN_AFTER]
    (before_host,), (after_host,) = runs[RUN_BEFORE].hosts, runs[RUN_AFTER].hosts
    before, after = figures(RUN_BEFORE, before_host.path), figures(RUN_AFTER, after_host.path)

    # Run 1 loads every sample in the loop: its input wait is diagnosed.
    assert before.input_bound in ("highly", "moderately")
    first_report = result.stdout.split("== run 2")[0]
    assert f"Your program is {before.input_bound} input-bound" in first_report
    # Run 2 reads in parallel workers: a smaller share of the step is input.
    assert after.input_percent < before.input_percent
    # Its loader's settings are in its profile (the first wait of the pass), so where it is
    # still input-bound it is told the step after workers, never "load in parallel" again.
    config = DemoConfig()
    loader = loader_settings(stepscope.load(after_host.path))
    assert loader == LoaderSettings(config.workers_after, True, config.prefetch_after, False, False, RECORDED, passes=1)
    second_report = result.stdout.split("== run 2")[1].split("== before / after")[0]
    assert "Load data in parallel" in first_report and "Load data in parallel" not in second_report
    if after.input_bound != "not":
        assert f"already loads in parallel (num_workers={config.workers_after}, prefetch_factor={config.prefetch_after}" in second_report
    assert "\n== before / after: " + comparison(before, after) + "\n" in result.stdout

    # It ends with `stepscope diff` of the two runs: the step-time change is the one each
    # run's own overview gives (the mean over its steady steps), subtracted.
    diff_text = result.stdout.split(f"== stepscope diff {before_host.path} {after_host.path}\n")[1]
    before_mean, after_mean = (run_tool("overview_page", stepscope.load(h.path)).to_json()["step_time_us"]["mean"] for h in (before_host, after_host))
    step_line = next(line for line in diff_text.splitlines() if line.startswith("step time (us): mean "))
    assert step_line.startswith(f"step time (us): mean {before_mean:,.1f} -> {after_mean:,.1f} ({100 * (after_mean - before_mean) / before_mean:+.1f}%)")
    assert "\nstep_time (3 rows)\n" in diff_text and "\nbreakdown (10 rows)\n" in diff_text

    # Every sample was read once per run, in the loop (run 1) or in the forked workers
    # (run 2, merged into the profile): steps x batch size `stepscope.data.read` events.
    samples = STEPS * DemoConfig().batch_size
    for host in (before_host, after_host):
        profile = stepscope.load(host.path)
        reads = sum(int(np.sum(plane.metadata.name_array[plane.events.metadata_id] == "stepscope.data.read")) for plane in profile.planes)
        assert reads == samples, host.path
        overview = run_tool("overview_page", profile).to_json()
        assert [step["step"] for step in overview["steps"]] == list(range(STEPS))


def test_demo_without_a_logdir_writes_to_the_temporary_folder_not_the_working_folder(tmp_path: Path):
    """``stepscope demo`` started in a folder (a clone's working tree) leaves it as it was:
    its runs go to a new stepscope-demo-* folder of $TMPDIR, which it names. The $TMPDIR
    here is short: torch's DataLoader workers hand batches over through a Unix socket in
    it, whose path may not pass 107 bytes (under pytest's tmp_path the workers fail and
    the loader waits for ever)."""
    work = tmp_path / "work"
    work.mkdir()
    with tempfile.TemporaryDirectory(prefix="sd", dir="/tmp") as folder:
        temporary = Path(folder)
        command = [sys.executable, "-m", "stepscope.cli", "demo", "--no-serve", "--steps", "3"]
        done = subprocess.run(command, cwd=work, env={**os.environ, "TMPDIR": folder}, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert list(work.iterdir()) == []
        (logdir,) = temporary.glob(f"{DEFAULT_LOGDIR_PREFIX}*")
        assert f"== the runs are written to {logdir} (--logdir chooses another folder)\n" in done.stdout
        assert sorted(run.name.split("/")[0] for run in stepscope.discover(logdir)) == [RUN_BEFORE, RUN_AFTER]
