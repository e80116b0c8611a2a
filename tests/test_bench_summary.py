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

ORDER = [
    "ingest",
    "tools",
    "overhead",
    "capture_stop",
    "job_side",
    "install",
    "remote_stop",
    "diff",
    "distributed",
    "critical_path",
    "trace_viewer",
    "trace_viewer_page",
]


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
    # Differences: 340 - 311 = 29 MB <= 40 holds on the points, but the ranges give
    # 330 - 315 = 15 to 350 - 305 = 45, across 40: within noise. 0.25 - 0.1 = 0.15 s <= 0.2 holds.
    job_side = {
        "goals": [
            entry("peak RSS", 340.0, "MB", "torch.profiler", 311.0, "stepscope - anchor", "<=", 40, value_range=[330, 350], anchor_range=[305, 315]),
            entry("stop", 0.25, "s", "torch.profiler", 0.1, "stepscope - anchor", "<=", 0.2),
        ]
    }
    for name, document in (("ingest", ingest), ("diff", diff), ("trace_viewer", viewer), ("job_side", job_side)):
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
    # ingest and job_side have two goals; the eight benchmarks without a JSON have one "not run" row each.
    assert [row["benchmark"] for row in rows] == ["ingest", *ORDER[:4], "job_side", *ORDER[4:]]
    by_figure = {row["figure"]: row for row in rows if row["holds"] != "not run"}
    assert by_figure["Kineto load, big"]["ratio"] == 3.0
    assert by_figure["Kineto load, big"]["holds"] == "NO"
    assert by_figure["Kineto load peak RSS, big"]["ratio"] == 0.6
    assert by_figure["Kineto load peak RSS, big"]["holds"] == "NO"
    assert by_figure["diff of two profiles"]["ratio"] == 0.5
    assert by_figure["diff of two profiles"]["holds"] == "yes"
    assert by_figure["full view p95"]["ratio"] is None
    assert by_figure["full view p95"]["holds"] == "yes"
    assert by_figure["peak RSS"]["ratio"] == 29.0
    assert by_figure["peak RSS"]["holds"] == "within noise"
    assert abs(by_figure["stop"]["ratio"] - 0.15) < 1e-12
    assert by_figure["stop"]["holds"] == "yes"
    not_run = [row["benchmark"] for row in rows if row["holds"] == "not run"]
    assert not_run == ["tools", "overhead", "capture_stop", "install", "remote_stop", "distributed", "critical_path", "trace_viewer_page"]

    table = (out / "summary.md").read_text()
    assert "| benchmark | figure | stepscope | anchor | ratio | goal | holds |" in table
    assert "| ingest | Kineto load, big | 2.00 s | HTA: 6.00 s | 3.00x | anchor / stepscope >= 4 | NO |" in table
    assert "| diff | diff of two profiles | 1.50 s | loading both: 3.00 s | 0.50x | stepscope / anchor < 1 | yes |" in table
    assert "| trace_viewer | full view p95 | 40.0 ms | XProf trace_viewer@: not measured | - | stepscope < 50 ms | yes |" in table
    assert "| tools | (run bench/tools.py) | - | - | - | - | not run |" in table
    assert "| job_side | peak RSS | 340 MB | torch.profiler: 311 MB | +29.00 MB | stepscope - anchor <= +40 MB | within noise |" in table
    assert "3 goals hold, 2 missed, 1 within noise, 8 benchmark(s) without figures" in table
    assert done.stdout == table.split("\n\n", 1)[1] + "3 goals hold, 2 missed, 1 within noise, 8 benchmark(s) without figures\n"  # the same table

    text = readme.read_text()
    assert text.startswith("# Benchmarks\n\nintro\n\n## Latest results\n\n" + START + "\n")
    assert text.endswith(END + "\n\nafter\n")
    assert "old table" not in text
    assert table in text
    assert not list(tmp_path.rglob("*.tmp"))  # written through a temporary, renamed over


def test_a_goal_with_ranges_is_within_noise_where_they_do_not_resolve_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    ratio, level = "stepscope / anchor", "step time, level 1"
    goals = [
        # The demo CNN's case: torch.profiler's overhead 0.5% with quartiles -14.2% .. +3.3%
        # reaches zero, so stepscope's -1.79% / 0.5% = -3.58x is no ratio at all (the written
        # holds true is stale).
        entry("straddling anchor", -1.79, "%", "torch", 0.5, ratio, "<=", 0.5, value_range=[-5.0, 1.0], anchor_range=[-14.2, 3.3], holds=True),
        # 4 / 10 = 0.4 holds, but the corners 3/9 .. 6/9 span 0.333 .. 0.667, across 0.5.
        entry("straddling bound", 4.0, "%", "torch", 10.0, ratio, "<=", 0.5, value_range=[3.0, 6.0], anchor_range=[9.0, 11.0]),
        # 2 / 10 = 0.2; the corners 1/12 .. 3/8 span 0.083 .. 0.375, all under 0.5.
        entry("clear hold", 2.0, "%", "torch", 10.0, ratio, "<=", 0.5, value_range=[1.0, 3.0], anchor_range=[8.0, 12.0]),
        # 8 / 10 = 0.8; the corners 7/11 .. 9/9 span 0.636 .. 1.0, all over 0.5 (written verdict stale).
        entry("clear miss", 8.0, "%", "torch", 10.0, ratio, "<=", 0.5, value_range=[7.0, 9.0], anchor_range=[9.0, 11.0], verdict="yes"),
        # A value's range only: 1.02 / 1.0 = 1.02 < 1.03, but 1.04 / 1.0 = 1.04 is not.
        entry(level, 1.02, "ms", "unprofiled", 1.0, ratio, "<", 1.03, value_range=[1.0, 1.04]),
        # 1.01 / 1.0 < 1.03 and so are both ends, 1.005 and 1.02.
        entry(f"{level}, clear", 1.01, "ms", "unprofiled", 1.0, ratio, "<", 1.03, value_range=[1.005, 1.02]),
        # On the value: 40 ms < 50 ms, but the range's 55 ms is not.
        entry("p95 on the value", 40.0, "ms", "XProf", None, ratio, "<", 50, on="value", value_range=[35.0, 55.0]),
        # Anchor over value: the divisor (stepscope's 2 s, range 0 .. 3 s) may be zero.
        entry("divisor may be zero", 2.0, "s", "HTA", 6.0, "anchor / stepscope", ">=", 1, value_range=[0.0, 3.0]),
        # No ranges (a JSON written before them): judged on the points, 2 / 10 = 0.2 holds.
        entry("old entry", 2.0, "%", "torch", 10.0, ratio, "<=", 0.5),
    ]
    (out / "overhead.json").write_text(json.dumps({"goals": goals}))
    done = run("--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = {row["figure"]: row for row in json.loads((out / "summary.json").read_text())["rows"]}
    verdicts = {figure: rows[figure]["holds"] for figure in [entry["figure"] for entry in goals]}
    assert verdicts == {
        "straddling anchor": "within noise",
        "straddling bound": "within noise",
        "clear hold": "yes",
        "clear miss": "NO",
        level: "within noise",
        f"{level}, clear": "yes",
        "p95 on the value": "within noise",
        "divisor may be zero": "within noise",
        "old entry": "yes",
    }
    assert rows["straddling anchor"]["ratio"] == -3.58  # the point ratio is still shown
    assert "| overhead | straddling anchor | -1.79 % | torch: 0.50 % | -3.58x | stepscope / anchor <= 0.5 | within noise |" in done.stdout
    # 3 hold, 1 missed, 5 within noise; the 8 other benchmarks have no JSON.
    assert done.stdout.endswith("3 goals hold, 1 missed, 5 within noise, 11 benchmark(s) without figures\n")


def test_a_reversed_range_is_a_one_line_error_naming_the_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "overhead.json").write_text(json.dumps({"goals": [entry("stop", 3.0, "s", "peer", 1.0, "stepscope / anchor", "<", 1, value_range=[4.0, 2.0])]}))
    done = run("--out", str(out))
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == f"bench/summary.py: {out / 'overhead.json'}: goal 1: a goal has a bad field: stop: value_range must be [low, high], not [4.0, 2.0]"
    )


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
