"""A profile's allocation records read into per-device columns: what memory_profile
analyses (as ``ops.kernels`` is read for kernel_stats).

Which events are allocation records, and which stats hold their size, address, totals and
device, is the readers' translation (``trace.kinds``: the kinds ``MEMORY_DELTA``,
``ALLOCATION``, ``DEALLOCATION`` and their ``MEMORY_RECORDS``), so this module reads every
format alike:

- a record of signed size (``MEMORY_DELTA``: PyTorch's) allocates when the size is > 0
  and frees when < 0; one of an allocator (``ALLOCATION``/``DEALLOCATION``: TensorFlow's,
  XLA's) frees by its kind, and may carry no size (TPU runtimes), which
  ``memory_profile`` then takes from its allocation;
- records are grouped by device (the record's device type and index: ``CPU``,
  ``GPU:0``...), else by allocator (its name, else ``device <ordinal>``, else
  ``allocator``);
- each record's op is the one it names (``MemoryRecord.op``), else the innermost enclosing
  event on the same thread, skipping other instants and bare allocation ops (``aten::empty``
  and kin, which are charged to the op that called them); ``NO_OP`` when there is none.

A record without a size is dropped, unless it is a free or carries the allocator's total.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stepscope.trace.counters import event_args, kineto_device_name
from stepscope.trace.kinds import MEMORY_RECORDS, EventKind, MemoryRecord
from stepscope.trace.model import NO_ID, Plane, Profile

# Ops that only allocate: their memory is charged to the op that called them.
ALLOCATION_OPS = frozenset({"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty", "aten::new_empty_strided"})
NO_OP = "(no enclosing op)"
# What a record names as its op when it names none.
_NO_NAMED_OP = frozenset({"", "(null)"})


@dataclass
class DeviceAllocations:
    """One device's allocation records as collected (source order within each plane and line)."""

    record: MemoryRecord  # where its records keep their facts (their source's names)
    time_ps: list[int] = field(default_factory=list)
    size: list[int | None] = field(default_factory=list)  # bytes, >= 0; None if the source omits it
    free: list[bool] = field(default_factory=list)
    allocated: list[int | None] = field(default_factory=list)  # the source's total, if any
    reserved: list[int | None] = field(default_factory=list)
    address: list[int | None] = field(default_factory=list)
    op: list[str] = field(default_factory=list)
    lifetime_peak: list[int | None] = field(default_factory=list)  # the allocator's own peak


def collect(profile: Profile) -> dict[str, DeviceAllocations]:
    """Every plane's allocation records, by device (or allocator) name."""
    devices: dict[str, DeviceAllocations] = {}
    for plane in profile.planes:
        meta = plane.metadata
        is_memory = np.isin(meta.kinds, list(MEMORY_RECORDS))
        if not is_memory.any():
            continue
        rows = np.flatnonzero(is_memory[plane.events.metadata_id])
        if not len(rows):
            continue
        ops = _enclosing_ops(plane, rows, is_memory)
        starts = plane.events.start_ps[rows].tolist()
        metadata_ids = plane.events.metadata_id[rows].tolist()
        shared = {int(i): {stat.name: stat.value for stat in meta.stats[i]} for i in np.flatnonzero(is_memory)}
        kinds = meta.kinds.tolist()
        for start, metadata_id, op, own in zip(starts, metadata_ids, ops, event_args(plane, rows)):
            # Metadata stats first, the event's own win (as Plane.event_stats orders them).
            stats = {**shared[metadata_id], **own} if shared[metadata_id] else own
            _add(devices, EventKind(kinds[metadata_id]), stats, start, op)
    return devices


def _first(stats: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` that ``stats`` holds, else None."""
    return next((stats[key] for key in keys if key in stats), None)


def _int(value: Any) -> int | None:
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) < 2**63:
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _device_name(record: MemoryRecord, stats: dict[str, Any]) -> str:
    if record.device_type:
        return kineto_device_name(_int(_first(stats, record.device_type)), _int(_first(stats, record.device_id)))
    allocator = _first(stats, record.allocator)
    if isinstance(allocator, str) and allocator:
        return allocator
    ordinal = _int(_first(stats, record.ordinal))
    return f"device {ordinal}" if ordinal is not None else "allocator"


def _add(devices: dict[str, DeviceAllocations], kind: EventKind, stats: dict[str, Any], start: int, op: str) -> None:
    record = MEMORY_RECORDS[kind]
    signed = kind == EventKind.MEMORY_DELTA
    size = _int(_first(stats, record.size))
    if size is None:
        size = _int(_first(stats, record.requested))
    allocated = _int(_first(stats, record.allocated))
    free = size is not None and size < 0 if signed else kind == EventKind.DEALLOCATION
    if size is None and (signed or (allocated is None and not free)):
        return
    name = _device_name(record, stats)
    device = devices.get(name)
    if device is None:
        device = devices[name] = DeviceAllocations(record)
    device.record = record
    device.time_ps.append(start)
    device.size.append(abs(size) if size is not None else None)
    device.free.append(free)
    device.allocated.append(allocated)
    device.reserved.append(_int(_first(stats, record.reserved)))
    device.address.append(_int(_first(stats, record.address)))
    device.lifetime_peak.append(_int(_first(stats, record.lifetime_peak)))
    named = _first(stats, record.op)
    device.op.append(named if isinstance(named, str) and named not in _NO_NAMED_OP else op)


def _enclosing_ops(plane: Plane, rows: np.ndarray, is_memory: np.ndarray) -> list[str]:
    """Per memory event, the name of the op it happened in (see the module docstring)."""
    events = plane.events
    name_array = plane.metadata.name_array
    allocation_op = np.isin(name_array, list(ALLOCATION_OPS)) if len(name_array) else np.zeros(0, dtype=bool)
    current = events.parent[rows].copy()
    while True:
        valid = current != NO_ID
        safe = np.where(valid, current, 0)
        metadata = events.metadata_id[safe]
        above = events.parent[safe]
        skip = valid & (is_memory[metadata] | (events.duration_ps[safe] == 0) | (allocation_op[metadata] & (above != NO_ID)))
        if not skip.any():
            break
        current = np.where(skip, above, current)
    valid = current != NO_ID
    op_names = name_array[events.metadata_id[np.where(valid, current, 0)]] if len(rows) else np.zeros(0, dtype=object)
    names_out: list[str] = np.where(valid, op_names, NO_OP).tolist()
    return names_out
