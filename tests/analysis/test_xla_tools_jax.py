"""hlo_stats and roofline_model on a real JAX CPU capture made here: the XLA CPU backend's
thunks (host events carrying ``hlo_op``), read back with the protobuf classes, and XProf's
own tools on the same file (which show no rows for a CPU profile)."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.opstats import OpStats
from tests.support.framework_loops import STEPS
from tests.support.xla_ops import hlo_op_sums, xprof_tables

pytestmark = pytest.mark.framework


@pytest.fixture(scope="module")
def jax_stats(jax_path: Path) -> OpStats:
    return OpStats(stepscope.load(jax_path))


def test_hlo_stats_rows_are_the_cpu_thunks(jax_stats: OpStats, jax_path: Path):
    expected = hlo_op_sums(jax_path)
    assert expected, "the JAX profile ran XLA ops"
    result = run_tool("hlo_stats", jax_stats)
    assert result.devices == ["/host:CPU"]
    rows = {(row["program_id"], row["name"]): row for row in result.to_json()["rows"]}
    assert set(rows) == set(expected)
    for key, sums in expected.items():
        row = rows[key]
        # train_step runs once per step: every one of its thunks once per step.
        assert row["occurrences"] == sums.occurrences == len(STEPS), key
        assert row["total_time_ps"] == sums.time_ps, key
        assert row["program"] == f"jit_train_step({key[0]})", key
        # XLA's CPU backend records no cost analysis: no rates, no bound.
        assert sums.flops is None and row["flops"] is None and row["gflops_per_second"] is None, key
        assert row["bound_by"] is None, key
    # The CPU thunks do not nest here: self time is time.
    assert result.total_self_time_ps == sum(s.time_ps for s in expected.values())
    assert result.peaks[0].source == "" and result.ridge_point is None
    assert "Bound by: unknown" in result.summary()[1]


def test_xprof_shows_no_hlo_stats_for_a_cpu_profile(jax_path: Path):
    (table,) = xprof_tables(jax_path, "hlo_stats")
    assert table.rows == []


def test_roofline_on_cpu_gives_times_and_no_roofline(jax_stats: OpStats, jax_path: Path):
    expected = hlo_op_sums(jax_path)
    result = run_tool("roofline_model", jax_stats)
    (device,) = result.device_rows
    assert device["name"] == "/host:CPU"
    assert device["occurrences"] == sum(s.occurrences for s in expected.values())
    assert device["time_ps"] == sum(s.time_ps for s in expected.values())
    (program,) = result.programs
    assert program["name"].startswith("jit_train_step(") and program["time_ps"] == device["time_ps"]
    assert {(row["program"].rsplit("(", 1)[-1].rstrip(")"), row["name"]): row["time_ps"] for row in result.ops} == {
        key: sums.time_ps for key, sums in expected.items()
    }
    # No cost analysis on CPU and no known peaks: every roofline number is null, and the
    # summary says why.
    for row in [device, program, *result.ops]:
        assert row["flops"] is None and row["roofline_fraction"] is None and row["bound_by"] is None
    assert result.peak_tflops is None and result.ridge_point is None
    assert result.summary() == [
        "/host:CPU: peaks unknown (pass --option peak_flops=TFLOP/s --option peak_bw=GB/s)",
        "No FLOP counts in this profile (XLA records none on CPU): times only, no roofline.",
    ]
    # Peaks given by hand: the shares stay null without FLOPs or bytes to rate.
    given = run_tool("roofline_model", jax_stats, peak_flops="2", peak_bw="50")
    assert given.peak_tflops == 2.0 and given.ridge_point == pytest.approx(2e12 / 50e9)
    assert all(row["roofline_fraction"] is None for row in given.ops)


def test_xprof_shows_no_roofline_for_a_cpu_profile(jax_path: Path):
    table = xprof_tables(jax_path, "roofline_model")[0]
    assert table.rows == [] and float(table.properties["peak_flop_rate"]) == 0.0
