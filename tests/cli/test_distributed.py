"""`stepscope distributed` as a user runs it: a run of many host files as one report, in
text, JSON (valid against its committed schema) and CSV; bad input is one line, exit 2."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys

import jsonschema
import pytest

from tests.support.cli import assert_one_error_line
from tests.support.distributed_runs import Stretch, step_durations_us, synthesize
from tests.support.traces import ROOT, read_json, shared

RECSYS = [f"kineto/recsys_sampled_rank{rank}_of_128.pt.trace.json.gz" for rank in (0, 1)]
SCHEMA = ROOT / "web" / "src" / "generated" / "schemas" / "distributed.schema.json"
STRAGGLER = Stretch(rank=3, step=552, kind="compute", delta_us=90_000)


def stepscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def recsys_logdir(tmp_path_factory):
    """A logdir holding the two recsys ranks as one run (torch's trace-handler layout)."""
    logdir = tmp_path_factory.mktemp("logdir")
    (logdir / "job").mkdir()
    for name in RECSYS:
        shutil.copy(shared(name), logdir / "job")
    return logdir


def test_json_validates_and_holds_both_ranks(recsys_logdir):
    result = stepscope("distributed", str(recsys_logdir), "--format", "json", "--workers", "2")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)["distributed"]
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["run"] == "job" and [row["rank"] for row in document["ranks"]] == [0, 1]
    for rank, name in enumerate(RECSYS):
        expected = {number: round(dur * 1_000_000) for number, dur in step_durations_us(read_json(shared(name))).items()}
        assert {row["step"]: row["step_time_ps"] for row in document["steps"] if row["rank"] == rank} == expected


def test_csv_tables(recsys_logdir, tmp_path):
    output = tmp_path / "out" / "distributed.csv"
    result = stepscope("distributed", str(recsys_logdir / "job"), "--format", "csv", "--output", str(output))
    assert result.returncode == 0, result.stderr
    text = output.read_text()
    sections = [line for line in text.splitlines() if line.startswith("# ")]
    assert sections == [
        "# distributed.ranks",
        "# distributed.stragglers",
        "# distributed.collectives",
        "# distributed.steps",
        "# distributed.job_steps",
        "# distributed.straggle_removed",
    ]
    steps_csv = text.split("# distributed.steps\n", 1)[1].split("\n# ", 1)[0]
    rows = list(csv.DictReader(io.StringIO(steps_csv)))
    assert [(row["rank"], row["step"]) for row in rows] == [("0", "551"), ("0", "552"), ("1", "551"), ("1", "552")]


def test_text_names_the_straggler(tmp_path):
    run = synthesize(shared(RECSYS[0]), tmp_path / "run", 4, 500, (STRAGGLER,))
    result = stepscope("distributed", str(run), "--workers", "1")
    assert result.returncode == 0, result.stderr
    # 90 ms over the median step 552 (the other ranks' untouched one), all device compute.
    share = 100 * STRAGGLER.delta_us / step_durations_us(read_json(shared(RECSYS[0])))[552]
    assert f"worst: rank 3 at step 552 (step_time 90,000.0 us over the median, {share:.1f}% of the step; stage device_compute)" in result.stdout
    assert "run run: 4 ranks found (world size 4; ranks from distributedInfo)" in result.stdout


def test_bad_input_is_one_line(recsys_logdir, tmp_path):
    assert_one_error_line(stepscope("distributed", str(recsys_logdir), "--engine", "spark"), "unknown engine 'spark'", "engines: local, ray")
    assert_one_error_line(stepscope("distributed", str(recsys_logdir), "--ray-address", "auto"), "--ray-address: only with --engine ray")
    assert_one_error_line(stepscope("distributed", str(tmp_path / "missing")), "does not exist")
    assert_one_error_line(stepscope("distributed", str(recsys_logdir), "--output", str(tmp_path)), "is a directory")
    (tmp_path / "only.pt.trace.json.gz").write_bytes(b"not gzip")
    assert_one_error_line(stepscope("distributed", str(tmp_path)), "no rank could be analysed", "only.pt.trace.json.gz")


def test_by_device_on_the_tpu_host_and_its_one_line_errors(tmp_path):
    # One file of 4 chips: auto reads it by device, each chip a unit (the chips' own numbers
    # are checked against the XSpace in tests/analysis/distributed/test_distributed_devices.py).
    tpu = shared("xplane/tpu_v_inference_4chips.xplane.pb")
    result = stepscope("distributed", str(tpu), "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)["distributed"]
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(document)
    assert document["unit"] == "device"
    assert [(row["rank"], row["device"]) for row in document["ranks"]] == [(n, f"/device:TPU:{n}") for n in range(4)]
    assert json.loads(stepscope("distributed", str(tpu), "--format", "json", "--by", "rank").stdout)["distributed"]["unit"] == "rank"
    text = stepscope("distributed", str(tpu), "--by", "device").stdout
    assert "4 devices of 1 host(s) found" in text
    # A CPU-only trace has no device to be a unit of.
    cpu = tmp_path / "cpu.pt.trace.json"
    cpu.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]}))
    assert_one_error_line(stepscope("distributed", str(cpu), "--by", "device"), "no device planes")
    assert_one_error_line(stepscope("distributed", str(cpu), "--by", "chip"), "--by")
