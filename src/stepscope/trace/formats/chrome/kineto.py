"""PyTorch profiler (Kineto) traces: ``*.pt.trace.json[.gz]``.

A Kineto trace is Chrome trace JSON with conventions this dialect knows:
- processes labelled ``GPU N`` (or holding kernel / memcpy / memset events) are devices:
  ``/device:GPU:N``, one line per stream (``tid`` 7 or, in the 2021 schema, ``"stream 7"``);
  a thread of one that holds no device event (the Python stacks Kineto records under the
  GPU's pid) is a host thread, a line of ``/host:CPU`` (see ``read.device_host_thread``);
- the profiler's own spans (string pids such as ``"Spans"``) go to a plane of their own;
- every other process's threads are lines of ``/host:CPU``;
- ``args`` keep their keys; the stats view renames the well-known ones (``correlation`` ->
  ``correlation_id``, ``External id`` -> ``external_id``...) and derives XSpace's
  ``kernel_details`` / ``memcpy_details`` / ``Memset_details`` strings;
- ``ts`` is microseconds after ``baseTimeNanoseconds`` when the header has it (PyTorch 2.x),
  else microseconds since the epoch (older releases).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from stepscope.trace import names
from stepscope.trace.formats.chrome.columns import as_text
from stepscope.trace.formats.chrome.document import id_columns_reader
from stepscope.trace.formats.chrome.read import Dialect, LinePlacement, ProcessInfo, generic_place_thread, plane_named
from stepscope.trace.model import NO_ID
from stepscope.trace.stat_types import Stat, StatKind, is_int64, stat_from_python

_GPU_LABEL = re.compile(r"^\s*GPU\s+(\d+)\s*$")
_STREAM = re.compile(r"(\d+)")
_MEMCPY_KIND = re.compile(r"Memcpy\s+(\w+)")

# Header keys worth keeping on the profile (device list, ranks, versions).
INFO_KEYS = (
    "schemaVersion",
    "deviceProperties",
    "distributedInfo",
    "baseTimeNanoseconds",
    "displayTimeUnit",
    "traceName",
    "record_shapes",
    "with_flops",
    "profile_memory",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "hip_runtime_version",
    "hip_driver_version",
    "trace_id",
)


def place_process(pid: Any, process: ProcessInfo, device: int | None) -> str:
    named = plane_named(process)
    if named:
        return named
    if isinstance(pid, str):
        return names.TRACE_SPANS_PLANE
    label = _GPU_LABEL.match(process.labels)
    if label:
        return names.gpu_plane(int(label.group(1)))
    if device is not None:
        return names.gpu_plane(device)
    return names.HOST_PLANE


def place_thread(plane: str, pid: Any, tid: Any, process: ProcessInfo) -> LinePlacement:
    thread = process.threads.get(tid, "")
    if names.is_device_plane(plane):
        stream = _first_int(tid)
        return LinePlacement(stream, thread or (f"stream {stream}" if stream is not None else as_text(tid)))
    if plane == names.TRACE_SPANS_PLANE:
        return LinePlacement(None, thread or as_text(tid) or "spans")
    numeric = _first_int(tid)
    if numeric is None:
        return generic_place_thread(plane, pid, tid, process)
    return LinePlacement(numeric, thread or f"thread {numeric}")


def _first_int(value: Any) -> int | None:
    """The thread / stream number in a tid (7, "7", "stream 7"); None if it has none that
    fits a 64-bit id."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        match = _STREAM.search(as_text(value))
        if not match:
            return None
        number = int(match.group(1))
    return number if is_int64(number) else None


class _DetailArgs(msgspec.Struct, gc=False):
    """The args the details strings are made of (Kineto's own key names)."""

    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared: Any = msgspec.field(default=None, name="shared memory")
    occupancy: Any = msgspec.field(default=None, name="est. achieved occupancy %")
    bytes: Any = None
    kind: Any = None


_DETAIL_ARGS = msgspec.json.Decoder(_DetailArgs)
_DETAIL_KEYS = {
    "grid": "grid",
    "block": "block",
    "registers": "registers per thread",
    "shared": "shared memory",
    "occupancy": "est. achieved occupancy %",
    "bytes": "bytes",
    "kind": "kind",
}
_DETAIL_STATS = frozenset({names.KERNEL_DETAILS, names.MEMCPY_DETAILS, names.MEMSET_DETAILS})


class KinetoArgs:
    """Kineto args as XSpace stats: well-known keys renamed, details strings derived."""

    def __call__(self, args: dict[str, Any], name: str, category: str) -> list[Stat]:
        stats = [stat_from_python(names.KINETO_ARG_TO_STAT.get(key, key), value) for key, value in args.items()]
        details = _details(args, name, category)
        if details is not None:
            stats.append(Stat(details[0], StatKind.STR, details[1]))
        return stats

    def value(self, raw: bytes, stat: str, name: str, category: str) -> Any:
        """One stat from the raw args; a details string decodes only the keys it is made of."""
        if not raw:
            return None
        try:
            if stat in _DETAIL_STATS:
                decoded = _DETAIL_ARGS.decode(raw)
                args = {key: getattr(decoded, field) for field, key in _DETAIL_KEYS.items()}
                details = _details(args, name, category)
                return details[1] if details is not None and details[0] == stat else None
            args = msgspec.json.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if not isinstance(args, dict):
            return None
        return next((s.value for s in self(args, name, category) if s.name == stat), None)


translate_args = KinetoArgs()


# A kernel's details text, by what it is made of: kernels of one launch shape repeat by the
# thousand, and building the text per kernel was most of reading it (bounded: NaNs never hit).
_KERNEL_DETAILS: dict[tuple[Any, ...], str] = {}
_KERNEL_DETAILS_LIMIT = 1 << 14


def _details(args: dict[str, Any], name: str, category: str) -> tuple[str, str] | None:
    if category in names.KINETO_KERNEL_CATEGORIES:
        grid, block = args.get("grid"), args.get("block")
        if not (isinstance(grid, list) and isinstance(block, list)):
            return None
        registers, shared, occupancy = args.get("registers per thread"), args.get("shared memory"), args.get("est. achieved occupancy %")
        try:
            # Types are part of the key: _int(True) is 0 but _int(1) is 1, and the
            # occupancy is written as it prints (1 and 1.0 differ).
            key = (
                type(registers), registers, type(shared), shared,
                f"{occupancy}" if isinstance(occupancy, (int, float)) else None,
                tuple(map(type, grid)), tuple(grid), tuple(map(type, block)), tuple(block),
            )  # fmt: skip
            text = _KERNEL_DETAILS.get(key)
        except TypeError:  # an unhashable value (a list where a number belongs)
            return names.KERNEL_DETAILS, _kernel_details(args, grid, block)
        if text is None:
            if len(_KERNEL_DETAILS) >= _KERNEL_DETAILS_LIMIT:
                _KERNEL_DETAILS.clear()
            text = _KERNEL_DETAILS[key] = _kernel_details(args, grid, block)
        return names.KERNEL_DETAILS, text
    if category in names.KINETO_MEMCPY_CATEGORIES:
        kind = _MEMCPY_KIND.match(name)
        kind_text = kind.group(1) if kind else as_text(args.get("kind")) or "Unknown"
        return names.MEMCPY_DETAILS, f"kind:{kind_text} size:{_int(args.get('bytes'))}"
    if category in names.KINETO_MEMSET_CATEGORIES:
        return names.MEMSET_DETAILS, f"size:{_int(args.get('bytes'))}"
    return None


def _kernel_details(args: dict[str, Any], grid: list[Any], block: list[Any]) -> str:
    """The ``kernel_details`` text of a Kineto kernel's launch args."""
    parts = [
        f"regs:{_int(args.get('registers per thread'))}",
        f"static_shared:{_int(args.get('shared memory'))}",
        "dynamic_shared:0",
        "grid:" + ",".join(str(_int(v)) for v in grid),
        "block:" + ",".join(str(_int(v)) for v in block),
    ]
    occupancy = args.get("est. achieved occupancy %")
    if isinstance(occupancy, (int, float)):
        parts.append(f"occ_pct:{occupancy}")
    return " ".join(parts)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


# deviceProperties keys -> XSpace device-capability stats on the GPU plane.
_DEVICE_CAPABILITIES = {
    "numSms": names.DEV_CAP_CORE_COUNT,
    "totalGlobalMem": names.DEV_CAP_MEMORY_SIZE,
    "computeMajor": names.DEV_CAP_COMPUTE_CAP_MAJOR,
    "computeMinor": names.DEV_CAP_COMPUTE_CAP_MINOR,
}
_AMD_HINTS = ("AMD", "Radeon", "Instinct")


def device_plane_stats(plane: str, header: dict[str, Any]) -> list[Stat]:
    """A GPU plane's vendor and capabilities from the header's ``deviceProperties``."""
    if not plane.startswith(names.GPU_PLANE_PREFIX):
        return []
    ordinal = plane.removeprefix(names.GPU_PLANE_PREFIX)
    devices = header.get("deviceProperties") or []
    device = next((d for d in devices if isinstance(d, dict) and str(d.get("id")) == ordinal), None)
    if device is None:
        return []
    model = as_text(device.get("name"))
    amd = any(hint in model for hint in _AMD_HINTS) or "hip_runtime_version" in header
    stats = [Stat(names.DEVICE_VENDOR, StatKind.STR, "AMD" if amd else "Nvidia")]
    for key, stat_name in _DEVICE_CAPABILITIES.items():
        value = device.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            stats.append(Stat(stat_name, StatKind.UINT64, value))
    return stats


class _KinetoIds(msgspec.Struct, gc=False):
    """The args decoded for every event at load time; the rest stays raw."""

    correlation: Any = NO_ID
    external_id: Any = msgspec.field(default=NO_ID, name="External id")
    external_id_2021: Any = msgspec.field(default=NO_ID, name="external id")


hot_columns = id_columns_reader(_KinetoIds, {"correlation_id": ("correlation",), "external_id": ("external_id", "external_id_2021")})


KINETO_DIALECT = Dialect(
    format="kineto",
    translator=translate_args,
    place_process=place_process,
    place_thread=place_thread,
    device_categories=names.KINETO_DEVICE_CATEGORIES,
    id_columns=hot_columns,
    info_keys=INFO_KEYS,
    epoch_base_key="baseTimeNanoseconds",
    plane_stats=device_plane_stats,
)


def looks_like_kineto(header: dict[str, Any]) -> bool:
    """Kineto writes a schemaVersion and device/distributed info in the header; stepscope's
    own export says which format it came from."""
    own = header.get("stepscope")
    if isinstance(own, dict) and "format" in own:
        written: object = own["format"]
        return written == "kineto"
    return any(key in header for key in ("schemaVersion", "deviceProperties", "distributedInfo"))
