"""A small Chrome trace whose call stacks are known by hand (the flame graph's tests).

Times in microseconds (Chrome's unit); process 1:
  main (tid 1):   A [0, 100) > B [10, 40) > D [20, 30);  A > C [50, 90);
                  E [120, 150) and F [140, 170) overlap without nesting (siblings),
                  F a python_function, the rest cpu_op
  worker (tid 2): G [60, 130) > H [70, 80)
  tid 3:          ProfilerStep#1 [0, 110), ProfilerStep#2 [110, 200)  (the two steps)
"""

from __future__ import annotations

import json
from pathlib import Path

US = 1_000_000  # ps per microsecond
# The real trace the flame graph's tests check busy times on (3 steps, 3 host threads).
A100 = "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"
A100_PID = 2910249
MAIN, WORKER, MARKERS = "process (1) / main", "process (1) / worker", "process (1) / 3"


def _span(name: str, tid: int, ts: int, dur: int, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


EVENTS = [
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "worker"}},
    _span("A", 1, 0, 100),
    _span("B", 1, 10, 30),
    _span("D", 1, 20, 10),
    _span("C", 1, 50, 40),
    _span("E", 1, 120, 30),
    _span("F", 1, 140, 30, "python_function"),
    _span("G", 2, 60, 70),
    _span("H", 2, 70, 10),
    _span("ProfilerStep#1", 3, 0, 110, "user_annotation"),
    _span("ProfilerStep#2", 3, 110, 90, "user_annotation"),
]


def write_stacks_trace(folder: Path) -> Path:
    path = folder / "stacks.trace.json"
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    return path


def kineto_ns(microseconds: float) -> int:
    """A Kineto time (us, with three decimals) in whole nanoseconds."""
    return round(microseconds * 1000)
