"""stepscope.data: the training loop's waits for input and the dataset's stages, captured
from real PyTorch DataLoaders on the CPU (in process and in forked worker processes).

The DataLoader runs happen in a child process each (``run_framework_script``): importing
torch into the test process would make the torch tracer available to every later test of
the session (it is, as soon as a program has imported torch). The child imports
``tests.support.data_jobs`` and runs one of its ``_run_*`` functions, which write the
profile and what the loop did to ``manifest.json``; the tests load the profile here and
derive every expected number from the manifest.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import stepscope
import stepscope.data
from stepscope.analysis import run_tool
from stepscope.capture import annotations
from stepscope.trace import names
from tests.support.data_jobs import BATCH, COLLATE, DECODE, ITEMS, OPTIONS, PREFIX, READ, READ_S, WAIT, WORKERS, DatasetError
from tests.support.frameworks import run_framework_script
from tests.support.traces import ROOT


def _run_child(tmp_path: Path, scenario: str) -> dict[str, Any]:
    body = f"sys.path.insert(0, {str(ROOT)!r})\nfrom tests.support.data_jobs import child\nchild({scenario!r}, OUT)\n"
    return run_framework_script(tmp_path, "torch", "import torch", body, timeout=120)


# --- the tests ------------------------------------------------------------------------------------


def _host_events(profile: stepscope.Profile) -> list[dict[str, Any]]:
    host = profile.plane(names.HOST_PLANE)
    events = host.events
    return [
        {
            "name": host.event_name(row),
            "start": int(events.start_ps[row]),
            "end": int(events.end_ps[row]),
            "line": host.lines[int(events.line[row])].name,
            "stats": {stat.name: stat.value for stat in host.event_stats(row)},
        }
        for row in range(len(events))
    ]


@pytest.mark.framework
def test_in_process_loader_waits_hold_their_batch_stages_and_make_input_time(tmp_path: Path):
    run = _run_child(tmp_path, "in_process")
    batches, items, size = run["batches"], run["items"], run["batch_size"]
    assert (batches, items, size) == (ITEMS // BATCH, ITEMS, BATCH)  # 4 batches of 2 items
    profile = stepscope.load(run["profile"])
    profile.validate()
    events = _host_events(profile)
    # One wait per batch; a read and a decode per item; a collate per batch.
    counts = Counter(e["name"] for e in events)
    assert counts == {names.STEPSCOPE_STEP: batches, WAIT: batches, READ: items, DECODE: items, COLLATE: batches}
    waits = sorted((e for e in events if e["name"] == WAIT), key=lambda e: e["start"])
    # The first wait also carries the loader's settings: DataLoader(num_workers=0) leaves
    # pin_memory and persistent_workers False (0) and prefetch_factor None (not recorded).
    settings = {names.LOADER_NUM_WORKERS: 0, names.LOADER_PIN_MEMORY: 0, names.LOADER_PERSISTENT_WORKERS: 0}
    assert [w["stats"] for w in waits] == [{"source": "train", "index": k} | (settings if k == 0 else {}) for k in range(batches)]
    stages = [e for e in events if e["name"] in (READ, DECODE, COLLATE)]
    for k, wait in enumerate(waits):
        inside = [e for e in stages if wait["start"] <= e["start"] <= e["end"] <= wait["end"]]
        # Batch k's items, each read and decoded, then one collate: 2 x 2 + 1 stages.
        assert Counter(e["name"] for e in inside) == {READ: size, DECODE: size, COLLATE: 1}
        assert {e["stats"]["item"] for e in inside if e["name"] != COLLATE} == set(range(size * k, size * (k + 1)))
        assert wait["end"] - wait["start"] >= size * READ_S * 1e12  # it waited for both reads

    # Overview: no device activity, so each step's input time is exactly its wait.
    wait_ps = [w["end"] - w["start"] for w in waits]
    overview = run_tool("overview_page", profile).to_json()
    assert [s["step"] for s in overview["steps"]] == list(range(batches))
    assert [s["breakdown"]["input_ps"] for s in overview["steps"]] == wait_ps
    assert all(ps > 0 for ps in wait_ps)

    pipeline = run_tool("input_pipeline_analyzer", profile).to_json()
    assert [s["input_ps"] for s in pipeline["steps"]] == wait_ps  # the same as the overview's
    assert pipeline["verdict"] == "highly"  # >= 2 ms of reads per step against a tiny step body
    assert {op["name"]: (op["count"], op["category"]) for op in pipeline["input_ops"]} == {
        WAIT: (batches, "other"),  # the wait's own time: the loader's unannotated code
        READ: (items, "demanded_file_read"),
        DECODE: (items, "preprocessing"),
        COLLATE: (batches, "preprocessing"),
    }
    assert pipeline["host_breakdown_us"]["demanded_file_read"] >= items * READ_S * 1e6
    assert pipeline["note"].startswith(f"Input events: {batches} stepscope.data annotation(s)")


@pytest.mark.framework
def test_worker_processes_stages_reach_the_profile(tmp_path: Path):
    run = _run_child(tmp_path, "workers")
    batches, items = run["batches"], run["items"]
    assert run["start_method"] == "fork"
    assert run["seen"] == [[[float(i)] * 3 for i in range(BATCH * k, BATCH * (k + 1))] for k in range(batches)]
    profile = stepscope.load(run["profile"])
    profile.validate()
    events = _host_events(profile)
    stages = [e for e in events if e["name"] in (READ, DECODE)]
    # Every item read and decoded once, in a worker: 8 items x 2 stages.
    assert Counter(e["name"] for e in stages) == {READ: items, DECODE: items}
    assert sorted(e["stats"]["item"] for e in stages if e["name"] == READ) == list(range(items))
    pids = {e["stats"]["pid"] for e in stages}
    assert len(pids) == WORKERS and run["pid"] not in pids
    for event in stages:
        assert event["line"].startswith(f"process {event['stats']['pid']} / ")
    # Collate runs in the workers too (one per batch); the waits stay on the loop's thread.
    collates = [e for e in events if e["name"] == COLLATE]
    assert len(collates) == batches and all(e["line"].startswith("process ") for e in collates)
    waits = sorted((e for e in events if e["name"] == WAIT), key=lambda e: e["start"])
    assert len(waits) == batches and not any(e["line"].startswith("process ") for e in waits)
    # The pass's first wait names the loader: WORKERS workers, PyTorch's default
    # prefetch_factor with workers (2), no pinned memory, no persistent workers.
    settings = {names.LOADER_NUM_WORKERS: WORKERS, names.LOADER_PREFETCH_FACTOR: 2, names.LOADER_PIN_MEMORY: 0, names.LOADER_PERSISTENT_WORKERS: 0}
    assert [{k: v for k, v in w["stats"].items() if k in names.LOADER_SETTINGS} for w in waits] == [settings] + [{}] * (batches - 1)
    pipeline = run_tool("input_pipeline_analyzer", profile).to_json()
    assert {op["name"]: op["count"] for op in pipeline["input_ops"]} == {WAIT: batches, READ: items, DECODE: items, COLLATE: batches}


@pytest.mark.framework
def test_instrumented_loader_keeps_len_items_and_errors(tmp_path: Path):
    run = _run_child(tmp_path, "loader_api")
    assert run["len_instrumented"] == run["len_loader"] == ITEMS // BATCH
    assert run["dataset_forwarded"]  # other attributes are the loader's
    assert run["idle"] and run["identical"] == [True, True]  # no capture: the loader's own batches, twice
    # Item 3 raises: batch 0 (items 0, 1) arrives, batch 1 (items 2, 3) fails; the very
    # exception object the dataset raised reaches the loop.
    assert run["same_error"] is True
    assert run["received"] == [[[0.0] * 3, [1.0] * 3]]
    counts = Counter(e["name"] for e in _host_events(stepscope.load(run["profile"])))
    # The failed fetch is no wait; its stages are there: reads of items 0-3, decodes of 0-2.
    assert counts == {WAIT: 1, READ: 4, DECODE: 3, COLLATE: 1}


def test_len_and_iterators():
    assert len(stepscope.data.instrument([1, 2, 3])) == 3
    assert list(stepscope.data.instrument([1, 2, 3])) == [1, 2, 3]
    generator = stepscope.data.instrument(x for x in range(3))
    with pytest.raises(TypeError):
        len(generator)  # the generator has no len(), nor has its wrapper
    assert next(generator) == 0 and list(generator) == [1, 2]  # an iterator stays an iterator
    with pytest.raises(StopIteration):
        next(generator)


def test_the_recording_is_checked_per_item():
    recording = annotations.Recording(level=1)
    items = iter(stepscope.data.instrument(range(4), name="numbers"))
    assert next(items) == 0  # nothing records: not recorded
    annotations.set_recording(recording)
    try:
        assert list(items) == [1, 2, 3]
    finally:
        annotations.set_recording(None)
    # The three fetches made while recording; the one that found the end is none.
    assert [(name, args) for name, _, _, _, args in recording.events] == [(WAIT, {"source": "numbers", "index": i}) for i in (1, 2, 3)]
    assert all(start <= end for _, start, end, _, _ in recording.events)


def test_errors_propagate_unchanged():
    error = DatasetError("corrupt shard")

    def broken():
        yield 1
        raise error

    recording = annotations.Recording(level=1)
    annotations.set_recording(recording)
    try:
        with pytest.raises(DatasetError) as raised:
            list(stepscope.data.instrument(broken(), name="shards"))
    finally:
        annotations.set_recording(None)
    assert raised.value is error
    assert [args for *_, args in recording.events] == [{"source": "shards", "index": 0}]


def test_stages_categories_and_names(tmp_path: Path):
    with stepscope.profile(tmp_path, OPTIONS) as session, stepscope.step(0):
        for _ in stepscope.data.instrument(range(2), name="shards"):
            with stepscope.data.stage("prefetch"):
                pass
            with stepscope.data.stage("transform", size=3):
                pass
            with stepscope.data.stage("shuffle_buffer"):
                pass
    pipeline = run_tool("input_pipeline_analyzer", stepscope.load(session.path)).to_json()
    assert {op["name"]: (op["count"], op["category"]) for op in pipeline["input_ops"]} == {
        WAIT: (2, "other"),
        f"{PREFIX}prefetch": (2, "advanced_file_read"),
        f"{PREFIX}transform": (2, "preprocessing"),
        f"{PREFIX}shuffle_buffer": (2, "other"),  # any name is allowed; no category of its own
    }
    # Idle: the one shared do-nothing context manager that stepscope.trace hands out.
    assert stepscope.data.stage("read") is stepscope.trace("anything")
    for bad in ("wait", ""):
        with pytest.raises(ValueError):
            stepscope.data.stage(bad)
        with pytest.raises(ValueError):
            stepscope.data.stage.function(bad)
