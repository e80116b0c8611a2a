"""Framework ops of a profile, host and device side, with their self times.

The same op list feeds framework_op_stats, the overview's top-10 and op_profile; each
reads it from the profile's ``OpStats``, which builds it once.

What counts as a framework op, per source:
- Kineto (PyTorch): host events of category ``cpu_op`` (2021: ``Operator``); on the device,
  kernels, copies and memsets, each attributed to the host op that launched it through
  Kineto's External id (so "aten::conv2d" on the device is the time of its kernels). Both
  are typed by ``op_categories`` (``aten::addmm`` -> GEMM), since Kineto records no type;
- XSpace (JAX, TensorFlow): host events named ``<op name>:<op type>`` (TensorFlow's
  executor) or carrying ``hlo_op`` (XLA ops run by the CPU backend) or ``tf_op``; on
  devices, the ``XLA Ops`` line, typed by their ``hlo_category`` stat or their name without
  its numeric suffix (``fusion.3`` -> ``fusion``); tf.data's iterator stages
  (``Iterator::...``) are ops of type ``Dataset``, as XProf lists them.

Never ops, whatever their category or stats: step markers (``ProfilerStep#N``, which the
2021 Kineto schema files as an ``Operator``, and host events carrying ``step_num``) are
spans around a step's ops; TensorFlow's allocator events (``MemoryAllocation``, carrying the
``tf_op`` they allocate for) record an allocation at an instant, and counted as ops they
added to the occurrences of the op they name.

Self time is an op's duration minus its direct children that are ops too, on its line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from stepscope.analysis.classify import DEVICE_ACTIVITIES, STEP_MARKER, event_activities
from stepscope.analysis.grouping import Coded
from stepscope.analysis.op_categories import categories, device_categories
from stepscope.trace import names
from stepscope.trace.model import NO_ID, Plane, Profile
from stepscope.trace.stat_types import StatValue
from stepscope.trace.stats import TypedStats

HOST, DEVICE = "Host", "Device"
KINETO_OP_CATEGORIES = frozenset({"cpu_op", "Operator"})
ALLOCATOR_EVENTS = frozenset({names.MEMORY_ALLOCATION, names.MEMORY_DEALLOCATION})
_SUFFIX = re.compile(r"[.:_-]?\d+$")
TF_DATASET_PREFIX = "Iterator::"
TF_DATASET_TYPE = "Dataset"
# "gradient_tape/MatMul/MatMul:_MklMatMul": TensorFlow op name, then type ("::" is C++).
TF_OP_EVENT = re.compile(r"^([^:\s][^:]*):([A-Za-z_]\w*)$")


@dataclass(frozen=True)
class Ops:
    """One entry per op occurrence."""

    side: np.ndarray  # 0 host, 1 device
    plane: np.ndarray
    row: np.ndarray
    name: np.ndarray  # object array of str
    type: np.ndarray  # object array of str
    duration_ps: np.ndarray
    self_ps: np.ndarray
    flops: np.ndarray  # float64, NaN where unknown
    bytes_accessed: np.ndarray

    def __len__(self) -> int:
        return len(self.row)

    @cached_property
    def name_codes(self) -> Coded:
        """``name`` as integer codes, made once for every table that groups ops by name."""
        return Coded.of(self.name)

    @cached_property
    def type_codes(self) -> Coded:
        return Coded.of(self.type)


def op_type_of(name: str) -> str:
    """``fusion.3`` -> ``fusion``; ``MatMul_1`` -> ``MatMul``."""
    return _SUFFIX.sub("", name) or name


def find_ops(profile: Profile) -> Ops:
    """The profile's ops (tools read them once, from ``OpStats.ops``)."""
    parts: list[dict[str, np.ndarray]] = []
    host = profile.plane(names.HOST_PLANE)
    kineto_names: dict[int, str] = {}
    if host is not None:
        host_part, kineto_names = _host_ops(profile, host)
        parts.append(host_part)
    for index, plane in enumerate(profile.planes):
        if plane.is_device:
            parts.append(_device_ops(index, plane, kineto_names))
    parts = [part for part in parts if len(part["row"])]
    if not parts:
        empty_i = np.zeros(0, dtype=np.int64)
        empty_o = np.zeros(0, dtype=object)
        return Ops(empty_i, empty_i, empty_i, empty_o, empty_o, empty_i, empty_i, np.zeros(0), np.zeros(0))
    return Ops(**{key: np.concatenate([part[key] for part in parts]) for key in parts[0]})


def _self_times(plane: Plane, is_op: np.ndarray) -> np.ndarray:
    """Duration minus the durations of direct children that are ops (all events)."""
    events = plane.events
    children = np.flatnonzero(is_op & (events.parent >= 0))
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


def _part(side: int, plane_index: int, plane: Plane, rows: np.ndarray, op_names: np.ndarray, types: np.ndarray, self_ps: np.ndarray) -> dict[str, np.ndarray]:
    flops = _numeric_metadata_stat(plane, names.FLOPS)
    accessed = _numeric_metadata_stat(plane, names.BYTES_ACCESSED)
    return {
        "side": np.full(len(rows), side, dtype=np.int64),
        "plane": np.full(len(rows), plane_index, dtype=np.int64),
        "row": rows,
        "name": op_names,
        "type": types,
        "duration_ps": plane.events.duration_ps[rows],
        "self_ps": self_ps[rows],
        "flops": flops[rows],
        "bytes_accessed": accessed[rows],
    }


def _host_ops(profile: Profile, host: Plane) -> tuple[dict[str, np.ndarray], dict[int, str]]:
    """Host op occurrences, and (for Kineto) external id -> the op that has it."""
    events = host.events
    meta = host.metadata
    event_names = meta.name_array[events.metadata_id]
    # Per event type: Kineto's op categories; never ops (step markers, allocator events).
    kineto_type = np.isin(np.asarray(meta.categories, dtype=object), list(KINETO_OP_CATEGORIES))
    never_type = np.asarray([bool(STEP_MARKER.match(name)) or name in ALLOCATOR_EVENTS for name in meta.names], dtype=bool)
    never = never_type[events.metadata_id] | (events.step_num != NO_ID) if len(meta) else np.zeros(0, bool)
    is_kineto_op = kineto_type[events.metadata_id] & ~never if len(meta) else np.zeros(0, bool)
    op_names = event_names.copy()
    types = np.asarray([op_type_of(n) for n in meta.names], dtype=object)[events.metadata_id] if len(meta) else np.zeros(0, object)
    is_op = is_kineto_op.copy()
    if is_kineto_op.any():
        types[is_kineto_op] = categories(meta.name_array)[events.metadata_id[is_kineto_op]]
    if profile.format == "xspace":
        # TensorFlow's executor names its op events "<op name>:<op type>".
        tf_ops = [TF_OP_EVENT.match(name) for name in meta.names]
        op_of_type = np.asarray([m is not None for m in tf_ops], dtype=bool)
        tf_rows = np.flatnonzero(op_of_type[events.metadata_id]) if len(meta) else np.zeros(0, dtype=np.int64)
        if len(tf_rows):
            is_op[tf_rows] = True
            split = [(m.group(1), m.group(2)) if m else ("", "") for m in tf_ops]
            op_names[tf_rows] = np.asarray([split[i][0] for i in events.metadata_id[tf_rows].tolist()], dtype=object)
            types[tf_rows] = np.asarray([split[i][1] for i in events.metadata_id[tf_rows].tolist()], dtype=object)
        # tf.data's iterator stages ("Iterator::Root::ParallelMapV2") are ops of type
        # "Dataset" in XProf's tables; the input pipeline analyzer explains them further.
        dataset_type = np.asarray([name.startswith(TF_DATASET_PREFIX) for name in meta.names], dtype=bool)
        dataset_rows = np.flatnonzero(dataset_type[events.metadata_id]) if len(meta) else np.zeros(0, dtype=np.int64)
        is_op[dataset_rows] = True
        types[dataset_rows] = TF_DATASET_TYPE
        op_names[dataset_rows] = event_names[dataset_rows]
    for stat in (names.HLO_OP, names.TF_OP):
        rows, values = stat_column(host, stat)
        if not len(rows):
            continue
        is_op[rows] = True
        texts = np.asarray([str(v) for v in values], dtype=object)
        if stat == names.TF_OP:  # "scope/dense/MatMul:MatMul" -> name and type
            op_names[rows] = np.asarray([t.rsplit(":", 1)[0] for t in texts], dtype=object)
            types[rows] = np.asarray([t.rsplit(":", 1)[-1] for t in texts], dtype=object)
        else:
            op_names[rows] = texts
            types[rows] = np.asarray([op_type_of(t) for t in texts], dtype=object)
    is_op &= ~never
    rows = np.flatnonzero(is_op)
    external = {}
    kineto_rows = np.flatnonzero(is_kineto_op & (events.external_id != NO_ID))
    # Deepest op wins: an External id belongs to the op that launched the work.
    for row in kineto_rows[np.argsort(events.depth[kineto_rows], kind="stable")].tolist():
        external[int(events.external_id[row])] = str(event_names[row])
    index = profile.planes.index(host)
    return _part(0, index, host, rows, op_names[rows], types[rows], _self_times(host, is_op)), external


def _device_ops(index: int, plane: Plane, kineto_names: dict[int, str]) -> dict[str, np.ndarray]:
    events = plane.events
    activity = event_activities(plane)
    is_op = np.isin(activity, [int(a) for a in DEVICE_ACTIVITIES])
    rows = np.flatnonzero(is_op)
    event_names = plane.metadata.name_array[events.metadata_id[rows]] if len(rows) else np.zeros(0, object)
    op_names = event_names.copy()
    if kineto_names:
        launched = [kineto_names.get(int(e)) for e in events.external_id[rows].tolist()]
        op_names = np.asarray([op or kernel for op, kernel in zip(launched, event_names)], dtype=object)
        types = device_categories(event_names, op_names)
    else:
        # XLA ops are typed by their hlo_category (on the op's metadata or the event).
        meta_types = np.asarray(
            [
                next((str(s.value) for s in stats if s.name == names.HLO_CATEGORY), op_type_of(name))
                for name, stats in zip(plane.metadata.names, plane.metadata.stats)
            ],
            dtype=object,
        )
        types = meta_types[events.metadata_id[rows]] if len(rows) else np.zeros(0, object)
        category_rows, categories = stat_column(plane, names.HLO_CATEGORY)
        if len(category_rows):
            by_row = dict(zip(category_rows.tolist(), categories))
            types = np.asarray([by_row.get(r, t) for r, t in zip(rows.tolist(), types)], dtype=object)
    return _part(1, index, plane, rows, op_names, types, _self_times(plane, is_op))
