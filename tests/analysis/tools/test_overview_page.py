"""The overview's headline figures, each one number with one definition: one
device idle in the overview, framework_op_stats and op_profile (XProf's
definition); the verdict sentence's figures as the breakdown or the steps below give them;
device work outside every step window named in the headline.

Real traces are read here with the standard library (exact decimal microseconds), small
traces are written event by event with every number derived in a comment.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.trace.logdir import make_path
from tests.support.frameworks import exact_ns, read_json_exact
from tests.support.overview_traces import kernel, overview, x
from tests.support.traces import shared
from tests.support.xprof import xprof_tool

V100_NS = "kineto/v100_resnet_ns_resolution.pt.trace.json.gz"
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def overlap(intervals: list[tuple[int, int]], windows: list[tuple[int, int]]) -> int:
    return sum(max(0, min(b, d) - max(a, c)) for a, b in intervals for c, d in windows)


@pytest.fixture(scope="module")
def v100_ns() -> dict:
    """From the JSON: the GPU's work intervals (pid 0 kernels, copies, memsets) and the
    host's ProfilerStep windows, in integer ns."""
    events = read_json_exact(shared(V100_NS))["traceEvents"]
    device = [(exact_ns(e["ts"]), exact_ns(e["ts"]) + exact_ns(e["dur"])) for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES]
    steps = [
        (exact_ns(e["ts"]), exact_ns(e["ts"]) + exact_ns(e["dur"]))
        for e in events
        if e.get("cat") == "user_annotation" and str(e.get("name")).startswith("ProfilerStep#")
    ]
    busy = union(device)
    return {
        "busy_ns": sum(b - a for a, b in busy),
        "span_ns": busy[-1][1] - busy[0][0],
        "inside_ns": overlap(busy, union(steps)),
    }


@pytest.fixture(scope="module")
def v100_profile() -> stepscope.Profile:
    return stepscope.load(shared(V100_NS))


# --- item 5: one device idle ---------------------------------------------------------------------


def test_one_device_idle_in_the_overview_framework_op_stats_and_op_profile(v100_ns, v100_profile):
    """Device idle = the device's active span (first work to last) less the union of its
    work. From the JSON: 480,029.179 us span, 472,454.441 us busy: 7,574.738 us idle. It
    was 125,436.945 us in op_profile and framework_op_stats, which counted the profile's
    window (time 0 to the last event of any kind) instead of the device's span."""
    idle_ps = (v100_ns["span_ns"] - v100_ns["busy_ns"]) * 1000
    assert idle_ps == 7_574_738_000
    overview_device = run_tool("overview_page", v100_profile).to_json()["device"]
    assert overview_device["idle_time_us"] == pytest.approx(idle_ps / 1e6, abs=5e-4)
    assert overview_device["active_span_us"] - overview_device["busy_time_us"] == pytest.approx(idle_ps / 1e6, abs=1e-3)
    idle_rows = run_tool("framework_op_stats", v100_profile).to_json()["idle_rows"]
    assert next(row["total_time_ps"] for row in idle_rows if row["host_or_device"] == "Device") == idle_ps
    assert run_tool("op_profile", v100_profile).to_json()["idle_time_ps"] == idle_ps


def test_xprofs_idle_row_is_the_devices_active_span_less_its_ops(v100_ns, v100_profile, tmp_path: Path):
    """XProf's framework_op_stats on the same trace written as XSpace: its device IDLE row
    is its total time (first device event to last) less its device op time. XProf counts as
    device ops only events with XLA/TF op metadata, which a Kineto GPU stream has none of, so
    its IDLE row is the whole active span: 480,029.179 us, the span stepscope's idle is of."""
    path = make_path(tmp_path, "2026_12_05_00_00_00", "v100")
    stepscope.save(v100_profile, path)
    document = xprof_tool(path, "framework_op_stats")
    table = document[0] if isinstance(document, list) else document
    columns = [column["id"] for column in table["cols"]]
    rows = [dict(zip(columns, (cell.get("v") for cell in row["c"]))) for row in table["rows"]]
    (idle,) = [row for row in rows if row["type"] == "IDLE" and row["host_or_device"] == "Device"]
    assert idle["total_time"] == pytest.approx(v100_ns["span_ns"] / 1000, abs=1e-3)
    assert not [row for row in rows if row["type"] != "IDLE" and row["host_or_device"] == "Device"]


def test_the_time_after_a_devices_last_op_is_no_idle(tmp_path: Path):
    """Kineto: step [0,100); kernels [10,30) and [50,60); the host runs on to 100. Device
    span [10,60) = 50 us, busy 30 us: idle 20 us in the overview, the IDLE row and
    op_profile alike (the profile's window [0,100) would have said 70)."""
    result = overview(tmp_path, [x("ProfilerStep#1", 0, 100, cat="user_annotation"), kernel("a", 10, 20), kernel("b", 50, 10)], kineto=True)
    assert result["device"]["idle_time_us"] == 20.0
    profile = stepscope.load(tmp_path / "trace.pt.trace.json")
    idle_rows = run_tool("framework_op_stats", profile).to_json()["idle_rows"]
    assert next(row["total_time_us"] for row in idle_rows if row["host_or_device"] == "Device") == 20.0
    assert run_tool("op_profile", profile).to_json()["idle_time_us"] == 20.0
    # The breakdown's idle is another thing, named apart: step time no host or device
    # activity covers: [0,10) + [30,50) + [60,100) = 70 us of the 100 us step.
    assert result["breakdown_percent"]["idle"] == 70.0


# --- item 6: the verdict's figures follow from the numbers below it ------------------------------


def test_the_device_bound_sentence_quotes_the_breakdowns_figure(tmp_path: Path):
    """Steps [0,100) and [100,400) with kernels [5,95) and [120,270): device compute 90 of
    100 us and 150 of 300 us. Per-step shares 90% and 50% (median 70%); of the summed time
    240 / 400 = 60%, the breakdown's figure, and now the sentence's (it said 70.0%)."""
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        x("ProfilerStep#2", 100, 300, cat="user_annotation"),
        kernel("k", 5, 90),
        kernel("k", 120, 150),
    ]
    result = overview(tmp_path, events, kineto=True)
    assert result["breakdown_percent"]["device_compute"] == 60.0
    recommendation = result["recommendation"]
    assert recommendation["verdict"] == "device"
    assert "the device computes for 60.0% of the step time" in recommendation["summary"]
    # Host + idle per step: 10% and 50%, median 30% (< 50%: not host-bound).
    assert recommendation["host_percent"] == 30.0


def test_each_verdict_figure_follows_from_the_steps_below_it(v100_profile):
    """On the V100 trace (device-bound): the sentence's device share is the breakdown's,
    which is the kept steps' device compute over their summed time; the input and kernel
    launch figures the page shows are the mean and the median of the per-step shares, each
    from the steps table's own numbers."""
    result = run_tool("overview_page", v100_profile).to_json()
    kept = [step for step in result["steps"] if step["set_aside"] is None]
    total = sum(step["step_time_ps"] for step in kept)
    device_share = 100 * sum(step["breakdown"]["device_compute_ps"] for step in kept) / total
    assert result["breakdown_percent"]["device_compute"] == pytest.approx(device_share)
    quoted = re.search(r"computes for ([\d.]+)%", result["recommendation"]["summary"])
    assert quoted and float(quoted.group(1)) == round(device_share, 1)

    def shares(key: str) -> list[float]:
        return [100 * step["breakdown"][f"{key}_ps"] / step["step_time_ps"] for step in kept]

    assert result["recommendation"]["input_percent"] == pytest.approx(statistics.fmean(shares("input")))
    assert result["recommendation"]["kernel_launch_percent"] == pytest.approx(statistics.median(shares("kernel_launch")))


# --- item 9: device work outside every step window ----------------------------------------------


def test_device_work_outside_the_steps_is_in_the_headline(v100_ns, v100_profile):
    """The V100 trace's GPU is busy 472,454.441 us, of which 384,054.170 us lie inside the
    five ProfilerStep windows (from the JSON): 88,400.271 us (18.7%) in no step."""
    outside_ns = v100_ns["busy_ns"] - v100_ns["inside_ns"]
    assert outside_ns == 88_400_271
    result = run_tool("overview_page", v100_profile).to_json()
    device = result["device"]
    assert device["busy_outside_steps_us"] == pytest.approx(outside_ns / 1000, abs=5e-4)
    assert device["busy_outside_steps_percent"] == pytest.approx(100 * outside_ns / v100_ns["busy_ns"])
    note = "18.7% of the device busy time (88,400.3 us) ran outside the profiled steps"
    assert note in result["recommendation"]["outside_steps"] and note in result["recommendation"]["summary"]


def test_a_kernel_queued_past_the_last_step_is_named(tmp_path: Path):
    """Step [0,100) with kernels [50,90) and [120,160) (queued, run after the step ended):
    busy 80 us, 40 us of it outside: 50.0%. A profile whose device work all lies in its
    steps says nothing (tests/analysis/test_tools_golden.py: 0.0, no note)."""
    events = [x("ProfilerStep#1", 0, 100, cat="user_annotation"), kernel("k", 50, 40), kernel("k", 120, 40)]
    result = overview(tmp_path, events, kineto=True)
    assert (result["device"]["busy_outside_steps_us"], result["device"]["busy_outside_steps_percent"]) == (40.0, 50.0)
    assert result["recommendation"]["outside_steps"] == (
        "50.0% of the device busy time (40.0 us) ran outside the profiled steps and is in no step's breakdown."
    )
    inside = overview(tmp_path, [x("ProfilerStep#1", 0, 100, cat="user_annotation"), kernel("k", 50, 40)], kineto=True)
    assert inside["device"]["busy_outside_steps_us"] == 0.0 and inside["recommendation"]["outside_steps"] == ""


# --- item 9: user annotations are the ops of a profile that has no other --------------------------


def test_annotations_are_the_ops_where_nothing_else_is(tmp_path: Path):
    """A Chrome trace of one step "train" [0,100) (step_num 1) holding the user's spans
    forward [0,60) (inner [10,30) inside it) and backward [60,90): no framework op
    anywhere, so the spans are the ops. Self times: forward 60 - 20 = 40, inner 20,
    backward 30, of 90 us: 44.4%, 33.3%, 22.2%. The host-bound verdict's evidence searches
    the table for the top one, which is there."""
    events = [x("train", 0, 100, cat="", step_num=1), x("forward", 0, 60, cat=""), x("inner", 10, 20, cat=""), x("backward", 60, 30, cat="")]
    result = overview(tmp_path, events)
    top = [(op["name"], op["type"], op["self_time_us"]) for op in result["top_ops"]]
    assert top == [("forward", "annotation", 40.0), ("backward", "annotation", 30.0), ("inner", "annotation", 20.0)]
    assert [op["self_time_percent"] for op in result["top_ops"]] == pytest.approx([100 * 40 / 90, 100 * 30 / 90, 100 * 20 / 90])
    (evidence,) = result["recommendation"]["evidence"]
    assert (evidence["tool"], evidence["table"], evidence["query"]) == ("framework_op_stats", "framework_ops", "forward")


def test_a_captured_programs_stepscope_trace_spans_are_its_top_operations(tmp_path: Path):
    """A real capture of a plain Python loop: three steps, each a ``stepscope.trace("work")``
    span around a 2 ms sleep. Its one op row is "work", 3 occurrences, each at least 2 ms
    of self time (the span holds nothing else)."""
    import time

    with stepscope.profile(tmp_path) as session:
        for number in range(3):
            with stepscope.step(number), stepscope.trace("work"):
                time.sleep(0.002)
    profile = stepscope.load(session.path)
    rows = run_tool("framework_op_stats", profile).to_json()["rows"]
    assert [(row["name"], row["type"], row["occurrences"]) for row in rows] == [("work", "annotation", 3)]
    assert rows[0]["total_self_time_us"] >= 3 * 2000
    overview_result = run_tool("overview_page", profile).to_json()
    assert [op["name"] for op in overview_result["top_ops"]] == ["work"]
    assert overview_result["recommendation"]["evidence"][0]["query"] == "work"


def test_a_device_whose_only_op_takes_no_time_has_no_idle(tmp_path: Path):
    """A kernel of 0 us (Kineto rounds the shortest to 0): an op with no interval, so its
    device has no span and 0 idle."""
    overview(tmp_path, [x("ProfilerStep#1", 0, 100, cat="user_annotation"), kernel("k", 10, 0)], kineto=True)
    profile = stepscope.load(tmp_path / "trace.pt.trace.json")
    assert run_tool("op_profile", profile).to_json()["idle_time_ps"] == 0
    idle_rows = run_tool("framework_op_stats", profile).to_json()["idle_rows"]
    assert next(row["total_time_ps"] for row in idle_rows if row["host_or_device"] == "Device") == 0
