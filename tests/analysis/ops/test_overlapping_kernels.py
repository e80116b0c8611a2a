"""Kernels that overlap on one GPU stream ran side by side, not one inside the other: on the
device an op's self time is its duration, so framework_op_stats' device rows have self =
total and op_profile's kernel time is kernel_stats'.

CUPTI records such overlaps in real traces (31 in one V100 trace of ResNet); the trace here
is written event by event, every expected number by hand in a comment.
"""

from __future__ import annotations

import json
from pathlib import Path

import stepscope
from stepscope.analysis import run_tool

US = 1_000_000  # ps


def kernel(name: str, ts: int, dur: int) -> dict:
    return {"ph": "X", "name": name, "cat": "kernel", "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7}}


def overlapping(tmp_path: Path) -> stepscope.Profile:
    # One 200 us step; on stream 7: A [10, 110), B [40, 70) wholly inside A (the overlap
    # that nesting makes a child of A), C [100, 140) over A's last 10 us.
    events = [
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 200, "args": {}},
        kernel("kernel_a", 10, 100),
        kernel("kernel_b", 40, 30),
        kernel("kernel_c", 100, 40),
    ]
    path = tmp_path / "overlap.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return stepscope.load(path)


def test_overlapping_kernels_keep_their_whole_time(tmp_path: Path):
    profile = overlapping(tmp_path)
    # The plane still nests B in A (the timeline's rows); only the self time ignores it.
    plane = profile.plane("/device:GPU:0")
    names = plane.metadata.name_array[plane.events.metadata_id]
    (b,) = (names == "kernel_b").nonzero()[0]
    assert names[plane.events.parent[b]] == "kernel_a"
    rows = run_tool("framework_op_stats", profile).to_json()["rows"]
    device = {row["name"]: (row["total_time_ps"], row["total_self_time_ps"]) for row in rows if row["host_or_device"] == "Device"}
    # self = total = each kernel's duration: 100, 30 and 40 us (A was 100 - 30 = 70 before).
    assert device == {"kernel_a": (100 * US, 100 * US), "kernel_b": (30 * US, 30 * US), "kernel_c": (40 * US, 40 * US)}
    # Kernel time: 100 + 30 + 40 = 170 us in both tools (op_profile had 140).
    assert run_tool("kernel_stats", profile).to_json()["total_kernel_time_ps"] == 170 * US
    root = run_tool("op_profile", profile).to_json()["root"]
    assert root["time_ps"] == 170 * US
