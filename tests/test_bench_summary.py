"""``bench/summary.py``, the one table ``make bench`` ends with, run as ``make bench`` runs it
(a child process of the script) on hand-made benchmark JSON in a temporary folder.

Every expected ratio and verdict below is worked out by hand from the figures written in
the test; the written ``ratio``/``holds`` fields are deliberately wrong where they appear,
since the summary must derive them again from the raw figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = ROOT / "bench" / "summary.py"
START, END = "<!-- bench-summary:start -->", "<!-- bench-summary:end -->"

ORDER = ["ingest", "tools", "overhead", "capture_stop", "remote_stop", "diff", "distributed", "trace_viewer", "trace_viewer_page"]


def entry(figure, value, unit, anchor, anchor_value, ratio_of, op, target, **extra):
    return {
        "figure": figure,
        "value": value,
        "unit": unit,
        "anchor": anchor,
        "anchor_value": anchor_value,
        "ratio_of": ratio_of,
        "op": op,
        "target": target,
        **extra,
    }


def write_inputs(out: Path) -> None:
    out.mkdir()
    ingest = {
        "files": [],
        "goals": [
            # HTA 6.0 s / stepscope 2.0 s = 3.0; 3.0 >= 4 is false.
            entry("Kineto load, big", 2.0, "s", "HTA", 6.0, "anchor / stepscope", ">=", 4),
            # 300 MB / 500 MB = 0.6; 0.6 <= 0.5 is false.
            entry("Kineto load peak RSS, big", 300.0, "MB", "HTA's peak RSS", 500.0, "stepscope / anchor", "<=", 0.5),
        ],
    }
    # 1.5 s / 3.0 s = 0.5; 0.5 < 1 holds (the written ratio 9 and holds false are stale).
    diff = {"goals": [entry("diff of two profiles", 1.5, "s", "loading both", 3.0, "stepscope / anchor", "<", 1, ratio=9, holds=False)]}
    # On the value: 40 ms < 50 ms holds; no anchor figure, so no ratio.
    viewer = {"rows": [], "goals": [entry("full view p95", 40.0, "ms", "XProf trace_viewer@", None, "anchor / stepscope", "<", 50, on="value")]}
    for name, document in (("ingest", ingest), ("diff", diff), ("trace_viewer", viewer)):
        (out / f"{name}.json").write_text(json.dumps(document))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SUMMARY), *args], capture_output=True, text=True, timeout=120)


def test_the_table_derives_ratios_and_verdicts_and_marks_missing_benchmarks(tmp_path):
    out = tmp_path / "out"
    write_inputs(out)
    readme = tmp_path / "README.md"
    readme.write_text(f"# Benchmarks\n\nintro\n\n## Latest results\n\n{START}\nold table\n{END}\n\nafter\n")

    done = run("--out", str(out), "--update-readme", "--readme", str(readme))
    assert done.returncode == 0, done.stderr

    rows = json.loads((out / "summary.json").read_text())["rows"]
    # ingest has two goals; the six benchmarks without a JSON have one "not run" row each.
    assert [row["benchmark"] for row in rows] == ["ingest", *ORDER]
    by_figure = {row["figure"]: row for row in rows if row["holds"] != "not run"}
    assert by_figure["Kineto load, big"]["ratio"] == 3.0
    assert by_figure["Kineto load, big"]["holds"] == "NO"
    assert by_figure["Kineto load peak RSS, big"]["ratio"] == 0.6
    assert by_figure["Kineto load peak RSS, big"]["holds"] == "NO"
    assert by_figure["diff of two profiles"]["ratio"] == 0.5
    assert by_figure["diff of two profiles"]["holds"] == "yes"
    assert by_figure["full view p95"]["ratio"] is None
    assert by_figure["full view p95"]["holds"] == "yes"
    not_run = [row["benchmark"] for row in rows if row["holds"] == "not run"]
    assert not_run == ["tools", "overhead", "capture_stop", "remote_stop", "distributed", "trace_viewer_page"]

    table = (out / "summary.md").read_text()
    assert "| benchmark | figure | stepscope | anchor | ratio | goal | holds |" in table
    assert "| ingest | Kineto load, big | 2.00 s | HTA: 6.00 s | 3.00x | anchor / stepscope >= 4 | NO |" in table
    assert "| diff | diff of two profiles | 1.50 s | loading both: 3.00 s | 0.50x | stepscope / anchor < 1 | yes |" in table
    assert "| trace_viewer | full view p95 | 40.0 ms | XProf trace_viewer@: not measured | - | stepscope < 50 ms | yes |" in table
    assert "| tools | (run bench/tools.py) | - | - | - | - | not run |" in table
    assert "2 goals hold, 2 missed, 6 benchmark(s) without figures" in table
    assert done.stdout == table.split("\n\n", 1)[1] + "2 goals hold, 2 missed, 6 benchmark(s) without figures\n"  # the same table

    text = readme.read_text()
    assert text.startswith("# Benchmarks\n\nintro\n\n## Latest results\n\n" + START + "\n")
    assert text.endswith(END + "\n\nafter\n")
    assert "old table" not in text
    assert table in text
    assert not list(tmp_path.rglob("*.tmp"))  # written through a temporary, renamed over


def test_a_malformed_json_file_is_a_one_line_error_naming_it(tmp_path):
    out = tmp_path / "out"
    write_inputs(out)
    (out / "tools.json").write_text('{"goals": [')
    done = run("--out", str(out))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert str(out / "tools.json") in done.stderr and "not readable JSON" in done.stderr


def test_a_goal_without_a_field_is_a_one_line_error_naming_the_file(tmp_path):
    out = tmp_path / "out"
    write_inputs(out)
    (out / "remote_stop.json").write_text(json.dumps({"goals": [{"figure": "stop", "value": 1.0}]}))
    done = run("--out", str(out))
    assert done.returncode == 2
    assert done.stderr.strip() == f"bench/summary.py: {out / 'remote_stop.json'}: goal 1: a goal lacks the field 'unit'"


def test_a_readme_without_the_markers_is_an_error_naming_it(tmp_path):
    out = tmp_path / "out"
    write_inputs(out)
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n")
    done = run("--out", str(out), "--update-readme", "--readme", str(readme))
    assert done.returncode == 2
    assert str(readme) in done.stderr and done.stderr.count("\n") == 1
    assert readme.read_text() == "# Benchmarks\n"
