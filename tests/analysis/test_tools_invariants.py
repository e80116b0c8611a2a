"""Invariants of the tools on every real profile in ../shared/traces.

Reference figures are computed here from the files themselves (JSON read with decimal
numbers; XSpace read from the protobuf), never from the tools' output.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool, tool_names
from stepscope.protos import xplane_pb2
from tests.support.intervals import union_length
from tests.support.traces import ALL_SHARED_TRACES, KINETO_TRACES, XPLANE_TRACES

DEVICE_WORK = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
KERNELS = {"kernel", "Kernel"}


def exact_json(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return json.load(stream, parse_float=Decimal)


def _percents(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _percents(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _percents(item, path)
    elif "percent" in path and isinstance(value, (int, float)):
        yield path, value


@pytest.fixture(scope="module", params=ALL_SHARED_TRACES, ids=lambda p: p.name)
def loaded(request):
    return request.param, stepscope.load(request.param)


def test_every_tool_runs_and_keeps_percentages_in_range(loaded):
    _, profile = loaded
    for name in tool_names():
        document = run_tool(name, profile).to_json()
        json.dumps(document, allow_nan=True)
        for where, value in _percents(document):
            assert value != value or 0.0 <= value <= 100.0, (name, where, value)  # NaN allowed: unknown


def test_breakdown_parts_sum_to_each_step(loaded):
    _, profile = loaded
    overview = run_tool("overview_page", profile).to_json()
    assert overview["steps"], "never an empty page"
    for step in overview["steps"]:
        parts = sum(v for k, v in step["breakdown"].items() if k.endswith("_ps"))
        assert parts == step["step_time_ps"]


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_kineto_device_busy_and_kernel_totals(path: Path):
    trace = exact_json(path)
    labels = {e["pid"]: e["args"]["labels"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_labels"}
    busy: dict[str, list[tuple[int, int]]] = defaultdict(list)
    kernel_ns: Counter = Counter()
    for event in trace["traceEvents"]:
        if event.get("ph") != "X" or event.get("cat") not in DEVICE_WORK:
            continue
        label = labels.get(event["pid"], f"GPU {event['pid']}")
        device = "/device:GPU:" + label.split()[-1]
        start = int(Decimal(event["ts"]) * 1000)
        end = start + int(Decimal(event["dur"]) * 1000)
        busy[device].append((start, end))
        if event["cat"] in KERNELS:
            kernel_ns[event["name"]] += end - start
    profile = stepscope.load(path)
    overview = run_tool("overview_page", profile).to_json()
    got_busy = {d["device"]: d["busy_time_ps"] // 1000 for d in overview["devices"]}
    assert got_busy == {device: union_length(intervals) for device, intervals in busy.items()}
    rows = run_tool("kernel_stats", profile).to_json()["rows"]
    totals: Counter = Counter()
    for row in rows:
        totals[row["kernel_name"]] += row["total_duration_ps"] // 1000
    assert totals == kernel_ns  # to the nanosecond


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_kineto_host_op_counts(path: Path):
    trace = exact_json(path)
    # Every cpu_op (2021: Operator) is a host op, except the ProfilerStep#N spans the 2021
    # schema files as Operators: they are steps, not ops.
    expected = Counter(
        e["name"]
        for e in trace["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "Operator") and not re.match(r"ProfilerStep#\d+$", e["name"])
    )
    rows = run_tool("framework_op_stats", stepscope.load(path)).to_json()["rows"]
    got = Counter({r["name"]: r["occurrences"] for r in rows if r["host_or_device"] == "Host"})
    assert got == expected


@pytest.mark.parametrize("path", XPLANE_TRACES, ids=lambda p: p.name)
def test_xspace_device_busy_is_the_union_of_xla_ops(path: Path):
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    expected = {}
    for plane in space.planes:
        if not plane.name.startswith("/device:"):
            continue
        intervals = [
            (line.timestamp_ns * 1000 + e.offset_ps, line.timestamp_ns * 1000 + e.offset_ps + e.duration_ps)
            for line in plane.lines
            if line.name == "XLA Ops"
            for e in line.events
        ]
        expected[plane.name] = union_length(intervals)
    overview = run_tool("overview_page", stepscope.load(path)).to_json()
    assert {d["device"]: d["busy_time_ps"] for d in overview["devices"]} == expected


def test_kernel_stats_read_the_same_launch_shapes_from_xspace(tmp_path):
    """kernel_stats reads an XSpace's kernel_details in one column lookup and a Kineto
    trace's per kernel: the trace and its XSpace conversion give the same rows, and every
    kernel of this A100 trace records its launch shape (registers per thread > 0)."""
    source = next(path for path in KINETO_TRACES if path.name.startswith("a100_ddp_cnn"))
    converted = tmp_path / "a100.xplane.pb"
    stepscope.save(stepscope.load(source), converted)
    rows = run_tool("kernel_stats", stepscope.load(source)).to_json()["rows"]
    assert rows and all(row["registers_per_thread"] > 0 for row in rows)
    assert run_tool("kernel_stats", stepscope.load(converted)).to_json()["rows"] == rows
