"""Hand-made Kineto traces for the critical path's tests (tests/analysis/tools/test_critical_path.py,
tests/analysis/paths/, tests/analysis/distributed/): builders of host, runtime and device events, the
tool run on them, and two hand-made ranks joined at an all-reduce.

Times in the traces are whole microseconds (Kineto's unit); a microsecond is 10**6 ps. Each
trace is one step (``ProfilerStep#1``, [0, 100) us) on host thread 1; GPU 0 is pid 0, its
streams are tids.
"""

from __future__ import annotations

import json
from pathlib import Path

import stepscope
from stepscope.analysis import run_tool

US = 1_000_000


def host(name: str, ts: int, dur: int, cat: str = "cpu_op", **args) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "pid": 100, "tid": 1, "ts": ts, "dur": dur, "args": args}


def runtime(name: str, ts: int, dur: int, correlation: int | None = None) -> dict:
    return host(name, ts, dur, "cuda_runtime", **({"correlation": correlation} if correlation is not None else {}))


def device(name: str, ts: int, dur: int, correlation: int, stream: int = 7, cat: str = "kernel") -> dict:
    args = {"device": 0, "stream": stream, "correlation": correlation}
    return {"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


STEP = host("ProfilerStep#1", 0, 100, "user_annotation")


def critical(tmp_path: Path, events: list[dict], **options) -> dict:
    labels = {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}
    path = tmp_path / "job.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [labels, *events]}))
    profile = stepscope.load(path)
    profile.validate()
    return run_tool("critical_path", profile, **options).to_json()


def kinds(step: dict) -> dict[str, int]:
    return {kind: ps for kind, ps in step["by_kind_ps"].items() if ps}


def predicted(result: dict) -> dict[str, int]:
    return {change["change"]: change["predicted_step_ps"] for change in result["what_if"]}


def segment_rows(segments: dict[str, list]) -> list[dict]:
    """The tool's segment columns as one dict a segment."""
    return [dict(zip(segments, values)) for values in zip(*segments.values())]


ALL_REDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float"


def rank_file(tmp_path: Path, number: int, events: list[dict], base_ns: int | None = None) -> Path:
    """Rank ``number``'s Kineto file; ``base_ns``: its times are after that UNIX time (Kineto's
    ``baseTimeNanoseconds``), else relative."""
    labels = {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}
    info = {"rank": number, "world_size": 2, "backend": "nccl"}
    path = tmp_path / f"rank{number}.pt.trace.json"
    header = {"schemaVersion": 1, "distributedInfo": info} | ({} if base_ns is None else {"baseTimeNanoseconds": base_ns})
    path.write_text(json.dumps(header | {"traceEvents": [labels, *events]}))
    return path


def two_rank_files(tmp_path: Path, base_ns: int | None = None) -> list[Path]:
    # Rank 0: launch [0, 5) -> compute [6, 30); launch [30, 35) -> the all-reduce [36, 90)
    # (it waits for rank 1 inside); cudaDeviceSynchronize [35, 95) waits for it; [95, 100) host.
    # Rank 1, the straggler: launch [0, 5) -> compute [6, 80); launch [5, 10) -> the
    # all-reduce [80, 90) (after the compute on its stream: it arrives last, and does not
    # wait); cudaDeviceSynchronize [10, 95); [95, 100) host.
    zero = [
        STEP,
        runtime("cudaLaunchKernel", 0, 5, correlation=1),
        runtime("cudaLaunchKernel", 30, 5, correlation=2),
        runtime("cudaDeviceSynchronize", 35, 60),
        host("aten::add", 95, 5),
        device("compute", 6, 24, 1),
        device(ALL_REDUCE, 36, 54, 2),
    ]
    one = [
        STEP,
        runtime("cudaLaunchKernel", 0, 5, correlation=1),
        runtime("cudaLaunchKernel", 5, 5, correlation=2),
        runtime("cudaDeviceSynchronize", 10, 85),
        host("aten::add", 95, 5),
        device("compute", 6, 74, 1),
        device(ALL_REDUCE, 80, 10, 2),
    ]
    return [rank_file(tmp_path, 0, zero, base_ns), rank_file(tmp_path, 1, one, base_ns)]


def two_ranks(tmp_path: Path) -> list[stepscope.Profile]:
    """``two_rank_files``, loaded."""
    return [stepscope.load(path) for path in two_rank_files(tmp_path)]
