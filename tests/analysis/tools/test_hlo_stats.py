"""hlo_stats on the shared TPU profile: every number against sums read from the file with
the protobuf classes (tests/support/xla_ops.py), and against XProf's own hlo_stats; and on a
real JAX CPU capture made here, whose rows are the XLA CPU backend's thunks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.opstats import OpStats
from stepscope.render import render
from tests.support.framework_loops import STEPS
from tests.support.traces import shared
from tests.support.xla_ops import device_clock_spans, hlo_op_sums, plane_stats, xprof_tables

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
GIB = 2**30


@pytest.fixture(scope="module")
def tpu_path() -> Path:
    return shared(TPU)


@pytest.fixture(scope="module")
def tpu(tpu_path: Path) -> OpStats:
    return OpStats(stepscope.load(tpu_path))


def _by_key(result) -> dict[tuple[str, str], dict]:
    return {(row["program_id"], row["name"]): row for row in result.to_json()["rows"]}


@pytest.mark.parametrize("device", ["all", "/device:TPU:0", "/device:TPU:3"])
def test_rows_are_the_xla_ops_of_the_file(tpu: OpStats, tpu_path: Path, device: str):
    expected = hlo_op_sums(tpu_path, None if device == "all" else device)
    result = run_tool("hlo_stats", tpu, device=device)
    ours = _by_key(result)
    assert set(ours) == set(expected)
    total = sum(e.time_ps for e in expected.values())
    assert result.total_self_time_ps == total
    for key, sums in expected.items():
        row = ours[key]
        assert row["occurrences"] == sums.occurrences, key
        # TPU ops are timed by the device's clock and never nest: self time is time.
        assert row["total_time_ps"] == row["total_self_time_ps"] == sums.time_ps, key
        assert row["flops"] == sums.flops and row["bytes_accessed"] == sums.bytes_accessed, key
        seconds = sums.time_ps / 1e12
        assert row["gflops_per_second"] == pytest.approx(sums.flops / seconds / 1e9, rel=1e-12), key
        assert row["memory_bandwidth_gb_per_second"] == pytest.approx(sums.bytes_accessed / seconds / 1e9, rel=1e-12), key
        assert row["self_time_percent"] == pytest.approx(100 * sums.time_ps / total)
    ranked = [row["total_self_time_ps"] for row in result.to_json()["rows"]]
    assert ranked == sorted(ranked, reverse=True)
    assert result.to_json()["rows"][-1]["cumulative_self_time_percent"] == pytest.approx(100)


def test_bound_by_the_ridge_point_of_the_profiles_peaks(tpu: OpStats, tpu_path: Path):
    stats = plane_stats(tpu_path)["/device:TPU:0"]
    ridge = stats["peak_teraflops_per_second"] * 1e12 / (stats["peak_hbm_bw_gigabytes_per_second"] * 1e9)
    result = run_tool("hlo_stats", tpu)
    assert result.ridge_point == pytest.approx(ridge)
    assert {p.source for p in result.peaks} == {"profile"} and len(result.peaks) == 4
    assert {p.chip for p in result.peaks} == {stats["device_type_string"]}
    for row in result.to_json()["rows"]:
        intensity = row["flops"] / row["bytes_accessed"]
        assert row["operational_intensity"] == pytest.approx(intensity)
        assert row["bound_by"] == ("Compute" if intensity >= ridge else "Memory")
    # Overridden peaks move the ridge: 1 TFLOP/s over 10,000 GB/s is 0.1 FLOP/byte, under
    # the fusions' 0.125 (one add per 8 bytes: f32 in and out).
    overridden = run_tool("hlo_stats", tpu, peak_flops="1", peak_bw="10000")
    assert overridden.ridge_point == pytest.approx(0.1)
    assert {p.source for p in overridden.peaks} == {"options"}
    fusions = [row for row in overridden.to_json()["rows"] if row["category"] == "loop fusion"]
    assert fusions and all(row["operational_intensity"] == 0.125 and row["bound_by"] == "Compute" for row in fusions)


def test_matches_xprofs_hlo_stats(tpu: OpStats, tpu_path: Path):
    (table,) = xprof_tables(tpu_path, "hlo_stats")
    theirs = {(row["program_id"], row["hlo_op_name"]): row for row in table.rows}
    result = run_tool("hlo_stats", tpu)
    ours = _by_key(result)
    assert set(theirs) == set(ours)
    op_time, span = result.total_self_time_ps, sum(device_clock_spans(tpu_path).values())
    assert span > op_time
    for key, row in theirs.items():
        mine = ours[key]
        assert mine["category"] == row["category"], key
        assert mine["expression"] == row["hlo_op_expression"], key
        assert mine["occurrences"] == row["occurrences"], key
        # XProf gives microseconds as doubles of the same device_duration_ps sums.
        assert mine["total_time_us"] == pytest.approx(row["total_time"], rel=1e-12, abs=1e-9), key
        assert mine["total_self_time_us"] == pytest.approx(row["total_self_time"], rel=1e-12, abs=1e-9), key
        # XProf's share (a percentage too) is of the cores' device-clock spans, idle included;
        # stepscope's of the ops' time (docs/tools/hlo_stats.md): the same time over two wholes.
        assert mine["self_time_percent"] * op_time == pytest.approx(row["total_self_time_percent"] * span, rel=1e-9), key
        assert mine["gflops_per_second"] == pytest.approx(row["model_flop_rate"], rel=1e-9), key
        # XProf's bandwidth is in GiB/s, stepscope's in GB/s (docs/tools/hlo_stats.md).
        assert mine["memory_bandwidth_gb_per_second"] == pytest.approx(row["measured_memory_bw"] * GIB / 1e9, rel=1e-9), key
        assert mine["operational_intensity"] == pytest.approx(row["operational_intensity"]), key
        # XProf names the memory an op is bound by (HBM here); stepscope says "Memory".
        assert (mine["bound_by"], row["bound_by"]) in {("Memory", "HBM"), ("Compute", "Compute")}, key
    ranks = [ours[(row["program_id"], row["hlo_op_name"])]["rank"] for row in sorted(table.rows, key=lambda r: r["rank"])]
    assert ranks == sorted(ranks)


def test_csv_and_text_carry_every_row(tpu: OpStats):
    result = run_tool("hlo_stats", tpu)
    csv = render([result], "csv").splitlines()
    assert csv[0].startswith("rank,program,category,name,occurrences,total_time_us")
    assert len([line for line in csv[1:] if line]) == len(result.rows) == 17
    text = render([result], "text")
    assert "ridge point 560.4 FLOP/byte" in text and "copy-done.4" in text


def test_unknown_device_and_bad_peaks_are_one_line_errors(tpu: OpStats):
    with pytest.raises(stepscope.StepscopeError, match=r"no XLA ops on device '/device:GPU:0' \(choose from all, /device:TPU:0"):
        run_tool("hlo_stats", tpu, device="/device:GPU:0")
    for bad in ("fast", "-1", "nan", "0"):
        with pytest.raises(stepscope.StepscopeError, match="peak_flops must be a"):
            run_tool("hlo_stats", tpu, peak_flops=bad)


def test_a_profile_without_xla_ops_has_no_rows():
    result = run_tool("hlo_stats", stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz")))
    assert result.rows == [] and result.devices == [] and result.summary() == ["No XLA (HLO) ops in this profile."]
    assert not math.isnan(result.total_self_time_us)


# On a real JAX CPU capture made here (the session's jax_run): the XLA CPU backend's thunks
# (host events carrying ``hlo_op``), read back with the protobuf classes, and XProf's own
# tool on the same file (which shows no rows for a CPU profile).


@pytest.mark.framework
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


@pytest.mark.framework
def test_xprof_shows_no_hlo_stats_for_a_cpu_profile(jax_path: Path):
    (table,) = xprof_tables(jax_path, "hlo_stats")
    assert table.rows == []
