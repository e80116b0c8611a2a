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
from stepscope.trace import names
from stepscope.trace.logdir import make_path
from tests.support.frameworks import nearest_ns, read_json_exact, read_xspace_independently
from tests.support.traces import KINETO_TRACES, read_json, shared

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


# --- the XProf trace viewer shows every event at its own time ----------------------------------


def xprof_trace_events(path: Path) -> list[dict]:
    """The events of XProf's streaming trace viewer (``trace_viewer@``, what TensorBoard's
    profile plugin serves today) at full resolution, with every number as exact Decimal text."""
    from xprof.convert import raw_to_tool_data

    options = {"resolution": 0, "full_dma": True}
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "trace_viewer@", {"use_saved_result": False, "trace_viewer_options": options})
    assert data, "XProf returned no trace_viewer@ data"
    return json.loads(data, parse_float=Decimal)["traceEvents"]


def _kineto_thread_events(path: Path) -> Counter:
    """(name, UNIX start ns, duration ns) of the trace's complete and instant events on
    real processes, read with the standard library. ``ts`` is microseconds after the
    header's ``baseTimeNanoseconds`` when it has one (PyTorch 2.x), else since the epoch.
    Kineto's own spans (string pids: "Spans", "Traces", "") become stepscope's
    /host:trace-spans plane, which XProf's trace viewer does not show."""
    document = read_json_exact(path)
    base_ns = document.get("baseTimeNanoseconds", 0)
    events = Counter()
    for event in document["traceEvents"]:
        pid = event.get("pid")
        real_process = isinstance(pid, int) or (isinstance(pid, str) and pid.isdigit())
        if event.get("ph") in ("X", "i") and real_process:
            events[(event["name"], base_ns + nearest_ns(event["ts"]), nearest_ns(event.get("dur", 0)))] += 1
    return events


@pytest.mark.parametrize("source", KINETO_TRACES, ids=lambda p: p.name.split(".")[0])
def test_xprof_trace_viewer_shows_each_kineto_event_at_its_time(source: Path, tmp_path: Path):
    """XProf turns line timestamps (ns) into int64 picoseconds: a file whose line
    timestamps are UNIX times overflows there and its trace viewer shows no event at all.
    stepscope writes as TSL does: session-relative line timestamps, the session's UNIX
    start as the "Task Environment" plane's profile_start_time."""
    out = make_path(tmp_path, "2026_11_30_00_00_00", "host")
    stepscope.save(stepscope.load(source), out)
    session = read_xspace_independently(out).plane_stats["Task Environment"]
    start_ns = session["profile_start_time"]
    assert start_ns >= 10**18  # a UNIX time (2001 or later)
    for line in (line for plane in _tsl_space(out).planes for line in plane.lines):
        assert 0 <= line.timestamp_ns < 10**15, f"line {line.name!r} timestamp {line.timestamp_ns} is not session-relative"
    events = xprof_trace_events(out)
    # On a CPU-only trace the writer adds a line of step roots for XProf (one per
    # ProfilerStep#N): not an event of the trace, set apart here.
    steps_tid = {
        event["tid"] for event in events if event.get("ph") == "M" and event.get("name") == "thread_name" and event["args"]["name"] == names.XPROF_STEPS_LINE
    }
    step_roots = [event for event in events if event.get("ph") in ("X", "i") and event.get("tid") in steps_tid]
    events = [event for event in events if event.get("tid") not in steps_tid]
    # (None on a trace with device planes: XProf groups those by their device events.)
    profiler_steps = {e["name"] for e in read_json(source)["traceEvents"] if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")}
    assert len(step_roots) == (0 if stepscope.load(source).device_planes else len(profiler_steps))
    # XProf's times are microseconds since the session start (ns digits kept); instants
    # show as complete events of no duration.
    shown = Counter((event["name"], start_ns + nearest_ns(event["ts"]), nearest_ns(event.get("dur", 0))) for event in events if event.get("ph") in ("X", "i"))
    expected = _kineto_thread_events(source)
    assert sum(shown.values()) == sum(expected.values())
    assert not expected - shown, f"events XProf does not show (first 3): {list((expected - shown).items())[:3]}"
    assert shown == expected


def _tsl_space(path: Path):
    from tests.support.frameworks import tsl_xplane_pb2

    space = tsl_xplane_pb2().XSpace()
    space.ParseFromString(path.read_bytes())
    return space
