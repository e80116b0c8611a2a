"""op_profile: where a device's time goes, as a tree program -> op category -> op (XProf's op profile).

Which ops
    ``find_ops``'s device entries when the profile has any (the ``XLA Ops`` line of a
    TPU / XLA-on-GPU plane; kernels, copies and memsets of a Kineto trace), else its host
    entries (Kineto ``cpu_op``s, XLA ops run by the CPU backend, TensorFlow ops). One
    device at a time: by default the first device plane, by ordinal, that ran ops;
    ``device=NAME`` picks another, ``device="all"`` adds up every device (as XProf does),
    ``device="/host:CPU"`` shows the host side.

Levels
    root     the device (its plane name; "all devices"; "/host:CPU").
    program  XSpace: the op's ``hlo_module`` stat, else the event enclosing the op's start
             on its plane's ``XLA Modules`` line (``jit_step(1234...)``). Otherwise (Kineto,
             Chrome, TensorFlow ops, ops outside any module) one program named after the
             source file (``a100_ddp_cnn_rank0_of_2``), or "PyTorch" when there is none.
    category ``find_ops``'s op type: XLA's ``hlo_category`` (``loop fusion``, ``convolution``)
             or the name without its numeric suffix; for Kineto ops and the device work
             they launched, the op's category from ``op_categories`` (``GEMM``,
             ``convolution``, ``memory copy``...).
    op       one node per distinct name within its category: device side, the event's own
             name (HLO op ``fusion.3``, a kernel name, ``Memcpy HtoD (Pageable -> Device)``);
             host side, ``find_ops``'s op name.

Numbers (every node)
    time_ps        the sum of the self times of the op occurrences under the node: an XLA
                   op timed by the device's clock (a ``device_duration_ps`` stat: TPU) takes
                   its self time from the shared XLA op table (``hlo_ops``: its device-clock
                   duration, the time hlo_stats and XProf show); every other op, its duration
                   minus its child ops on the same line. Integers: a node's children, the
                   folded one included, add up to it exactly, and nothing is counted twice.
    time_percent   time_ps / the root's time_ps ("exclude idle": the root is 100).
    time_percent_with_idle  time_ps / (the root's time_ps + idle), idle being, per device
                   plane, its active span (first shown op's start to last one's end) minus
                   the union of the shown ops' intervals, summed (``op_table.idle_in_span_ps``:
                   the overview's device idle and framework_op_stats' IDLE row). Both percentages are on
                   every node, so the UI's "exclude idle" toggle needs no second request.
    occurrences    op executions under the node.
    flops, bytes_accessed  summed over the ops under the node whose source records them
                   (XLA cost analysis, XSpace metadata stats); null when none does.
    gflops_per_second  flops / time (self time, as shown); null without flops or time.
    flops_utilization  gflops_per_second / the device's peak, from the device plane's
                   ``peak_teraflops_per_second`` stat; null when either is unknown. It is
                   not clamped; ``color_hint`` is, to [0, 1], for the UI's colour scale.
    memory_bandwidth_gb_per_second  bytes_accessed / time.
    expression, shape  op nodes only, read for the ops shown (not folded), from one
                   occurrence (the one with the most self time): XSpace ``long_name`` or the
                   HLO text XLA puts in the event name, else ``hlo_op``; ``shape_with_layout``.
                   Kineto: the "Input Dims" of the op (for device work: of the op that
                   launched it). null when the source has none.
    children       at most ``top_n`` (default 10) children by time; the rest are folded into
                   one node of the same kind named "(K more)" with ``folded`` = K, their summed
                   numbers and no children.

The JSON form is ``OpProfileResult``'s fields, ``root`` an ``OpProfileNode`` (their types
are its schema).

``exclude_idle`` is the view the UI opens with; it changes no number. A profile without
ops gives a root of time 0 with no children.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from stepscope.analysis.grouping import KeyTable
from stepscope.analysis.ops.op_table import idle_in_span_ps
from stepscope.analysis.ops.ops import DEVICE, HOST, Ops, Side, launchers, stat_column
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import Option, ToolResult, tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.errors import StepscopeError
from stepscope.trace import names
from stepscope.trace.kinds import INPUT_SHAPES
from stepscope.trace.model import NO_ID, Plane, Profile

TOOL = "op_profile"
DEFAULT_TOP_N = 10
ALL_DEVICES = "all"
ROOT, PROGRAM, CATEGORY, OP = "root", "program", "category", "op"
FRAMEWORK_PROGRAM = "PyTorch"  # the program of framework ops from a profile with no file name
# Stat names this tool reads that stepscope.trace.names does not hold (yet).
PEAK_TERAFLOPS_PER_SECOND = names.PEAK_TERAFLOPS
LONG_NAME = names.LONG_NAME
SHAPE_WITH_LAYOUT = names.SHAPE_WITH_LAYOUT

_SOURCE_SUFFIXES = re.compile(r"(\.(pt|trace|json|gz|xplane|pb))+$")
_DIGITS = re.compile(r"(\d+)")

COLUMNS = (
    Column("program", "Program", "string"),
    Column("category", "Category", "string"),
    Column("name", "Op", "string"),
    Column("occurrences", "Occurrences"),
    Column("time_us", "Time (us)"),
    Column("time_percent", "Time %"),
    Column("time_percent_with_idle", "Time % incl. idle"),
    Column("gflops_per_second", "GFLOP/s"),
    Column("flops_utilization", "FLOPS utilization"),
    Column("memory_bandwidth_gb_per_second", "Memory GB/s"),
    Column("time_ps", "Time (ps)"),
)


@dataclass
class OpProfileNode:
    """A node of the tree (root, program, category, op, or a "(K more)" fold); its fields
    are its JSON form."""

    name: str
    kind: str  # "root" | "program" | "category" | "op"
    time_ps: int = 0
    time_us: float = 0.0  # time_ps in microseconds (set when the tree is finished)
    occurrences: int = 0
    flops: float | None = None
    bytes_accessed: float | None = None
    time_percent: float = 0.0
    time_percent_with_idle: float = 0.0
    gflops_per_second: float | None = None
    flops_utilization: float | None = None
    memory_bandwidth_gb_per_second: float | None = None
    color_hint: float | None = None  # flops_utilization clamped to [0, 1], for the colour scale
    expression: str | None = None
    shape: str | None = None
    folded: int = 0  # how many nodes a "(K more)" node stands for
    children: list[OpProfileNode] = field(default_factory=list)

    def walk(self) -> list[OpProfileNode]:
        """This node and every node under it, depth first."""
        nodes, stack = [], [self]
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(reversed(node.children))
        return nodes


@dataclass
class OpProfileResult(ToolResult):
    device: str = ""
    devices: list[str] = field(default_factory=list)
    side: str = ""
    top_n: int = DEFAULT_TOP_N
    exclude_idle: bool = True
    idle_time_ps: int = 0
    idle_time_us: float = 0.0
    peak_teraflops_per_second: float | None = None
    root: OpProfileNode = field(default_factory=lambda: OpProfileNode("", ROOT))

    def __post_init__(self) -> None:
        # The flat table, not part of the JSON form: every op node before folding, most
        # time first; ops[i] belongs to program op_program[i], category op_category[i].
        self.ops: list[OpProfileNode] = []
        self.op_program: list[str] = []
        self.op_category: list[str] = []

    def tables(self) -> list[Table]:
        rows = [
            (
                program,
                category,
                node.name,
                node.occurrences,
                node.time_us,
                node.time_percent,
                node.time_percent_with_idle,
                node.gflops_per_second,
                node.flops_utilization,
                node.memory_bandwidth_gb_per_second,
                node.time_ps,
            )
            for program, category, node in zip(self.op_program, self.op_category, self.ops)
        ]
        return [Table("ops", COLUMNS, rows)]

    def summary(self) -> list[str]:
        root = self.root
        if not root.occurrences:
            return ["No ops in this profile."]
        lines = [
            f"{self.device}: {root.time_us:,.1f} us of op time in {root.occurrences:,} op runs of "
            f"{len(self.ops):,} distinct ops in {len(set(self.op_program)):,} program(s); "
            f"idle {self.idle_time_us:,.1f} us (ops are {root.time_percent_with_idle:.1f}% of op time + idle)"
        ]
        categories: dict[str, int] = {}
        for category, node in zip(self.op_category, self.ops):
            categories[category] = categories.get(category, 0) + node.time_ps
        top = sorted(categories.items(), key=lambda item: (-item[1], item[0]))[:3]
        lines.append("Top categories: " + ", ".join(f"{name} ({percent(t, root.time_ps):.1f}%)" for name, t in top))
        if root.flops_utilization is not None:
            lines.append(f"FLOPS utilization: {100 * root.flops_utilization:.3g}% of {self.peak_teraflops_per_second:g} TFLOP/s")
        elif root.gflops_per_second is not None:
            lines.append(f"FLOP rate: {root.gflops_per_second:,.1f} GFLOP/s (device peak unknown)")
        return lines


@tool(
    TOOL,
    title="Op profile",
    order=50,
    description="Where does the device's time go by program, category and op, and how well does each use the device's FLOPS?",
    options=(
        Option(
            "device",
            str,
            "",
            f"the device plane to show (default: the first that ran ops), {ALL_DEVICES!r} for every device, or {names.HOST_PLANE!r}",
            choices=(ALL_DEVICES, names.HOST_PLANE),
            choices_from="devices",
        ),
        Option("top_n", int, DEFAULT_TOP_N, 'children shown per node; the rest are folded into one "(K more)" node', minimum=1),
    ),
)
def op_profile(stats: OpStats, device: str = "", top_n: int = DEFAULT_TOP_N) -> OpProfileResult:
    if not isinstance(top_n, int) or top_n < 1:
        raise StepscopeError(f"op_profile: top_n must be a positive integer, not {top_n!r}")
    profile, ops = stats.profile, stats.ops
    devices = _device_names(profile, ops)
    label, side, mask = _select(profile, ops, devices, device)
    result = OpProfileResult(device=label, devices=devices, side=side, top_n=top_n)
    result.root = OpProfileNode(label, ROOT)
    if not mask.any():
        return result
    plane_indices = sorted(set(ops.plane[mask].tolist()))
    result.peak_teraflops_per_second = _peak(profile, plane_indices) if side == DEVICE else None
    result.idle_time_ps = idle_in_span_ps(profile, ops, mask)
    result.idle_time_us = ps_to_us(result.idle_time_ps)

    selected = np.flatnonzero(mask)
    keys, self_ps = _keyed(stats, selected, plane_indices, side)
    root_ps = int(self_ps.sum())
    totals = _Totals(root_ps=root_ps, with_idle_ps=root_ps + result.idle_time_ps, peak_tflops=result.peak_teraflops_per_second)
    leaves = _op_nodes(ops, selected, self_ps, keys, totals)
    root = _tree(label, leaves)
    for node in root.walk():
        if node.kind != OP:
            _finish(node, totals)
    _fold(root, top_n, totals)
    shown = {id(node) for node in root.walk() if node.kind == OP and not node.folded}
    _describe(profile, ops, [(node, at) for node, at in zip(leaves.nodes, leaves.representatives) if id(node) in shown])
    for node in root.walk():
        node.time_us = ps_to_us(node.time_ps)
        node.color_hint = None if node.flops_utilization is None else min(1.0, max(0.0, node.flops_utilization))

    nodes, programs, categories = leaves.nodes, leaves.programs, leaves.categories
    order = sorted(range(len(nodes)), key=lambda i: (-nodes[i].time_ps, programs[i], categories[i], nodes[i].name))
    result.ops = [nodes[i] for i in order]
    result.op_program = [programs[i] for i in order]
    result.op_category = [categories[i] for i in order]
    result.root = root
    return result


# --- which ops ------------------------------------------------------------------------------


def _natural(name: str) -> list[int | str]:
    """``/device:TPU:10`` after ``/device:TPU:2``."""
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(name)]


def _device_names(profile: Profile, ops: Ops) -> list[str]:
    planes = set(ops.plane[ops.side == Side.DEVICE].tolist())
    return sorted((profile.planes[i].name for i in planes), key=_natural)


def _select(profile: Profile, ops: Ops, devices: list[str], device: str) -> tuple[str, str, np.ndarray]:
    """(root label, side, mask over ops) for the requested device ("": the first)."""
    on_device = ops.side == Side.DEVICE
    if not device:
        device = devices[0] if devices else names.HOST_PLANE
    if device == ALL_DEVICES:
        if devices:
            return "all devices", DEVICE, on_device
        device = names.HOST_PLANE
    if device == names.HOST_PLANE:
        mask = ops.side == Side.HOST
        return (names.HOST_PLANE, HOST, mask) if mask.any() else ("", "", mask)
    if device not in devices:
        choices = ", ".join([*devices, ALL_DEVICES, names.HOST_PLANE])
        raise StepscopeError(f"op_profile: no ops on device {device!r} (choose from {choices})")
    plane_index = next(i for i, plane in enumerate(profile.planes) if plane.name == device)
    return device, DEVICE, on_device & (ops.plane == plane_index)


def _peak(profile: Profile, plane_indices: list[int]) -> float | None:
    """The planes' peak TFLOP/s when every one of them records the same, positive one."""
    peaks = set()
    for index in plane_indices:
        value = next((s.value for s in profile.planes[index].plane_stats if s.name == PEAK_TERAFLOPS_PER_SECOND), None)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            return None
        peaks.add(float(value))
    return peaks.pop() if len(peaks) == 1 else None


# --- levels -----------------------------------------------------------------------------------


def _labels(plane: Plane) -> np.ndarray:
    """Per event type, the name people read (``EventMetadata.labels``)."""
    return np.asarray(plane.metadata.labels, dtype=object)


def _source_program(profile: Profile) -> str:
    stem = _SOURCE_SUFFIXES.sub("", Path(profile.source).name) if profile.source else ""
    return stem or FRAMEWORK_PROGRAM


class _Names:
    """Strings numbered in order of first use: per-plane codes become shared ones."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    @property
    def names(self) -> list[str]:
        return list(self.index)

    def codes(self, local: np.ndarray, labels: list[str]) -> np.ndarray:
        """Shared codes of ``labels[local[i]]``, looking up each distinct label once."""
        used, inverse = np.unique(local, return_inverse=True)
        shared = np.asarray([self.index.setdefault(labels[u], len(self.index)) for u in used.tolist()], dtype=np.int64)
        return shared[inverse.reshape(-1)] if len(local) else np.zeros(0, dtype=np.int64)

    def of(self, values: np.ndarray) -> np.ndarray:
        """Shared codes of an object array of strings."""
        items = values.tolist()
        for item in dict.fromkeys(items):
            self.index.setdefault(item, len(self.index))
        return np.fromiter(map(self.index.__getitem__, items), dtype=np.int64, count=len(items))


def _programs(plane: Plane, rows: np.ndarray, fallback: str) -> tuple[np.ndarray, list[str]]:
    """The program of each op, as codes into a list of names: the op's hlo_module stat
    (event, then metadata), else the enclosing XLA Modules event, else ``fallback``."""
    events = plane.events
    labels = [fallback]
    codes = np.zeros(len(rows), dtype=np.int64)
    line = plane.line_index(names.XLA_MODULES_LINE)
    if line is not None and len(rows):
        span = plane.line_slice(line)
        modules = np.arange(span.start, span.stop)[events.depth[span] == 0]
        modules = modules[events.duration_ps[modules] > 0]
        if len(modules):
            module_start = events.start_ps[modules]
            module_end = module_start + events.duration_ps[modules]
            op_start = events.start_ps[rows]
            k = np.searchsorted(module_start, op_start, "right") - 1
            inside = (k >= 0) & (op_start < module_end[np.maximum(k, 0)])
            codes[inside] = len(labels) + events.metadata_id[modules[k[inside]]]
            labels += _labels(plane).tolist()
    by_type = [next((str(s.value) for s in stats if s.name == names.HLO_MODULE), None) for stats in plane.metadata.stats]
    if any(value is not None for value in by_type):
        type_codes = np.asarray([-1 if value is None else len(labels) + i for i, value in enumerate(by_type)], dtype=np.int64)
        labels += [value or "" for value in by_type]
        named = type_codes[events.metadata_id[rows]]
        codes = np.where(named >= 0, named, codes)
    stat_rows, values = stat_column(plane, names.HLO_MODULE)
    if len(stat_rows):
        by_event = np.full(len(events), -1, dtype=np.int64)
        by_event[stat_rows] = len(labels) + np.arange(len(values))
        labels += [str(value) for value in values]
        named = by_event[rows]
        codes = np.where(named >= 0, named, codes)
    return codes, labels


@dataclass(frozen=True)
class _Keys:
    """Per selected op: codes of its program, category and name, and the names they index."""

    program: np.ndarray
    program_names: list[str]
    category: np.ndarray
    category_names: list[str]
    name: np.ndarray
    names: list[str]


def _keyed(stats: OpStats, selected: np.ndarray, plane_indices: list[int], side: str) -> tuple[_Keys, np.ndarray]:
    """The selected ops' keys and self times (the device clock's where XLA records one),
    read plane by plane."""
    profile, ops = stats.profile, stats.ops
    programs, categories, op_names = _Names(), _Names(), _Names()
    program_codes = np.zeros(len(selected), dtype=np.int64)
    name_codes = np.zeros(len(selected), dtype=np.int64)
    fallback = _source_program(profile)
    self_ps = ops.self_ps[selected].copy()
    for plane_index in plane_indices:
        here = ops.plane[selected] == plane_index
        plane = profile.planes[plane_index]
        rows = ops.row[selected[here]]
        clock = stats.xla_ops.device_clock_self_ps(plane_index, len(plane.events))[rows]
        self_ps[here] = np.where(clock >= 0, clock, self_ps[here])
        program_codes[here] = programs.codes(*_programs(plane, rows, fallback))
        if side == DEVICE:  # the event's own name
            name_codes[here] = op_names.codes(plane.events.metadata_id[rows], _labels(plane).tolist())
        else:
            name_codes[here] = op_names.of(ops.name_codes.at(selected[here]))
    category_codes = categories.of(ops.type_codes.at(selected))
    return _Keys(program_codes, programs.names, category_codes, categories.names, name_codes, op_names.names), self_ps


@dataclass(frozen=True)
class _Totals:
    """What the nodes' percentages and utilization are of."""

    root_ps: int  # the selected ops' self time
    with_idle_ps: int  # that and their idle time
    peak_tflops: float | None  # the device's peak, where known


@dataclass(frozen=True)
class _Leaves:
    """The op nodes, and beside each its program, category and the (plane index, event
    row) of its first occurrence."""

    nodes: list[OpProfileNode]
    programs: list[str]
    categories: list[str]
    representatives: list[tuple[int, int]]


def _op_nodes(ops: Ops, selected: np.ndarray, self_ps: np.ndarray, keys: _Keys, totals: _Totals) -> _Leaves:
    """One op node per (program, category, op name), with its summed numbers, percentages
    and rates (vectorised: there can be many). ``self_ps``: the selected ops' self times."""
    program_codes, program_names = keys.program, keys.program_names
    category_codes, category_names = keys.category, keys.category_names
    name_codes, distinct_names = keys.name, keys.names
    _, pair = np.unique(program_codes * len(category_names) + category_codes, return_inverse=True)
    groups, codes = np.unique(pair.reshape(-1) * len(distinct_names) + name_codes, return_inverse=True)
    codes = codes.reshape(-1)
    count = len(groups)
    # Sorted by group, then most self time first: each group's first row stands for the op
    # (its details are read from that occurrence), and integer sums stay exact.
    order = np.lexsort((np.arange(len(codes)), -self_ps, codes))
    starts = np.searchsorted(codes[order], np.arange(count))
    first = selected[order[starts]]
    time = np.add.reduceat(self_ps[order], starts) if count else np.zeros(0, dtype=np.int64)
    occurrences = np.bincount(codes, minlength=count)
    flops_values, bytes_values = ops.flops[selected], ops.bytes_accessed[selected]
    flops = np.bincount(codes, weights=np.nan_to_num(flops_values), minlength=count)
    has_flops = np.bincount(codes, weights=np.isfinite(flops_values), minlength=count) > 0
    accessed = np.bincount(codes, weights=np.nan_to_num(bytes_values), minlength=count)
    has_bytes = np.bincount(codes, weights=np.isfinite(bytes_values), minlength=count) > 0
    peak = totals.peak_tflops
    shares = _shares(time, totals.root_ps)
    shares_with_idle = _shares(time, totals.with_idle_ps)
    seconds = np.maximum(time, 1) / 1e12
    gflops = np.where(has_flops & (time > 0), flops / seconds / 1e9, np.nan)
    bandwidth = np.where(has_bytes & (time > 0), accessed / seconds / 1e9, np.nan)
    utilization = gflops / (peak * 1e3) if peak else np.full(count, np.nan)
    first_program, first_category, first_name = program_codes[order], category_codes[order], name_codes[order]
    nodes = [
        OpProfileNode(
            name=str(distinct_names[first_name[at]]),
            kind=OP,
            time_ps=t,
            occurrences=n,
            flops=f if hf else None,
            bytes_accessed=b if hb else None,
            time_percent=share,
            time_percent_with_idle=share_idle,
            gflops_per_second=None if g != g else g,
            flops_utilization=None if u != u else u,
            memory_bandwidth_gb_per_second=None if bw != bw else bw,
        )
        for at, t, n, f, hf, b, hb, share, share_idle, g, u, bw in zip(
            starts.tolist(), time.tolist(), occurrences.tolist(), flops.tolist(), has_flops.tolist(),
            accessed.tolist(), has_bytes.tolist(), shares.tolist(), shares_with_idle.tolist(), gflops.tolist(),
            utilization.tolist(), bandwidth.tolist(),
        )
    ]  # fmt: skip
    return _Leaves(
        nodes=nodes,
        programs=[str(program_names[code]) for code in first_program[starts].tolist()],
        categories=[str(category_names[code]) for code in first_category[starts].tolist()],
        representatives=list(zip(ops.plane[first].tolist(), ops.row[first].tolist())),
    )


def _shares(part: np.ndarray, whole: int) -> np.ndarray:
    """``percent`` for many parts."""
    if whole <= 0:
        return np.zeros(len(part))
    return np.clip(100.0 * part / whole, 0.0, 100.0)


def _parent(name: str, kind: str, children: list[OpProfileNode]) -> OpProfileNode:
    """A node holding ``children``, with their numbers summed."""
    flops = [c.flops for c in children if c.flops is not None]
    accessed = [c.bytes_accessed for c in children if c.bytes_accessed is not None]
    return OpProfileNode(
        name=name,
        kind=kind,
        time_ps=sum(c.time_ps for c in children),
        occurrences=sum(c.occurrences for c in children),
        flops=float(sum(flops)) if flops else None,
        bytes_accessed=float(sum(accessed)) if accessed else None,
        children=children,
    )


def _tree(label: str, leaves: _Leaves) -> OpProfileNode:
    grouped: dict[str, dict[str, list[OpProfileNode]]] = {}
    for node, program, category in zip(leaves.nodes, leaves.programs, leaves.categories):
        grouped.setdefault(program, {}).setdefault(category, []).append(node)
    program_nodes = [
        _parent(program, PROGRAM, [_parent(category, CATEGORY, ops) for category, ops in by_category.items()]) for program, by_category in grouped.items()
    ]
    return _parent(label, ROOT, program_nodes)


def _finish(node: OpProfileNode, totals: _Totals) -> None:
    """Percentages and rates from the node's sums."""
    peak_tflops = totals.peak_tflops
    node.time_percent = percent(node.time_ps, totals.root_ps)
    node.time_percent_with_idle = percent(node.time_ps, totals.with_idle_ps)
    node.gflops_per_second = _giga_per_second(node.flops, node.time_ps)
    node.memory_bandwidth_gb_per_second = _giga_per_second(node.bytes_accessed, node.time_ps)
    if node.gflops_per_second is not None and peak_tflops:
        node.flops_utilization = node.gflops_per_second / (peak_tflops * 1e3)
    else:
        node.flops_utilization = None


def _giga_per_second(amount: float | None, time_ps: int) -> float | None:
    if amount is None or time_ps <= 0:
        return None
    return amount / (time_ps / 1e12) / 1e9


def _fold(node: OpProfileNode, top_n: int, totals: _Totals) -> None:
    """Children by time (then name); past the first ``top_n``, one "(K more)" node."""
    children = sorted(node.children, key=lambda child: (-child.time_ps, child.name))
    if len(children) > top_n:
        rest = children[top_n:]
        folded = _parent(f"({len(rest)} more)", rest[0].kind, [])
        summed = _parent("", rest[0].kind, rest)
        folded.time_ps, folded.occurrences = summed.time_ps, summed.occurrences
        folded.flops, folded.bytes_accessed, folded.folded = summed.flops, summed.bytes_accessed, len(rest)
        _finish(folded, totals)
        children = [*children[:top_n], folded]
    node.children = children
    for child in children:
        if not child.folded:
            _fold(child, top_n, totals)


# --- op details (read for the shown ops only) -------------------------------------------------


def _describe(profile: Profile, ops: Ops, nodes: list[tuple[OpProfileNode, tuple[int, int]]]) -> None:
    """Each node's expression and shape, read from its representative occurrence
    (plane index, event row)."""
    launcher = _Launchers(profile, ops)
    for node, (plane_index, row) in nodes:
        plane = profile.planes[plane_index]
        stats = {s.name: s.value for s in plane.event_stats(row)}
        metadata_id = int(plane.events.metadata_id[row])
        full_name = plane.metadata.names[metadata_id]
        expression = stats.get(LONG_NAME)
        if expression is None and full_name != node.name and plane.metadata.display_names[metadata_id]:
            expression = full_name  # XLA writes the HLO text as the name, the op's name as display name
        if expression is None and str(stats.get(names.HLO_OP, node.name)) != node.name:
            expression = stats.get(names.HLO_OP)
        if expression is None:
            dims = stats.get(INPUT_SHAPES)
            if dims is None and plane.is_device:
                dims = launcher.stat(int(plane.events.external_id[row]), INPUT_SHAPES)
            if dims is not None:
                expression = f"{INPUT_SHAPES}: {dims!s}"
        node.expression = None if expression is None else str(expression)
        shape = stats.get(SHAPE_WITH_LAYOUT)
        node.shape = None if shape is None else str(shape)


class _Launchers:
    """Kineto: external id -> the host op that launched the device work (the deepest)."""

    def __init__(self, profile: Profile, ops: Ops) -> None:
        host = profile.plane(names.HOST_PLANE)
        self._host: tuple[Plane, KeyTable] | None = None
        if host is not None:
            rows = ops.row[(ops.side == Side.HOST) & (ops.plane == profile.planes.index(host))]
            self._host = (host, launchers(host.events, rows))

    def stat(self, external_id: int, stat: str) -> Any:
        if external_id == NO_ID or self._host is None:
            return None
        host, table = self._host
        row = int(table.get(np.asarray([external_id]), NO_ID)[0])
        if row == NO_ID:
            return None
        return next((s.value for s in host.event_stats(row) if s.name == stat), None)
