"""Runs of many ranks for the distributed view, built from a real Kineto trace.

``synthesize`` writes N rank-shifted copies of one trace (every timestamp moved by
``rank * shift_us``, ``distributedInfo.rank`` set, files named so that host order is not
rank order) and can inject stragglers: ``stretch`` lengthens one device event of one step
on one rank by ``delta_us`` the way a slower kernel would, i.e. everything that starts
after it starts ``delta_us`` later and everything that spans its start lasts ``delta_us``
longer (the step marker among them), so the rank's timeline stays consistent.

The helpers that pick the event (``pick``) and read step times read the JSON with the
standard library: the tests' expected numbers come from here, never from stepscope.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.traces import read_json

PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass(frozen=True)
class Stretch:
    rank: int
    step: int
    kind: str  # "compute" (a non-NCCL kernel) or "collective" (an NCCL kernel)
    delta_us: int


def events(document: dict) -> list[dict]:
    return document["traceEvents"]


def step_windows(document: dict) -> dict[int, tuple[float, float]]:
    """ProfilerStep#N -> (ts, ts + dur), in the trace's microseconds."""
    return {
        int(match.group(1)): (float(event["ts"]), float(event["ts"]) + float(event["dur"]))
        for event in events(document)
        if event.get("ph") == "X" and (match := PROFILER_STEP.match(str(event.get("name", ""))))
    }


def step_durations_us(document: dict) -> dict[int, float]:
    return {number: end - start for number, (start, end) in step_windows(document).items()}


def is_nccl_kernel(event: dict) -> bool:
    return event.get("cat") == "kernel" and "nccl" in str(event.get("name", "")).lower()


def _device_work(event: dict) -> bool:
    return event.get("ph") == "X" and event.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")


def pick(document: dict, step: int, kind: str) -> dict:
    """The first kernel of ``kind`` starting inside the step's window whose start no other
    device work spans: stretching it then adds exactly its delta to one breakdown category
    (device compute for "compute", exposed collectives for "collective")."""
    low, high = step_windows(document)[step]
    work = [event for event in events(document) if _device_work(event)]
    wanted: Callable[[dict], bool] = is_nccl_kernel if kind == "collective" else (lambda e: e.get("cat") == "kernel" and not is_nccl_kernel(e))
    for event in sorted(work, key=lambda e: float(e["ts"])):
        t = float(event["ts"])
        if not (wanted(event) and low < t < high and float(event["dur"]) > 0):
            continue
        spanned = [other for other in work if other is not event and float(other["ts"]) < t < float(other["ts"]) + float(other["dur"])]
        if not spanned:
            return event
    raise AssertionError(f"no {kind} kernel to stretch in step {step}")


def stretch(document: dict, target: dict, delta_us: int) -> None:
    """Lengthens ``target`` (an event of ``document``) by ``delta_us`` in place (see the
    module docstring)."""
    t = float(target["ts"])
    for event in events(document):
        if event is target or "ts" not in event:
            continue
        start = float(event["ts"])
        if start >= t:
            event["ts"] = event["ts"] + delta_us
        elif "dur" in event and start + float(event["dur"]) > t:
            event["dur"] = event["dur"] + delta_us
    target["dur"] = target["dur"] + delta_us


def shift(document: dict, delta_us: int) -> None:
    for event in events(document):
        if "ts" in event:
            event["ts"] = event["ts"] + delta_us


def host_name(rank: int, ranks: int) -> str:
    """Files named in reverse rank order: host order is not rank order."""
    return f"node{ranks - 1 - rank:03d}"


def synthesize(source: Path, folder: Path, ranks: int, shift_us: int, stretches: tuple[Stretch, ...] = ()) -> Path:
    """Writes ``folder/<host>.pt.trace.json.gz`` for each rank; returns the folder."""
    base = read_json(source)
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        document = copy.deepcopy(base)
        for change in stretches:
            if change.rank == rank:
                stretch(document, pick(document, change.step, change.kind), change.delta_us)
        shift(document, rank * shift_us)
        document["distributedInfo"] = {**document.get("distributedInfo", {}), "rank": rank, "world_size": ranks}
        with gzip.open(folder / f"{host_name(rank, ranks)}.pt.trace.json.gz", "wt", encoding="utf-8") as stream:
            json.dump(document, stream)
    return folder


# Element sizes of the ``Input type`` names the shared traces hold (C++ type names).
INPUT_TYPE_SIZES = {"float": 4, "long": 8, "int": 4, "unsigned char": 1, "signed char": 1}


@dataclass(frozen=True)
class JsonCall:
    """An NCCL kernel launched inside a step, as the JSON says: its step, the op of the
    ``nccl:<op>`` annotation around its launch, and that annotation's input bytes."""

    step: int
    name: str
    bytes: int | None
    kernel: dict


def op_of(annotation: str) -> str:
    """``nccl:_all_gather_base`` -> ``all_gather``: the prefix, leading underscores and a
    ``_base`` suffix dropped."""
    op = annotation.split(":", 1)[1].lstrip("_")
    return op[: -len("_base")] if op.endswith("_base") else op


def json_calls(document: dict) -> list[JsonCall]:
    """By containment in time on the launching thread (not by stepscope's parent column)."""
    windows = step_windows(document)
    launches = {e["args"]["correlation"]: e for e in events(document) if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    annotations = [e for e in events(document) if e.get("ph") == "X" and e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("nccl:")]
    calls = []
    for kernel in events(document):
        if not is_nccl_kernel(kernel):
            continue
        launch = launches[kernel["args"]["correlation"]]
        when = float(launch["ts"])
        step = next((number for number, (low, high) in windows.items() if low <= when < high), None)
        if step is None:
            continue
        around = [
            a for a in annotations if (a["pid"], a["tid"]) == (launch["pid"], launch["tid"]) and float(a["ts"]) <= when <= float(a["ts"]) + float(a["dur"])
        ]
        innermost = max(around, key=lambda a: float(a["ts"]))
        size = None
        dims, types = innermost["args"].get("Input Dims"), innermost["args"].get("Input type")
        if dims and dims[0] and types and types[0] in INPUT_TYPE_SIZES:
            size = INPUT_TYPE_SIZES[types[0]]
            for dim in dims[0]:
                size *= dim
        calls.append(JsonCall(step, op_of(innermost["name"]), size, kernel))
    return calls
