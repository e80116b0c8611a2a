"""memory_profile: allocated (and reserved) memory over time per device or allocator, its
peak, per-step peaks, and the ops holding memory at the peak.

Sources
-------
Read into columns by ``memory.allocations``; which events are allocation records, and
which of their stats hold what, is the readers' translation (``trace.kinds``).

- Kineto ``[memory]`` instants (``torch.profiler.profile(profile_memory=True)``) on host
  threads. Args: ``Bytes`` (signed: > 0 allocation, < 0 free; stepscope's stats view names
  it ``allocation_bytes``), ``Device Type`` (c10's DeviceType: 0 CPU, 1 CUDA, ...),
  ``Device Id``, and in newer traces ``Addr``, ``Total Allocated``, ``Total Reserved``.
  Events are grouped by (Device Type, Device Id) into devices named ``CPU``, ``GPU:0``...
  Where every event of a device carries ``Total Allocated`` that is the allocated figure
  (the allocator's own, counting memory allocated before the profile); otherwise it is the
  running sum of ``Bytes`` in time order, starting from 0 at the profile start, so memory
  allocated before the profile is not counted (the note says which).
- XSpace ``MemoryAllocation`` / ``MemoryDeallocation`` instants (TensorFlow's and XLA's BFC
  and CPU allocators) with stats ``allocator_name``, ``bytes_allocated`` (heap bytes in use
  after the event), ``bytes_reserved``, ``allocation_bytes``, ``requested_bytes``, ``addr``,
  ``tf_op``. Grouped by allocator (XProf's memory id: ``allocator_name``, else the device
  ordinal). ``allocated_bytes`` is ``bytes_allocated``; ``reserved_bytes`` is the source's
  ``bytes_reserved``: memory reserved beside the heap, not inside it (on the TPU sample
  ``bytes_allocated + bytes_reserved + bytes_available`` is the same on every event, the
  chip's HBM), so it can read 0 while gigabytes are allocated, unlike Kineto's
  ``Total Reserved``, the caching allocator's pool that holds the allocated bytes. XProf
  calls it "stack reserved" and adds it to its peak usage; here it is reported beside the
  allocated figure, with the sum's peak as ``peak_in_use_bytes``.

Definitions
-----------
- A device's events are ordered by time (ties: plane, thread, then the source's order);
  each event gives one point: the allocated bytes just after it.
- Peak: the largest allocated figure, at its first occurrence; ``peak_step`` is the step
  (``find_steps``) whose window [start, end) contains that time, or null.
- Step peak: the largest allocated figure during the step's window, counting the level the
  step started with (what was allocated before its first event).
- Peak holders: allocations made during the profile and still live just after the peak
  event, grouped by the op they were made in. A free is matched to its allocation by
  address (the latest live allocation at that address) where the source gives ``Addr`` /
  ``addr``; without addresses (the 2021 Kineto schema) by size, to the most recent live
  allocation of the same size (the total live is exact either way; which op a block is
  charged to is then an approximation). The op is ``tf_op`` where the source names it,
  else the innermost enclosing event on the same thread (``parent``), skipping other
  instants and bare allocation ops (``aten::empty`` and kin, which are charged to the op
  that called them); "(no enclosing op)" when there is none. Where the allocated figure
  counts memory the profile did not see allocated (``Total Allocated``, ``bytes_allocated``),
  the part of the peak no live allocation explains is one more row, "(allocated before the
  profile)", so the holders sum to the peak.
- Timeline: every point when there are at most ``MAX_TIMELINE_POINTS``; otherwise the
  window is cut into equal time buckets and each keeps its lowest and highest point (and
  the first, last and peak points are always kept), so the chart keeps its shape and the
  exact peak.

The JSON form is ``MemoryProfileResult``'s fields (their types are its schema).

- Allocations: the ``MAX_ALLOCATIONS`` largest made during the profile, each with its size,
  start, end (the free matched to it as above; null when live at the end), lifetime and op.

Tables: ``memory_peaks`` (one row per device), ``peak_holders`` (device, op, bytes) and
``allocations``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from stepscope.analysis import applicability
from stepscope.analysis.memory.allocations import DeviceAllocations, collect
from stepscope.analysis.ops.frameworks import JAX, PYTHON, PYTORCH, TENSORFLOW, found_frameworks
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import ToolResult, tool
from stepscope.analysis.steps.steps import Steps
from stepscope.analysis.tables import Column, Table, ps_to_us
from stepscope.trace.model import Profile

TOOL = "memory_profile"
MAX_TIMELINE_POINTS = 2000
# Allocations listed per device: the largest, since they are what a memory question is
# about; 100 keeps the JSON and the page's table small where a trace recorded with
# profile_memory holds millions of (mostly tiny) allocations.
MAX_ALLOCATIONS = 100

_DIGITS = re.compile(r"(\d+)")

BEFORE_PROFILE = "(allocated before the profile)"

# Why a profile holds no memory events, per framework, and what records them: one line,
# the empty page's only content. Measured with stepscope's captures (torch 2.13, JAX 0.10.2
# and TensorFlow 2.21 on the CPU, at each host_tracer_level): torch records allocations only
# at level 3, where the torch tracer turns on profile_memory; TensorFlow's CPU allocator
# records MemoryAllocation events at levels 2 and 3 and none at 1 (an eager loop of 256 x
# 256 matmuls with oneDNN on: 27 allocations at 2 and at 3, none at 1); JAX's CPU backend
# records none at any level (the TPU sample's events come from XLA's device allocators); a
# plain-Python capture has no allocator tracer at all.
NO_EVENTS = "No memory events in this profile"
NO_EVENTS_WHY: dict[str, str] = {
    PYTORCH: "PyTorch records allocations only with torch.profiler.profile(profile_memory=True), which stepscope turns on at ProfilerOptions(host_tracer_level=3)",
    TENSORFLOW: (
        "TensorFlow's allocators record MemoryAllocation events at host_tracer_level 2 or more (its default), "
        "on the CPU only with oneDNN's ops on (TF_ENABLE_ONEDNN_OPTS=1, TensorFlow's default only on CPUs with AVX-512), "
        "so the profiled window allocated nothing through them or was recorded at a lower level or without oneDNN"
    ),
    JAX: "JAX's CPU backend records no allocator events at any host_tracer_level; XLA's GPU and TPU allocators record MemoryAllocation events",
    PYTHON: "a plain-Python capture records no allocations; stepscope records memory through PyTorch (host_tracer_level=3), TensorFlow, or JAX on a GPU or TPU",
}
NO_EVENTS_UNKNOWN = (
    "record PyTorch with torch.profiler.profile(profile_memory=True) (stepscope: host_tracer_level=3), "
    "TensorFlow at host_tracer_level 2 or more, or JAX on a GPU or TPU"
)


def no_events_note(profile: Profile) -> str:
    """The empty memory profile's line: why, for the profile's (first) framework."""
    found = found_frameworks(profile)
    return f"{NO_EVENTS}: {NO_EVENTS_WHY[found[0]] if found else NO_EVENTS_UNKNOWN}."


PEAK_COLUMNS = (
    Column("device", "Device", "string"),
    Column("peak_allocated_bytes", "Peak allocated (bytes)"),
    Column("peak_reserved_bytes", "Peak reserved (bytes)"),
    Column("peak_time_us", "Peak at (us)"),
    Column("peak_step", "Peak step"),
    Column("events", "Memory events"),
    Column("allocated_from", "Allocated from", "string"),
)
ALLOCATION_COLUMNS = (
    Column("device", "Device", "string"),
    Column("bytes", "Bytes"),
    Column("start_us", "Start (us)"),
    Column("end_us", "End (us)"),
    Column("state", "State", "string"),
    Column("lifetime_us", "Lifetime (us)"),
    Column("op", "Op", "string"),
)
LIVE_AT_END = "live at end"
HOLDER_COLUMNS = (
    Column("device", "Device", "string"),
    Column("op", "Op", "string"),
    Column("bytes", "Bytes at peak"),
    Column("allocations", "Live allocations"),
)


class MemoryPoint(TypedDict):
    time_us: float
    allocated_bytes: int
    reserved_bytes: int | None


class StepPeak(TypedDict):
    step: int
    peak_allocated_bytes: int


class PeakHolder(TypedDict):
    op: str
    bytes: int
    allocations: int


class Allocation(TypedDict):
    """One allocation made during the profile (see ``allocations``)."""

    bytes: int
    start_us: float  # from the profile start
    end_us: float | None  # when it was freed; null: live at the end of the profile
    lifetime_us: float | None  # end - start; null when live at the end
    op: str  # the op that made it (as for peak holders)


class MemoryDevice(TypedDict):
    """One device or allocator."""

    device: str  # "GPU:0", "CPU", or an allocator name
    # "Total Allocated" | "running sum of Bytes" | "bytes_allocated" | "running sum of allocation_bytes"
    allocated_from: str
    events: int  # memory events of the device
    frees_matched_by: str  # "address" | "size": how peak holders were found (see above)
    peak_allocated_bytes: int
    peak_reserved_bytes: int | None  # the largest reserved figure, where the source has one
    # "Total Reserved" (Kineto: the caching allocator's pool, which holds the allocated bytes)
    # | "bytes_reserved" (XSpace: reserved beside the heap, not part of the allocated bytes) | None
    reserved_from: str | None
    peak_in_use_bytes: int | None  # XSpace with bytes_reserved: the largest allocated + reserved
    lifetime_peak_bytes: int | None  # the allocator's own peak_bytes_in_use (XSpace)
    peak_time_us: float  # from the profile start
    peak_time_ps: int  # the same, exact
    peak_step: int | None
    timeline: list[MemoryPoint]
    step_peaks: list[StepPeak]
    peak_holders: list[PeakHolder]  # bytes descending
    # The MAX_ALLOCATIONS largest allocations made during the profile (bytes descending, then
    # start); frees matched to them as for peak holders (frees_matched_by).
    allocations: list[Allocation]


@dataclass
class MemoryProfileResult(ToolResult):
    devices: list[MemoryDevice] = field(default_factory=list)
    note: str = ""

    def tables(self) -> list[Table]:
        holders = [(device["device"], holder["op"], holder["bytes"], holder["allocations"]) for device in self.devices for holder in device["peak_holders"]]
        allocations = [
            (
                device["device"],
                a["bytes"],
                a["start_us"],
                a["end_us"],
                LIVE_AT_END if a["end_us"] is None else "freed",
                a["lifetime_us"],
                a["op"],
            )
            for device in self.devices
            for a in device["allocations"]
        ]
        return [
            Table.of("memory_peaks", PEAK_COLUMNS, self.devices),
            Table("peak_holders", HOLDER_COLUMNS, holders),
            Table("allocations", ALLOCATION_COLUMNS, allocations),
        ]

    def summary(self) -> list[str]:
        if not self.devices:
            return [self.note]
        lines = []
        for device in self.devices:
            step = f" (step {device['peak_step']})" if device["peak_step"] is not None else ""
            top = ", ".join(f"{h['op']} {_size(h['bytes'])}" for h in device["peak_holders"][:3])
            lines.append(
                f"{device['device']}: peak {_size(device['peak_allocated_bytes'])} allocated at "
                f"{device['peak_time_us']:,.3f} us{step}" + (f"; held by {top}" if top else "")
            )
        return [*lines, self.note]


def _size(value: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(value) >= scale:
            return f"{value / scale:,.1f} {unit}"
    return f"{value:,} B"


@tool(
    TOOL,
    title="Memory profile",
    order=60,
    description="How does allocated memory evolve, where is the peak, and which ops hold memory there?",
    applies=applicability.memory_events,
)
def memory_profile(stats: OpStats) -> MemoryProfileResult:
    devices = collect(stats.profile)
    if not devices:
        return MemoryProfileResult(note=no_events_note(stats.profile))
    steps = stats.steps
    results = [_analyse(name, events, steps) for name, events in sorted(devices.items(), key=lambda kv: _device_order(kv[0]))]
    return MemoryProfileResult(devices=results, note=_note(results))


def _note(results: list[MemoryDevice]) -> str:
    parts = []
    for device in results:
        source = device["allocated_from"]
        if source.startswith("running sum"):
            text = f"{device['device']}: allocated bytes are the {source} from 0 at the profile start (memory allocated before the profile is not counted"
            if min(point["allocated_bytes"] for point in device["timeline"]) < 0:
                text += "; it goes below 0 where such memory is freed"
            text += ")"
        else:
            text = f"{device['device']}: allocated bytes are the source's {source!r}"
        if device["peak_in_use_bytes"] is not None:  # reserved beside the heap
            text += (
                f"; reserved bytes are the source's {device['reserved_from']!r}, memory the runtime reserves beside "
                f"the heap (not part of the allocated bytes); allocated + reserved peaks at {device['peak_in_use_bytes']:,} bytes"
            )
        elif device["reserved_from"] is None:
            text += "; reserved memory is not recorded"
        if device["frees_matched_by"] == "size":
            text += (
                "; the trace has no addresses, so peak holders match each free to the latest live "
                "allocation of its size (the total is exact, the op a block is charged to may not be)"
            )
        parts.append(text)
    return "; ".join(parts) + "."


def _device_order(name: str) -> tuple[bool, tuple[tuple[int, int, str], ...]]:
    """CPU first, then by name with numbers in numeric order (GPU:2 before GPU:10)."""
    parts = tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(name) if part)
    return (name != "CPU", parts)


# --- analysing ----------------------------------------------------------------------------------


def _analyse(name: str, raw: DeviceAllocations, steps: Steps) -> MemoryDevice:
    order = np.argsort(np.asarray(raw.time_ps, dtype=np.int64), kind="stable")
    positions = order.tolist()

    def ordered(values: list[Any]) -> list[Any]:
        return [values[i] for i in positions]

    time_ps = np.asarray(raw.time_ps, dtype=np.int64)[order]
    free = np.asarray(raw.free, dtype=bool)[order]
    address, op = ordered(raw.address), ordered(raw.op)
    size = _resolve_sizes(ordered(raw.size), free, address)
    delta = np.where(free, -size, size)
    totals = ordered(raw.allocated)
    if all(value is not None for value in totals):
        allocated = np.asarray(totals, dtype=np.int64)
        source = raw.record.allocated[0]
        counts_earlier_memory = True
    else:
        allocated = np.cumsum(delta)
        source = f"running sum of {raw.record.size_label}"
        counts_earlier_memory = False
    reserved_values = ordered(raw.reserved)
    reserved = np.asarray(reserved_values, dtype=np.int64) if all(v is not None for v in reserved_values) else None
    reserved_from = None if reserved is None else raw.record.reserved[0]
    # Reserved bytes held beside the heap (XSpace's bytes_reserved: allocated + reserved +
    # available is the allocator's capacity) are in use too (XProf's peak: heap + stack).
    in_use = allocated + reserved if reserved is not None and raw.record.reserved_beside else None
    lifetime = [value for value in raw.lifetime_peak if value is not None]

    peak_index = int(np.argmax(allocated))
    peak = int(allocated[peak_index])
    peak_time = int(time_ps[peak_index])
    end = peak_index + 1
    holders = _peak_holders(size[:end], free[:end], address[:end], op[:end])
    unexplained = peak - sum(h["bytes"] for h in holders)
    if counts_earlier_memory and unexplained > 0:
        holders.append({"op": BEFORE_PROFILE, "bytes": unexplained, "allocations": 0})
    holders.sort(key=lambda h: (-h["bytes"], h["op"]))

    return {
        "device": name,
        "allocated_from": source,
        "events": len(time_ps),
        "frees_matched_by": "address" if all(a is not None for a in address) else "size",
        "peak_allocated_bytes": peak,
        "peak_reserved_bytes": int(reserved.max()) if reserved is not None else None,
        "reserved_from": reserved_from,
        "peak_in_use_bytes": int(in_use.max()) if in_use is not None else None,
        "lifetime_peak_bytes": max(lifetime) if lifetime else None,
        "peak_time_us": ps_to_us(peak_time),
        "peak_time_ps": peak_time,
        "peak_step": _step_at(steps, peak_time),
        "timeline": _timeline(time_ps, allocated, reserved, peak_index),
        "step_peaks": _step_peaks(steps, time_ps, allocated, int(allocated[0] - delta[0])),
        "peak_holders": holders,
        "allocations": _allocations(time_ps, size, free, address, op),
    }


def _resolve_sizes(sizes: list[int | None], free: np.ndarray, address: list[int | None]) -> np.ndarray:
    """Sizes as an array; a free the source gave no size takes its allocation's (by address)."""
    if all(value is not None for value in sizes):
        return np.asarray(sizes, dtype=np.int64)
    resolved = list(sizes)
    live: dict[int, int] = {}
    for index, (value, freeing, where) in enumerate(zip(sizes, free.tolist(), address)):
        if where is None:
            continue
        if not freeing:
            live[where] = value or 0
        else:
            known = live.pop(where, 0)
            if value is None:
                resolved[index] = known
    return np.asarray([value or 0 for value in resolved], dtype=np.int64)


def _step_at(steps: Steps, time_ps: int) -> int | None:
    inside = np.flatnonzero((steps.start_ps <= time_ps) & (time_ps < steps.end_ps))
    return int(steps.number[inside[0]]) if len(inside) else None


def _step_peaks(steps: Steps, time_ps: np.ndarray, allocated: np.ndarray, initial: int) -> list[StepPeak]:
    """Per step, the highest level during [start, end), counting the level it started with."""
    first = np.searchsorted(time_ps, steps.start_ps, "left")
    last = np.searchsorted(time_ps, steps.end_ps, "left")
    before = np.where(first > 0, allocated[np.maximum(first - 1, 0)], initial)
    peaks: list[StepPeak] = []
    for index in range(len(steps)):
        lo, hi = int(first[index]), int(last[index])
        peak = int(before[index])
        if hi > lo:
            peak = max(peak, int(allocated[lo:hi].max()))
        peaks.append({"step": int(steps.number[index]), "peak_allocated_bytes": peak})
    return peaks


def _peak_holders(size: np.ndarray, free: np.ndarray, address: list[int | None], op: list[str]) -> list[PeakHolder]:
    """Allocations live after the last event given, grouped by op (unsorted)."""
    by_address = all(a is not None for a in address)
    live_at: dict[int | None, int] = {}  # address -> event index
    live_of_size: dict[int, list[int]] = defaultdict(list)  # size -> event indices, latest last
    for index, (value, freeing) in enumerate(zip(size.tolist(), free.tolist())):
        if freeing:
            if by_address:
                live_at.pop(address[index], None)
            elif live_of_size.get(value):
                live_of_size[value].pop()
        elif value > 0:
            if by_address:
                live_at[address[index]] = index
            else:
                live_of_size[value].append(index)
    live = list(live_at.values()) if by_address else [i for stack in live_of_size.values() for i in stack]
    grouped: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for index in live:
        entry = grouped[op[index]]
        entry[0] += int(size[index])
        entry[1] += 1
    return [{"op": name, "bytes": total, "allocations": count} for name, (total, count) in grouped.items()]


def _allocations(time_ps: np.ndarray, size: np.ndarray, free: np.ndarray, address: list[int | None], op: list[str]) -> list[Allocation]:
    """The MAX_ALLOCATIONS largest allocations, each with the time of the free matched to it
    (as ``_peak_holders`` matches them: by address, else the latest live block of its size)."""
    by_address = all(a is not None for a in address)
    made: list[tuple[int, int, str]] = []  # (start_ps, bytes, op)
    ended: dict[int, int] = {}  # index in made -> end_ps
    live_at: dict[int | None, int] = {}
    live_of_size: dict[int, list[int]] = defaultdict(list)
    for index, (when, value, freeing) in enumerate(zip(time_ps.tolist(), size.tolist(), free.tolist())):
        if freeing:
            if by_address:
                which = live_at.pop(address[index], None)
            else:
                stack = live_of_size.get(value)
                which = stack.pop() if stack else None
            if which is not None:
                ended[which] = when
        elif value > 0:
            made.append((when, value, op[index]))
            if by_address:
                live_at[address[index]] = len(made) - 1
            else:
                live_of_size[value].append(len(made) - 1)
    largest = sorted(range(len(made)), key=lambda i: (-made[i][1], made[i][0], i))[:MAX_ALLOCATIONS]
    out: list[Allocation] = []
    for index in largest:
        start, value, name = made[index]
        end = ended.get(index)
        out.append(
            {
                "bytes": value,
                "start_us": ps_to_us(start),
                "end_us": ps_to_us(end) if end is not None else None,
                "lifetime_us": ps_to_us(end - start) if end is not None else None,
                "op": name,
            }
        )
    return out


def _timeline(time_ps: np.ndarray, allocated: np.ndarray, reserved: np.ndarray | None, peak_index: int) -> list[MemoryPoint]:
    count = len(time_ps)
    if count <= MAX_TIMELINE_POINTS:
        keep = np.arange(count)
    else:
        buckets = MAX_TIMELINE_POINTS // 2 - 1
        span = max(int(time_ps[-1] - time_ps[0]), 1)
        bucket = np.minimum(((time_ps - time_ps[0]) / span * buckets).astype(np.int64), buckets - 1)
        index = np.arange(count)
        highest = np.lexsort((index, -allocated, bucket))
        lowest = np.lexsort((index, allocated, bucket))
        _, first_high = np.unique(bucket[highest], return_index=True)
        _, first_low = np.unique(bucket[lowest], return_index=True)
        keep = np.unique(np.concatenate((highest[first_high], lowest[first_low], [0, count - 1, peak_index])))
    times = time_ps[keep].tolist()
    values = allocated[keep].tolist()
    reserved_values = reserved[keep].tolist() if reserved is not None else [None] * len(keep)
    return [{"time_us": ps_to_us(t), "allocated_bytes": a, "reserved_bytes": r} for t, a, r in zip(times, values, reserved_values)]
