"""The input finding's advice starts from what the DataLoader already does:
loading in parallel is advised to a loader without workers, never to one with them,
which is told the next step instead. The real demo's second run (num_workers and
prefetch_factor set) is checked in tests/test_demo.py.

Each trace: steps of 100 us whose first 40 us are the wait for a batch (input 40% of each
step, mean 40%: highly input-bound), the rest host work or a kernel.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.findings.loader_settings import RECORDED, TORCH_FETCH_NAMES, LoaderSettings, loader_settings
from stepscope.trace import names
from tests.support.overview_traces import kernel, overview, x
from tests.support.traces import shared

LOAD_IN_PARALLEL = "Load data in parallel"


def waited_steps(wait_name: str, settings: list[dict], gpu: bool = False) -> list[dict]:
    """Three steps [100k, 100k + 100): a 40 us wait then 60 us of host op or kernel; the
    wait of step k carries ``settings[k]`` (where there is one)."""
    events = []
    for k in range(3):
        t = 100 * k
        events.append(x(f"ProfilerStep#{k}", t, 100, cat="user_annotation"))
        events.append(x(wait_name, t, 40, cat="user_annotation", source="train", index=k, **(settings[k] if k < len(settings) else {})))
        events.append(kernel("k", t + 40, 60) if gpu else x("aten::mm", t + 40, 60))
    return events


TWO_WORKERS = {"num_workers": 2, "prefetch_factor": 2, "pin_memory": 0, "persistent_workers": 0}


def test_a_loader_with_workers_is_told_the_next_step(tmp_path: Path):
    """One pass with num_workers=2 and the default prefetch_factor=2, CPU only."""
    result = overview(tmp_path, waited_steps(names.STEPSCOPE_INPUT_WAIT, [TWO_WORKERS]), kineto=True)
    recommendation = result["recommendation"]
    assert recommendation["verdict"] == "input" and recommendation["input_percent"] == 40.0
    advice = "\n".join(recommendation["next_steps"])
    assert LOAD_IN_PARALLEL not in advice
    assert "already loads in parallel (num_workers=2, prefetch_factor=2, pin_memory=False, persistent_workers=False)" in advice
    assert "num_workers=4" in advice  # twice the workers it has
    assert "prefetch_factor=2 keeps 2 batches per worker ready" in advice
    assert "pin_memory" not in advice.replace("pin_memory=False", "")  # no device to copy to
    assert "persistent_workers=True" not in advice  # one pass: no epoch restarts its workers
    assert "the DataLoader has num_workers=2" in recommendation["evidence"][0]["text"]


def test_pinned_memory_and_persistent_workers_where_they_would_help(tmp_path: Path):
    """Two passes begun in the profile (steps 0 and 1 each start one: both waits carry the
    settings), a GPU kernel in every step, prefetch_factor=4 (deeper than the default)."""
    settings = {**TWO_WORKERS, "prefetch_factor": 4}
    result = overview(tmp_path, waited_steps(names.STEPSCOPE_INPUT_WAIT, [settings, settings], gpu=True), kineto=True)
    advice = "\n".join(result["recommendation"]["next_steps"])
    assert "pin_memory=True" in advice and "persistent_workers=True" in advice
    assert "Prefetch deeper" not in advice
    profile = stepscope.load(tmp_path / "trace.pt.trace.json")
    assert loader_settings(profile) == LoaderSettings(2, True, 4, False, False, RECORDED, passes=2)


def test_a_loader_without_workers_is_told_to_load_in_parallel(tmp_path: Path):
    result = overview(tmp_path, waited_steps(names.STEPSCOPE_INPUT_WAIT, [{"num_workers": 0, "pin_memory": 0, "persistent_workers": 0}]), kineto=True)
    assert result["recommendation"]["next_steps"][1].startswith(LOAD_IN_PARALLEL)


def test_torch_profilers_fetch_names_say_whether_there_are_workers(tmp_path: Path):
    """torch.profiler names the fetch after the iterator class; the multiprocessing one
    has workers, how many unknown."""
    multi = overview(tmp_path, waited_steps("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", []), kineto=True)
    advice = "\n".join(multi["recommendation"]["next_steps"])
    assert LOAD_IN_PARALLEL not in advice and "already loads in parallel (num_workers > 0)" in advice and "more workers" in advice
    single = overview(tmp_path, waited_steps("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", []), kineto=True)
    assert single["recommendation"]["next_steps"][1].startswith(LOAD_IN_PARALLEL)


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        # The 2021 ResNet50 run with DataLoader(num_workers=4): its fetches are
        # _MultiProcessingDataLoaderIter's (its input is 0.8%: no input finding to advise).
        ("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz", LoaderSettings(None, True, source=TORCH_FETCH_NAMES)),
        ("kineto/alexnet_small.pt.trace.json.gz", None),  # no DataLoader fetch recorded
    ],
)
def test_loader_settings_of_the_shared_traces(trace: str, expected: LoaderSettings | None):
    assert loader_settings(stepscope.load(shared(trace))) == expected
