"""Framework ops of a profile, host and device side, with their self times.

The same op list feeds framework_op_stats, the overview's top-10 and op_profile; each
reads it from the profile's ``OpStats``, which builds it once.

What counts as a framework op, by the kinds the readers found (``trace.kinds``) and the
stats, one function per source of host ops (``HOST_OP_SOURCES``):
- framework ops (``FRAMEWORK_OP``: PyTorch's, Kineto's ``cpu_op``); on the device,
  kernels, copies and memsets, each attributed to the host op that launched it through
  the external id (so "aten::conv2d" on the device is the time of its kernels). Both
  are typed by ``op_categories`` (``aten::addmm`` -> GEMM), since PyTorch records no type;
- host events named ``<op name>:<op type>`` (``NAMED_OP``: TensorFlow's executor) or
  carrying ``hlo_op`` (XLA ops run by the CPU backend) or ``tf_op``; on devices, the
  ``XLA Ops`` line, typed by their ``hlo_category`` stat or their name without its numeric
  suffix (``fusion.3`` -> ``fusion``); input stages (``INPUT_STAGE``: tf.data's
  ``Iterator::...``) are ops of type ``Dataset``, as XProf lists them.

Where none of these finds an op anywhere in the profile (a plain Python program captured
with ``stepscope.trace`` / ``stepscope.data`` annotations, a Chrome trace of named spans),
the host's events are its ops, typed ``ANNOTATION_TYPE``: what the user marked is what
framework_op_stats, the overview's top operations and the verdict's evidence can show,
not an empty table.

Never ops, whatever their category or stats: step markers (``ProfilerStep#N``, which the
2021 Kineto schema files as an ``Operator``, and host events carrying ``step_num``) are
spans around a step's ops; TensorFlow's allocator events (``MemoryAllocation``, carrying the
``tf_op`` they allocate for) record an allocation at an instant, and counted as ops they
added to the occurrences of the op they name.

Self time is an op's duration minus its direct children that are ops too, on its line.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import IntEnum
from typing import cast

import numpy as np

from stepscope.analysis.grouping import Coded, KeyTable, Labels, factorize
from stepscope.analysis.ops.op_categories import DEVICE_OWN_CATEGORIES, OTHER, categories, category_of
from stepscope.analysis.steps.classify import DEVICE_ACTIVITIES, STEP_MARKER, event_activities
from stepscope.trace import names
from stepscope.trace.kinds import EventKind
from stepscope.trace.model import NO_ID, EventTable, Plane, Profile
from stepscope.trace.op_names import TF_DATASET_TYPE, op_type_of
from stepscope.trace.stat_types import StatValue
from stepscope.trace.stats import TypedStats

HOST, DEVICE = "Host", "Device"
ANNOTATION_TYPE = "annotation"  # a user's span, the op where a profile has no framework op


class Side(IntEnum):
    """Where an op ran: the values of the ``Ops.side`` column (an int array, compared whole:
    ``ops.side == Side.DEVICE``)."""

    HOST = 0
    DEVICE = 1

    @property
    def label(self) -> str:
        """The side as the tables name it: "Host", "Device"."""
        return DEVICE if self is Side.DEVICE else HOST


@dataclass(frozen=True)
class Ops:
    """One entry per op occurrence. Names and types are codes (``find_ops`` builds them
    mostly per event type), which every table groups by; ``Coded.at`` gives the strings
    of the rows a caller needs (whole object columns cost a 1M-event profile 30 ms that
    no table needs)."""

    side: np.ndarray  # Side values
    plane: np.ndarray
    row: np.ndarray
    name_codes: Coded
    type_codes: Coded
    duration_ps: np.ndarray
    self_ps: np.ndarray
    flops: np.ndarray  # float64, NaN where unknown
    bytes_accessed: np.ndarray

    def __len__(self) -> int:
        return len(self.row)


def find_ops(profile: Profile) -> Ops:
    """The profile's ops (tools read them once, from ``OpStats.ops``)."""
    parts: list[Part] = []
    host = profile.plane(names.HOST_PLANE)
    launched_by = KeyTable.empty()
    host_names: list[str] = []
    if host is not None:
        host_part, launched_by = _host_ops(profile, host)
        host_names = host_part.names
        parts.append(host_part)
    for index, plane in enumerate(profile.planes):
        if plane.is_device:
            parts.append(_device_ops(index, plane, launched_by, host_names))
    parts = [part for part in parts if len(part.columns["row"])]
    if not parts and host is not None:
        parts = [part for part in [_annotation_ops(profile, host)] if len(part.columns["row"])]
    if not parts:
        empty_i = np.zeros(0, dtype=np.int64)
        nothing = Coded(empty_i, [])
        return Ops(empty_i, empty_i, empty_i, nothing, nothing, empty_i, empty_i, np.zeros(0), np.zeros(0))
    columns = {key: np.concatenate([part.columns[key] for part in parts]) for key in parts[0].columns if not key.endswith("_code")}
    # Each part's codes into one table per column (equal strings of two planes, one code).
    name_table: dict[Hashable, int] = {}
    type_table: dict[Hashable, int] = {}
    name_code = np.concatenate([factorize(part.names, name_table)[0][part.columns["name_code"]] for part in parts])
    type_code = np.concatenate([factorize(part.types, type_table)[0][part.columns["type_code"]] for part in parts])
    return Ops(
        **columns,
        name_codes=Coded(name_code, cast(list[str], list(name_table))),
        type_codes=Coded(type_code, cast(list[str], list(type_table))),
    )


def _self_times(plane: Plane, is_op: np.ndarray) -> np.ndarray:
    """Duration minus the durations of direct children that are ops (all events).

    Device work does not nest: two kernels that overlap on one GPU stream (CUPTI's
    timestamps of back-to-back or concurrent kernels; 31 overlaps in one V100 trace) ran
    side by side, not one inside the other, yet the plane's nesting (by interval, the same
    for every line) makes the later one a child. So on a device plane only the ``XLA Ops``
    line, where XLA's ops are a tree, subtracts children; elsewhere self = total, the
    duration kernel_stats counts (the nesting itself stays, for the timeline's rows)."""
    events = plane.events
    nested = is_op & (events.parent >= 0)
    if plane.is_device:
        xla_ops = plane.line_index(names.XLA_OPS_LINE)
        nested &= events.line == (-1 if xla_ops is None else xla_ops)
    children = np.flatnonzero(nested)
    child_time = np.bincount(events.parent[children], weights=events.duration_ps[children], minlength=len(events))
    return events.duration_ps - child_time.astype(np.int64)


def stat_column(plane: Plane, stat: str) -> tuple[np.ndarray, list[StatValue]]:
    """Rows carrying ``stat`` and its values, for stores that index stats (XSpace); JSON
    sources keep their args undecoded and are classified by category instead."""
    if isinstance(plane.stats, TypedStats):
        return plane.stats.column(stat)
    return np.zeros(0, dtype=np.int64), []


def _numeric_metadata_stat(plane: Plane, stat: str) -> np.ndarray:
    """A per-event-type stat (XLA ops' flops / bytes_accessed live on their metadata)."""
    values = np.full(len(plane.metadata), np.nan)
    for index, stats in enumerate(plane.metadata.stats):
        for item in stats:
            if item.name == stat and isinstance(item.value, (int, float)):
                values[index] = float(item.value)
    return values[plane.events.metadata_id] if len(values) else np.zeros(len(plane.events))


@dataclass(frozen=True)
class Part:
    """One plane's ops: the ``Ops`` columns, names and types as codes into ``names`` / ``types``."""

    columns: dict[str, np.ndarray]
    names: list[str]
    types: list[str]


def _part(side: Side, plane_index: int, plane: Plane, rows: np.ndarray, op_names: Labels, types: Labels, self_ps: np.ndarray) -> Part:
    flops = _numeric_metadata_stat(plane, names.FLOPS)
    accessed = _numeric_metadata_stat(plane, names.BYTES_ACCESSED)
    columns = {
        "side": np.full(len(rows), side, dtype=np.int64),
        "plane": np.full(len(rows), plane_index, dtype=np.int64),
        "row": rows,
        "duration_ps": plane.events.duration_ps[rows],
        "self_ps": self_ps[rows],
        "flops": flops[rows],
        "bytes_accessed": accessed[rows],
        "name_code": op_names.codes[rows],
        "type_code": types.codes[rows],
    }
    return Part(columns, op_names.values(), types.values())


@dataclass
class _HostOps:
    """The host's op occurrences as the sources of ops (``HOST_OP_SOURCES``) mark them, in
    turn: per event whether it is an op, its name and its type, as codes (``grouping.Labels``,
    mostly per event type); a later source's name or type wins."""

    plane: Plane
    is_op: np.ndarray
    op_names: Labels
    types: Labels
    own_names: np.ndarray  # each event's own name, as its code in op_names
    never: np.ndarray  # events that are never ops (``_never_ops``)

    def of_kind(self, kind: EventKind) -> np.ndarray:
        """Rows of events of ``kind``."""
        meta = self.plane.metadata
        if not len(meta):
            return np.zeros(0, dtype=np.int64)
        rows: np.ndarray = np.flatnonzero((meta.kinds == kind)[self.plane.events.metadata_id])
        return rows

    def framework_rows(self) -> np.ndarray:
        """Rows of framework ops (never-ops left out)."""
        rows = self.of_kind(EventKind.FRAMEWORK_OP)
        kept: np.ndarray = rows[~self.never[rows]]
        return kept


def _framework_ops(found: _HostOps) -> None:
    """A framework's ops (PyTorch's ``aten::...``), typed by ``op_categories`` (``aten::addmm``
    -> GEMM), since the framework records no type."""
    rows = found.framework_rows()
    found.is_op[rows] = True
    if len(rows):
        meta = found.plane.metadata
        found.types.assign_kinds(rows, categories(meta.name_array).tolist(), found.plane.events.metadata_id[rows])


def _named_ops(found: _HostOps) -> None:
    """Events named ``<op name>:<op type>`` (TensorFlow's executor)."""
    rows = found.of_kind(EventKind.NAMED_OP)
    if not len(rows):
        return
    found.is_op[rows] = True
    meta = found.plane.metadata
    split = [name.rsplit(":", 1) if kind == EventKind.NAMED_OP else ("", "") for name, kind in zip(meta.names, meta.kinds.tolist())]
    ids = found.plane.events.metadata_id[rows]
    found.op_names.assign_kinds(rows, [name for name, _ in split], ids)
    found.types.assign_kinds(rows, [op_type for _, op_type in split], ids)


def _input_stages(found: _HostOps) -> None:
    """Input pipeline stages (tf.data's ``Iterator::Root::ParallelMapV2``) are ops of type
    "Dataset" in XProf's tables, under their own name; the input pipeline analyzer explains
    them further."""
    rows = found.of_kind(EventKind.INPUT_STAGE)
    found.is_op[rows] = True
    found.types.assign(rows, [TF_DATASET_TYPE] * len(rows))
    found.op_names.codes[rows] = found.own_names[rows]


def _hlo_op_stats(found: _HostOps) -> None:
    """Events carrying ``hlo_op``: XLA ops run by a CPU backend, typed by the name without
    its numeric suffix."""
    rows, values = stat_column(found.plane, names.HLO_OP)
    if len(rows):
        texts = [str(v) for v in values]
        found.is_op[rows] = True
        found.op_names.assign(rows, texts)
        found.types.assign(rows, [op_type_of(t) for t in texts])


def _tf_op_stats(found: _HostOps) -> None:
    """Events carrying ``tf_op`` ("scope/dense/MatMul:MatMul" -> name and type)."""
    rows, values = stat_column(found.plane, names.TF_OP)
    if len(rows):
        texts = [str(v) for v in values]
        found.is_op[rows] = True
        found.op_names.assign(rows, [t.rsplit(":", 1)[0] for t in texts])
        found.types.assign(rows, [t.rsplit(":", 1)[-1] for t in texts])


# The sources of host ops, in the order they mark them (a later one's name and type win).
HOST_OP_SOURCES: tuple[Callable[[_HostOps], None], ...] = (_framework_ops, _named_ops, _input_stages, _hlo_op_stats, _tf_op_stats)


def _never_ops(plane: Plane, also: frozenset[str] = frozenset()) -> np.ndarray:
    """Events that are never ops: step markers (by name, or carrying ``step_num``) and
    allocator events; ``also``: more names."""
    meta, events = plane.metadata, plane.events
    if not len(meta):
        return np.zeros(0, bool)
    allocator = np.isin(meta.kinds, [EventKind.ALLOCATION, EventKind.DEALLOCATION])
    never_type = allocator | np.asarray([bool(STEP_MARKER.match(name)) or name in also for name in meta.names], dtype=bool)
    never: np.ndarray = never_type[events.metadata_id] | (events.step_num != NO_ID)
    return never


def _host_ops(profile: Profile, host: Plane) -> tuple[Part, KeyTable]:
    """Host op occurrences, and external id -> the code (in the part's names) of the name of
    the framework op that has it."""
    ids = host.events.metadata_id
    op_names = Labels.per_kind(host.metadata.names, ids)
    types = Labels.per_kind([op_type_of(n) for n in host.metadata.names], ids)
    own_names = op_names.codes.copy()
    found = _HostOps(host, np.zeros(len(ids), dtype=bool), op_names, types, own_names, _never_ops(host))
    for source in HOST_OP_SOURCES:
        source(found)
    found.is_op &= ~found.never
    launched = launchers(host.events, found.framework_rows())
    external = KeyTable(launched.keys, own_names[launched.values])
    index = profile.planes.index(host)
    return _part(Side.HOST, index, host, np.flatnonzero(found.is_op), found.op_names, found.types, _self_times(host, found.is_op)), external


def _annotation_ops(profile: Profile, host: Plane) -> Part:
    """The host's events as ops of type ``ANNOTATION_TYPE`` (step markers and allocator
    events never), for a profile in which nothing else is an op."""
    ids, meta = host.events.metadata_id, host.metadata
    is_op = ~_never_ops(host, frozenset({names.STEPSCOPE_STEP}))
    types = Labels.per_kind([ANNOTATION_TYPE] * len(meta.names), ids)
    return _part(Side.HOST, profile.planes.index(host), host, np.flatnonzero(is_op), Labels.per_kind(meta.names, ids), types, _self_times(host, is_op))


def launchers(events: EventTable, rows: np.ndarray) -> KeyTable:
    """External id -> the row, among ``rows`` (ascending), of the op that launched the device
    work with that id: the deepest op that carries it, the last of them where two are as
    deep. One rule for framework_op_stats' names, the roofline's costs and op_profile."""
    rows = rows[events.external_id[rows] != NO_ID]
    by_depth = rows[np.argsort(events.depth[rows], kind="stable")]
    return KeyTable.last_of(events.external_id[by_depth], by_depth)


def _device_ops(index: int, plane: Plane, launched_by: KeyTable, host_names: list[str]) -> Part:
    """A device plane's ops. Where the host's framework ops link their launches by external id
    (PyTorch), each is named after the host op that launched it (``launched_by``: external id -> that op's code among ``host_names``), else its own
    name; names and types are codes, per event type or per launching op."""
    events = plane.events
    meta = plane.metadata
    activity = event_activities(plane)
    is_op = np.isin(activity, [int(a) for a in DEVICE_ACTIVITIES])
    rows = np.flatnonzero(is_op)
    kinds = events.metadata_id[rows]
    op_names, types = Labels(len(events)), Labels(len(events))
    if len(launched_by):
        # The host's names first, so that the launching ops' codes hold here too.
        op_names.table.update((name, code) for code, name in enumerate(host_names))
        op_names.assign_kinds(rows, meta.names, kinds)
        own = op_names.codes[rows]
        launched = launched_by.get(events.external_id[rows], -1)
        unnamed = op_names.table.get("", -1)  # an op named "" names nothing: the kernel's own
        named = (launched >= 0) & (launched != unnamed)
        op_names.codes[rows] = np.where(named, launched, own)
        # A copy, memset or collective is that, whatever op launched it; other work takes
        # its op's category, or its own where the op's is "other" (cuDNN's
        # ``implicit_gemm`` kernels of ``aten::cudnn_convolution`` are convolution).
        category, types.table = factorize([category_of(str(name)) for name in op_names.table])
        own_category, op_category = category[own], category[op_names.codes[rows]]
        keep_own = np.isin(own_category, [types.table[c] for c in DEVICE_OWN_CATEGORIES if c in types.table]) | (op_category == types.table.get(OTHER, -1))
        types.codes[rows] = np.where(keep_own, own_category, op_category)
    else:
        # XLA ops by their instruction's name (``copy-done.2``), not the HLO text.
        op_names.assign_kinds(rows, meta.labels, kinds)
        # XLA ops are typed by their hlo_category (on the op's metadata or the event).
        meta_types = [next((str(s.value) for s in stats if s.name == names.HLO_CATEGORY), op_type_of(label)) for label, stats in zip(meta.labels, meta.stats)]
        types.assign_kinds(rows, meta_types, kinds)
        category_rows, categories = stat_column(plane, names.HLO_CATEGORY)
        if len(category_rows):
            by_row = dict(zip(category_rows.tolist(), categories))
            marked = np.fromiter(by_row, dtype=np.int64, count=len(by_row))
            inside = np.isin(marked, rows)
            types.assign(marked[inside], [value for value, keep in zip(by_row.values(), inside.tolist()) if keep])
    return _part(Side.DEVICE, index, plane, rows, op_names, types, _self_times(plane, is_op))
