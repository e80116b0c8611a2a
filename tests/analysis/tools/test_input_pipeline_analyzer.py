"""input_pipeline_analyzer: per-step input wait, the host input breakdown and the input-ops table.

Synthetic Kineto traces are written here event by event, and every expected number is
derived by hand in a comment next to it. Real profiles: a PyTorch CPU run whose Dataset
sleeps in ``__getitem__`` (so it is input-bound by construction), a TensorFlow CPU run with
tf.data, and the shared 2021 ResNet50 trace with a 4-worker DataLoader; their expected
numbers come from the files read with the standard library (TSL's protobuf class for
XSpace), never from stepscope.
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import re
import shutil
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.tools.input_pipeline_analyzer import (
    ADVANCED_READ,
    CATEGORIES,
    DEMANDED_READ,
    ENQUEUE,
    OTHER,
    PREPROCESSING,
    TOOL,
    input_bound_verdict,
    input_pipeline_analyzer,
    line_threads,
    rule_for,
)
from stepscope.trace import names
from stepscope.trace.merge import SAME_THREAD_LINE_ID_STEP
from stepscope.trace.model import NO_ID, Line
from tests.support.frameworks import exact_ns, find_files, read_json_exact, read_xspace_independently, run_framework_script
from tests.support.traces import ALL_SHARED_TRACES, shared

BASE_NS = 1_700_000_000_000_000_000
PS_PER_US = 1_000_000
PS_PER_NS = 1_000
FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
JSON_KEYS = {"step_source", "steps_inferred", "steps", "input_percent", "verdict", "host_breakdown_us", "input_ops", "note"}
OP_KEYS = {"name", "count", "total_ms", "total_percent", "self_ms", "self_percent", "category", "total_ps", "self_ps"}


# --- synthetic traces ------------------------------------------------------------------------------


def host(name: str, ts: int, dur: int, cat: str = "cpu_op") -> dict:
    """A host slice on thread 1 of process 1; ts and dur in whole microseconds."""
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}


def kernel(name: str, ts: int, dur: int) -> dict:
    """A GPU kernel on stream 7 of device 0."""
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7}}


def load_trace(tmp_path: Path, events: list[dict], name: str = "synthetic.pt.trace.json") -> stepscope.Profile:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS, "deviceProperties": [], "traceEvents": events}))
    profile = stepscope.load(path)
    profile.validate()
    return profile


def golden_events() -> list[dict]:
    """Two 100 us steps; the first waits 40 us for a fetch that reads, decodes, collates,
    prefetches and copies to the device, while a 10 us kernel runs; the second waits 5 us."""
    return [
        host("ProfilerStep#1", 0, 100, "user_annotation"),
        host(FETCH, 0, 40, "user_annotation"),
        host("stepscope.data.read", 2, 10, "user_annotation"),
        host("aten::empty", 3, 2),  # no rule: inherits demanded_file_read from the read
        host("stepscope.data.decode", 14, 8, "user_annotation"),
        host("aten::stack", 24, 6),  # no rule: the fetch hands down preprocessing
        host("stepscope.data.prefetch", 31, 4, "user_annotation"),
        host("cudaMemcpyAsync", 36, 3, "cuda_runtime"),
        host("aten::linear", 40, 50),  # compute: not input
        kernel("volta_sgemm", 10, 10),  # device compute claims [10, 20) of the fetch
        host("ProfilerStep#2", 100, 100, "user_annotation"),
        host(FETCH, 100, 5, "user_annotation"),
        host("aten::stack", 101, 2),
        host("aten::linear", 105, 90),
    ]


def test_golden_synthetic_trace(tmp_path: Path):
    profile = load_trace(tmp_path, golden_events())
    result = input_pipeline_analyzer(profile)
    assert result.tool == TOOL
    document = result.to_json()
    assert set(document) == JSON_KEYS
    json.dumps(document)  # plain JSON

    # Step 1 = [0, 100) us: the fetch covers [0, 40), the kernel claims [10, 20) first -> 30 us = 30%.
    # Step 2 = [100, 200) us: the fetch covers [100, 105) -> 5 us = 5%.
    assert result.step_source == "ProfilerStep" and not result.steps_inferred
    assert [(s["step"], s["input_ps"], s["step_time_ps"]) for s in result.steps] == [
        (1, 30 * PS_PER_US, 100 * PS_PER_US),
        (2, 5 * PS_PER_US, 100 * PS_PER_US),
    ]
    assert [(s["input_us"], s["step_time_us"], s["input_percent"]) for s in result.steps] == [(30.0, 100.0, 30.0), (5.0, 100.0, 5.0)]
    # Shares 30 and 5: mean 17.5, population stddev sqrt((12.5^2 + 12.5^2) / 2) = 12.5, min 5, max 30.
    assert result.input_percent == pytest.approx({"mean": 17.5, "stddev": 12.5, "min": 5.0, "max": 30.0})
    assert result.verdict == "moderately"  # 5 <= 17.5 < 20

    # Self times (us): fetch 1 = 40 - (10 + 8 + 6 + 4 + 3) = 9, read = 10 - 2 = 8, aten::empty 2,
    # decode 8, aten::stack 6, prefetch 4, cudaMemcpyAsync 3; fetch 2 = 5 - 2 = 3, aten::stack 2.
    # enqueue 3; demanded 8 + 2 = 10; advanced 4; preprocessing 8 + 6 + 2 = 16; other 9 + 3 = 12.
    # They sum to 45 = 40 + 5, the two fetches' durations.
    assert result.host_breakdown_us == {
        ENQUEUE: 3.0,
        DEMANDED_READ: 10.0,
        ADVANCED_READ: 4.0,
        PREPROCESSING: 16.0,
        OTHER: 12.0,
    }
    assert list(result.host_breakdown_us) == list(CATEGORIES)

    # (name, count, total us, self us, category), by self time, then total time, then name.
    # Percentages are of all input self time, 45 us.
    expected = [
        (FETCH, 2, 45, 12, OTHER),
        ("stepscope.data.read", 1, 10, 8, DEMANDED_READ),
        ("aten::stack", 2, 8, 8, PREPROCESSING),
        ("stepscope.data.decode", 1, 8, 8, PREPROCESSING),
        ("stepscope.data.prefetch", 1, 4, 4, ADVANCED_READ),
        ("cudaMemcpyAsync", 1, 3, 3, ENQUEUE),
        ("aten::empty", 1, 2, 2, DEMANDED_READ),
    ]
    ops = result.input_ops
    assert all(set(op) == OP_KEYS for op in ops)
    assert [(op["name"], op["count"], op["total_ps"], op["self_ps"], op["category"]) for op in ops] == [
        (name, count, total * PS_PER_US, own * PS_PER_US, category) for name, count, total, own, category in expected
    ]
    for op, (_, _, total, own, _) in zip(ops, expected):
        assert op["total_ms"] == pytest.approx(total / 1000)
        assert op["self_ms"] == pytest.approx(own / 1000)
        assert op["total_percent"] == pytest.approx(100 * total / 45)  # fetch: 45/45 = 100%
        assert op["self_percent"] == pytest.approx(100 * own / 45)  # fetch: 12/45 = 26.7%
    assert sum(op["self_percent"] for op in ops) == pytest.approx(100.0)
    # The nested annotations are not outermost input events: the note names the 2 fetches only.
    assert "2 PyTorch DataLoader fetch(es)" in result.note and "stepscope.data" not in result.note

    tables = {table.name: table for table in result.tables()}
    assert set(tables) == {"steps", "host_breakdown", "input_ops"}
    assert tables["steps"].records()[0] == {"step": 1, "step_time_us": 100.0, "input_us": 30.0, "input_percent": 30.0}
    assert [row[0] for row in tables["host_breakdown"].rows] == list(CATEGORIES)
    assert tables["input_ops"].records()[0]["name"] == FETCH
    assert any("moderately input-bound" in line for line in result.summary())


def test_registered_and_run_through_the_registry(tmp_path: Path):
    from stepscope.analysis.registry import TOOLS

    assert TOOLS[TOOL].function is input_pipeline_analyzer.__wrapped__  # registered by importing the module
    profile = load_trace(tmp_path, golden_events())
    assert run_tool(TOOL, profile).to_json() == input_pipeline_analyzer(profile).to_json()


@pytest.mark.parametrize(
    ("fetch_us", "verdict"),
    # One 100 us step whose fetch takes fetch_us: the input share is fetch_us percent.
    [(0, "not"), (4, "not"), (5, "moderately"), (19, "moderately"), (20, "highly"), (100, "highly")],
)
def test_verdict_uses_xprofs_thresholds(tmp_path: Path, fetch_us: int, verdict: str):
    events = [host("ProfilerStep#3", 0, 100, "user_annotation"), host("aten::linear", fetch_us, 100 - fetch_us)]
    if fetch_us:
        events.append(host(FETCH, 0, fetch_us, "user_annotation"))
    result = input_pipeline_analyzer(load_trace(tmp_path, events))
    assert result.steps[0]["input_percent"] == pytest.approx(fetch_us)
    assert result.verdict == verdict == input_bound_verdict(float(fetch_us))


def test_no_input_events_gives_a_well_formed_result(tmp_path: Path):
    profile = load_trace(tmp_path, [host("ProfilerStep#1", 0, 100, "user_annotation"), host("aten::linear", 10, 80)])
    result = input_pipeline_analyzer(profile)
    document = json.loads(json.dumps(result.to_json()))
    assert set(document) == JSON_KEYS
    assert document["steps"] == [
        {"step": 1, "input_us": 0.0, "step_time_us": 100.0, "input_percent": 0.0, "input_ps": 0, "step_time_ps": 100 * PS_PER_US, "set_aside": None}
    ]
    assert document["input_percent"] == {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    assert document["verdict"] == "not"
    assert document["host_breakdown_us"] == dict.fromkeys(CATEGORIES, 0.0)
    assert document["input_ops"] == []
    assert "No input-pipeline events" in document["note"]
    assert [len(table.rows) for table in result.tables()] == [1, len(CATEGORIES), 0]
    assert result.summary()


def test_without_step_markers_the_window_is_one_step(tmp_path: Path):
    # Window [0, 50) us; the fetch covers [0, 10) -> 20%.
    profile = load_trace(tmp_path, [host(FETCH, 0, 10, "user_annotation"), host("aten::linear", 10, 40)])
    result = input_pipeline_analyzer(profile)
    assert result.steps_inferred
    assert [(s["input_ps"], s["step_time_ps"]) for s in result.steps] == [(10 * PS_PER_US, 50 * PS_PER_US)]
    assert result.verdict == "highly"
    assert "whole profiled window is one step" in result.note


def test_step_input_is_the_overviews_input(tmp_path: Path):
    for profile in (load_trace(tmp_path, golden_events()), stepscope.load(shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz"))):
        overview = run_tool("overview_page", profile)
        ours = input_pipeline_analyzer(profile)
        assert [s["input_ps"] for s in ours.steps] == [s["breakdown"]["input_ps"] for s in overview.steps]
        assert [s["step_time_ps"] for s in ours.steps] == [s["step_time_ps"] for s in overview.steps]


@pytest.mark.parametrize(
    ("name", "own", "handed_down"),
    [
        ("stepscope.data.read", DEMANDED_READ, DEMANDED_READ),
        ("stepscope.data.read:shard-3", DEMANDED_READ, DEMANDED_READ),
        ("stepscope.data.prefetch", ADVANCED_READ, ADVANCED_READ),
        ("stepscope.data.decode", PREPROCESSING, PREPROCESSING),
        ("stepscope.data.transform", PREPROCESSING, PREPROCESSING),
        ("stepscope.data.collate", PREPROCESSING, PREPROCESSING),
        ("stepscope.data.next", OTHER, OTHER),
        ("cudaMemcpyAsync", ENQUEUE, ENQUEUE),
        ("hipMemcpyWithStream", ENQUEUE, ENQUEUE),
        ("InfeedEnqueueTuple", ENQUEUE, ENQUEUE),
        # tf.data: XProf's rule, a file reader below a read-ahead stage is an advanced read
        ("Iterator::Root::Prefetch::BatchV2::Shuffle::MemoryCacheImpl::ParallelMapV2::Interleave[0]::FlatMap[0]::TFRecord", ADVANCED_READ, ADVANCED_READ),
        ("Iterator::Prefetch::TFRecord", ADVANCED_READ, ADVANCED_READ),
        ("Iterator::Map::TFRecord", DEMANDED_READ, DEMANDED_READ),
        ("Iterator::TextLine", DEMANDED_READ, DEMANDED_READ),
        ("Iterator::Prefetch::ParallelMapV2::TFRecord", ADVANCED_READ, ADVANCED_READ),
        ("Iterator::Root::Prefetch::ArrayRecord", ADVANCED_READ, ADVANCED_READ),  # XProf's newest reader
        ("Iterator::ArrayRecord", DEMANDED_READ, DEMANDED_READ),
        # XProf: only file readers are file reads; every other stage, read-ahead stages
        # included, is preprocessing (these four were advanced_file_read before)
        ("Iterator::Root::Prefetch", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root::ParallelInterleaveV4", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root::Prefetch::BatchV2::Shuffle::MemoryCache", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root::Prefetch::BatchV2::Shuffle::MemoryCacheImpl", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root::Prefetch::Interleave", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root::Cache", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root::Prefetch::BatchV2::Shuffle::MemoryCacheImpl::ParallelMapV2", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root::Prefetch::BatchV2", PREPROCESSING, PREPROCESSING),
        ("Iterator::Root", PREPROCESSING, PREPROCESSING),
        # fetch wrappers: own time other, nested unnamed work is preprocessing
        (FETCH, OTHER, PREPROCESSING),
        ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", OTHER, PREPROCESSING),
        ("IteratorGetNextOp::DoCompute", OTHER, PREPROCESSING),
        ("MultiDeviceIteratorGetNextFromShard", OTHER, PREPROCESSING),
        ("read", DEMANDED_READ, DEMANDED_READ),
        ("FileRead", DEMANDED_READ, DEMANDED_READ),
        ("<built-in function open>", DEMANDED_READ, DEMANDED_READ),
        ("<built-in method read of _io.BufferedReader object at 0x7f47ee2cea40>", DEMANDED_READ, DEMANDED_READ),
        ("my_collate_fn", PREPROCESSING, PREPROCESSING),
    ],
)
def test_rules_table(name: str, own: str, handed_down: str):
    assert rule_for(name) == (own, handed_down)


@pytest.mark.parametrize(
    "name", ["aten::stack", "aten::empty", "aten::to", "ParallelMapConsume", "PrefetchConsume", "<built-in function sleep>", "<built-in method readable of x>"]
)
def test_generic_ops_have_no_rule_and_inherit(name: str):
    assert rule_for(name) is None


# --- one thread's input events are counted once ------------------------------------------------------

WAIT = "stepscope.data.wait"
THREAD = 7024  # the training thread's OS id in the capture this shape was read from


def thread_slice(name: str, ts: int, dur: int, tid: int, cat: str = "cpu_op") -> dict:
    """A host slice on thread ``tid`` of process 1; ts and dur in whole microseconds."""
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


def by_category_ps(result) -> dict[str, int]:
    """The host breakdown back in picoseconds, summed from the ops table (exact integers)."""
    sums = dict.fromkeys(CATEGORIES, 0)
    for op in result.input_ops:
        sums[op["category"]] += op["self_ps"]
    return sums


def stepscope_capture_of_one_thread(tmp_path: Path) -> stepscope.Profile:
    """What ``stepscope.profile`` writes for a DataLoader loop wrapped in
    ``stepscope.data.instrument`` (the shape of a real CPU capture, torch 2.13): torch's
    tracer records the fetch and its aten ops on the line of thread 7024; stepscope's host
    tracer records the wait and the dataset's stages for the same thread; the session
    merges the two (the framework's profile first), so the thread has two lines, ids 7024
    and 1,007,024. Written to .xplane.pb and read back, as the tools see a capture."""
    from stepscope.capture.tracers.host import events_plane
    from stepscope.trace.merge import merge_profiles

    torch_side = load_trace(
        tmp_path,
        [
            thread_slice(FETCH, 12, 78, THREAD, "user_annotation"),
            thread_slice("aten::empty", 45, 7, THREAD),  # starts inside the read (other line), ends after it
            thread_slice("aten::stack", 80, 6, THREAD),
            thread_slice("aten::linear", 95, 25, THREAD),  # the step's compute: not input
        ],
        "torch.pt.trace.json",
    )
    # The host tracer's records: (name, start, end in perf_counter ns, thread id, args), on a
    # clock whose perf_counter 0 is BASE_NS: the same instants as the Kineto trace's.
    us = 1000
    records = [
        (WAIT, 10 * us, 92 * us, THREAD, {"source": "batch", "index": 0}),
        ("stepscope.data.read", 20 * us, 50 * us, THREAD, None),
        ("stepscope.data.decode", 55 * us, 70 * us, THREAD, None),
    ]
    plane = events_plane(names.HOST_PLANE, records, SimpleNamespace(offset=BASE_NS), BASE_NS, {THREAD: "MainThread"})
    ours = stepscope.Profile(planes=[plane], start_ns=BASE_NS, host="", source="stepscope annotations", format="stepscope")
    merged = merge_profiles([torch_side, ours], host="synthetic", source="synthetic")
    path = tmp_path / "capture.xplane.pb"
    stepscope.save(merged, path)
    profile = stepscope.load(path)
    profile.validate()
    return profile


def test_a_wait_and_a_fetch_on_two_lines_of_one_thread_count_once(tmp_path: Path):
    profile = stepscope_capture_of_one_thread(tmp_path)
    host_plane = profile.plane(names.HOST_PLANE)
    assert sorted(line.id for line in host_plane.lines) == [THREAD, THREAD + SAME_THREAD_LINE_ID_STEP]
    assert line_threads(host_plane).tolist() == [0, 0]  # both lines: one thread
    result = input_pipeline_analyzer(profile)

    # Thread 7024's input ops (us): torch's line: fetch [12, 90), aten::empty [45, 52),
    # aten::stack [80, 86); stepscope's line: wait [10, 92), read [20, 50), decode [55, 70).
    # Their union is [10, 92) = 82 us, the host input time. Each stretch goes to the op of
    # the thread that started last among those open:
    #   [10, 12) wait 2 | [12, 20) fetch 8 | [20, 45) read 25 | [45, 52) aten::empty 7 |
    #   [52, 55) fetch 3 | [55, 70) decode 15 | [70, 80) fetch 10 | [80, 86) aten::stack 6 |
    #   [86, 90) fetch 4 | [90, 92) wait 2                      -> 2+8+25+7+3+15+10+6+4+2 = 82.
    # Self: wait 2 + 2 = 4, fetch 8 + 3 + 10 + 4 = 25, read 25, aten::empty 7, decode 15, stack 6.
    # (Per line, as before: wait 82 - 30 - 15 = 37, fetch 78 - 7 - 6 = 65, read 30, 7, 15, 6 = 160.)
    expected = {
        WAIT: (1, 82, 4, OTHER),
        FETCH: (1, 78, 25, OTHER),
        "stepscope.data.read": (1, 30, 25, DEMANDED_READ),
        "aten::empty": (1, 7, 7, PREPROCESSING),  # no rule: the fetch hands down preprocessing
        "stepscope.data.decode": (1, 15, 15, PREPROCESSING),
        "aten::stack": (1, 6, 6, PREPROCESSING),
    }
    assert {op["name"]: (op["count"], op["total_ps"], op["self_ps"], op["category"]) for op in result.input_ops} == {
        name: (count, total * PS_PER_US, own * PS_PER_US, category) for name, (count, total, own, category) in expected.items()
    }
    # Categories: other 4 + 25 = 29, demanded 25, preprocessing 7 + 15 + 6 = 28; 29 + 25 + 28 = 82.
    assert by_category_ps(result) == {ENQUEUE: 0, DEMANDED_READ: 25 * PS_PER_US, ADVANCED_READ: 0, PREPROCESSING: 28 * PS_PER_US, OTHER: 29 * PS_PER_US}
    assert result.host_breakdown_us == {ENQUEUE: 0.0, DEMANDED_READ: 25.0, ADVANCED_READ: 0.0, PREPROCESSING: 28.0, OTHER: 29.0}
    # One thread: the host input time (82 us) fits in the profile's span (the first event, the
    # wait, is time 0; aten::linear ends at 120 - 10 = 110 us).
    assert profile.span_ps == 110 * PS_PER_US
    assert sum(by_category_ps(result).values()) == 82 * PS_PER_US <= 1 * profile.span_ps
    assert sum(op["self_percent"] for op in result.input_ops) == pytest.approx(100.0)


def test_a_wait_around_a_fetch_on_one_line_counts_once(tmp_path: Path):
    # torch.profiler alone, the wait recorded by torch too (record_function): one line, nested.
    # wait [0, 50) > fetch [2, 48) > read [10, 30), aten::stack [35, 40). Union [0, 50) = 50 us.
    # wait [0, 2) + [48, 50) = 4; fetch [2, 10) + [30, 35) + [40, 48) = 8 + 5 + 8 = 21; read 20; stack 5.
    profile = load_trace(
        tmp_path,
        [
            host(WAIT, 0, 50, "user_annotation"),
            host(FETCH, 2, 46, "user_annotation"),
            host("stepscope.data.read", 10, 20, "user_annotation"),
            host("aten::stack", 35, 5),
        ],
    )
    result = input_pipeline_analyzer(profile)
    assert {op["name"]: (op["total_ps"], op["self_ps"]) for op in result.input_ops} == {
        WAIT: (50 * PS_PER_US, 4 * PS_PER_US),
        FETCH: (46 * PS_PER_US, 21 * PS_PER_US),
        "stepscope.data.read": (20 * PS_PER_US, 20 * PS_PER_US),
        "aten::stack": (5 * PS_PER_US, 5 * PS_PER_US),
    }
    # other 4 + 21 = 25, demanded 20, preprocessing 5: 50 in all, the union.
    assert by_category_ps(result) == {ENQUEUE: 0, DEMANDED_READ: 20 * PS_PER_US, ADVANCED_READ: 0, PREPROCESSING: 5 * PS_PER_US, OTHER: 25 * PS_PER_US}


def test_overlapping_siblings_on_one_line_count_once(tmp_path: Path):
    # Two input events of one thread that overlap without nesting become siblings on the line:
    # IteratorGetNext [0, 30) and Iterator::Root [20, 50). Union [0, 50) = 50 us (summed
    # durations: 60). The later start takes the overlap: IteratorGetNext [0, 20) = 20 (other),
    # Iterator::Root [20, 50) = 30 (preprocessing).
    profile = load_trace(tmp_path, [host("IteratorGetNext", 0, 30), host("Iterator::Root", 20, 30)])
    assert profile.plane(names.HOST_PLANE).events.parent.tolist() == [NO_ID, NO_ID]  # siblings
    result = input_pipeline_analyzer(profile)
    assert {op["name"]: op["self_ps"] for op in result.input_ops} == {"IteratorGetNext": 20 * PS_PER_US, "Iterator::Root": 30 * PS_PER_US}
    assert by_category_ps(result) == {ENQUEUE: 0, DEMANDED_READ: 0, ADVANCED_READ: 0, PREPROCESSING: 30 * PS_PER_US, OTHER: 20 * PS_PER_US}


def test_different_threads_each_count(tmp_path: Path):
    # Thread 1: a fetch [0, 40). Thread 2 (a DataLoader worker thread, a tf.data thread):
    # a read [10, 50). They overlap in [10, 40) but run at once: each counts.
    # Host input 40 + 40 = 80 us, more than the 50 us span, and at most 2 threads x 50 = 100.
    profile = load_trace(
        tmp_path,
        [thread_slice(FETCH, 0, 40, 1, "user_annotation"), thread_slice("stepscope.data.read", 10, 40, 2, "user_annotation")],
    )
    assert line_threads(profile.plane(names.HOST_PLANE)).tolist() == [0, 1]
    result = input_pipeline_analyzer(profile)
    assert by_category_ps(result) == {ENQUEUE: 0, DEMANDED_READ: 40 * PS_PER_US, ADVANCED_READ: 0, PREPROCESSING: 0, OTHER: 40 * PS_PER_US}
    assert profile.span_ps == 50 * PS_PER_US
    assert profile.span_ps < sum(by_category_ps(result).values()) == 80 * PS_PER_US <= 2 * profile.span_ps


def owned_by_hand(thread: list[int], start: list[int], end: list[int]) -> list[int]:
    """The ownership rule written out: cut each thread's time at every start and end; each
    stretch goes to the open event that started last (then the shorter, then the later row)."""
    owned = [0] * len(start)
    for one in set(thread):
        mine = [i for i in range(len(start)) if thread[i] == one]
        cuts = sorted({start[i] for i in mine} | {end[i] for i in mine})
        for lo, hi in itertools.pairwise(cuts):
            open_ = [i for i in mine if start[i] <= lo and hi <= end[i]]
            if open_:
                owned[max(open_, key=lambda i: (start[i], -(end[i] - start[i]), i))] += hi - lo
    return owned


def test_owned_time_is_the_rule_and_sums_to_each_threads_union():
    import numpy as np

    from stepscope.analysis.intervals import Union
    from stepscope.analysis.tools.input_pipeline_analyzer import _owned_ps

    rng = np.random.default_rng(13)
    for _ in range(100):
        count = int(rng.integers(1, 30))
        thread = rng.integers(0, 3, count)
        start = rng.integers(0, 40, count)
        end = start + rng.integers(0, 15, count)  # instants (length 0) own nothing
        owned = _owned_ps(thread, start, end)
        assert owned.tolist() == owned_by_hand(thread.tolist(), start.tolist(), end.tolist())
        for one in range(3):
            assert int(owned[thread == one].sum()) == Union.of(start[thread == one], end[thread == one]).total


def test_lines_of_one_thread_follow_the_merge_ids():
    # trace/merge.py: a thread traced by 3 tracers has lines T, T + 1,000,000, T + 2,000,000;
    # a line 3,000,009 with no line 2,000,009 is a thread of its own; two lines with one id
    # (5, twice) are one thread.
    lines = [Line(id, f"line {id}") for id in (5, 1_000_005, 2_000_005, 9, 3_000_009, 5)]
    plane = SimpleNamespace(lines=lines)
    assert line_threads(plane).tolist() == [0, 0, 0, 3, 4, 0]


def test_tf_data_prefetch_is_preprocessing_and_readers_below_it_read_ahead(tmp_path: Path):
    # Thread 1, the training loop: two GetNext calls.
    #   IteratorGetNext [0, 40) > Iterator::Root [1, 39) > Iterator::Root::Prefetch [2, 38)
    #   (waiting on Prefetch's buffer);
    #   IteratorGetNext [50, 70) > Iterator::Root [51, 69) > Iterator::Root::Map [52, 68)
    #   > Iterator::Root::Map::TFRecord [53, 63) (a reader with no read-ahead stage above: demanded).
    # Thread 2, Prefetch's background thread: Iterator::Root::Prefetch::TFRecord [5, 35)
    # (a reader below Prefetch: advanced).
    profile = load_trace(
        tmp_path,
        [
            thread_slice("IteratorGetNext", 0, 40, 1),
            thread_slice("Iterator::Root", 1, 38, 1),
            thread_slice("Iterator::Root::Prefetch", 2, 36, 1),
            thread_slice("IteratorGetNext", 50, 20, 1),
            thread_slice("Iterator::Root", 51, 18, 1),
            thread_slice("Iterator::Root::Map", 52, 16, 1),
            thread_slice("Iterator::Root::Map::TFRecord", 53, 10, 1),
            thread_slice("Iterator::Root::Prefetch::TFRecord", 5, 30, 2),
        ],
    )
    result = input_pipeline_analyzer(profile)
    # Self (us): GetNext 1 + 1 and 1 + 1 = 4; Root 1 + 1 and 1 + 1 = 4; Prefetch 36;
    # Map 16 - 10 = 6; Map::TFRecord 10; Prefetch::TFRecord 30.
    assert {op["name"]: (op["count"], op["self_ps"], op["category"]) for op in result.input_ops} == {
        "IteratorGetNext": (2, 4 * PS_PER_US, OTHER),
        "Iterator::Root": (2, 4 * PS_PER_US, PREPROCESSING),
        "Iterator::Root::Prefetch": (1, 36 * PS_PER_US, PREPROCESSING),
        "Iterator::Root::Map": (1, 6 * PS_PER_US, PREPROCESSING),
        "Iterator::Root::Map::TFRecord": (1, 10 * PS_PER_US, DEMANDED_READ),
        "Iterator::Root::Prefetch::TFRecord": (1, 30 * PS_PER_US, ADVANCED_READ),
    }
    # other 4; preprocessing 4 + 36 + 6 = 46; demanded 10; advanced 30: 90 = thread 1's
    # union [0, 40) + [50, 70) = 60, plus thread 2's 30.
    assert by_category_ps(result) == {
        ENQUEUE: 0,
        DEMANDED_READ: 10 * PS_PER_US,
        ADVANCED_READ: 30 * PS_PER_US,
        PREPROCESSING: 46 * PS_PER_US,
        OTHER: 4 * PS_PER_US,
    }


# --- the shared legacy trace: 4-worker DataLoader, ResNet50 on a V100 --------------------------------


def nested_on_thread(fetch: dict, thread_events: list[dict]) -> list[dict]:
    """Slices of the fetch's thread lying wholly inside it (the JSON's own nesting)."""
    lo, hi = Decimal(fetch["ts"]), Decimal(fetch["ts"]) + Decimal(fetch["dur"])
    return [e for e in thread_events if e is not fetch and lo <= Decimal(e["ts"]) and Decimal(e["ts"]) + Decimal(e["dur"]) <= hi]


def direct_children_us(parent: dict, inside: list[dict]) -> Decimal:
    """Sum of durations of the events in ``inside`` that lie in ``parent`` and in no other such event."""

    def contains(a: dict, b: dict) -> bool:
        return a is not b and Decimal(a["ts"]) <= Decimal(b["ts"]) and Decimal(b["ts"]) + Decimal(b["dur"]) <= Decimal(a["ts"]) + Decimal(a["dur"])

    mine = [e for e in inside if contains(parent, e)]
    return sum((Decimal(e["dur"]) for e in mine if not any(contains(other, e) for other in mine)), Decimal(0))


def test_legacy_dataloader_trace_matches_the_json():
    path = shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz")
    events = read_json_exact(path)["traceEvents"]
    fetch_name = re.compile(r"DataLoaderIter\.__next__$")
    fetches = [e for e in events if e.get("ph") == "X" and fetch_name.search(e.get("name", ""))]
    assert len(fetches) == 6  # the file's own count; the README says 6 steps

    counts: collections.Counter = collections.Counter()
    totals_us: collections.Counter = collections.Counter()
    fetch_self_us = Decimal(0)
    for fetch in fetches:
        thread = [e for e in events if e.get("ph") == "X" and e.get("pid") == fetch["pid"] and e.get("tid") == fetch["tid"]]
        inside = nested_on_thread(fetch, thread)
        for event in [fetch, *inside]:
            counts[event["name"]] += 1
            totals_us[event["name"]] += Decimal(event["dur"])
        fetch_self_us += Decimal(fetch["dur"]) - direct_children_us(fetch, inside)

    result = input_pipeline_analyzer(stepscope.load(path))
    by_name_count: collections.Counter = collections.Counter()
    by_name_total: collections.Counter = collections.Counter()
    for op in result.input_ops:
        by_name_count[op["name"]] += op["count"]
        by_name_total[op["name"]] += op["total_ps"]
    assert by_name_count == counts
    assert by_name_total == {name: int(us * PS_PER_US) for name, us in totals_us.items()}
    (fetch_row,) = [op for op in result.input_ops if fetch_name.search(op["name"])]
    assert fetch_row["count"] == 6 and fetch_row["category"] == OTHER
    assert fetch_row["self_ps"] == int(fetch_self_us * PS_PER_US)
    # Everything nested in a fetch is framework ops (aten::empty, aten::to, aten::set_...): preprocessing.
    assert {op["category"] for op in result.input_ops if op is not fetch_row} == {PREPROCESSING}
    # The nesting is clean, so the self times add up to the fetches' durations.
    all_fetch_us = sum(Decimal(f["dur"]) for f in fetches)
    assert sum(op["self_ps"] for op in result.input_ops) == int(all_fetch_us * PS_PER_US)
    assert sum(result.host_breakdown_us.values()) == pytest.approx(float(all_fetch_us))
    assert "6 PyTorch DataLoader fetch(es)" in result.note
    assert result.step_source == "ProfilerStep" and len(result.steps) == 6


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_every_shared_trace(path: Path):
    result = input_pipeline_analyzer(stepscope.load(path))
    document = json.loads(json.dumps(result.to_json()))
    assert set(document) == JSON_KEYS
    assert document["verdict"] in ("highly", "moderately", "not")
    for step in document["steps"]:
        assert 0 <= step["input_ps"] <= step["step_time_ps"]
        assert 0.0 <= step["input_percent"] <= 100.0
    stats = document["input_percent"]
    assert stats["min"] <= stats["mean"] <= stats["max"] and all(math.isfinite(v) for v in stats.values())
    assert set(document["host_breakdown_us"]) == set(CATEGORIES)
    assert sum(op["self_ps"] for op in document["input_ops"]) == pytest.approx(sum(document["host_breakdown_us"].values()) * PS_PER_US)
    for op in document["input_ops"]:
        assert 0 <= op["self_ps"] <= op["total_ps"] and op["category"] in CATEGORIES
    assert result.summary() and result.tables()


# --- real framework runs on the CPU ------------------------------------------------------------------

TORCH_BODY = """
from torch.utils.data import DataLoader, Dataset

class SlowDataset(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, index):
        time.sleep(0.02)  # "reading": 2 items per batch -> ~40 ms per fetch
        return torch.full((8,), float(index))

loader = DataLoader(SlowDataset(), batch_size=2, num_workers=0)
model = torch.nn.Linear(8, 4)
schedule = torch.profiler.schedule(wait=0, warmup=1, active=3, repeat=1)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule) as prof:
    for step, batch in enumerate(loader):
        model(batch).sum().backward()  # well under a millisecond
        prof.step()
        if step == 4:
            break
trace = OUT / "dataloader.pt.trace.json"
prof.export_chrome_trace(str(trace))
(OUT / "manifest.json").write_text(json.dumps({"trace": str(trace)}))
"""


@pytest.mark.framework
def test_real_pytorch_dataloader_is_highly_input_bound(tmp_path: Path):
    manifest = run_framework_script(tmp_path, "torch", "import torch", TORCH_BODY)
    path = Path(manifest["trace"])
    events = read_json_exact(path)["traceEvents"]
    fetches = [e for e in events if e.get("ph") == "X" and e.get("name") == FETCH]
    assert fetches, "the DataLoader fetch annotation is missing from the trace"

    profile = stepscope.load(path)
    result = input_pipeline_analyzer(profile)
    # Each step sleeps ~40 ms in the fetch and computes well under 1 ms.
    assert result.input_percent["mean"] >= 20.0
    assert result.verdict == "highly"
    (row,) = [op for op in result.input_ops if op["name"] == FETCH]
    assert row["count"] == len(fetches)
    assert row["total_ps"] == sum(exact_ns(e["dur"]) for e in fetches) * PS_PER_NS
    assert row["category"] == OTHER
    # The dataset's sleep is the fetch's own (unannotated) time: "other" dominates the host side.
    assert max(result.host_breakdown_us, key=result.host_breakdown_us.get) == OTHER


TF_BODY = """
record = str(OUT / "data.tfrecord")
with tf.io.TFRecordWriter(record) as writer:
    for i in range(128):
        feature = tf.train.Feature(float_list=tf.train.FloatList(value=[float(i)] * 16))
        writer.write(tf.train.Example(features=tf.train.Features(feature={"x": feature})).SerializeToString())

def parse(serialized):
    return tf.io.parse_single_example(serialized, {"x": tf.io.FixedLenFeature([16], tf.float32)})["x"]

dataset = (
    tf.data.Dataset.from_tensor_slices([record])
    .interleave(tf.data.TFRecordDataset, cycle_length=1)
    .map(parse)
    .cache()
    .shuffle(16)
    .batch(8)
    .prefetch(2)
)
weights = tf.Variable(tf.ones([16, 4]))

@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(x, weights))
    weights.assign_sub(0.01 * tape.gradient(loss, weights))

iterator = iter(dataset)
train_step(next(iterator))
logdir = OUT / "logdir"
tf.profiler.experimental.start(str(logdir))
for step in range(4):
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        train_step(next(iterator))
tf.profiler.experimental.stop()
(OUT / "manifest.json").write_text(json.dumps({"logdir": str(logdir)}))
"""


@pytest.fixture(scope="module")
def tf_data_xplane(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``.xplane.pb`` of one real tf.data run (``TF_BODY``): both tf.data tests read the
    same capture (neither writes to it), so TensorFlow starts once for the two, not twice."""
    manifest = run_framework_script(tmp_path_factory.mktemp("tf_data"), "tensorflow", "import tensorflow as tf", TF_BODY)
    (path,) = find_files(Path(manifest["logdir"]), ".xplane.pb")
    return path


@pytest.mark.framework
def test_real_tf_data_pipeline(tf_data_xplane: Path):
    path = tf_data_xplane
    reference = read_xspace_independently(path)
    iterator_counts = collections.Counter(event.name for event in reference.events if event.plane == "/host:CPU" and event.name.startswith("Iterator::"))
    assert iterator_counts, "tf.data wrote no Iterator:: events"

    result = input_pipeline_analyzer(stepscope.load(path))
    ours = collections.Counter()
    for op in result.input_ops:
        if op["name"].startswith("Iterator::"):
            ours[op["name"]] += op["count"]
    assert ours == iterator_counts
    categories = {op["name"]: op["category"] for op in result.input_ops}
    readers = [name for name in categories if name.endswith("::TFRecord")]
    assert readers and all(categories[name] == ADVANCED_READ for name in readers)  # below Prefetch/Interleave
    assert categories["Iterator::Root::Prefetch"] == PREPROCESSING  # a stage, not a reader (XProf's rule)
    assert categories["Iterator::Root::Prefetch::BatchV2"] == PREPROCESSING
    assert result.step_source == "step_num" and [s["step"] for s in result.steps] == [0, 1, 2, 3]
    assert "tf.data iterator call(s)" in result.note
    assert result.host_breakdown_us[ADVANCED_READ] > 0 and result.host_breakdown_us[PREPROCESSING] > 0


@pytest.mark.framework
def test_real_tf_data_categories_are_xprofs(tf_data_xplane: Path, tmp_path: Path):
    """Every tf.data stage XProf's input pipeline analyzer lists gets XProf's category here too
    (XProf's labels: "Preprocessing", "Advanced file read", "Demanded file read")."""
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    path = tmp_path / tf_data_xplane.name  # a copy: XProf writes its caches beside its input
    shutil.copyfile(tf_data_xplane, path)
    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], TOOL, {"use_saved_result": False})
    document = json.loads(data)
    theirs = {}
    for table in document if isinstance(document, list) else [document]:
        columns = [column["id"] for column in table.get("cols", [])]
        if "opName" in columns and "category" in columns:
            for row in table["rows"]:
                record = dict(zip(columns, (cell.get("v") for cell in row["c"])))
                theirs[record["opName"]] = record["category"]
    labels = {"Preprocessing": PREPROCESSING, "Advanced file read": ADVANCED_READ, "Demanded file read": DEMANDED_READ}
    stages = {name: category for name, category in theirs.items() if name.startswith("Iterator::")}
    # The pipeline: Prefetch > BatchV2 > Shuffle > MemoryCache(Impl) > ParallelMapV2 >
    # Interleave > FlatMap > TFRecord: XProf calls the reader an advanced read, every stage
    # (Prefetch, Interleave and the cache included) preprocessing.
    assert stages["Iterator::Root::Prefetch"] == "Preprocessing"
    assert [category for name, category in stages.items() if name.endswith("::TFRecord")] == ["Advanced file read"]
    ours = {op["name"]: op["category"] for op in input_pipeline_analyzer(stepscope.load(path)).input_ops}
    assert {name: ours.get(name) for name in stages} == {name: labels[category] for name, category in stages.items()}
