"""`stepscope diff` as a user and a CI job run it: exit 0 without a significant tripped rule,
1 with one (and one line saying why), 2 on bad input; JUnit, JSON and CSV outputs."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.support.cli import assert_one_error_line
from tests.support.diff_traces import step_trace
from tests.support.traces import shared

MiB = 2**20
# Steady steps 10, 12, 11, 13, 14 ms (mean 12) after a 40 ms outlier; the slower run's
# 15, 17, 16, 18, 19 ms (mean 17): +41.7%.
BASE_MS = [40, 10, 12, 11, 13, 14]
SLOWER_MS = [15, 17, 16, 18, 19]


def stepscope(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture
def pair(tmp_path):
    base = step_trace(tmp_path / "base.pt.trace.json", BASE_MS, peak_bytes=MiB)
    slower = step_trace(tmp_path / "slower.pt.trace.json", SLOWER_MS, peak_bytes=MiB)
    return str(base), str(slower)


def test_a_regression_fails_the_gate_with_one_line(pair):
    base, slower = pair
    result = stepscope("diff", base, slower, "--fail-if", "step_time > +5%", "--fail-if", "memory_peak > +10%")
    assert result.returncode == 1, result.stderr
    # The same 1 MiB peak in both runs: the memory rule passes; only the step rule is named.
    assert result.stderr.splitlines() == ["stepscope: regression: step_time > +5%: step_time +41.7% (12.00 ms -> 17.00 ms)"]
    assert "Step +41.7% (12.00 ms -> 17.00 ms" in result.stdout
    assert "FAILED: step_time > +5%" in result.stdout and "PASSED: memory_peak > +10%" in result.stdout


def test_the_same_run_passes(pair):
    base, _ = pair
    result = stepscope("diff", base, base, "--fail-if", "step_time > +5%", "--fail-if", "step_time > -1%")
    assert (result.returncode, result.stderr) == (0, "")
    assert "No significant change in step time (12.00 ms -> 12.00 ms, +0.0%" in result.stdout
    assert "NOT SIGNIFICANT: step_time > -1%" in result.stdout


def test_junit_report_has_one_testcase_per_rule(pair, tmp_path):
    base, slower = pair
    report = tmp_path / "reports" / "diff.xml"
    report.parent.mkdir()
    rules = ["step_time > +5%", "memory_peak > +10%", "input > +1ms"]
    result = stepscope("diff", base, slower, *[arg for rule in rules for arg in ("--fail-if", rule)], "--format", "junit", "--output", str(report))
    assert result.returncode == 1
    assert result.stdout == "" and result.stderr.splitlines()[0] == f"wrote {report}"
    suite = ET.parse(report).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == rules
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "0")
    assert cases[0].find("failure").get("message") == "step_time +41.7% (12.00 ms -> 17.00 ms)"
    assert cases[1].find("failure") is None and cases[2].find("failure") is None  # no input time in either run
    assert suite.find("system-out").text.startswith("Step +41.7%")
    assert list(tmp_path.joinpath("reports").iterdir()) == [report]  # written by rename: no temp file left


def test_json_and_csv(pair):
    base, slower = pair
    document = json.loads(stepscope("diff", base, slower, "--format", "json", "--fail-if", "step_time > +50%").stdout)
    assert set(document) == {"diff", "gate"}
    assert document["diff"]["step_time"]["mean"]["change"] == pytest.approx(5_000)  # 17 - 12 ms, in us
    assert document["gate"]["rules"][0]["status"] == "passed"  # +41.7% is not above 50%
    csv = stepscope("diff", base, slower, "--format", "csv").stdout
    assert "# diff.step_time\nstatistic,base,new,change," in csv and "\n# diff.steps\n" in csv


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        ("step_time >> 5%", "--fail-if 'step_time >> 5%': write METRIC > AMOUNT"),
        ("stepp_time > 5%", "unknown metric 'stepp_time'"),
        ("memory_peak > 5ms", "unit of bytes"),
    ],
)
def test_bad_rules_exit_2_with_one_line(pair, rule, fragment):
    base, slower = pair
    assert_one_error_line(stepscope("diff", base, slower, "--fail-if", rule), fragment)


def test_bad_profiles_exit_2_naming_the_file(pair, tmp_path):
    base, _ = pair
    garbage = tmp_path / "garbage.pt.trace.json"
    garbage.write_text("not a trace")
    assert_one_error_line(stepscope("diff", base, str(garbage)), str(garbage))
    missing = tmp_path / "missing.pt.trace.json"
    assert_one_error_line(stepscope("diff", str(missing), base, "--fail-if", "step_time > +5%"), str(missing), "does not exist")
    assert_one_error_line(stepscope("diff", base, base, "--output", str(tmp_path)), str(tmp_path), "is a directory")


def test_no_base_exits_2_with_one_line(pair):
    """Without BASE (or NEW) nothing is compared against a run picked instead: one line, 2."""
    base, _ = pair
    assert_one_error_line(stepscope("diff"), "the following arguments are required: base, new")
    assert_one_error_line(stepscope("diff", base), "the following arguments are required: new")


def test_runs_on_different_hardware_and_frameworks_are_said_not_to_compare():
    """An A100 PyTorch trace against the TPU JAX XSpace: the warning is the report's first
    line after its header (the chips as the files name them: tests/analysis/diff/test_warnings)."""
    a100, tpu = shared("kineto/alexnet_small.pt.trace.json.gz"), shared("xplane/tpu_v_inference_4chips.xplane.pb")
    result = stepscope("diff", str(a100), str(tpu))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        "== diff ==",
        "warning: NVIDIA A100-PG509-200 (PyTorch) vs TPU v6 Lite (JAX): step times are not comparable op by op (different hardware and frameworks)",
    ]
    assert json.loads(stepscope("diff", str(a100), str(a100), "--format", "json").stdout)["diff"]["warnings"] == []
