"""Each overview finding carries what fixing it would buy: the matching critical_path
what-if, on hand-made Kineto traces whose re-scheduled steps are derived by hand.

Each trace has two steps of 100 us (``ProfilerStep#1`` [0, 100), ``#2`` [100, 200)) on
host thread 1 and the same events in each; GPU 0 is pid 0, stream 7. A kernel waits for
its launch call and a cudaDeviceSynchronize after it waits for the kernel; each path is
read from the step's end backwards. A microsecond is 10**6 ps.
"""

from __future__ import annotations

import json
from pathlib import Path

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.findings.finding_gains import gain_text, milliseconds
from stepscope.render.markdown import render_markdown
from tests.support.kineto_events import complete

US = 1_000_000
GPU_LABEL = {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}
NEXT_BATCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def kernel(ts: int, dur: int, correlation: int) -> dict:
    return complete("gemm", "kernel", ts, dur, tid=7, pid=0, device=0, stream=7, correlation=correlation)


def two_steps(one_step) -> list[dict]:
    """Both steps' markers and ``one_step(start_us, correlation)``'s events in each."""
    events = []
    for index in (0, 1):
        events += [complete(f"ProfilerStep#{index + 1}", "user_annotation", 100 * index, 100), *one_step(100 * index, index + 1)]
    return events


def overview(tmp_path: Path, events: list[dict]) -> dict:
    path = tmp_path / "job.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [GPU_LABEL, *events]}))
    return run_tool("overview_page", stepscope.load(path)).to_json()


def predictions(result: dict) -> dict[str, dict]:
    return {item["finding"]: item["predicted"] for item in result["recommendation"]["evidence"]}


def test_input_bound_predicts_input_free(tmp_path):
    # [0, 60) input wait; launch [60, 65) -> gemm [66, 96); the sync [65, 100) returns 4 us
    # after it. Path: return 4 <- gemm 30 <- queueing 1 <- launch 5 <- input 60. Input
    # free: launch [0, 5), gemm [6, 36), return at 40: 100 -> 40 us, -60%.
    def step(at: int, correlation: int) -> list[dict]:
        return [
            complete(NEXT_BATCH, "user_annotation", at, 60),
            complete("cudaLaunchKernel", "cuda_runtime", at + 60, 5, correlation=correlation),
            complete("cudaDeviceSynchronize", "cuda_runtime", at + 65, 35),
            kernel(at + 66, 30, correlation),
        ]

    result = overview(tmp_path, two_steps(step))
    assert result["recommendation"]["verdict"] == "input"
    gain = predictions(result)["input"]
    assert gain == {
        "change": "input_free",
        "description": "input were free (no input wait)",
        "step_ps": 100 * US,
        "predicted_step_ps": 40 * US,
        "gain_percent": 60.0,
        "text": "input free: 0.100 -> 0.040 ms, -60.0%",
    }
    assert "  what if input free: 0.100 -> 0.040 ms, -60.0%" in run_tool("overview_page", stepscope.load(tmp_path / "job.pt.trace.json")).summary()


def test_kernel_launch_bound_predicts_launch_halved(tmp_path):
    # Launch [0, 40) -> gemm [41, 96); sync [40, 100) returns 4 us after it. Launch halved:
    # launch [0, 20), queueing 1, gemm [21, 76), return 4: 80 us, -20%.
    def step(at: int, correlation: int) -> list[dict]:
        return [
            complete("cudaLaunchKernel", "cuda_runtime", at, 40, correlation=correlation),
            complete("cudaDeviceSynchronize", "cuda_runtime", at + 40, 60),
            kernel(at + 41, 55, correlation),
        ]

    result = overview(tmp_path, two_steps(step))
    assert result["recommendation"]["verdict"] == "kernel_launch"
    gain = predictions(result)["kernel_launch"]
    assert (gain["change"], gain["predicted_step_ps"], gain["gain_percent"]) == ("launch_halved", 80 * US, 20.0)


def test_device_bound_predicts_kernels_twice_as_fast(tmp_path):
    # Launch [0, 5) -> gemm [6, 96); sync [5, 100). Kernels 2x faster: gemm [6, 51), return
    # 4: 55 us, -45%. The Markdown report's evidence carries the same line.
    def step(at: int, correlation: int) -> list[dict]:
        return [
            complete("cudaLaunchKernel", "cuda_runtime", at, 5, correlation=correlation),
            complete("cudaDeviceSynchronize", "cuda_runtime", at + 5, 95),
            kernel(at + 6, 90, correlation),
        ]

    result = overview(tmp_path, two_steps(step))
    assert result["recommendation"]["verdict"] == "device"
    gain = predictions(result)["device"]
    assert (gain["change"], gain["predicted_step_ps"], gain["text"]) == ("faster", 55 * US, "kernels 2x faster: 0.100 -> 0.055 ms, -45.0%")
    report = render_markdown([run_tool("overview_page", stepscope.load(tmp_path / "job.pt.trace.json"))])
    assert "what if kernels 2x faster: 0.100 -> 0.055 ms, -45.0%" in report


def test_no_step_marker_predicts_nothing(tmp_path):
    # No ProfilerStep: the verdict is unknown, and no what-if matches it.
    result = overview(tmp_path, [complete("aten::mm", "cpu_op", 0, 50)])
    assert result["recommendation"]["verdict"] == "unknown"
    assert predictions(result) == {"unknown": None}


def test_gain_text():
    # 222.37 ms -> 151.2 ms: (222.37 - 151.2) / 222.37 = 32.0%; a longer step reads +.
    assert gain_text("input free", 222.37e9, 151.2e9) == "input free: 222 -> 151 ms, -32.0%"
    assert gain_text("x", 10e9, 12.5e9) == "x: 10.0 -> 12.5 ms, +25.0%"
    assert [milliseconds(ps) for ps in (1234.5e9, 15.07e9, 1.5e9, 0.5123e9)] == ["1,234", "15.1", "1.50", "0.512"]
