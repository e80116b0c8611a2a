"""A rank's collective calls: each device collective (NCCL/RCCL kernel, XLA all-reduce...)
with its step, its name, its place among that step's calls of that name, its duration and
its message size where the trace records one.

What a call is, is best said on the host: PyTorch wraps each collective in a
``nccl:<op>`` annotation (``nccl:all_to_all``, with the input's ``Input Dims`` and ``Input
type``), around the runtime call that launches the kernel; the kernel's own name often
says only the NCCL algorithm (``SendRecv`` for an all-to-all). So a call is named by the
annotation around its launch (found through the launch's ``correlation_id`` and the host
events' ``parent`` column), else by Kineto's ``Collective name`` arg on the kernel, else by
the kernel's name.

Calls are matched across ranks by (step number, name, ordinal): every rank of a process
group issues its collectives in the same order, so the k-th ``AllReduce`` of step 5 on
rank 0 is the same collective as the k-th on rank 7. That match is what the wait time of
``reduce`` is measured on.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.opstats import OpStats
from stepscope.analysis.steps.classify import Activity, event_activities
from stepscope.analysis.steps.steps import launching_steps
from stepscope.trace import names
from stepscope.trace.kinds import INPUT_SHAPES, INPUT_TYPES
from stepscope.trace.model import NO_ID, Plane

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
# The host annotation PyTorch's process groups put around a collective: backend:op.
COMM_ANNOTATION = re.compile(r"^(?:nccl|rccl|gloo|ucc|xccl|mpi):_*(\w+?)(?:_base)?$")
# Kineto's ``Input type`` names (C++ element types) -> bytes per element.
INPUT_TYPE_BYTES = {
    "bool": 1,
    "signed char": 1,
    "unsigned char": 1,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "short": 2,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "int": 4,
    "float": 4,
    "long": 8,
    "long int": 8,
    "double": 8,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
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


def collective_name(event_name: str, collective_stat: object, annotation: str | None = None) -> str:
    """What a call is (see the module docstring): the op of the ``nccl:<op>`` annotation
    around its launch (``all_to_all``; ``nccl:_all_gather_base`` -> ``all_gather``); else
    Kineto's ``Collective name`` arg (``allreduce``); else the algorithm in an NCCL/RCCL
    kernel's name (``AllReduce`` of ``ncclKernel_AllReduce_RING_LL_Sum_float(...)``); else
    the event's name without its argument list or XLA's instance number (``all-reduce.3``
    -> ``all-reduce``)."""
    match = COMM_ANNOTATION.match(annotation) if annotation else None
    if match:
        return match.group(1)
    if isinstance(collective_stat, str) and collective_stat:
        return collective_stat
    match = _NCCL_KERNEL.match(event_name)
    if match:
        return match.group(1)
    return _INSTANCE_SUFFIX.sub("", _ARGUMENTS.sub("", event_name)) or event_name


def input_bytes(dims: object, types: object) -> int | None:
    """The first input's bytes from an annotation's ``Input Dims`` (``[[19618307]]``) and
    ``Input type`` (``["float"]``), JSON text as Kineto's args are kept; None where either
    is missing, not a tensor, or of an unknown type."""
    try:
        shapes = json.loads(dims) if isinstance(dims, str) else dims
        kinds = json.loads(types) if isinstance(types, str) else types
    except ValueError:
        return None
    if not (isinstance(shapes, list) and isinstance(kinds, list) and shapes and kinds and isinstance(shapes[0], list) and shapes[0]):
        return None
    size = INPUT_TYPE_BYTES.get(kinds[0]) if isinstance(kinds[0], str) else None
    if size is None or not all(isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0 for dim in shapes[0]):
        return None
    return math.prod(shapes[0]) * size


def message_bytes(elements: object, dtype: object) -> int | None:
    """``In msg nelems`` x the size of ``dtype``; None where either is missing or unknown."""
    if isinstance(elements, bool) or not isinstance(elements, (int, float)) or not isinstance(dtype, str):
        return None
    size = DTYPE_BYTES.get(dtype)
    return int(elements) * size if size is not None else None


@dataclass(frozen=True)
class RankCollectives:
    """A rank's device collectives, found once (naming a call walks the host's annotations,
    per call) and numbered for the two kinds of unit: ``calls``, the rank's, all its devices'
    calls together in start order per step and name; ``by_device``, each device plane's own
    (plane name -> its calls), numbered on its own: every device of a process group issues
    the group's collectives in the same order, so the k-th ``all-reduce`` of a step on chip 0
    is the same collective as the k-th on chip 3. Both hold the same calls."""

    calls: list[CollectiveCall]
    by_device: dict[str, list[CollectiveCall]]


def rank_collectives(stats: OpStats) -> RankCollectives:
    """Every device collective launched inside a step, numbered per rank and per device."""
    found = _found_calls(stats)
    return RankCollectives(
        calls=_numbered([call for calls in found.values() for call in calls]),
        by_device={plane: _numbered(calls) for plane, calls in found.items()},
    )


@dataclass(frozen=True)
class _Found:
    """A collective call as found, before it is numbered (``CollectiveCall``)."""

    step: int
    start_ps: int  # orders the calls of a step
    name: str
    duration_ps: int
    bytes: int | None


def _found_calls(stats: OpStats) -> dict[str, list[_Found]]:
    steps = stats.steps
    annotations = _Annotations(stats)
    found: dict[str, list[_Found]] = {}
    for plane, step_index in launching_steps(stats.profile, steps):
        rows = np.flatnonzero((event_activities(plane) == Activity.DEVICE_COLLECTIVES) & (step_index >= 0))
        calls = found.setdefault(plane.name, [])
        for row in rows.tolist():
            name, size = _describe(plane, row, annotations)
            calls.append(
                _Found(
                    step=int(steps.number[step_index[row]]),
                    start_ps=int(plane.events.start_ps[row]),
                    name=name,
                    duration_ps=int(plane.events.duration_ps[row]),
                    bytes=size,
                )
            )
    return found


def _numbered(found: list[_Found]) -> list[CollectiveCall]:
    seen: dict[tuple[int, str], int] = {}
    calls = []
    for call in sorted(found, key=lambda call: (call.step, call.start_ps)):
        ordinal = seen.get((call.step, call.name), 0)
        seen[(call.step, call.name)] = ordinal + 1
        calls.append(CollectiveCall(call.step, call.name, ordinal, call.duration_ps, call.bytes))
    return calls


class _Annotations:
    """The host's ``nccl:<op>`` annotation around the launch of a device event, if any."""

    def __init__(self, stats: OpStats) -> None:
        self.host = stats.profile.plane(names.HOST_PLANE)
        self.ids = np.zeros(0, dtype=np.int64)
        self.rows = np.zeros(0, dtype=np.int64)
        if self.host is None:
            return
        events = self.host.events
        launches = np.flatnonzero(events.correlation_id != NO_ID)
        order = np.argsort(events.correlation_id[launches], kind="stable")
        self.ids, self.rows = events.correlation_id[launches][order], launches[order]
        self.is_comm = np.asarray([bool(COMM_ANNOTATION.match(name)) for name in self.host.metadata.names], dtype=bool)

    def around(self, correlation_id: int) -> tuple[str, int | None] | None:
        """(annotation name, its input bytes) of the innermost comm annotation enclosing
        the launch with this correlation id."""
        if self.host is None or correlation_id == NO_ID or not len(self.ids):
            return None
        position = int(np.searchsorted(self.ids, correlation_id))
        if position >= len(self.ids) or self.ids[position] != correlation_id:
            return None
        events = self.host.events
        row = int(events.parent[self.rows[position]])
        while row != NO_ID:
            if self.is_comm[events.metadata_id[row]]:
                values = {stat.name: stat.value for stat in self.host.event_stats(row)}
                return self.host.event_name(row), input_bytes(values.get(INPUT_SHAPES), values.get(INPUT_TYPES))
            row = int(events.parent[row])
        return None


def _describe(plane: Plane, row: int, annotations: _Annotations) -> tuple[str, int | None]:
    values = {stat.name: stat.value for stat in plane.event_stats(row)}
    around = annotations.around(int(plane.events.correlation_id[row]))
    label = plane.metadata.labels[int(plane.events.metadata_id[row])]  # XLA's ``all-reduce.3``, not its HLO text
    name = collective_name(label, values.get(COLLECTIVE_NAME_STAT), around[0] if around else None)
    size = message_bytes(values.get(ELEMENTS_STAT), values.get(DTYPE_STAT))
    return name, size if size is not None else (around[1] if around else None)
