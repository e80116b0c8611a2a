"""A rank's collective calls: each device collective (NCCL/RCCL kernel, XLA all-reduce...)
with its step, its name, its place among that step's calls of that name, its duration and
its message size where the trace records one.

Calls are matched across ranks by (step number, name, ordinal): every rank of a process
group issues its collectives in the same order, so the k-th ``AllReduce`` of step 5 on
rank 0 is the same collective as the k-th on rank 7. That match is what the wait time of
``reduce`` is measured on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.classify import Activity, event_activities
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.steps import launching_steps
from stepscope.trace.model import Plane

# Kineto's args on NCCL kernels (PyTorch 2.x with the NCCL profiler records them).
COLLECTIVE_NAME_STAT = "Collective name"
ELEMENTS_STAT = "In msg nelems"
DTYPE_STAT = "dtype"
# c10 ScalarType names, as Kineto writes ``dtype``, -> bytes per element.
DTYPE_BYTES = {
    "Bool": 1,
    "Byte": 1,
    "Char": 1,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
    "Short": 2,
    "Half": 2,
    "BFloat16": 2,
    "Int": 4,
    "Float": 4,
    "ComplexHalf": 4,
    "Long": 8,
    "Double": 8,
    "ComplexFloat": 8,
    "ComplexDouble": 16,
}
_NCCL_KERNEL = re.compile(r"^[nr]ccl(?:Dev)?Kernel_([A-Za-z]+)")
_ARGUMENTS = re.compile(r"\(.*$")
_INSTANCE_SUFFIX = re.compile(r"[._]\d+$")


@dataclass(frozen=True)
class CollectiveCall:
    step: int  # the number of the step whose host code launched it
    name: str  # collective_name()
    ordinal: int  # its place among the step's calls of this name on this rank (0, 1, ...)
    duration_ps: int
    bytes: int | None  # message size, where the trace records one


def collective_name(event_name: str, collective_stat: object) -> str:
    """What a call is: Kineto's ``Collective name`` arg where it has one (``allreduce``,
    ``all_to_all``); else the algorithm in an NCCL/RCCL kernel's name (``AllReduce`` of
    ``ncclKernel_AllReduce_RING_LL_Sum_float(...)``); else the event's name without its
    argument list or XLA's instance number (``all-reduce.3`` -> ``all-reduce``)."""
    if isinstance(collective_stat, str) and collective_stat:
        return collective_stat
    match = _NCCL_KERNEL.match(event_name)
    if match:
        return match.group(1)
    return _INSTANCE_SUFFIX.sub("", _ARGUMENTS.sub("", event_name)) or event_name


def message_bytes(elements: object, dtype: object) -> int | None:
    """``In msg nelems`` x the size of ``dtype``; None where either is missing or unknown."""
    if isinstance(elements, bool) or not isinstance(elements, (int, float)) or not isinstance(dtype, str):
        return None
    size = DTYPE_BYTES.get(dtype)
    return int(elements) * size if size is not None else None


def collective_calls(stats: OpStats) -> list[CollectiveCall]:
    """Every device collective launched inside a step, in start order per step and name."""
    steps = stats.steps
    found: list[tuple[int, int, str, int, int | None]] = []  # (step, start, name, duration, bytes)
    for plane, step_index in launching_steps(stats.profile, steps):
        rows = np.flatnonzero((event_activities(plane) == Activity.DEVICE_COLLECTIVES) & (step_index >= 0))
        for row in rows.tolist():
            name, size = _describe(plane, row)
            found.append((int(steps.number[step_index[row]]), int(plane.events.start_ps[row]), name, int(plane.events.duration_ps[row]), size))
    found.sort(key=lambda call: (call[0], call[1]))
    seen: dict[tuple[int, str], int] = {}
    calls = []
    for step, _start, name, duration, size in found:
        ordinal = seen.get((step, name), 0)
        seen[(step, name)] = ordinal + 1
        calls.append(CollectiveCall(step, name, ordinal, duration, size))
    return calls


def _describe(plane: Plane, row: int) -> tuple[str, int | None]:
    values = {stat.name: stat.value for stat in plane.event_stats(row)}
    name = collective_name(plane.event_name(row), values.get(COLLECTIVE_NAME_STAT))
    return name, message_bytes(values.get(ELEMENTS_STAT), values.get(DTYPE_STAT))
