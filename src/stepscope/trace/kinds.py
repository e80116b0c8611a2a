"""The common vocabulary readers translate their format's terms into, so analysis never
knows which file a profile came from (as Perfetto's importers fill common tables).

Every format names the same things differently: Kineto files a CUDA kernel under the
category ``kernel`` (2021: ``Kernel``), an allocation as a ``[memory]`` instant with args
``Bytes`` and ``Addr``; TensorFlow's XSpace records ``MemoryAllocation`` events with
``allocation_bytes`` and ``addr``. Analysis reads only what is here:

- ``EventKind``: what an event type is, one per ``EventMetadata`` entry
  (``EventMetadata.kinds``);
- ``MEMORY_RECORDS``: per kind of allocation record, which stats hold its size, address,
  totals and device, and what its figures mean;
- ``WAIT_*``, ``INPUT_*``, ``FORWARD_BACKWARD_FLOWS``: the names of the stats and flow
  categories analysis reads, whatever their source;
- ``time_base``, ``names_its_host``, ``distributed_rank``, ``writer_framework``: facts
  about the file as a whole.

What a new format's reader must fill (Nsight Systems' SQLite export, say):

1. ``EventMetadata.kinds``: the ``EventKind`` of each event type, from whatever the
   format says (a table, a category, an activity kind); ``OTHER`` where it says nothing,
   which leaves the event to the rules on names and lines (XSpace's line names, step
   markers, launch calls by name);
2. for allocation records, the kind ``MEMORY_DELTA`` or ``ALLOCATION``/``DEALLOCATION``
   with stats under the names ``MEMORY_RECORDS`` lists for it (or a new ``MemoryRecord``
   entry for its own names);
3. ``Profile.format`` and, where needed, its row in the tables of the file facts below.

The stored stats keep the names their source gave (a detail view shows the file's own
args, and a Kineto trace written as XSpace keeps them); ``MEMORY_RECORDS`` is what maps
them. Kineto's categories reach XSpace as the ``category`` stat, so the XSpace reader
finds the same kinds on a Kineto trace that stepscope wrote as XSpace.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

import numpy as np

from stepscope.trace import names


class EventKind(enum.IntEnum):
    """What an event type is, as its source said. Stored as int8 (``EventMetadata.kinds``)."""

    OTHER = 0  # the source said nothing: classified by its name and line
    # Host side.
    FRAMEWORK_OP = 1  # a framework's op, named as the op (PyTorch's ``aten::addmm``)
    NAMED_OP = 2  # an op event named ``<op name>:<op type>`` (TensorFlow's executor)
    INPUT_STAGE = 3  # an input pipeline stage listed as an op of type "Dataset" (tf.data's ``Iterator::...``)
    ANNOTATION = 4  # a user's span (``record_function``)
    PYTHON = 5  # a Python call-stack frame
    RUNTIME = 6  # a runtime or driver API call (``cudaLaunchKernel``)
    PROFILER = 7  # the profiler's own records: overhead, instants, correlation markers
    PROFILER_SPAN = 8  # the profiler's span around the whole trace
    MEMORY_DELTA = 9  # an allocation record of signed size (> 0 allocates, < 0 frees)
    ALLOCATION = 10  # an allocator's allocation record
    DEALLOCATION = 11  # an allocator's free record
    # Device side.
    KERNEL = 20
    MEMCPY = 21
    MEMSET = 22
    DEVICE_ANNOTATION = 23  # a user's span copied onto a device's stream: holds kernels, is not work
    SYNC = 24  # a synchronisation record (stream, event, context sync)
    STREAM_WAIT = 25  # a stream waiting on an event recorded on another (``WAIT_*`` stats)


# Kinds that are never device work, even on a device plane (a writer that put host records
# there: an XSpace made by a version that filed Kineto's Python stacks under the GPU).
NOT_DEVICE_WORK: Final = frozenset(
    {
        EventKind.FRAMEWORK_OP,
        EventKind.ANNOTATION,
        EventKind.PYTHON,
        EventKind.RUNTIME,
        EventKind.PROFILER,
        EventKind.PROFILER_SPAN,
        EventKind.MEMORY_DELTA,
        EventKind.DEVICE_ANNOTATION,
        EventKind.SYNC,
        EventKind.STREAM_WAIT,
    }
)
MEMORY_KINDS: Final = frozenset({EventKind.MEMORY_DELTA, EventKind.ALLOCATION, EventKind.DEALLOCATION})


def kind_array(kinds: list[EventKind]) -> np.ndarray:
    """Kinds as the int8 array ``EventMetadata.kinds`` holds."""
    return np.asarray(kinds, dtype=np.int8)


# --- stats analysis reads, by what they hold ---------------------------------------------------
# A STREAM_WAIT's waited-on stream, and the correlation id of the call that recorded the event.
WAIT_STREAM: Final = names.KINETO_WAIT_ON_STREAM
WAIT_RECORD_CORRELATION: Final = names.KINETO_WAIT_ON_RECORD
# A framework op's inputs: their shapes, types and the values of scalar ones.
INPUT_SHAPES: Final = names.KINETO_INPUT_DIMS
INPUT_TYPES: Final = names.KINETO_INPUT_TYPES
INPUT_VALUES: Final = names.KINETO_CONCRETE_INPUTS
# Flow categories linking a forward op to its backward op (FlowTable.categories).
FORWARD_BACKWARD_FLOWS: Final = frozenset({names.KINETO_FWDBWD_FLOW})


# --- allocation records ----------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryRecord:
    """Where an allocation record of one kind keeps its facts, by stat name.

    Each field lists the stat names to try, in order; the ``*_label`` fields are the
    source's names that the memory profile cites ("allocated bytes are the source's
    'Total Allocated'"). A device is ``device_type``/``device_id`` (c10's DeviceType and
    index) where the record has them, else the allocator (``allocator``, else an ordinal).
    """

    size: tuple[str, ...]  # bytes (signed for MEMORY_DELTA)
    size_label: str
    address: tuple[str, ...] = ()
    allocated: tuple[str, ...] = ()  # the allocator's own total after the event
    reserved: tuple[str, ...] = ()
    requested: tuple[str, ...] = ()  # a size to fall back on
    device_type: tuple[str, ...] = ()
    device_id: tuple[str, ...] = ()
    allocator: tuple[str, ...] = ()
    ordinal: tuple[str, ...] = ()
    lifetime_peak: tuple[str, ...] = ()  # the allocator's own peak over its life
    op: tuple[str, ...] = ()  # the op the record names as the one it allocates for
    # True where ``reserved`` is held beside the allocated bytes (what is in use is their
    # sum: XSpace's bytes_reserved), False where it holds them (Kineto's caching pool).
    reserved_beside: bool = False


# Kineto's [memory] instants (2021: Bytes / Device Type / Device Id; newer: Addr, totals).
# The reader's stats view files ``Bytes`` as ``allocation_bytes``; an XSpace written from
# a Kineto trace keeps ``Bytes``.
_KINETO_MEMORY = MemoryRecord(
    size=(names.ALLOCATION_BYTES, names.KINETO_MEMORY_BYTES),
    size_label=names.KINETO_MEMORY_BYTES,
    address=(names.KINETO_MEMORY_ADDR,),
    allocated=(names.KINETO_MEMORY_TOTAL_ALLOCATED,),
    reserved=(names.KINETO_MEMORY_TOTAL_RESERVED,),
    device_type=(names.KINETO_MEMORY_DEVICE_TYPE,),
    device_id=(names.KINETO_MEMORY_DEVICE_ID,),
)
# TensorFlow's and XLA's allocators (TSL's MemoryAllocation / MemoryDeallocation).
_ALLOCATOR = MemoryRecord(
    size=(names.ALLOCATION_BYTES,),
    size_label=names.ALLOCATION_BYTES,
    address=(names.ADDRESS,),
    allocated=(names.BYTES_ALLOCATED,),
    reserved=(names.BYTES_RESERVED,),
    requested=(names.REQUESTED_BYTES,),
    allocator=(names.ALLOCATOR_NAME,),
    ordinal=(names.DEVICE_ORDINAL, names.INDEX_ON_HOST),
    lifetime_peak=(names.PEAK_BYTES_IN_USE,),
    op=(names.TF_OP,),
    reserved_beside=True,
)
MEMORY_RECORDS: Final[dict[EventKind, MemoryRecord]] = {
    EventKind.MEMORY_DELTA: _KINETO_MEMORY,
    EventKind.ALLOCATION: _ALLOCATOR,
    EventKind.DEALLOCATION: _ALLOCATOR,
}


# --- facts about the file as a whole ----------------------------------------------------------

# How a profile's time 0 was put on the UNIX clock (``time_base``).
CLOCK_BASE_TIME: Final = "Kineto baseTimeNanoseconds"
CLOCK_EPOCH: Final = "epoch timestamps"
CLOCK_XSPACE: Final = "XSpace per-host start"
CLOCK_RELATIVE: Final = "relative (not on the UNIX clock)"
# Profile.info keys the readers leave: the Chrome reader's note that timestamps are
# relative; Kineto's header key for the epoch its timestamps count from.
RELATIVE_CLOCK_INFO: Final = "clock"
BASE_TIME_INFO: Final = "baseTimeNanoseconds"
# Formats whose files carry one start per host (XSpace's planes share their host's).
_HOST_START_FORMATS: Final = frozenset({"xspace"})
# Formats that name their host inside the file (XSpace's ``hostnames``), beside the info key.
_OWN_HOST_NAMES: Final = {"xspace": "hostnames"}
# Formats only one framework writes: they name it where no event shows its hand.
_WRITER_FRAMEWORKS: Final = {"kineto": "PyTorch"}


def time_base(format: str, info: dict[str, object]) -> str:
    """How the profile's ``start_ns`` was found (one of the CLOCK_* texts)."""
    if RELATIVE_CLOCK_INFO in info:
        return CLOCK_RELATIVE
    if format in _HOST_START_FORMATS:
        return CLOCK_XSPACE
    if BASE_TIME_INFO in info:
        return CLOCK_BASE_TIME
    return CLOCK_EPOCH


def names_its_host(format: str, info: dict[str, object]) -> bool:
    """Whether the file itself names its host (so its ``Profile.host`` is no guess from the path)."""
    key = _OWN_HOST_NAMES.get(format)
    return key is not None and bool(info.get(key))


# How a rank read from the file itself (``distributed_rank``) is cited: Kineto's header key.
RANK_FROM_FILE: Final = names.KINETO_DISTRIBUTED_INFO


def distributed_rank(info: dict[str, object]) -> tuple[int | None, int | None]:
    """The profile's rank and world size in a distributed job: Kineto's ``distributedInfo``
    header, else the Task Environment stats an XSpace written from Kineto keeps them in."""
    value = info.get(names.KINETO_DISTRIBUTED_INFO)
    if isinstance(value, dict):
        return _whole(value.get("rank")), _whole(value.get("world_size"))
    environment = info.get(names.TASK_ENVIRONMENT_INFO)
    if isinstance(environment, dict):
        return _whole(environment.get(names.DISTRIBUTED_RANK)), _whole(environment.get(names.DISTRIBUTED_WORLD_SIZE))
    return None, None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def writer_framework(format: str) -> str | None:
    """The one framework that writes files of this format, or None."""
    return _WRITER_FRAMEWORKS.get(format)
