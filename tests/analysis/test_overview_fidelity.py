"""overview_page on the shapes real profiles have: framework step windows, warm-up and
one-off steps, a device idle before and after its work, verdicts that follow the numbers.

Each case is a small trace written here event by event (times in whole microseconds), with
every expected number derived by hand in a comment; the real shared traces are read with
the standard library for the figures a test compares with.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool, tool_names
from stepscope.analysis.steps.step_outliers import COMPILED, KEPT, OUTLIER, leave_one_out_median, set_aside
from tests.support.overview_traces import kernel, overview, x
from tests.support.tables import biggest_first, cell, searched
from tests.support.traces import shared

US = 1_000_000  # ps


def windows(result: dict) -> list[tuple[int, float, float]]:
    return [(s["step"], s["start_us"], s["step_time_us"]) for s in result["steps"]]


# --- 2. step windows: framework markers as XProf has them; stepscope's own reach back -----------


def wait_then_step(marker: str) -> list[dict]:
    """Two steps marked [10,20) and [30,40), each preceded by a 5 us IteratorGetNext."""
    return [
        x("IteratorGetNext", 5, 5),
        x(marker, 10, 10, step_num=1),
        x("IteratorGetNext", 25, 5),
        x(marker, 30, 10, step_num=2),
    ]


def test_framework_step_markers_are_used_as_they_are(tmp_path: Path):
    # TensorFlow's Trace("train", step_num=N) / JAX's StepTraceAnnotation: the windows are
    # the markers, [10,20) and [30,40); the waits before them belong to no step. Starts are
    # from the profile's start, the first event (5): 5 and 25.
    assert windows(overview(tmp_path, wait_then_step("train"))) == [(1, 5.0, 10.0), (2, 25.0, 10.0)]


def test_stepscope_step_markers_reach_back_over_the_wait_for_their_batch(tmp_path: Path):
    # `for batch in it: with stepscope.step(n)`: the wait [5,10) ends before step 1 and
    # after nothing, [25,30) after step 1's end (20) and by step 2's start: windows [5,20)
    # and [25,40), 15 us each, 5 of them input (starts from the profile's start, 5: 0, 20).
    result = overview(tmp_path, wait_then_step("stepscope.step"))
    assert windows(result) == [(1, 0.0, 15.0), (2, 20.0, 15.0)]
    assert [s["breakdown"]["input_us"] for s in result["steps"]] == [5.0, 5.0]


# --- 1. Python call stacks are not step activity -------------------------------------------------


def test_python_stacks_do_not_fill_the_idle_time(tmp_path: Path):
    # A 100 us step with one 30 us op; a monitor thread's Python stack (with_stack=True)
    # spans the whole step on another thread, and the main thread's own frame encloses the
    # op. Only the op is host compute: 30 us; the other 70 us are idle, as without stacks.
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        x("train.py(12): <module>", 0, 100, cat="python_function"),
        x("aten::mm", 0, 30),
        x("threading.py(1032): _bootstrap", 0, 100, tid=2, cat="python_function"),
    ]
    (step,) = overview(tmp_path, events, kineto=True)["steps"]
    assert {k: v for k, v in step["breakdown"].items() if k.endswith("_us") and v} == {"host_compute_us": 30.0, "idle_us": 70.0}


# --- 3. warm-up and one-off steps ----------------------------------------------------------------


def test_leave_one_out_median():
    # Without 5: median(1, 3) = 2; without 1: median(5, 3) = 4; without 3: median(5, 1) = 3.
    assert leave_one_out_median(np.asarray([5, 1, 3])).tolist() == [2.0, 4.0, 3.0]
    # Four values: without 10 the others are 1, 2, 3 (median 2); without 1: 2, 3, 10 (3).
    assert leave_one_out_median(np.asarray([10, 1, 2, 3])).tolist() == [2.0, 3.0, 3.0, 2.0]
    assert np.isnan(leave_one_out_median(np.asarray([7]))).all()


@pytest.mark.parametrize(
    ("durations", "compile_", "expected"),
    [
        # step 0 compiled and took 400 against the others' median 2: a warm-up step.
        ([400, 2, 2, 2, 2], [350, 0, 0, 0, 0], [COMPILED, KEPT, KEPT, KEPT, KEPT]),
        # 50 against a median of 10, no compile: more than 3x, an outlier; 25 (2.5x) is kept.
        ([10, 10, 50, 10, 25, 10], [0] * 6, [KEPT, KEPT, OUTLIER, KEPT, KEPT, KEPT]),
        # A compiling step only 1.4x its baseline (10) stays.
        ([14, 10, 10], [3, 0, 0], [KEPT, KEPT, KEPT]),
        # Two steps (below MIN_STEPS): the other step is no steady state; nothing is set aside,
        # not even 9,288 against 49 (the MI250 profile's: the long one held all the work).
        ([9288, 49], [0, 0], [KEPT, KEPT]),
        # Three 40s against 10, 10: each 40's baseline is median(10, 10, 40, 40) = 25 and
        # 40 > 1.5 x 25, but three of five is more than half: no steady state, nothing set aside.
        ([10, 10, 40, 40, 40], [0, 0, 5, 5, 5], [KEPT] * 5),
        # One step is never set aside.
        ([1000], [900], [KEPT]),
    ],
)
def test_set_aside_rule(durations, compile_, expected):
    assert set_aside(np.asarray(durations), np.asarray(compile_)).reason.tolist() == expected


def warm_up_events() -> list[dict]:
    """Step 0 [0, 400 ms) compiles for 350 ms; steps 1-4 take 2 ms each, 1 ms of it an op."""
    events = [x("train", 0, 400_000, step_num=0), x("backend_compile", 10_000, 350_000), x("op", 360_000, 40_000)]
    for step in range(1, 5):
        start = 400_000 + (step - 1) * 2_000
        events += [x("train", start, 2_000, step_num=step), x("op", start, 1_000)]
    return events


def test_a_warm_up_step_is_flagged_and_left_out_of_the_summary(tmp_path: Path):
    result = overview(tmp_path, warm_up_events())
    assert [s["set_aside"] for s in result["steps"]] == ["compile", None, None, None, None]
    # Steps 1-4: 2,000 us each. All five: (400,000 + 4 x 2,000) / 5 = 81,600 us.
    assert result["step_time_us"] == {"mean": 2000.0, "median": 2000.0, "stddev": 0.0, "min": 2000.0, "max": 2000.0}
    assert result["step_time_us_all"]["mean"] == pytest.approx(81_600.0)
    # Kept steps: 1,000 us of op (host compute) and 1,000 us idle in each: 50% / 50%.
    kept = {k: v for k, v in result["breakdown_percent"].items() if v}
    assert kept == {"host_compute": pytest.approx(50.0), "idle": pytest.approx(50.0)}
    # All steps: compile 350,000 of 408,000 us.
    assert result["breakdown_percent_all"]["compile"] == pytest.approx(100 * 350_000 / 408_000)
    # The baseline is the median of the other four steps (2,000 us).
    assert result["set_aside"] == [{"step": 0, "reason": "compile", "step_time_us": 400_000.0, "compile_us": 350_000.0, "baseline_us": 2000.0}]
    assert "step 0 compiled for 350.0 ms" in result["recommendation"]["summary"]
    assert result["recommendation"]["set_aside"] in result["recommendation"]["summary"]


def test_the_input_pipeline_leaves_the_same_steps_out(tmp_path: Path):
    # The warm-up trace with input waits: 200 us in each 2 ms step after step 0 (10% each),
    # and [0, 80 ms) in step 0 (20% of it; with step 0 the mean would be 12%). Step 0 is
    # set aside on both pages: mean 10%, "moderately". The wait claims [10, 80) ms of the
    # compile [10, 360) first (input comes before compile in the priority order), so step 0
    # compiled for 350 - 70 = 280 ms by the breakdown.
    events = [*warm_up_events(), x("IteratorGetNext", 0, 80_000)]
    events += [x("IteratorGetNext", 400_000 + (step - 1) * 2_000 + 1_000, 200) for step in range(1, 5)]
    path = tmp_path / "warm.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = stepscope.load(path)
    pipeline = run_tool("input_pipeline_analyzer", profile).to_json()
    assert [s["set_aside"] for s in pipeline["steps"]] == ["compile", None, None, None, None]
    assert pipeline["input_percent"]["mean"] == pytest.approx(10.0)
    assert pipeline["verdict"] == "moderately"
    assert "step 0 compiled for 280.0 ms" in pipeline["note"]
    recommendation = run_tool("overview_page", profile).to_json()["recommendation"]
    assert recommendation["input_percent"] == pytest.approx(10.0) and recommendation["input_bound"] == "moderately"


# --- 4. device busy over its active span and over the window -------------------------------------


def test_device_busy_over_its_active_span_and_the_window(tmp_path: Path):
    # The profiler's window is [0, 1000) (the step); the device works [400,500) and
    # [600,700): busy 200 us, active span [400, 700) = 300 us: 66.7% busy, idle 100 us
    # inside the span; 20% of the 1,000 us window.
    events = [x("ProfilerStep#1", 0, 1000, cat="user_annotation"), kernel("k", 400, 100), kernel("k", 600, 100)]
    (device,) = overview(tmp_path, events, kineto=True)["devices"]
    assert {key: device[key] for key in ("busy_time_us", "idle_time_us", "active_span_us", "window_us")} == {
        "busy_time_us": 200.0,
        "idle_time_us": 100.0,
        "active_span_us": 300.0,
        "window_us": 1000.0,
    }
    assert device["busy_percent"] == pytest.approx(200 / 3)
    assert device["busy_percent_of_window"] == pytest.approx(20.0)


def _kineto_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as stream:
        return json.load(stream)["traceEvents"]


def test_recsys_busy_over_the_device_span_matches_the_trace():
    """Rank 0 of the recsys job: busy over the device's active span, from the file."""
    path = shared("kineto/recsys_sampled_rank0_of_128.pt.trace.json.gz")
    device_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    spans = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in _kineto_events(path) if e.get("ph") == "X" and e.get("cat") in device_cats
    )
    busy, reach = 0.0, None
    for start, end in spans:  # the union's length, merging overlaps
        if reach is None or start > reach:
            busy, reach = busy + end - start, end
        elif end > reach:
            busy, reach = busy + end - reach, end
    active = max(end for _, end in spans) - spans[0][0]
    (device,) = run_tool("overview_page", stepscope.load(path)).to_json()["devices"]
    assert device["busy_time_us"] == pytest.approx(busy, abs=0.01)
    assert device["active_span_us"] == pytest.approx(active, abs=0.01)
    assert device["busy_percent"] == pytest.approx(100 * busy / active, abs=0.01)
    assert device["busy_percent"] > device["busy_percent_of_window"]


# --- 6. verdicts --------------------------------------------------------------------------------


def test_one_slow_first_launch_does_not_make_a_launch_bound_verdict(tmp_path: Path):
    # Three 100 us steps with a kernel [50,90) each. Step 1's first cudaLaunchKernel takes
    # 40 us (a one-time code load), the later ones 2 us. Per-step launch shares: 40%, 2%, 2%:
    # median 2% (< 10%). Summed over all steps it would be 44 / 300 = 14.7%, "launch bound".
    events = []
    for step in range(3):
        t = 100 * step
        events += [
            x(f"ProfilerStep#{step + 1}", t, 100, cat="user_annotation"),
            x("cudaLaunchKernel", t + 5, 40 if step == 0 else 2, cat="cuda_runtime"),
            kernel("k", t + 50, 40),
        ]
    result = overview(tmp_path, events, kineto=True)
    assert not result["set_aside"]  # equal steps: nothing to set aside
    assert result["recommendation"]["kernel_launch_percent"] == pytest.approx(2.0)
    assert result["recommendation"]["verdict"] != "kernel_launch"
    assert result["breakdown_percent"]["kernel_launch"] == pytest.approx(100 * 44 / 300)


def test_rocm_two_steps_are_both_kept_and_the_verdict_rests_on_them():
    """The MI250 toy run: ProfilerStep#1 (9.29 ms) holds a 6.6 ms first hipLaunchKernel and
    all the device work; ProfilerStep#2 (49 us) next to nothing. With two steps nothing is
    set aside (it was: step 1 as "189x the median", leaving a headline of an empty step)."""
    path = shared("kineto/mi250_rocm_toy_train.pt.trace.json.gz")
    events = _kineto_events(path)
    # The host's step markers (the GPU stream's gpu_user_annotation copies are no steps).
    steps = {
        e["name"]: (float(e["ts"]), float(e["dur"])) for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")
    }
    assert set(steps) == {"ProfilerStep#1", "ProfilerStep#2"}
    result = run_tool("overview_page", stepscope.load(path)).to_json()
    assert result["set_aside"] == []
    durations = [duration for _, duration in steps.values()]
    assert result["step_time_us"]["mean"] == pytest.approx(sum(durations) / 2, abs=0.01)
    # The device (pid 2: kernels and copies) is busy for under 2% of the two steps, from the
    # JSON: the union of its events within the step windows; so the verdict is the host's.
    device = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy"))
    busy = 0.0
    for start, duration in steps.values():
        end, reach = start + duration, start
        for a, b in device:
            a, b = max(a, reach), min(b, end)
            if b > a:
                busy, reach = busy + b - a, b
    assert busy / sum(durations) < 0.02
    assert result["recommendation"]["verdict"] == "host"
    assert "Set aside" not in result["recommendation"]["summary"]


def test_nothing_is_set_aside_when_the_kept_steps_would_hold_no_activity():
    """Step 0 took 400 against 2, 2, 2, 2 (an outlier by the factor), but the four short
    steps are all idle: the summary would rest on steps where nothing ran, so it keeps all."""
    durations, compile_ = np.asarray([400, 2, 2, 2, 2]), np.zeros(5)
    assert set_aside(durations, compile_, idle_ps=np.asarray([100, 2, 2, 2, 2])).reason.tolist() == [KEPT] * 5
    # One short step with activity is enough for a steady state: step 0 goes.
    assert set_aside(durations, compile_, idle_ps=np.asarray([100, 2, 1, 2, 2])).reason.tolist() == [OUTLIER, KEPT, KEPT, KEPT, KEPT]


def test_cpu_only_profile_gets_a_host_bound_verdict(tmp_path: Path):
    # One 100 us step on a CPU-only profile: 70 us of ops, 30 us uncovered.
    result = overview(tmp_path, [x("train", 0, 100, step_num=1), x("op", 0, 70)])
    recommendation = result["recommendation"]
    assert recommendation["verdict"] == "host"
    assert "host-bound" in recommendation["summary"] and "70.0%" in recommendation["summary"]
    assert recommendation["evidence"] == [
        {
            "finding": "host",
            "text": "no device in the profile: host compute 70.0%, idle 30.0% of the step time (medians of the per-step shares over 1 step(s))",
            "tool": "framework_op_stats",
            # The host op with the most self time: "op" (the step marker "train" is no op).
            "table": "framework_ops",
            "sort_key": "total_self_time_us",
            "query": "op",
            # The step's path is its thread: "op" 70 and 30 between ops, all host compute;
            # twice as fast: 35 + 15 = 50 us.
            "predicted": {
                "change": "faster",
                "description": "host_compute time were 2x faster",
                "step_ps": 100_000_000,
                "predicted_step_ps": 50_000_000,
                "gain_percent": 50.0,
                "text": "host compute 2x faster: 0.100 -> 0.050 ms, -50.0%",
            },
        }
    ]


def test_the_shared_cpu_only_trace_is_host_bound():
    result = run_tool("overview_page", stepscope.load(shared("kineto/cpu_only_rank34.pt.trace.json.gz"))).to_json()
    assert result["devices"] == [] and result["recommendation"]["verdict"] == "host"


def test_exposed_collectives_get_advice(tmp_path: Path):
    # A 100 us step: compute [0,50), an all-reduce [40,69): compute claims [40,50), so 19 us
    # of collectives are exposed: 19%. Idle [69,100) = 31%, no input, no launches: the
    # collectives finding (>= 10%) leads.
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        kernel("gemm", 0, 50),
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 40, 29),
    ]
    recommendation = overview(tmp_path, events, kineto=True)["recommendation"]
    assert recommendation["verdict"] == "collectives"
    assert recommendation["collectives_percent"] == pytest.approx(19.0)
    assert "19.0%" in recommendation["summary"]
    assert any("Overlap communication" in step for step in recommendation["next_steps"])


def test_every_finding_names_its_evidence_and_a_tool(tmp_path: Path):
    # Step 1: a 40 us input wait and a 50 us kernel of 100 us; input 40% (highly input-bound),
    # device compute claims [50,100). Both findings' tools exist.
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 40, cat="user_annotation"),
        kernel("k", 50, 50),
    ]
    recommendation = overview(tmp_path, events, kineto=True)["recommendation"]
    assert recommendation["verdict"] == "input" and recommendation["input_bound"] == "highly"
    assert recommendation["evidence"][0] == {
        "finding": "input",
        # The wait is torch.profiler's single-process DataLoader fetch: a loader without workers.
        "text": "input wait is 40.0% of the step time (mean of the per-step shares over 1 step(s)); "
        "the DataLoader has num_workers=0 (from torch.profiler's fetch names)",
        "tool": "input_pipeline_analyzer",
        "table": "steps",
        "sort_key": "input_percent",
        "query": "",
        # The path is the step's thread: the wait 40, then 60 between ops (the kernel has
        # no launch, so nothing waits for it). Input free: 60 us.
        "predicted": {
            "change": "input_free",
            "description": "input were free (no input wait)",
            "step_ps": 100_000_000,
            "predicted_step_ps": 60_000_000,
            "gain_percent": 40.0,
            "text": "input free: 0.100 -> 0.060 ms, -40.0%",
        },
    }
    for finding in recommendation["evidence"]:
        assert finding["tool"] in [*tool_names(), "trace_viewer"]


def _tables(tool: str, source) -> dict[str, dict]:
    """The tool's tables as the tables API serves them (columns' key and kind, rows)."""
    tables = run_tool(tool, source).tables()
    return {table.name: {"columns": [{"key": c.key, "kind": c.kind} for c in table.columns], "rows": [list(row) for row in table.rows]} for table in tables}


def _side_rows(ops: dict, side: str) -> list[list]:
    return [row for row in ops["rows"] if cell(ops, row, "host_or_device") == side]


def _check_evidence_rows(source, finding: dict) -> list[list]:
    """The finding's tool is the registry's, its table one of that tool's result, its sort
    key a column of it; returns the rows its search keeps, biggest first (none may be lost)."""
    if finding["table"] is None:
        assert finding["tool"] == "trace_viewer" and finding["sort_key"] is None and finding["query"] == ""
        return []
    assert finding["tool"] in tool_names()
    tables = _tables(finding["tool"], source)
    assert finding["table"] in tables, f"{finding['tool']} has no table {finding['table']}"
    table = tables[finding["table"]]
    assert finding["sort_key"] in [column["key"] for column in table["columns"]]
    kept = biggest_first(table, searched(table, finding["query"]), finding["sort_key"])
    assert kept, f"the search {finding['query']!r} keeps no row of {finding['table']}"
    return kept


# The evidence of each real trace's findings: the rows it points at, found here from the
# tool's table by the side's largest self time (host: the host side; device: the device
# side; collectives: the NCCL kernels' rows, by name).
REAL_FINDINGS = [
    ("kineto/cpu_only_rank34.pt.trace.json.gz", ["host"]),
    ("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz", ["host"]),
    ("kineto/recsys_sampled_rank0_of_128.pt.trace.json.gz", ["host", "collectives"]),
    ("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz", ["device"]),
    # (the TPU profile has no step marker: no bound, tests/analysis/steps/test_device_transfers.py)
]


@pytest.mark.parametrize(("name", "findings"), REAL_FINDINGS, ids=[name.split("/")[1].split(".")[0] for name, _ in REAL_FINDINGS])
def test_each_findings_evidence_links_to_the_rows_that_support_it(name: str, findings: list[str]):
    profile = stepscope.load(shared(name))
    evidence = run_tool("overview_page", profile).to_json()["recommendation"]["evidence"]
    assert [finding["finding"] for finding in evidence] == findings
    ops = _tables("framework_op_stats", profile)["framework_ops"]
    for finding in evidence:
        kept = _check_evidence_rows(profile, finding)
        assert finding["tool"] == "framework_op_stats" and finding["table"] == "framework_ops" and finding["sort_key"] == "total_self_time_us"
        if finding["finding"] == "collectives":
            # The collective with the most self time: on the device side, the NCCL kernels.
            nccl = [row for row in _side_rows(ops, "Device") if "nccl" in cell(ops, row, "name").lower()]
            expected = max(nccl, key=lambda row: cell(ops, row, "total_self_time_us"))
        else:
            side = _side_rows(ops, "Host" if finding["finding"] == "host" else "Device")
            expected = max(side, key=lambda row: cell(ops, row, "total_self_time_us"))
        assert finding["query"] == cell(ops, expected, "name")
        assert expected in kept


def test_the_input_findings_evidence_is_the_steps_most_input_bound_first(tmp_path: Path):
    # Two 100 us steps: step 1 waits 10 us for input, step 2 waits 40 us (mean 25%: highly
    # input-bound). The steps table sorted by its input share shows step 2 first.
    loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        x(loader, 0, 10, cat="user_annotation"),
        kernel("k", 10, 90),
        x("ProfilerStep#2", 100, 100, cat="user_annotation"),
        x(loader, 100, 40, cat="user_annotation"),
        kernel("k", 140, 60),
    ]
    document = {"schemaVersion": 1, "traceEvents": [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}, *events]}
    path = tmp_path / "trace.pt.trace.json"
    path.write_text(json.dumps(document))
    profile = stepscope.load(path)
    finding = run_tool("overview_page", profile).to_json()["recommendation"]["evidence"][0]
    assert (finding["finding"], finding["tool"], finding["table"], finding["sort_key"], finding["query"]) == (
        "input",
        "input_pipeline_analyzer",
        "steps",
        "input_percent",
        "",
    )
    steps = _tables("input_pipeline_analyzer", profile)["steps"]
    kept = _check_evidence_rows(profile, finding)
    assert [cell(steps, row, "step") for row in kept] == [2, 1]
    assert [cell(steps, row, "input_percent") for row in kept] == pytest.approx([40.0, 10.0])


def test_the_kernel_launch_findings_evidence_is_the_kernels_launched_most(tmp_path: Path):
    # One 100 us step: a 30 us cudaLaunchKernel (30% >= 10%: launch-bound) that starts
    # "small" (twice) and "big" (once) on the GPU.
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        x("cudaLaunchKernel", 0, 10, cat="cuda_runtime"),
        x("cudaLaunchKernel", 10, 10, cat="cuda_runtime"),
        x("cudaLaunchKernel", 20, 10, cat="cuda_runtime"),
        kernel("small", 35, 5),
        kernel("small", 45, 5),
        kernel("big", 55, 20),
    ]
    document = {"schemaVersion": 1, "traceEvents": [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}, *events]}
    path = tmp_path / "trace.pt.trace.json"
    path.write_text(json.dumps(document))
    profile = stepscope.load(path)
    evidence = {finding["finding"]: finding for finding in run_tool("overview_page", profile).to_json()["recommendation"]["evidence"]}
    finding = evidence["kernel_launch"]
    assert (finding["tool"], finding["table"], finding["sort_key"], finding["query"]) == ("kernel_stats", "kernels", "occurrences", "")
    kernels = _tables("kernel_stats", profile)["kernels"]
    assert [(cell(kernels, row, "kernel_name"), cell(kernels, row, "occurrences")) for row in _check_evidence_rows(profile, finding)] == [
        ("small", 2),
        ("big", 1),
    ]


def test_exposed_collectives_evidence_names_the_collective(tmp_path: Path):
    # The step of test_exposed_collectives_get_advice: the all-reduce kernel is the only
    # collective, so the evidence searches framework_op_stats for it.
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        kernel("gemm", 0, 50),
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 40, 29),
    ]
    evidence = overview(tmp_path, events, kineto=True)["recommendation"]["evidence"]
    collectives = next(finding for finding in evidence if finding["finding"] == "collectives")
    assert (collectives["tool"], collectives["table"], collectives["query"]) == (
        "framework_op_stats",
        "framework_ops",
        "ncclKernel_AllReduce_RING_LL_Sum_float",
    )
