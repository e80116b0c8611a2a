"""PyTorch framework ops as roofline points: their kernels' device time with FLOPs and
bytes estimated from their recorded input shapes (``shape_costs``), in the same columns
as the XLA ops (``hlo_ops.XlaOps``), so roofline_model reads either.

Which op a kernel counts for
    A kernel (copy, memset) belongs to the host op that launched it, the deepest op with
    its External id (as framework_op_stats attributes device time). Its cost is that of
    the outermost op above it, on the same thread, whose estimator reads its arguments:
    ``aten::linear`` rather than the ``aten::addmm`` inside it, and
    ``aten::cudnn_convolution_backward`` for the kernels of both its ``_input`` and
    ``_weight`` halves, whose own arguments may not say the weight's shape. An op none of
    whose ancestors has an estimate is listed under its own (the launching op's) name
    with no FLOPs. Kernels that no framework op launched (or that were launched where the
    profile kept no ``External id``) are not framework ops and are left out.

The output's size of a convolution whose stride and padding are not recorded
    is read from its autograd node (``CONV_BACKWARD_NODE``, same ``Sequence number``):
    the node's first input is the gradient of the output.

Per entry (one per estimated op occurrence and device plane):
    program   the op's name ("aten::mm"): roofline_model's program rows are op names;
    name      the op's name and its tensor inputs' shapes and dtype
              ("aten::mm(32x2048, 2048x1000) float"): its op rows are one per shape;
    category  framework_op_stats' type of the op (GEMM, Convolution, ...);
    time_ps   the op's kernels' durations summed, on that plane; self_ps the same;
    flops, bytes_accessed  the estimate, NaN where there is none.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TypedDict

import numpy as np

from stepscope.analysis.grouping import Groups, KeyTable
from stepscope.analysis.ops.ops import Ops, Side, launchers
from stepscope.analysis.ops.shape_costs import ESTIMATORS, Call, Cost, call_of, estimate
from stepscope.analysis.xla.hlo_ops import XlaOps
from stepscope.trace import names
from stepscope.trace.kinds import INPUT_SHAPES, INPUT_TYPES, INPUT_VALUES
from stepscope.trace.model import NO_ID, Plane, Profile, distinct_indices
from stepscope.trace.stat_types import StatValue
from stepscope.trace.stats import stats_of

# Autograd nodes of a convolution (CudnnConvolutionBackward, ConvolutionBackward0): their
# first input is the gradient of the forward op's output, so its dims are the output's.
CONV_BACKWARD_NODE = re.compile(r"^\w*Conv\w*Backward\d*$")
SEQUENCE_NUMBER = "Sequence number"


@dataclass(frozen=True)
class ShapeCosts:
    """The estimated framework ops, and what each assumed for an argument it did not find."""

    ops: XlaOps
    assumed: np.ndarray  # per entry, ``Cost.assumed``: "" where nothing was assumed
    start_ps: np.ndarray  # per entry, the host op's start (which step it belongs to)


class Assumption(TypedDict):
    """What shape estimates took for an argument the profile did not record, and for how many."""

    assumption: str  # ``Cost.assumed``: "is_causal not recorded: counted as full attention"
    ops: int  # estimate entries (op occurrences per device plane)


def count_assumptions(assumed: np.ndarray) -> list[Assumption]:
    """``ShapeCosts.assumed`` (of some entries) counted per assumption, most frequent first."""
    counts = Counter(text for text in assumed.tolist() if text)
    return [Assumption(assumption=text, ops=count) for text, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


# The stats a call is read from (``_Calls``).
CALL_STATS = frozenset((INPUT_SHAPES, INPUT_TYPES, INPUT_VALUES, SEQUENCE_NUMBER))


class _Calls:
    """The host ops' calls (their arguments as ``call_of`` reads them) and estimated costs:
    the stats they are read from read in bulk up front (a row at a time, 350k rows of a
    10M-event profile took seconds), and each op estimated once (many launching ops share
    the outer op their kernels count for)."""

    def __init__(self, host: Plane, op_rows: np.ndarray, rows: np.ndarray) -> None:
        """``op_rows``: the host's ops (the autograd nodes among them are read too);
        ``rows``: the ops whose calls are asked for."""
        meta = host.metadata
        is_node = np.asarray([bool(CONV_BACKWARD_NODE.match(name)) for name in meta.names], dtype=bool)
        nodes = op_rows[is_node[host.events.metadata_id[op_rows]]]
        rows = np.union1d(rows, nodes)
        names_of = [str(name) for name in meta.name_array[host.events.metadata_id[rows]].tolist()]
        found = stats_of(host.stats, rows, names_of, CALL_STATS)
        self._stats = {row: {stat.name: stat.value for stat in stats} for row, stats in zip(rows.tolist(), found)}
        self.outputs = _output_shapes(nodes.tolist(), self._stats)
        self._estimated: dict[int, tuple[Call | None, Cost | None]] = {}

    def call(self, row: int, with_outputs: bool = False) -> Call | None:
        stats = self._stats[row]
        call = call_of(stats.get(INPUT_SHAPES), stats.get(INPUT_TYPES), stats.get(INPUT_VALUES))
        sequence = stats.get(SEQUENCE_NUMBER)
        if call is not None and with_outputs and isinstance(sequence, int) and sequence in self.outputs:
            call = replace(call, output=self.outputs[sequence])
        return call

    def estimated(self, row: int, name: str) -> tuple[Call | None, Cost | None]:
        """Op ``row``'s call (the output's dims filled from its autograd node) and cost."""
        found = self._estimated.get(row)
        if found is None:
            call = self.call(row, with_outputs=True)
            found = self._estimated[row] = (call, estimate(name, call) if call is not None else None)
        return found


def _output_shapes(nodes: list[int], stats_of_row: dict[int, dict[str, StatValue]]) -> dict[int, tuple[int, ...]]:
    """Sequence number -> the forward output's dims, from the convolutions' autograd nodes
    (``CONV_BACKWARD_NODE``: rows ``nodes``); a number two nodes share (two forward
    threads) says nothing."""
    found: dict[int, tuple[int, ...] | None] = {}
    for row in nodes:
        stats = stats_of_row[row]
        sequence = stats.get(SEQUENCE_NUMBER)
        call = call_of(stats.get(INPUT_SHAPES), stats.get(INPUT_TYPES))
        grad = call.tensor(0) if call is not None else None
        if not isinstance(sequence, int) or grad is None:
            continue
        found[sequence] = grad.dims if sequence not in found else None
    return {sequence: dims for sequence, dims in found.items() if dims is not None}


def _signature(name: str, call: Call | None) -> str:
    if call is None:
        return name
    tensors = [t for t in call.tensors if t is not None]
    shapes = ", ".join("x".join(str(d) for d in t.dims) or "scalar" for t in tensors)
    dtype = next((t.dtype for t in tensors if t.dtype), "")
    return f"{name}({shapes}) {dtype}".rstrip()


@dataclass(frozen=True)
class Counted:
    """The op a launching op's kernels count for (see the module docstring): its row, its
    estimated cost and its call; cost None where no estimator knows it."""

    row: int
    cost: Cost | None
    call: Call | None


def _candidates(host: Plane, row: int, op_type: dict[int, str], known: dict[int, list[tuple[int, str]]]) -> list[tuple[int, str]]:
    """The ops above the launching op ``row`` (ops: the rows of ``op_type``) that have an
    estimator, outermost first, with their names. ``known``: the same of rows already met
    (launching ops share their ancestors: each is looked at once)."""
    events, meta_names = host.events, host.metadata.name_array
    path = []
    at = row
    while at != NO_ID and at not in known:
        path.append(at)
        at = int(events.parent[at])
    found = known[at] if at != NO_ID else []
    for node in reversed(path):  # outermost first
        if node in op_type:
            name = str(meta_names[events.metadata_id[node]])
            if name in ESTIMATORS:
                found = [*found, (node, name)]
        known[node] = found
    return found


def _counted_for(row: int, candidates: list[tuple[int, str]], calls: _Calls) -> Counted:
    """The launching op's row -> the outermost of its ``candidates`` whose estimator gives a
    cost, else the launching op itself with no cost."""
    for candidate, name in candidates:
        call, cost = calls.estimated(candidate, name)
        if cost is not None:
            return Counted(candidate, cost, call)
    return Counted(row, None, calls.call(row))


def _launching_ops(profile: Profile, ops: Ops, launcher: KeyTable) -> tuple[np.ndarray, np.ndarray]:
    """The device ops (indices into ``ops``, plane by plane as ops lists them) and each one's
    launching host op (its row; NO_ID: none)."""
    device = np.flatnonzero(ops.side == Side.DEVICE)
    device = device[np.argsort(ops.plane[device], kind="stable")]
    launched = np.full(len(device), NO_ID, dtype=np.int64)
    for plane_index in distinct_indices(ops.plane[device]):
        here = np.flatnonzero(ops.plane[device] == plane_index)
        launched[here] = launcher.get(profile.planes[plane_index].events.external_id[ops.row[device[here]]], NO_ID)
    return device, launched


def find_shape_costs(profile: Profile, ops: Ops) -> ShapeCosts:
    plane_names = tuple(plane.name for plane in profile.planes)
    host = profile.plane(names.HOST_PLANE)
    empty = ShapeCosts(_empty(plane_names), np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64))
    if host is None:
        return empty
    host_index = profile.planes.index(host)
    events = host.events
    meta_names = host.metadata.name_array
    on_host = np.flatnonzero((ops.side == Side.HOST) & (ops.plane == host_index))
    host_rows = ops.row[on_host]
    launcher = launchers(events, host_rows)
    if not len(launcher):
        return empty
    op_type = dict(zip(host_rows.tolist(), ops.type_codes.at(on_host).tolist()))
    device, launched = _launching_ops(profile, ops, launcher)
    hit = launched != NO_ID
    if not hit.any():
        return empty
    # Each launching op once, then the op its time counts for.
    distinct, inverse = np.unique(launched[hit], return_inverse=True)
    known: dict[int, list[tuple[int, str]]] = {}
    candidates = [_candidates(host, row, op_type, known) for row in distinct.tolist()]
    asked = [candidate for found in candidates for candidate, _ in found]
    calls = _Calls(host, host_rows, np.union1d(distinct, np.asarray(asked, dtype=np.int64)))
    chosen = [_counted_for(row, found, calls) for row, found in zip(distinct.tolist(), candidates)]
    counted = np.asarray([found.row for found in chosen], dtype=np.int64)[inverse.reshape(-1)]
    by_row = {found.row: found for found in chosen}
    # One entry per (plane, op counted for), in the order of its first kernel.
    entries = Groups.of(ops.plane[device[hit]], counted)
    sums = entries.sum(ops.duration_ps[device[hit]])
    firsts = device[hit][entries.first]
    # Each op counted for described once (it has an entry on every plane it ran on).
    entry_rows, at = np.unique(counted[entries.first], return_inverse=True)
    at = at.reshape(-1)
    programs = [str(name) for name in meta_names[events.metadata_id[entry_rows]].tolist()]
    costs = [by_row[row].cost for row in entry_rows.tolist()]
    signatures = _objects([_signature(name, by_row[row].call) for name, row in zip(programs, entry_rows.tolist())])[at]
    time = np.asarray(sums, dtype=np.int64)
    xla = XlaOps(
        plane=ops.plane[firsts].astype(np.int64),
        row=entry_rows[at],
        name=signatures,
        expression=signatures.copy(),
        category=_objects([op_type.get(row, "") for row in entry_rows.tolist()])[at],
        program=_objects(programs)[at],
        program_id=np.full(len(time), "", dtype=object),
        time_ps=time,
        self_ps=time.copy(),
        flops=np.asarray([cost.flops if cost is not None else np.nan for cost in costs], dtype=np.float64)[at],
        bytes_accessed=np.asarray([cost.bytes_accessed if cost is not None else np.nan for cost in costs], dtype=np.float64)[at],
        plane_names=plane_names,
    )
    assumed = _objects([cost.assumed if cost is not None else "" for cost in costs])[at]
    return ShapeCosts(xla, assumed, events.start_ps[xla.row])


def _objects(values: list[str]) -> np.ndarray:
    column = np.empty(len(values), dtype=object)
    column[:] = values
    return column


def _empty(plane_names: tuple[str, ...]) -> XlaOps:
    ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    strings = np.zeros(0, dtype=object)
    return XlaOps(ints, ints, strings, strings, strings, strings, strings, ints, ints, floats, floats, plane_names)
