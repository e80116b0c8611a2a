"""A node of several GPUs with one slowed in one step, as a Kineto trace written here with
the standard library, and its expected per-GPU numbers worked out by hand: the distributed
view over devices (``--by device``) must name the slow GPU, its step and its stage."""

from __future__ import annotations

import json
from pathlib import Path

GPUS = 4
STEPS = (1, 2, 3)
STEP_US = 1_000
BASE_US = 1_000_000  # the first step's start (epoch microseconds, as Kineto writes ts)
SLOW_GPU, SLOW_STEP, SLOW_US = 2, 2, 150


def _gpu_events(gpu: int, step: int, slow_us: int) -> list[dict]:
    """One GPU's work in one step (times from the step's start, us):
    memcpy HtoD [0, 50); gemm [100, 600 + slow) on stream 7; AllReduce [600 + slow, 800) on
    stream 7 (every GPU's ends at 800: the slow one joins late and waits less);
    elementwise [700, 750) on stream 8."""
    t0 = BASE_US + (step - 1) * STEP_US
    work = [
        ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 7, 0, 50),
        ("volta_sgemm_128x64_nn", "kernel", 7, 100, 600 + slow_us),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "kernel", 7, 600 + slow_us, 800),
        ("elementwise_kernel", "kernel", 8, 700, 750),
    ]
    return [
        {"ph": "X", "cat": category, "name": name, "pid": gpu, "tid": stream, "ts": t0 + start, "dur": end - start, "args": {"device": gpu, "stream": stream}}
        for name, category, stream, start, end in work
    ]


def write_node(path: Path, slow: bool) -> Path:
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python"}}]
    for step in STEPS:
        t0 = BASE_US + (step - 1) * STEP_US
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 100, "tid": 1, "ts": t0, "dur": STEP_US})
        for gpu in range(GPUS):
            events.extend(_gpu_events(gpu, step, SLOW_US if slow and (gpu, step) == (SLOW_GPU, SLOW_STEP) else 0))
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


# Per GPU and step, by hand from _gpu_events (us):
# normal: compute = [100,600) | [700,750) = 550; collective [600,800) = 200, of which
#   [700,750) under compute: exposed 150, hidden 50; memcpy 50; idle 1000 - 750 = 250.
# slowed: compute [100,750) = 650 ([700,750) inside it); collective [750,800) = 50, all
#   exposed; memcpy 50; idle 250.
NORMAL = {"compute": 550, "collective": 200, "exposed": 150, "hidden": 50, "memcpy": 50, "idle": 250}
SLOWED = {"compute": 650, "collective": 50, "exposed": 50, "hidden": 0, "memcpy": 50, "idle": 250}
