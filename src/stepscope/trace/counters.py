"""Counter series of a profile: what exports draw as counter tracks (Chrome "C" events,
Perfetto counter tracks).

Two sources, each read from the events' stats:
- the ``_counters_`` lines (Chrome "C" events as the importers keep them): one series per
  (plane, event name, numeric arg), as the Trace Event Format defines a counter;
- memory events: Kineto ``[memory]`` instants (``Total Allocated``, ``Total Reserved``, by
  device) and XSpace ``MemoryAllocation``/``MemoryDeallocation`` (``bytes_allocated``,
  ``bytes_reserved``, by allocator): one series per (plane, device, figure), the figure the
  allocator itself reported after the event; a Kineto device whose events carry no totals
  (the 2021 schema) gets the running sum of ``Bytes`` instead, from 0 at the profile start.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from stepscope.trace import names
from stepscope.trace.model import Plane, Profile
from stepscope.trace.stats import TypedStats

_ARGS_DECODER = msgspec.json.Decoder()
MEMORY_COUNTER = "Memory"
RUNNING_SUM = "Allocated (sum of Bytes since the profile start)"
_KINETO_FIGURES = (names.KINETO_MEMORY_TOTAL_ALLOCATED, names.KINETO_MEMORY_TOTAL_RESERVED)
_XSPACE_FIGURES = (names.BYTES_ALLOCATED, names.BYTES_RESERVED)

# c10::DeviceType -> the name a device gets ("GPU:0"); HIP builds report CUDA (1).
KINETO_DEVICE_TYPES = {
    0: "CPU",
    1: "GPU",
    2: "MKLDNN",
    3: "OPENGL",
    4: "OPENCL",
    5: "IDEEP",
    6: "HIP",
    7: "FPGA",
    8: "MAIA",
    9: "XLA",
    10: "Vulkan",
    11: "Metal",
    12: "XPU",
    13: "MPS",
    14: "Meta",
    15: "HPU",
    16: "VE",
    17: "Lazy",
    18: "IPU",
    19: "MTIA",
    20: "PrivateUse1",
}


def kineto_device_name(device_type: int | None, device_id: int | None) -> str:
    """``CPU``, ``GPU:0``...: c10's device type and index as a device name."""
    if device_type is None:
        kind = "unknown"
    else:
        kind = KINETO_DEVICE_TYPES.get(device_type, f"device_type_{device_type}")
    if kind == "CPU" or device_id is None or device_id < 0:
        return kind
    return f"{kind}:{device_id}"


def event_args(plane: Plane, rows: np.ndarray) -> list[dict[str, Any]]:
    """Events' stats as dicts, decoded in one call from their JSON form.

    Keys are as the store has them: a Kineto source's own (``Bytes``), or XSpace's names
    (``allocation_bytes``) for an XSpace source, including a Kineto profile saved as XSpace.
    Decoding every event through ``event_stats`` costs ~20 us an event; a trace recorded
    with profile_memory can hold millions of them.
    """
    if isinstance(plane.stats, TypedStats):
        array = plane.stats.raw_array(rows)
    else:
        array = b"[" + b",".join([plane.stats.raw(row) for row in rows.tolist()]) + b"]"
    try:
        decoded = _ARGS_DECODER.decode(array)
    except msgspec.DecodeError:
        decoded = None
    if decoded is None or not all(isinstance(args, dict) for args in decoded):
        decoded = [{stat.name: stat.value for stat in plane.event_stats(row)} for row in rows.tolist()]
    return typing.cast(list[dict[str, Any]], decoded)


@dataclass(frozen=True)
class CounterSeries:
    """One counter track: ``value[i]`` at ``time_ps[i]`` (profile time, ascending)."""

    plane: int
    group: str  # the Chrome counter event's name ("Memory (GPU:0)")
    key: str  # the series within it ("Total Allocated")
    time_ps: np.ndarray
    value: np.ndarray  # float64
    from_memory: bool  # a memory figure (bytes), not a counter event of the source

    @property
    def name(self) -> str:
        return f"{self.group} {self.key}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def counter_series(profile: Profile) -> list[CounterSeries]:
    """Every counter series of the profile, plane by plane, in the order first seen."""
    series: list[CounterSeries] = []
    for index, plane in enumerate(profile.planes):
        samples: dict[tuple[str, str, bool], tuple[list[int], list[float]]] = {}
        counters = plane.line_index(names.COUNTERS_LINE)
        if counters is not None:
            span = plane.line_slice(counters)
            _add_counters(plane, np.arange(span.start, span.stop), samples)
        _add_memory(plane, samples)
        for (group, key, is_bytes), (times, values) in samples.items():
            time_ps = np.asarray(times, dtype=np.int64)
            order = np.argsort(time_ps, kind="stable")
            series.append(CounterSeries(index, group, key, time_ps[order], np.asarray(values, dtype=np.float64)[order], is_bytes))
    return series


def _add_counters(plane: Plane, rows: np.ndarray, samples: dict[tuple[str, str, bool], tuple[list[int], list[float]]]) -> None:
    starts = plane.events.start_ps[rows].tolist()
    event_names = plane.metadata.name_array[plane.events.metadata_id[rows]].tolist()
    for start, name, args in zip(starts, event_names, event_args(plane, rows)):
        for key, value in args.items():
            number = _number(value)
            if number is not None:
                times, values = samples.setdefault((name, key, False), ([], []))
                times.append(start)
                values.append(number)


def _add_memory(plane: Plane, samples: dict[tuple[str, str, bool], tuple[list[int], list[float]]]) -> None:
    memory = {names.KINETO_MEMORY_EVENT, names.MEMORY_ALLOCATION, names.MEMORY_DEALLOCATION}
    is_memory = np.asarray([name in memory for name in plane.metadata.names], dtype=bool)
    if not is_memory.any():
        return
    rows = np.flatnonzero(is_memory[plane.events.metadata_id])
    sizes: dict[str, tuple[list[int], list[float]]] = {}  # Kineto: device -> Bytes, for a device without totals
    kineto = np.asarray([name == names.KINETO_MEMORY_EVENT for name in plane.metadata.names], dtype=bool)
    for start, from_kineto, args in zip(plane.events.start_ps[rows].tolist(), kineto[plane.events.metadata_id[rows]].tolist(), event_args(plane, rows)):
        if from_kineto:
            device_type, device_id = args.get(names.KINETO_MEMORY_DEVICE_TYPE), args.get(names.KINETO_MEMORY_DEVICE_ID)
            device = kineto_device_name(device_type if isinstance(device_type, int) else None, device_id if isinstance(device_id, int) else None)
            figures = _KINETO_FIGURES
            size = _number(args.get(names.ALLOCATION_BYTES, args.get(names.KINETO_MEMORY_BYTES)))
            if size is not None:
                times, values = sizes.setdefault(device, ([], []))
                times.append(start)
                values.append(size)
        else:
            allocator = args.get(names.ALLOCATOR_NAME)
            if isinstance(allocator, str) and allocator:
                device = allocator
            else:  # as memory_profile names an allocator without a name
                ordinal = args.get(names.DEVICE_ORDINAL, args.get(names.INDEX_ON_HOST))
                device = f"device {ordinal}" if isinstance(ordinal, int) else "allocator"
            figures = _XSPACE_FIGURES
        for key in figures:
            number = _number(args.get(key))
            if number is not None:
                times, values = samples.setdefault((f"{MEMORY_COUNTER} ({device})", key, True), ([], []))
                times.append(start)
                values.append(number)
    for device, (times, values) in sizes.items():
        group = f"{MEMORY_COUNTER} ({device})"
        if (group, names.KINETO_MEMORY_TOTAL_ALLOCATED, True) not in samples:
            # The 2021 schema has no totals: the running sum of Bytes, from 0 at the profile start.
            order = np.argsort(np.asarray(times, dtype=np.int64), kind="stable")
            samples[(group, RUNNING_SUM, True)] = (np.asarray(times)[order].tolist(), np.cumsum(np.asarray(values)[order]).tolist())
