"""The command line, run as a user runs it: a real subprocess of the installed entry point."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import stepscope
from stepscope.trace.logdir import make_path
from tests.support.traces import read_json, shared

ALEXNET = "kineto/alexnet_small.pt.trace.json.gz"
TPU = "xplane/tpu_v_inference_4chips.xplane.pb"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", *args], capture_output=True, text=True, timeout=300)


def test_info_json_reports_runs_hosts_planes_lines(tmp_path: Path):
    for host in ("h0", "h1"):
        target = make_path(tmp_path, "2026_11_30_10_00_00", host)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shared(TPU), target)
    result = run("info", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (run_report,) = report["runs"]
    assert run_report["name"] == "2026_11_30_10_00_00"
    assert [h["name"] for h in run_report["hosts"]] == ["h0", "h1"]
    host = run_report["hosts"][0]
    # Counted independently from the protobuf: events per plane and per line.
    from stepscope.protos import xplane_pb2

    space = xplane_pb2.XSpace.FromString(shared(TPU).read_bytes())
    planes = [p for p in space.planes if p.name != "Task Environment"]  # in info["task_environment"]
    assert [p["name"] for p in host["planes"]] == [p.name for p in planes]
    for plane_report, plane in zip(host["planes"], planes):
        assert plane_report["events"] == sum(len(line.events) for line in plane.lines)
        assert [(reported["name"], reported["events"]) for reported in plane_report["lines"]] == [
            (line.display_name or line.name, len(line.events)) for line in plane.lines
        ]
    starts = [line.timestamp_ns * 1000 + e.offset_ps for p in space.planes for line in p.lines for e in line.events]
    ends = [line.timestamp_ns * 1000 + e.offset_ps + e.duration_ps for p in space.planes for line in p.lines for e in line.events]
    zero = min(starts) // 1000 * 1000
    assert host["span_ps"] == max(ends) - zero == report["span_ps"]
    assert host["devices"] == [f"/device:TPU:{i}" for i in range(4)]


def test_info_text_names_devices_and_counts():
    result = run("info", str(shared(ALEXNET)))
    assert result.returncode == 0, result.stderr
    trace = read_json(shared(ALEXNET))
    kernels_on_7 = sum(1 for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("pid") == 0 and e.get("tid") == 7)
    assert "devices: /device:GPU:0 (NVIDIA A100-PG509-200)" in result.stdout
    assert f"stream 7 (id 7): {kernels_on_7:,} events" in result.stdout


def test_info_lists_the_files_it_skipped_and_why(tmp_path: Path):
    """`info DIR` reads a Kineto trace whose large metadata object comes first, and lists
    the JSON beside it that is no trace (text and JSON); with only that, it is an error
    naming it (exit 2)."""
    trace = read_json(shared(ALEXNET))
    metadata = {f"k{i}": {"dims": list(range(20))} for i in range(5000)}
    (tmp_path / "rank0.json").write_text(json.dumps({"metadata": metadata, **trace}))
    (tmp_path / "config.json").write_text(json.dumps({"lr": 0.1, "epochs": 3}))
    why = "not a trace: a JSON object without traceEvents (keys: lr, epochs)"
    result = run("info", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [host["name"] for run_report in report["runs"] for host in run_report["hosts"]] == ["rank0"]
    # Its events: the trace's complete and instant events, counted here from the JSON.
    assert report["runs"][0]["hosts"][0]["events"] == sum(1 for e in trace["traceEvents"] if e.get("ph") in ("X", "i"))
    assert report["skipped"] == [{"path": str(tmp_path / "config.json"), "why": why}]
    text = run("info", str(tmp_path)).stdout
    assert text.endswith(f"skipped 1 file(s)\n  {tmp_path / 'config.json'}: {why}\n")
    (tmp_path / "rank0.json").unlink()
    failed = run("info", str(tmp_path))
    assert failed.returncode == 2
    assert failed.stderr.strip().endswith(f"; skipped: config.json ({why})")


def test_convert_kineto_to_xspace_and_back(tmp_path: Path):
    xspace = tmp_path / "alexnet.xplane.pb"
    result = run("convert", str(shared(ALEXNET)), str(xspace))
    assert result.returncode == 0, result.stderr
    chrome = tmp_path / "alexnet.json.gz"
    assert run("convert", str(xspace), str(chrome)).returncode == 0
    original, final = stepscope.load(shared(ALEXNET)), stepscope.load(chrome)
    assert final.event_count == original.event_count
    assert [p.events.duration_ps.sum() for p in final.planes] == [p.events.duration_ps.sum() for p in original.planes]
