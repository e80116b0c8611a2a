"""Small traces written event by event for the overview's tests (times in whole
microseconds), and their overview."""

from __future__ import annotations

import json
from pathlib import Path

import stepscope
from stepscope.analysis import run_tool


def x(name: str, ts: int, dur: int, pid: int = 1, tid: int = 1, cat: str = "cpu_op", **args) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kernel(name: str, ts: int, dur: int) -> dict:
    return x(name, ts, dur, pid=0, tid=7, cat="kernel", device=0, stream=7)


def overview(tmp_path: Path, events: list[dict], kineto: bool = False) -> dict:
    """The overview of a Chrome trace (XSpace-named args such as ``step_num`` are read), or
    of a Kineto trace when ``kineto`` (GPU 0 is pid 0)."""
    document: dict = {"traceEvents": events}
    name = "trace.trace.json"
    if kineto:
        document = {"schemaVersion": 1, "traceEvents": [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}, *events]}
        name = "trace.pt.trace.json"
    path = tmp_path / name
    path.write_text(json.dumps(document))
    profile = stepscope.load(path)
    profile.validate()
    return run_tool("overview_page", profile).to_json()
