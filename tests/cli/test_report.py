"""`stepscope report`: the tools on the command line, in text, JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from stepscope.analysis import tool_names
from stepscope.trace.logdir import make_path
from tests.support.cli import assert_one_error_line
from tests.support.traces import read_json, shared

A100 = "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"
KERNEL_KEYS = {
    "kernel_name",
    "occurrences",
    "total_duration_us",
    "avg_duration_us",
    "min_duration_us",
    "max_duration_us",
    "registers_per_thread",
    "shared_memory_bytes",
    "block_dim",
    "grid_dim",
    "op_name",
}


def report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", "report", *args], capture_output=True, text=True, timeout=300)


def test_json_keys_scripts_rely_on():
    result = report(str(shared(A100)), "--tool", "all", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == tool_names()
    rows = document["kernel_stats"]["rows"]
    assert rows and set(rows[0]) >= KERNEL_KEYS
    # The kernel count is the file's number of kernel events.
    kernels = sum(1 for e in read_json(shared(A100))["traceEvents"] if e.get("cat") == "kernel")
    assert sum(row["occurrences"] for row in rows) == kernels
    overview = document["overview_page"]
    assert {"busy_time_us", "idle_time_us", "active_span_us", "busy_percent", "window_us", "busy_percent_of_window"} <= set(overview["device"])
    assert [step["step"] for step in overview["steps"]] == [4, 5, 6]  # ProfilerStep#4..6 in the file
    assert {"name", "type", "host_or_device", "occurrences", "total_time_us", "total_self_time_us"} <= set(document["framework_op_stats"]["rows"][0])


def test_csv_has_every_row(tmp_path: Path):
    out = tmp_path / "ops.csv"
    result = report(str(shared(A100)), "--tool", "framework_op_stats", "--format", "csv", "--output", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    tables = [chunk for chunk in text.split("# ") if chunk.strip()]
    rows = list(csv.DictReader(io.StringIO(tables[0].split("\n", 1)[1])))
    document = json.loads(report(str(shared(A100)), "--tool", "framework_op_stats", "--format", "json").stdout)
    assert len(rows) == len(document["framework_op_stats"]["rows"])
    assert rows[0]["name"] == document["framework_op_stats"]["rows"][0]["name"]


def test_text_report_names_the_verdict():
    result = report(str(shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz")))
    assert result.returncode == 0, result.stderr
    assert "== overview_page ==" in result.stdout
    assert "6 step(s) from ProfilerStep" in result.stdout  # ProfilerStep#5..#10
    assert "recommendation:" in result.stdout


def test_choosing_runs_and_hosts(tmp_path: Path):
    for session, host in (("2026_01_01_00_00_00", "a"), ("2026_01_02_00_00_00", "a"), ("2026_01_02_00_00_00", "b")):
        target = make_path(tmp_path, session, host)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shared("xplane/tpu_v_inference_4chips.xplane.pb"), target)
    ambiguous = report(str(tmp_path))
    assert ambiguous.returncode == 2 and "choose one with --run" in ambiguous.stderr
    two_hosts = report(str(tmp_path), "--run", "2026_01_02_00_00_00")
    assert two_hosts.returncode == 2 and "choose one with --host (a, b)" in two_hosts.stderr
    chosen = report(str(tmp_path), "--run", "2026_01_02_00_00_00", "--host", "b", "--format", "json")
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads(chosen.stdout)["overview_page"]["steps_inferred"] is True
    unknown = report(str(tmp_path), "--run", "2026_01_01_00_00_00", "--tool", "nope")
    assert unknown.returncode == 2 and "unknown tool 'nope'" in unknown.stderr


TPU = "xplane/tpu_v_inference_4chips.xplane.pb"


def test_tool_options_on_the_command_line():
    """`--option` reaches the tool typed (op_profile's device and top_n); with --tool all
    it applies to the tools that have it and leaves the others as they are."""
    from stepscope.analysis import run_tool
    from stepscope.render import render
    from stepscope.trace.readers import load

    profile = load(shared(TPU))
    result = report(str(shared(TPU)), "--tool", "all", "--option", "device=/device:TPU:1", "--option", "top_n=1", "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    op_profile = document["op_profile"]
    assert op_profile["device"] == "/device:TPU:1" and op_profile["top_n"] == 1
    # top_n=1: one child per node, and one "(K more)" node where there were more
    assert all(len(program["children"]) <= 2 for program in op_profile["root"]["children"])
    assert op_profile == json.loads(render([run_tool("op_profile", profile, device="/device:TPU:1", top_n=1)], "json"))["op_profile"]
    assert document["kernel_stats"] == json.loads(render([run_tool("kernel_stats", profile)], "json"))["kernel_stats"]


def test_bad_tool_options_are_one_line_errors():
    path = str(shared(TPU))
    for args, fragments in (
        (["--tool", "op_profile", "--option", "top_n"], ("--option 'top_n': give NAME=VALUE",)),
        (["--tool", "op_profile", "--option", "colour=red"], ("--option colour: no option of that name in op_profile",)),
        (["--tool", "kernel_stats", "--option", "top_n=3"], ("no option of that name in kernel_stats",)),
        (["--tool", "op_profile", "--option", "top_n=0"], ("op_profile: option top_n must be at least 1, not 0",)),
        (["--tool", "op_profile", "--option", "device=/device:TPU:9"], ("op_profile: no ops on device '/device:TPU:9'",)),
        (["--tool", "trace_viewer"], ("trace_viewer is shown by the dashboard only",)),
    ):
        assert_one_error_line(report(path, *args), *fragments)


def test_tools_lists_the_registry():
    from stepscope.analysis import specs

    listed = subprocess.run([sys.executable, "-m", "stepscope.cli", "tools"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    heads = [line.split()[0] for line in listed.stdout.splitlines() if not line.startswith(" ")]
    # The tools, then the analyses over several profiles (each a command of its own).
    assert heads == [*(entry.name for entry in specs()), "diff", "distributed"]
    assert "diff  (Compare; two profiles: stepscope diff and dashboard)" in listed.stdout
    assert "  --option top_n=VALUE  (integer, default 10, at least 1)" in listed.stdout
    assert "trace_viewer  (Trace viewer; dashboard only)" in listed.stdout
