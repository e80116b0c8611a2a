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
