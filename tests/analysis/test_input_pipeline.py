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
import json
import math
import re
from decimal import Decimal
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.input_pipeline import (
    ADVANCED_READ,
    CATEGORIES,
    DEMANDED_READ,
    ENQUEUE,
    OTHER,
    PREPROCESSING,
    TOOL,
    input_bound_verdict,
    input_pipeline_analyzer,
    rule_for,
)
from tests.conftest import ALL_SHARED_TRACES, shared
from tests.frameworks_util import exact_ns, find_files, read_json_exact, read_xspace_independently, run_framework_script

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

    assert TOOLS[TOOL] is input_pipeline_analyzer  # registered by importing the module
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
        {"step": 1, "input_us": 0.0, "step_time_us": 100.0, "input_percent": 0.0, "input_ps": 0, "step_time_ps": 100 * PS_PER_US}
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
        ("Iterator::Root::Prefetch", ADVANCED_READ, ADVANCED_READ),
        ("Iterator::Root::ParallelInterleaveV4", ADVANCED_READ, ADVANCED_READ),
        ("Iterator::Root::Prefetch::BatchV2::Shuffle::MemoryCache", ADVANCED_READ, ADVANCED_READ),
        ("Iterator::Root::Prefetch::BatchV2::Shuffle::MemoryCacheImpl", ADVANCED_READ, ADVANCED_READ),
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


# --- the shared legacy trace: 4-worker DataLoader, ResNet50 on a V100 --------------------------------


def nested_on_thread(fetch: dict, thread_events: list[dict]) -> list[dict]:
    """Slices of the fetch's thread lying wholly inside it (the JSON's own nesting)."""
    lo, hi = Decimal(fetch["ts"]), Decimal(fetch["ts"]) + Decimal(fetch["dur"])
    return [
        e
        for e in thread_events
        if e is not fetch and lo <= Decimal(e["ts"]) and Decimal(e["ts"]) + Decimal(e["dur"]) <= hi
    ]


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


@pytest.mark.framework
def test_real_tf_data_pipeline(tmp_path: Path):
    manifest = run_framework_script(tmp_path, "tensorflow", "import tensorflow as tf", TF_BODY)
    (path,) = find_files(Path(manifest["logdir"]), ".xplane.pb")
    reference = read_xspace_independently(path)
    iterator_counts = collections.Counter(
        event.name for event in reference.events if event.plane == "/host:CPU" and event.name.startswith("Iterator::")
    )
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
    assert categories["Iterator::Root::Prefetch"] == ADVANCED_READ
    assert categories["Iterator::Root::Prefetch::BatchV2"] == PREPROCESSING
    assert result.step_source == "step_num" and [s["step"] for s in result.steps] == [0, 1, 2, 3]
    assert "tf.data iterator call(s)" in result.note
    assert result.host_breakdown_us[ADVANCED_READ] > 0 and result.host_breakdown_us[PREPROCESSING] > 0
