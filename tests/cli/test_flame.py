"""``stepscope flame``: collapsed stacks and speedscope files of the hand-derived stacks
trace (tests/support/flame.py) and of a real Kineto trace, and its one-line errors.

The speedscope file is checked against a JSON Schema written here from the fields that
speedscope's file format documents (speedscope.app/file-format-schema.json), and by
replaying its open/close events as speedscope does: every close is the top frame, times
never go back, and the time each stack is on top equals the hand-derived self times."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import jsonschema

from tests.support.cli import assert_one_error_line
from tests.support.flame import A100, A100_PID, MAIN, MARKERS, WORKER, kineto_ns, write_stacks_trace
from tests.support.intervals import union_length
from tests.support.traces import read_json, shared

UNITS = ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"]
SPEEDSCOPE_SCHEMA = {
    "type": "object",
    "required": ["$schema", "shared", "profiles"],
    "properties": {
        "$schema": {"const": "https://www.speedscope.app/file-format-schema.json"},
        "shared": {
            "type": "object",
            "required": ["frames"],
            "properties": {
                "frames": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "file": {"type": "string"}, "line": {"type": "number"}, "col": {"type": "number"}},
                    },
                }
            },
        },
        "profiles": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "name", "unit", "startValue", "endValue", "events"],
                "properties": {
                    "type": {"const": "evented"},
                    "name": {"type": "string"},
                    "unit": {"enum": UNITS},
                    "startValue": {"type": "number"},
                    "endValue": {"type": "number"},
                    "events": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["type", "at", "frame"],
                            "properties": {"type": {"enum": ["O", "C"]}, "at": {"type": "number"}, "frame": {"type": "integer", "minimum": 0}},
                        },
                    },
                },
            },
        },
        "name": {"type": "string"},
        "activeProfileIndex": {"type": "number"},
        "exporter": {"type": "string"},
    },
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", "flame", *map(str, args)], capture_output=True, text=True, timeout=300)


def flame(tmp_path: Path, source: Path, form: str, *options: str) -> Path:
    output = tmp_path / f"out.{form}"
    result = run(source, "--format", form, "-o", output, *options)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left
    return output


def replay(document: dict) -> dict[str, Counter]:
    """Per profile: ";"-joined stack -> time on top (in the file's unit), replaying the
    events with a stack as speedscope does; asserts proper nesting and ordered times."""
    jsonschema.validate(document, SPEEDSCOPE_SCHEMA)
    names = [frame["name"] for frame in document["shared"]["frames"]]
    found = {}
    for profile in document["profiles"]:
        on_top: Counter = Counter()
        stack: list[int] = []
        last = profile["startValue"]
        for event in profile["events"]:
            assert profile["startValue"] <= last <= event["at"] <= profile["endValue"]
            if stack:
                on_top[";".join(names[i] for i in stack)] += event["at"] - last
            if event["type"] == "O":
                stack.append(event["frame"])
            else:
                assert stack and stack[-1] == event["frame"], "a close that is not the top frame"
                stack.pop()
            last = event["at"]
        assert stack == []
        found[profile["name"]] = +on_top
    return found


def test_collapsed_stacks_of_every_host_thread(tmp_path):
    output = flame(tmp_path, write_stacks_trace(tmp_path), "collapsed")
    # Self times from tests/support/flame.py's layout, in ns (us x 1000).
    assert sorted(output.read_text().splitlines()) == sorted(
        [
            f"{MAIN};A 30000",
            f"{MAIN};A;B 20000",
            f"{MAIN};A;B;D 10000",
            f"{MAIN};A;C 40000",
            f"{MAIN};E 20000",
            f"{MAIN};F 30000",
            f"{WORKER};G 60000",
            f"{WORKER};G;H 10000",
            f"{MARKERS};ProfilerStep#1 110000",
            f"{MARKERS};ProfilerStep#2 90000",
        ]
    )


def test_collapsed_to_standard_output(tmp_path):
    result = run(write_stacks_trace(tmp_path), "--thread", WORKER)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{WORKER};G 60000", f"{WORKER};G;H 10000"]  # G 70 - H 10 us; H 10 us


def test_speedscope_of_one_thread_in_a_window(tmp_path):
    output = flame(tmp_path, write_stacks_trace(tmp_path), "speedscope", "--thread", MAIN, "--start-ps", 25_000_000, "--end-ps", 125_000_000)
    document = json.loads(output.read_text())
    assert [(p["name"], p["unit"], p["startValue"], p["endValue"]) for p in document["profiles"]] == [(MAIN, "nanoseconds", 25_000, 125_000)]
    # The window [25, 125) us cuts A, B, D and E (see tests/analysis/tools/test_flame_graph.py).
    assert replay(document) == {MAIN: Counter({"A": 20_000, "A;B": 10_000, "A;B;D": 5_000, "A;C": 40_000, "E": 5_000})}


def test_speedscope_keeps_overlapping_siblings_nested(tmp_path):
    output = flame(tmp_path, write_stacks_trace(tmp_path), "speedscope", "--step", "2")
    document = json.loads(output.read_text())
    # Step 2 is [110, 200) us: E [120, 150) then F [140, 170) on top of it from 140.
    assert replay(document) == {
        MAIN: Counter({"E": 20_000, "F": 30_000}),
        WORKER: Counter({"G": 20_000}),
        MARKERS: Counter({"ProfilerStep#2": 90_000}),
    }


def test_kineto_step_busy_time_per_thread(tmp_path):
    """Each thread's time on a stack in step 5 (speedscope, replayed) and its collapsed
    lines' sum are the union of its events in the step, from the JSON."""
    path = shared(A100)
    events = [e for e in read_json(path)["traceEvents"] if e.get("ph") == "X" and e.get("pid") == A100_PID and e.get("dur", 0) > 0]
    (marker,) = [e for e in events if e["name"] == "ProfilerStep#5"]
    low, high = kineto_ns(marker["ts"]), kineto_ns(marker["ts"]) + kineto_ns(marker["dur"])
    busy = defaultdict(list)
    for event in events:
        start, end = kineto_ns(event["ts"]), kineto_ns(event["ts"]) + kineto_ns(event["dur"])
        if start < high and end > low:
            busy[event["tid"]].append((max(start, low), min(end, high)))
    expected = {tid: union_length(spans) for tid, spans in busy.items()}
    assert len(expected) == 3

    replayed = replay(json.loads(flame(tmp_path, path, "speedscope", "--step", "5").read_text()))
    assert {int(name.split()[1]): sum(on_top.values()) for name, on_top in replayed.items()} == expected
    collapsed = Counter()
    for line in flame(tmp_path, path, "collapsed", "--step", "5").read_text().splitlines():
        stack, value = line.rsplit(" ", 1)
        collapsed[int(stack.split(";")[0].split()[1])] += int(value)
    # Kineto's times are whole ns, so the per-line ns values are exact.
    assert dict(collapsed) == expected


def test_bad_input_is_one_line_and_status_2(tmp_path):
    trace = write_stacks_trace(tmp_path)
    out = tmp_path / "out.txt"
    assert_one_error_line(run(tmp_path / "missing.json", "-o", out), "missing.json")
    assert_one_error_line(run(tmp_path / "missing.json"), "missing.json")
    assert_one_error_line(run(trace, "--step", "9", "-o", out), "no step '9'")
    assert_one_error_line(run(trace, "--thread", "nope", "-o", out), "no thread 'nope'")
    assert_one_error_line(run(trace, "--start-ps", "9", "--end-ps", "3", "-o", out), "start_ps <= end_ps")
    assert_one_error_line(run(trace, "--format", "svg", "-o", out), "invalid choice")
    (tmp_path / "file").write_text("x")
    assert_one_error_line(run(trace, "-o", tmp_path / "file" / "out.txt"), "is a file, not a directory")
    assert_one_error_line(run(trace, "-o", trace), "the output is the profile")
    assert not out.exists()
