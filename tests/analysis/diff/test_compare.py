"""stepscope's diff of two runs: hand-built pairs with step times chosen by hand (every
expected figure derived in a comment), and real Kineto traces whose expected changes come
from each run's own tool results, run separately, and from the raw JSON."""

from __future__ import annotations

import math

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.diff.compare import BY_NUMBER, BY_ORDER, diff
from stepscope.analysis.diff.gate import FAILED, NOISE, NOT_RECORDED, PASSED, Rule, RuleError, gate
from stepscope.analysis.diff.row_changes import KernelChange, StepCounts, Totals, by_change, time_change
from stepscope.analysis.diff.step_change import mean_change
from stepscope.analysis.diff.verdict import verdict
from stepscope.analysis.steps.breakdown import BREAKDOWN, IDLE
from tests.support.diff_traces import OP, profiler_step_us, scaled_copy, step_trace
from tests.support.traces import shared

MiB = 2**20
# Base: a first step of 40 ms, more than 3x the median of the others (12 ms): an outlier
# the overview sets aside; the steady steps 10, 12, 11, 13, 14 ms.
BASE_MS = [40, 10, 12, 11, 13, 14]
# New: every steady step 5 ms slower on average: 15, 17, 16, 18, 19 ms.
SLOWER_MS = [15, 17, 16, 18, 19]


@pytest.fixture
def base(tmp_path):
    return stepscope.load(step_trace(tmp_path / "base.pt.trace.json", BASE_MS, peak_bytes=1 * MiB))


@pytest.fixture
def slower(tmp_path):
    return stepscope.load(step_trace(tmp_path / "new.pt.trace.json", SLOWER_MS, peak_bytes=3 * MiB))


def test_a_clearly_slower_run(base, slower):
    result = diff(base, slower)
    times = result.step_time
    # Steady steps: base (10+12+11+13+14)/5 = 12 ms; new (15+17+16+18+19)/5 = 17 ms.
    assert (times["steps_base"], times["set_aside_base"], times["steps_new"], times["set_aside_new"]) == (5, 1, 5, 0)
    assert times["mean"]["base"] == pytest.approx(12_000) and times["mean"]["new"] == pytest.approx(17_000)
    assert times["mean"]["change"] == pytest.approx(5_000)
    assert times["mean"]["change_percent"] == pytest.approx(100 * 5 / 12)  # 41.67%
    # Medians: sorted 10 11 12 13 14 -> 12; 15 16 17 18 19 -> 17.
    assert (times["median"]["base"], times["median"]["new"]) == pytest.approx((12_000, 17_000))
    # p90, linear interpolation: position 0.9 * 4 = 3.6 -> 13 + 0.6 * (14 - 13) = 13.6 ms;
    # new: 18 + 0.6 * 1 = 18.6 ms.
    assert (times["p90"]["base"], times["p90"]["new"]) == pytest.approx((13_600, 18_600))
    # Any resample's mean lies within its run's range (10..14, 15..19 ms), so every
    # resampled difference lies in 1..9 ms: the interval excludes 0, around +5 ms.
    change = times["mean"]
    assert change["significant"] is True
    assert 1_000 <= change["ci_low"] < 5_000 < change["ci_high"] <= 9_000
    assert result.verdict.startswith("Step +41.7% (12.00 ms -> 17.00 ms, 95% CI ")
    # The op: half of every step, set-aside ones included (op totals are the whole
    # profile's, as framework_op_stats gives them): (40+10+12+11+13+14)/2 = 50 ms over 6,
    # (15+17+16+18+19)/2 = 42.5 ms over 5.
    (op,) = result.ops
    assert (op["name"], op["status"], op["base_occurrences"], op["new_occurrences"]) == (OP, "changed", 6, 5)
    assert (op["base_total_us"], op["new_total_us"], op["change_us"]) == pytest.approx((50_000, 42_500, -7_500))
    # The total fell only because the new run has one step fewer. Per step (total over the
    # run's 6 and 5 steps): 50/6 = 8.333 ms -> 42.5/5 = 8.5 ms, +0.1667 ms, +2.0% (8.5 / 8.333
    # = 1.02): the same way as the step, and what the verdict names.
    assert (op["base_per_step_us"], op["new_per_step_us"]) == pytest.approx((50_000 / 6, 8_500))
    assert op["change_per_step_us"] == pytest.approx(8_500 - 50_000 / 6) and op["change_per_step_percent"] == pytest.approx(2.0)
    assert result.verdict.endswith(f"; largest op change: {OP} +166.7 us per step.")
    # One CPU allocation each: 1 MiB -> 3 MiB, +200%.
    peak = result.memory_peak
    assert (peak["base_bytes"], peak["new_bytes"], peak["change_bytes"], peak["base_device"]) == (MiB, 3 * MiB, 2 * MiB, "CPU")
    assert peak["change_percent"] == pytest.approx(200.0)
    # Both runs number their steps from 0: side by side by number; base step 5 has no partner.
    assert result.aligned_by == BY_NUMBER
    assert [(p["base_step"], p["new_step"]) for p in result.steps] == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, None)]
    assert result.steps[0]["base_set_aside"] == "outlier" and result.steps[1]["change_us"] == pytest.approx(7_000)  # 17 - 10 ms


def test_the_gate_trips_on_a_clear_regression(base, slower):
    result = diff(base, slower)
    rules = [Rule.parse(text) for text in ("step_time > +5%", "memory_peak > +10%", "step_time > +50%", "step_time > +4ms", "step_time < -1%")]
    outcomes = gate(rules, result).rules
    # +41.7% > 5% and significant; memory +200% (a peak: no noise estimate, so real);
    # +41.7% is not above 50%; +5 ms > 4 ms; +41.7% is not below -1%.
    assert [outcome["status"] for outcome in outcomes] == [FAILED, FAILED, PASSED, FAILED, PASSED]
    assert outcomes[0]["reason"] == "step_time +41.7% (12.00 ms -> 17.00 ms)"
    assert outcomes[1]["reason"] == "memory_peak +200.0% (1,048,576 bytes -> 3,145,728 bytes) (noise not measured)"


def test_identical_runs_show_no_significant_change(base):
    result = diff(base, base)
    change = result.step_time["mean"]
    assert change["change"] == 0 and change["significant"] is False
    assert change["ci_low"] < 0 < change["ci_high"]  # two different resamplings of the same steps
    assert result.verdict.startswith("No significant change in step time (12.00 ms -> 12.00 ms, +0.0%, 95% CI ")
    assert all(row["status"] == "unchanged" for row in result.ops + result.kernels)
    # 0% is above -1% (the rule trips) but the change is noise: it does not fail.
    outcomes = gate([Rule.parse("step_time > -1%"), Rule.parse("step_time > +5%")], result).rules
    assert [outcome["status"] for outcome in outcomes] == [NOISE, PASSED]


def test_steps_are_aligned_by_order_when_the_numbers_differ(tmp_path, base):
    renumbered = stepscope.load(step_trace(tmp_path / "later.pt.trace.json", SLOWER_MS, first_step=100))
    result = diff(base, renumbered)
    assert result.aligned_by == BY_ORDER
    assert [(p["base_step"], p["new_step"]) for p in result.steps] == [(0, 100), (1, 101), (2, 102), (3, 103), (4, 104), (5, None)]
    # No memory events in the new run: the peak is not compared, and a rule on it is skipped.
    assert result.memory_peak["new_bytes"] is None and result.memory_peak["change_bytes"] is None
    assert [row["status"] for row in result.memory] == ["vanished"]
    assert gate([Rule.parse("memory_peak > +10%")], result).rules[0]["status"] == NOT_RECORDED


def test_one_step_runs_have_no_interval_and_count_as_real(tmp_path):
    one = stepscope.load(step_trace(tmp_path / "one.pt.trace.json", [10]))
    two = stepscope.load(step_trace(tmp_path / "two.pt.trace.json", [20]))
    result = diff(one, two)
    change = result.step_time["mean"]
    assert change["significant"] is None and change["ci_low"] is None
    assert change["change_percent"] == pytest.approx(100.0)  # 10 -> 20 ms
    assert "noise not measured" in result.verdict
    assert gate([Rule.parse("step_time > +5%")], result).rules[0]["status"] == FAILED


@pytest.mark.parametrize(
    ("text", "metric", "above", "amount", "percent"),
    [
        ("step_time > +5%", "step_time", True, 5.0, True),
        ("step_time<-10%", "step_time", False, -10.0, True),
        ("memory_peak > 512MiB", "memory_peak", True, 512 * MiB, False),
        ("memory_peak > +1.5GB", "memory_peak", True, 1.5e9, False),
        ("input > +1.5ms", "input", True, 1_500.0, False),  # in microseconds
        ("idle < -200ns", "idle", False, -0.2, False),
    ],
)
def test_rules_parse(text, metric, above, amount, percent):
    rule = Rule.parse(text)
    assert (rule.metric, rule.above, rule.percent) == (metric, above, percent)
    assert rule.amount == pytest.approx(amount)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("step_time >= 5%", "write METRIC > AMOUNT"),
        ("step_time > five", "write METRIC > AMOUNT"),
        ("steptime > 5%", "unknown metric 'steptime'"),
        ("step_time > 5", "not no unit"),
        ("step_time > 5MiB", "not MiB"),
        ("memory_peak > 5ms", "unit of bytes"),
    ],
)
def test_bad_rules_say_what_is_wrong(text, fragment):
    with pytest.raises(RuleError, match=None) as caught:
        Rule.parse(text)
    assert fragment in str(caught.value) and repr(text) in str(caught.value)


# --- real Kineto traces --------------------------------------------------------------------------

RECSYS = ("kineto/recsys_sampled_rank0_of_128.pt.trace.json.gz", "kineto/recsys_sampled_rank1_of_128.pt.trace.json.gz")


def _kept_means(overview, key: str | None) -> float:
    """The mean per steady step, from an overview's own steps table."""
    kept = [step for step in overview["steps"] if step["set_aside"] is None]
    values = [step["step_time_us"] if key is None else step["breakdown"][f"{key}_us"] for step in kept]
    return sum(values) / len(values)


def test_two_ranks_of_a_recsys_job_against_their_own_tool_results():
    base_path, new_path = shared(RECSYS[0]), shared(RECSYS[1])
    base_profile, new_profile = stepscope.load(base_path), stepscope.load(new_path)
    result = diff(base_profile, new_profile)
    base, new = (run_tool("overview_page", p).to_json() for p in (base_profile, new_profile))
    times = result.step_time
    assert times["mean"]["base"] == pytest.approx(base["step_time_us"]["mean"])
    assert times["mean"]["change"] == pytest.approx(new["step_time_us"]["mean"] - base["step_time_us"]["mean"])
    assert times["median"]["change"] == pytest.approx(new["step_time_us"]["median"] - base["step_time_us"]["median"])
    # From the raw JSON: ProfilerStep#551 and #552 in both ranks, none set aside (two steps
    # within 3x of each other), so the means are those of the two durations.
    base_steps, new_steps = profiler_step_us(base_path), profiler_step_us(new_path)
    assert sorted(base_steps) == sorted(new_steps) == [551, 552]
    assert times["mean"]["base"] == pytest.approx(sum(base_steps.values()) / 2)
    assert times["mean"]["new"] == pytest.approx(sum(new_steps.values()) / 2)
    # p90 of two values a <= b: a + 0.9 (b - a).
    low, high = sorted(new_steps.values())
    assert times["p90"]["new"] == pytest.approx(low + 0.9 * (high - low))
    assert result.aligned_by == BY_NUMBER and [p["base_step"] for p in result.steps] == [551, 552]
    for row in result.breakdown:
        key = row["category"]
        assert row["change"] == pytest.approx(_kept_means(new, key) - _kept_means(base, key), abs=1e-6)
        assert (row["base_percent"], row["new_percent"]) == (base["breakdown_percent"][key], new["breakdown_percent"][key])
    assert [row["category"] for row in result.breakdown] == [*BREAKDOWN.values(), IDLE]
    # Ops and kernels: each run's own framework_op_stats / kernel_stats, subtracted.
    ops = {p: run_tool("framework_op_stats", prof).to_json()["rows"] for p, prof in (("base", base_profile), ("new", new_profile))}
    totals = {side: {(r["host_or_device"], r["type"], r["name"]): r["total_time_ps"] for r in rows} for side, rows in ops.items()}
    assert len(result.ops) == len(set(totals["base"]) | set(totals["new"]))
    for row in result.ops:
        key = (row["host_or_device"], row["type"], row["name"])
        assert row["change_ps"] == totals["new"].get(key, 0) - totals["base"].get(key, 0)
        assert row["status"] == ("new" if key not in totals["base"] else "vanished" if key not in totals["new"] else row["status"])
    assert [abs(row["change_ps"]) for row in result.ops] == sorted((abs(row["change_ps"]) for row in result.ops), reverse=True)
    kernels = {}
    for side, prof in (("base", base_profile), ("new", new_profile)):
        kernels[side] = {}
        for r in run_tool("kernel_stats", prof).to_json()["rows"]:
            kernels[side][r["kernel_name"]] = kernels[side].get(r["kernel_name"], 0) + r["total_duration_ps"]
    assert {row["name"]: row["change_ps"] for row in result.kernels} == {
        name: kernels["new"].get(name, 0) - kernels["base"].get(name, 0) for name in set(kernels["base"]) | set(kernels["new"])
    }
    assert any(row["status"] == "vanished" for row in result.kernels)


def test_a_scaled_copy_of_a_real_trace(tmp_path):
    """Every time x1.25 and every allocation x2: each step +25%, each category +25%, each
    kernel +25%, the memory peak doubled (it is a running sum of Bytes)."""
    source = shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz")
    copy = scaled_copy(source, tmp_path / "scaled.pt.trace.json.gz", 1.25, bytes_factor=2)
    base_profile, new_profile = stepscope.load(source), stepscope.load(copy)
    result = diff(base_profile, new_profile)
    base = run_tool("overview_page", base_profile).to_json()
    kept = [step["step"] for step in base["steps"] if step["set_aside"] is None]
    raw = profiler_step_us(source)
    expected_base = sum(raw[number] for number in kept) / len(kept)
    change = result.step_time["mean"]
    assert change["base"] == pytest.approx(expected_base, rel=1e-9)
    assert change["change"] == pytest.approx(0.25 * expected_base, rel=1e-6)
    assert change["change_percent"] == pytest.approx(25.0, abs=1e-4)
    assert change["significant"] is True
    for row in result.breakdown:
        if row["base"]:
            assert row["change_percent"] == pytest.approx(25.0, abs=0.05), row["category"]  # times are read to the ns
    moved = [row for row in result.kernels if row["base_total_us"] > 1]
    assert moved and all(row["change_percent"] == pytest.approx(25.0, abs=0.1) for row in moved)
    peak = result.memory_peak
    assert peak["base_bytes"] and peak["new_bytes"] == 2 * peak["base_bytes"] and peak["change_percent"] == pytest.approx(100.0)
    assert result.verdict.startswith("Step +25.0% (")
    assert math.isclose(np.percentile([s["step_time_us"] for s in base["steps"] if s["set_aside"] is None], 90), result.step_time["p90"]["base"])


def test_rows_sort_by_their_change_per_step_not_in_total():
    """Base: 10 steps; new: 5. Kernel A: 100 ms in total -> 60 ms, so -40 ms in total but
    10 -> 12 ms per step (+2 ms); kernel B: 10 -> 20 ms in total (+10 ms), 1 -> 4 ms per
    step (+3 ms). In total A moved most; per step B did, and B is what the step feels."""
    ms = 10**9  # ps
    steps = StepCounts(base=10, new=5)

    def kernel(name: str, base_ms: int, new_ms: int) -> KernelChange:
        before = Totals(occurrences=10, total_ps=base_ms * ms, self_ps=base_ms * ms)
        after = Totals(occurrences=5, total_ps=new_ms * ms, self_ps=new_ms * ms)
        return KernelChange(**time_change(before, after, steps), name=name)

    a, b = kernel("A", 100, 60), kernel("B", 10, 20)
    assert (a["change_us"], a["change_per_step_us"], a["change_per_step_percent"]) == pytest.approx((-40_000, 2_000, 20.0))
    assert (b["change_us"], b["change_per_step_us"], b["change_per_step_percent"]) == pytest.approx((10_000, 3_000, 300.0))
    assert [row["name"] for row in by_change([a, b], lambda row: row["name"])] == ["B", "A"]
    # Without steps in a run there is no per-step figure: rows sort by the total again.
    a0 = KernelChange(**time_change(Totals(occurrences=1, total_ps=100 * ms, self_ps=0), Totals(occurrences=1, total_ps=60 * ms, self_ps=0)), name="A")
    b0 = KernelChange(**time_change(Totals(occurrences=1, total_ps=10 * ms, self_ps=0), Totals(occurrences=1, total_ps=20 * ms, self_ps=0)), name="B")
    assert a0["change_per_step_us"] is None and [row["name"] for row in by_change([a0, b0], lambda row: row["name"])] == ["A", "B"]


def test_the_verdict_quotes_new_and_vanished_rows_per_step():
    """A kernel only in the new run (20 ms over its 5 steps: 4 ms per step) and one only in
    the base (30 ms over its 10 steps: 3 ms per step) are quoted per step, as changed rows
    are; without steps in a run, in total."""
    ms = 10**9  # ps
    steps = StepCounts(base=10, new=5)
    step = mean_change([10_000, 11_000, 12_000], [14_000, 15_000, 16_000])  # +4 ms, every resample > 0
    new_kernel = KernelChange(**time_change(None, Totals(occurrences=5, total_ps=20 * ms, self_ps=20 * ms), steps), name="K")
    gone_kernel = KernelChange(**time_change(Totals(occurrences=10, total_ps=30 * ms, self_ps=30 * ms), None, steps), name="G")
    assert verdict(step, [], [], [new_kernel]).endswith("; new kernel: K (4.00 ms per step).")
    assert verdict(step, [], [], [gone_kernel]).endswith("; kernel gone: G (was 3.00 ms per step).")
    no_steps = KernelChange(**time_change(None, Totals(occurrences=5, total_ps=20 * ms, self_ps=20 * ms)), name="K")
    assert verdict(step, [], [], [no_steps]).endswith("; new kernel: K (20.00 ms in total).")
