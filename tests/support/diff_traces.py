"""Profiles for the diff tests: small Kineto traces with step times chosen by hand, and a
copy of a real trace with every time scaled (so each expected change is known exactly)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.support.traces import read_json

PID, TID = 1, 1
T0_US = 1_000_000
OP = "aten::mm"  # one op per step, half the step long


def step_trace(path: Path, step_ms: list[float], first_step: int = 0, peak_bytes: int | None = None) -> Path:
    """A Kineto trace of ``ProfilerStep#N`` steps (N from ``first_step``) lasting ``step_ms``
    back to back, each holding one ``aten::mm`` of half its length; with ``peak_bytes``, one
    CPU allocation of that size at the start (the memory peak)."""
    events: list[dict[str, Any]] = []
    cursor = T0_US
    for index, milliseconds in enumerate(step_ms):
        step_us = int(milliseconds * 1000)
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{first_step + index}", "pid": PID, "tid": TID, "ts": cursor, "dur": step_us})
        events.append({"ph": "X", "cat": "cpu_op", "name": OP, "pid": PID, "tid": TID, "ts": cursor + 1, "dur": step_us // 2})
        cursor += step_us
    if peak_bytes is not None:
        args = {"Device Type": 0, "Device Id": -1, "Bytes": peak_bytes}
        events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": PID, "tid": TID, "ts": T0_US, "args": args})
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def scaled_copy(source: Path, target: Path, time_factor: float, bytes_factor: int = 1) -> Path:
    """``source`` with every timestamp and duration times ``time_factor`` (measured from the
    first event, so the origin stays) and every ``[memory]`` event's Bytes times
    ``bytes_factor``."""
    document = read_json(source)
    events = document["traceEvents"]
    origin = min(event["ts"] for event in events if isinstance(event.get("ts"), (int, float)))
    for event in events:
        if isinstance(event.get("ts"), (int, float)):
            event["ts"] = origin + (event["ts"] - origin) * time_factor
        if isinstance(event.get("dur"), (int, float)):
            event["dur"] = event["dur"] * time_factor
        if event.get("name") == "[memory]" and isinstance(event.get("args", {}).get("Bytes"), int):
            event["args"]["Bytes"] *= bytes_factor
    with gzip.open(target, "wt", encoding="utf-8") as stream:
        json.dump(document, stream)
    return target


def profiler_step_us(path: Path) -> dict[int, float]:
    """Step number -> duration (us) of each ``ProfilerStep#N``, read from the raw JSON."""
    steps: dict[int, float] = {}
    for event in read_json(path)["traceEvents"]:
        name = event.get("name", "")
        if event.get("ph") == "X" and name.startswith("ProfilerStep#"):
            steps[int(name.split("#")[1])] = float(event["dur"])
    return steps
