"""A Kineto trace converted to XSpace opens in XProf's own converter with the same numbers.

XProf (``xprof.convert.raw_to_tool_data.xspace_to_tool_data``) is the tool TensorBoard's
profile plugin runs; its numbers are compared with sums computed here from the original
JSON, so this checks stepscope's writer, not stepscope against itself.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

import stepscope
from stepscope.trace.logdir import make_path
from tests.conftest import read_json, shared

ALEXNET = "kineto/alexnet_small.pt.trace.json.gz"


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    logdir = tmp_path_factory.mktemp("xprof")
    target = make_path(logdir, "2026_11_30_00_00_00", "alexnet")
    stepscope.save(stepscope.load(shared(ALEXNET)), target)
    return target


def xprof_tool(path: Path, tool: str):
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    data, _content_type = raw_to_tool_data.xspace_to_tool_data([str(path)], tool, {"use_saved_result": False})
    assert data, f"XProf returned no {tool} data"
    return json.loads(data)


def test_xprof_trace_viewer_shows_every_host_and_gpu_event(converted: Path):
    trace = xprof_tool(converted, "trace_viewer")
    process = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"}
    shown = Counter(process[e["pid"]] for e in trace["traceEvents"] if e.get("ph") in ("X", "i"))
    source = read_json(shared(ALEXNET))["traceEvents"]
    # In the Kineto file: pid 0 (labelled "GPU 0") holds the device events; the process's
    # own pid the host events; Kineto's profiler spans use string pids and are not threads.
    host_pid = next(e["pid"] for e in source if e.get("ph") == "M" and e.get("args", {}).get("labels") == "CPU")
    assert shown["/host:CPU"] == sum(1 for e in source if e.get("ph") in ("X", "i") and e["pid"] == host_pid)
    assert shown["/device:GPU:0"] == sum(1 for e in source if e.get("ph") == "X" and e["pid"] == 0)


def test_xprof_kernel_stats_match_the_kineto_kernels(converted: Path):
    stats = xprof_tool(converted, "kernel_stats")
    columns = [c["id"] for c in stats["cols"]]
    by_name: dict[str, list[float]] = defaultdict(lambda: [0, Decimal(0)])
    for row in stats["rows"]:
        values = dict(zip(columns, (cell["v"] for cell in row["c"])))
        by_name[values["kernel_name"]][0] += values["occurrences"]
        by_name[values["kernel_name"]][1] += Decimal(str(values["total_duration_us"]))
    expected: dict[str, list] = defaultdict(lambda: [0, Decimal(0)])
    registers = {}
    for event in read_json(shared(ALEXNET))["traceEvents"]:
        if event.get("cat") == "kernel":
            expected[event["name"]][0] += 1
            expected[event["name"]][1] += Decimal(str(event["dur"]))
            registers[event["name"]] = event["args"]["registers per thread"]
    assert {k: v[0] for k, v in by_name.items()} == {k: v[0] for k, v in expected.items()}
    for name, (_, total) in expected.items():
        assert abs(by_name[name][1] - total) <= Decimal("0.001"), name
    for row in stats["rows"]:
        values = dict(zip(columns, (cell["v"] for cell in row["c"])))
        assert values["registers_per_thread"] == registers[values["kernel_name"]]


def test_xprof_overview_recognises_the_gpu(converted: Path):
    overview = xprof_tool(converted, "overview_page")
    properties = {k: v for table in overview for k, v in table.get("p", {}).items()}
    assert properties["device_type"].startswith("Nvidia GPU")
    assert properties["host_count"] == "1"
