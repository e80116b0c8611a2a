"""The dependency graph of a profile's work: what had to finish before each piece of work
could start, built from what the profile records (the critical path and its what-ifs,
``critical_path``, walk and re-schedule it).

Nodes are intervals, held column-wise (numpy arrays, never an object per event):
- host threads (lines of ``/host:CPU``) are cut into consecutive pieces that tile the
  thread from its first event to its last: each launch call, synchronisation and input
  wait (the outermost one where they nest) is a piece of its own; the time between them
  is cut at every recorded op's edges and at step boundaries (a piece is named after the
  innermost op holding it), and is host compute
  where a top-level event covers it (on the thread that runs the steps, always: between
  ops it runs untraced Python) and idle elsewhere;
- device work (GPU kernels, copies, memsets, collectives; XLA ops on a TPU/GPU ``XLA Ops``
  line) is a node per outermost work event (a stream's own annotation, Kineto's
  ``gpu_user_annotation``, is not work and holds kernels);
- each step's start and end is a zero-length node on the line whose markers define the
  steps (the *anchor*: the thread holding ``ProfilerStep#N`` or ``step_num`` markers, the
  ``XLA Ops`` line beside a device's ``Steps`` line, else the busiest thread).

Edges say "may not start before that ends": consecutive nodes of a host thread or a
device line (program order, stream order); a launch call -> the device work with its
correlation id (CUDA/HIP launches, async copies, blocking copies); the device work a
synchronisation waited for -> the host piece after the synchronisation (the latest-ending
device node launched before the call began that ended inside it: cudaDeviceSynchronize,
cudaStreamSynchronize, cudaEventSynchronize, a blocking cudaMemcpy, ``.item()``'s copy,
and a launch call blocked on a full launch queue, ``BLOCKED_LAUNCH``); a thread blocked
while another works for it, and a stream waiting for another's event (``cross_edges``).

Each edge has an effective weight, clipped so that no edge asks a node to start later
than it did (``weight <= start[dst] - end[src]``), and each node a residual, the time it
started after the latest of its edges allowed (a kernel's queueing after its launch, a
stream's gap that no recorded dependency explains). Re-scheduling with the recorded
durations therefore reproduces the recorded times exactly; with changed durations it
moves everything that depends on them and keeps the rest.

Nodes are numbered in processing order (observed start; host before device at a tie;
then line order), and only edges from a lower to a higher number are kept: an edge the
other way contradicts the recorded clock (skew) and is dropped, so the graph is a DAG and
one pass in number order schedules it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.paths.cross_edges import Nodes, cross_edges
from stepscope.analysis.paths.path_kinds import Kind
from stepscope.analysis.steps.classify import Activity, event_activities
from stepscope.analysis.steps.steps import Steps
from stepscope.trace import names
from stepscope.trace.model import NO_ID, Plane, Profile, distinct_indices
from stepscope.trace.steps import PROFILER_STEP, STEPS_LINE_SOURCE

# Host calls that block until device work is done (CUDA runtime and driver, HIP).
SYNC_CALL = re.compile(
    r"^(?:cuda|hip)(?:StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy|Memcpy2D|MemcpyWithStream|MemcpyDtoH|MemcpyHtoD)$"
    r"|^cu(?:StreamSynchronize|CtxSynchronize|EventSynchronize|MemcpyDtoH|MemcpyHtoD)(?:_v2)?$"
)
_DEVICE_KIND = {
    Activity.DEVICE_COMPUTE: Kind.KERNEL,
    Activity.DEVICE_COLLECTIVES: Kind.COLLECTIVE,
    Activity.DEVICE_TO_DEVICE: Kind.COPY,
    Activity.HOST_TO_DEVICE: Kind.COPY,
    Activity.DEVICE_TO_HOST: Kind.COPY,
}
_NOT_WORK = (Activity.NONE, Activity.PYTHON_STACK)
HOST_CLASS, DEVICE_CLASS = 0, 1


@dataclass(frozen=True, eq=False)
class Graph:
    """Nodes in processing order and their in-edges grouped by destination (CSR): node
    ``i``'s in-edges are ``edge_*[edge_offsets[i]:edge_offsets[i + 1]]``.

    ``duration_ps`` is what the profile recorded; ``fixed_ps`` what a schedule gives the
    node (the same, but 0 for a synchronisation whose awaited device work is known: its
    wait is that work, and the edge from it). ``row`` is the event the node is (or the
    innermost op holding a host piece; -1 for none, ``BOUNDARY_ROW`` for a step boundary) on plane ``plane``, line ``line``.
    ``step_start_node`` / ``step_end_node``: each step's boundary nodes on the anchor.
    """

    start_ps: npt.NDArray[np.int64]
    duration_ps: npt.NDArray[np.int64]
    fixed_ps: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    plane: npt.NDArray[np.int32]
    line: npt.NDArray[np.int32]
    row: npt.NDArray[np.int64]
    edge_offsets: npt.NDArray[np.int64]
    edge_src: npt.NDArray[np.int64]
    edge_weight_ps: npt.NDArray[np.int64]
    edge_gap_kind: npt.NDArray[np.int8]
    anchor: tuple[int, int]  # (plane index, line index) of the line the steps are measured on
    step_start_node: npt.NDArray[np.int64]
    step_end_node: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.start_ps)

    @property
    def edge_dst(self) -> npt.NDArray[np.int64]:
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.edge_offsets))

    def names(self, profile: Profile) -> NodeNames:
        """Each node's name: its event's (or holding op's), or ``BETWEEN_OPS``."""
        table, offsets = [BETWEEN_OPS], []
        for plane in profile.planes:
            offsets.append(len(table))
            table.extend(plane.metadata.names)
        code = np.zeros(len(self), dtype=np.int64)
        for index, plane in enumerate(profile.planes):
            mine = np.flatnonzero((self.plane == index) & (self.row >= 0))
            code[mine] = offsets[index] + plane.events.metadata_id[self.row[mine]]
        return NodeNames(code, table)


@dataclass(frozen=True)
class NodeNames:
    """Each node's name as a code into ``table`` (the planes' event type names after
    ``BETWEEN_OPS``, code 0): grouping and matching work on the few distinct names."""

    code: npt.NDArray[np.int64]
    table: list[str]

    def of(self, nodes: np.ndarray) -> list[str]:
        table = self.table
        return [table[code] for code in self.code[nodes].tolist()]


BETWEEN_OPS = "(between ops)"
BOUNDARY_ROW = -2  # ``Graph.row`` of a step's boundary node


@dataclass
class _Part:
    """Nodes and edges of one line while the graph is built (edges in line-local numbers)."""

    start: list[npt.NDArray[np.int64]]
    end: list[npt.NDArray[np.int64]]
    kind: list[npt.NDArray[np.int8]]
    plane: list[npt.NDArray[np.int32]]
    line: list[npt.NDArray[np.int32]]
    row: list[npt.NDArray[np.int64]]
    cls: list[npt.NDArray[np.int8]]

    @classmethod
    def empty(cls) -> _Part:
        return cls([], [], [], [], [], [], [])

    def add(self, start: np.ndarray, end: np.ndarray, kind: np.ndarray, plane: int, line: int | np.ndarray, row: np.ndarray, node_class: int) -> None:
        count = len(start)
        self.start.append(start.astype(np.int64, copy=False))
        self.end.append(end.astype(np.int64, copy=False))
        self.kind.append(kind.astype(np.int8, copy=False))
        self.plane.append(np.full(count, plane, dtype=np.int32))
        self.line.append(np.broadcast_to(np.asarray(line, dtype=np.int32), (count,)))
        self.row.append(row.astype(np.int64, copy=False))
        self.cls.append(np.full(count, node_class, dtype=np.int8))


def find_anchor(profile: Profile, steps: Steps, activities: dict[int, np.ndarray]) -> tuple[int, int] | None:
    """The line whose step markers define the steps, else the busiest host thread (or
    device line): where each step's boundary nodes go."""
    host_index = next((i for i, plane in enumerate(profile.planes) if plane.name == names.HOST_PLANE), None)
    if steps.source == STEPS_LINE_SOURCE:
        for index, plane in enumerate(profile.planes):
            if plane.is_device and plane.line_index(names.STEPS_LINE) is not None:
                ops_line = plane.line_index(names.XLA_OPS_LINE)
                return (index, ops_line) if ops_line is not None else _busiest(plane, index, activities[index])
    if host_index is not None and len(profile.planes[host_index].events):
        host = profile.planes[host_index]
        marker_type = np.asarray([bool(PROFILER_STEP.match(name)) for name in host.metadata.names], dtype=bool)
        markers = np.flatnonzero(marker_type[host.events.metadata_id] | (host.events.step_num != NO_ID))
        if len(markers) and not steps.inferred:
            return host_index, int(np.bincount(host.events.line[markers]).argmax())
        return _busiest(host, host_index, activities[host_index])
    for index, plane in enumerate(profile.planes):
        if plane.is_device and len(plane.events):
            return _busiest(plane, index, activities[index])
    return None


def _busiest(plane: Plane, index: int, activity: np.ndarray) -> tuple[int, int]:
    events = plane.events
    work = (events.depth == 0) & ~np.isin(activity, _NOT_WORK)
    busy = np.bincount(events.line[work], weights=events.duration_ps[work], minlength=len(plane.lines))
    return index, int(busy.argmax())


def build_graph(profile: Profile, steps: Steps) -> Graph:
    """The graph of ``profile`` with boundary nodes for ``steps`` (module docstring)."""
    activities = {index: event_activities(plane) for index, plane in enumerate(profile.planes)}
    anchor = find_anchor(profile, steps, activities)
    part = _Part.empty()
    device_corr: list[np.ndarray] = []
    for index, plane in enumerate(profile.planes):
        if plane.is_device:
            device_corr.append(_device_nodes(part, plane, index, activities[index]))
    device_corr_ids = _distinct(np.concatenate(device_corr)) if device_corr else np.zeros(0, dtype=np.int64)
    for index, plane in enumerate(profile.planes):
        if plane.name == names.HOST_PLANE:
            _host_nodes(part, plane, index, activities[index], device_corr_ids, steps, anchor)
    if anchor is not None and profile.planes[anchor[0]].is_device:
        _boundary_nodes(part, anchor, steps)
    return _assemble(profile, part, anchor, steps)


def _device_nodes(part: _Part, plane: Plane, index: int, activity: np.ndarray) -> np.ndarray:
    events = plane.events
    # Outermost work, not depth 0: a stream's gpu_user_annotation (ignored) holds its kernels.
    keep = np.flatnonzero(_outermost(plane, np.isin(activity, list(_DEVICE_KIND))))
    kind_of = np.full(len(Activity.__members__) + 100, Kind.KERNEL, dtype=np.int8)
    for activity_value, kind in _DEVICE_KIND.items():
        kind_of[activity_value] = kind
    kinds = kind_of[activity[keep]]
    lines = events.line[keep]
    for line in distinct_indices(lines):
        rows = keep[lines == line]
        part.add(events.start_ps[rows], events.ends(rows), kinds[lines == line], index, line, rows, DEVICE_CLASS)
    corr: np.ndarray = events.correlation_id[keep]
    linked: np.ndarray = corr[corr != NO_ID]
    return linked


def _outermost(plane: Plane, special: np.ndarray) -> np.ndarray:
    """``special`` without the events nested inside another special event."""
    events = plane.events
    covered = np.zeros(len(events), dtype=bool)  # some ancestor is special
    order = np.argsort(events.depth, kind="stable")
    depths = events.depth[order]
    bounds = np.searchsorted(depths, np.arange(int(depths.max()) + 2) if len(depths) else [0])
    for level in range(1, len(bounds) - 1):
        rows = order[bounds[level] : bounds[level + 1]]
        parents = events.parent[rows]
        covered[rows] = covered[parents] | special[parents]
    return special & ~covered


def _host_nodes(part: _Part, plane: Plane, index: int, activity: np.ndarray, device_corr: np.ndarray, steps: Steps, anchor: tuple[int, int] | None) -> None:
    events = plane.events
    if not len(events):
        return
    is_sync_type = np.asarray([bool(SYNC_CALL.match(name)) for name in plane.metadata.names], dtype=bool)
    is_sync = is_sync_type[events.metadata_id]
    linked = (events.correlation_id != NO_ID) & _member(events.correlation_id, device_corr)
    special_kind = np.full(len(events), -1, dtype=np.int8)
    special_kind[(activity == Activity.KERNEL_LAUNCH) | linked] = Kind.LAUNCH
    special_kind[is_sync] = Kind.SYNC
    special_kind[activity == Activity.INPUT] = Kind.INPUT
    outer = _outermost(plane, special_kind >= 0)
    work = ~np.isin(activity, _NOT_WORK)
    boundaries = np.concatenate((steps.start_ps, steps.end_ps))
    anchor_line = anchor[1] if anchor is not None and anchor[0] == index else -1
    ends = events.start_ps + events.duration_ps
    origin = min([int(events.start_ps.min()), *boundaries.tolist()])
    stride = max([int(ends.max()), *boundaries.tolist()]) - origin + 1
    if stride * len(plane.lines) < KEY_LIMIT:
        _host_lines(part, plane, index, 0, len(events), special_kind, outer, work, activity, boundaries, anchor_line)
        return
    for line in range(len(plane.lines)):  # too long a span for one axis: a line at a time
        lo, hi = int(plane.line_offsets[line]), int(plane.line_offsets[line + 1])
        if lo < hi:
            _host_lines(part, plane, index, lo, hi, special_kind, outer, work, activity, boundaries, anchor_line)


# Keys of ``_host_lines`` stay below this (int64, with room for sums of two).
KEY_LIMIT = 1 << 61


def _host_lines(
    part: _Part,
    plane: Plane,
    index: int,
    lo: int,
    hi: int,
    special_kind: np.ndarray,
    outer: np.ndarray,
    work: np.ndarray,
    activity: np.ndarray,
    step_bounds: np.ndarray,
    anchor_line: int,
) -> None:
    """The pieces of the lines whose events are rows ``lo:hi``, all lines at once: a time
    ``t`` of line ``L`` is keyed ``t - origin + (L - first line) * stride`` with a stride
    past the span, so the lines lie one after another on one axis and one sorted search
    serves them all (as a loop over lines, the ~120 threads of the shared TPU host took
    0.5 ms each)."""
    events = plane.events
    rows = np.arange(lo, hi)
    line_of = events.line[lo:hi].astype(np.int64)
    starts, ends = events.start_ps[lo:hi], events.ends(rows)
    origin = min([int(starts.min()), *step_bounds.tolist()])
    stride = max([int(ends.max()), *step_bounds.tolist()]) - origin + 1
    present = np.asarray(distinct_indices(line_of), dtype=np.int64)
    line_base = (present - present[0]) * stride - origin
    key_start = starts + line_base[np.searchsorted(present, line_of)]
    key_end = ends + (key_start - starts)
    line_first = np.searchsorted(line_of, present)
    first, last = key_start[line_first], np.maximum.reduceat(key_end, line_first)
    specials = np.flatnonzero(outer[lo:hi])
    tops = np.flatnonzero(events.depth[lo:hi] == 0)
    # The union of each line's top-level events (what the thread is recorded as doing).
    top_start, top_end = key_start[tops], np.maximum.accumulate(key_end[tops])
    new = np.concatenate(([True], top_start[1:] > top_end[:-1]))
    union_start = top_start[new]
    union_end = np.append(top_end[np.flatnonzero(new)[1:] - 1], top_end[-1])
    ops = np.flatnonzero(work[lo:hi])
    bound_keys = step_bounds[None, :] + line_base[:, None]
    cuts = _distinct(
        np.concatenate(
            (
                first,
                last,
                union_start,
                union_end,
                key_start[specials],
                key_end[specials],
                key_start[ops],
                key_end[ops],
                bound_keys[(bound_keys > first[:, None]) & (bound_keys < last[:, None])],
            )
        )
    )
    a, b = cuts[:-1], cuts[1:]
    at = np.searchsorted(first, a, "right") - 1  # the line of each piece (index into present)
    keep = b <= last[at]  # (not the gap from one line's last event to the next line's first)
    special_start, special_end = key_start[specials], key_end[specials]
    keep &= ~_within(special_start, special_end, a, b)
    a, b, at = a[keep], b[keep], at[keep]
    covered = _within(union_start, union_end, a, b)
    kinds = np.where(covered | (present[at] == anchor_line), Kind.HOST_COMPUTE, Kind.IDLE).astype(np.int8)
    holder = _holders(plane, activity, lo, line_of, present[at], key_start, key_end, a, b)
    piece_start = np.concatenate((a, special_start))
    piece_end = np.concatenate((b, special_end))
    piece_kind = np.concatenate((kinds, special_kind[specials + lo]))
    piece_row = np.concatenate((holder, specials + lo))
    piece_line = np.concatenate((present[at], line_of[specials]))
    if anchor_line in present:  # each step's start and end: a zero-length node at the boundary
        bounds = _distinct(step_bounds) + line_base[np.searchsorted(present, anchor_line)]
        piece_start, piece_end = np.concatenate((piece_start, bounds)), np.concatenate((piece_end, bounds))
        piece_kind = np.concatenate((piece_kind, np.full(len(bounds), Kind.IDLE, dtype=np.int8)))
        piece_row = np.concatenate((piece_row, np.full(len(bounds), BOUNDARY_ROW, dtype=np.int64)))
        piece_line = np.concatenate((piece_line, np.full(len(bounds), anchor_line, dtype=np.int64)))
    order = np.lexsort((piece_end, piece_start))
    back = line_base[np.searchsorted(present, piece_line[order])]
    part.add(piece_start[order] - back, piece_end[order] - back, piece_kind[order], index, piece_line[order], piece_row[order], HOST_CLASS)


def _distinct(values: np.ndarray) -> np.ndarray:
    """``values``' distinct entries, ascending (``np.unique`` without indices imports
    ``numpy.ma`` on its first call: 12 ms of a fresh process)."""
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def _member(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Whether each value is in the ascending ``ordered`` (``np.isin`` of a large array
    calls ``np.unique``: see ``_distinct``)."""
    if not len(ordered):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    found: np.ndarray = ordered[at] == values
    return found


def _within(starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether each piece ``[a, b)`` lies inside one of the sorted, disjoint intervals."""
    if not len(starts):
        return np.zeros(len(a), dtype=bool)
    at = np.searchsorted(starts, a, "right") - 1
    return (at >= 0) & (ends[np.maximum(at, 0)] >= b)


def _holders(
    plane: Plane,
    activity: np.ndarray,
    lo: int,
    line_of: np.ndarray,
    piece_line: np.ndarray,
    key_start: np.ndarray,
    key_end: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
) -> np.ndarray:
    """The innermost work event (a row of the plane) holding each piece ``[a, b)`` of line
    ``piece_line`` (keys of ``_host_lines`` for rows ``lo:``); -1 where only a marker (or
    nothing) holds it."""
    events = plane.events
    at = np.searchsorted(key_start, a, "right") - 1
    holder = np.where((at >= 0) & (line_of[np.maximum(at, 0)] == piece_line), at + lo, -1)
    while True:
        valid = holder >= 0
        short = np.zeros(len(holder), dtype=bool)
        short[valid] = key_end[holder[valid] - lo] < b[valid]
        if not short.any():
            break
        holder[short] = events.parent[holder[short]]
    valid = holder >= 0
    marker = np.zeros(len(holder), dtype=bool)
    marker[valid] = activity[holder[valid]] == Activity.NONE
    holder[marker] = -1
    return holder


def _boundary_nodes(part: _Part, anchor: tuple[int, int], steps: Steps) -> None:
    bounds = _distinct(np.concatenate((steps.start_ps, steps.end_ps)))
    count = len(bounds)
    part.add(bounds, bounds, np.full(count, Kind.IDLE, dtype=np.int8), anchor[0], anchor[1], np.full(count, BOUNDARY_ROW, dtype=np.int64), DEVICE_CLASS)


# How far back among device nodes ending inside a synchronisation its search for the awaited
# one looks (nodes launched after the call began are skipped; past this many it gives up).
SYNC_SEARCH = 4096


def _assemble(profile: Profile, part: _Part, anchor: tuple[int, int] | None, steps: Steps) -> Graph:
    def joined(columns: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(columns).astype(dtype, copy=False) if columns else np.zeros(0, dtype=dtype)

    start, end = joined(part.start, np.int64), joined(part.end, np.int64)
    kind, plane, line, row = joined(part.kind, np.int8), joined(part.plane, np.int32), joined(part.line, np.int32), joined(part.row, np.int64)
    node_class = joined(part.cls, np.int8)
    # Processing order (module docstring): start, class, line, then end and the order added.
    # A line's nodes come out in its line order (start, end, order added), so each line's
    # chain is its nodes in number order. Lines (a line's nodes share one class) are
    # numbered (class, plane, line) densely: a small key that sorts faster than 64 bits.
    line_base = np.cumsum([0] + [len(source.lines) for source in profile.planes])
    line_count = int(line_base[-1])
    code = line_base[:-1][plane] + line + node_class.astype(np.int64) * line_count
    group = code.astype(np.uint16) if 2 * line_count <= 1 << 16 else code
    order = np.lexsort((end, group, start))
    start, end, kind, plane, line, row, node_class, group = (column[order] for column in (start, end, kind, plane, line, row, node_class, group))
    chain = np.argsort(group, kind="stable")  # node numbers, line by line in line order
    chain_group = group[chain]
    same = chain_group[1:] == chain_group[:-1]
    chain_src, chain_dst = chain[:-1][same], chain[1:][same]
    chain_gap = np.where(kind[chain_src] == Kind.SYNC, Kind.SYNC, Kind.IDLE).astype(np.int8)
    launch_src, launch_dst = _launch_edges(profile, kind, plane, row, node_class)
    fixed = end - start
    next_node, prev_node = np.full(len(start), -1, dtype=np.int64), np.full(len(start), -1, dtype=np.int64)
    next_node[chain_src], prev_node[chain_dst] = chain_dst, chain_src
    launched = start.copy()  # a device node's launch call's start, else its own
    launched[launch_dst] = start[launch_src]
    waits, max_return, typical = _waits(start, end, kind, node_class, row, next_node)
    sync_src, sync_dst, sync_weight, synced = _sync_edges(start, end, kind, node_class, launched, waits, max_return, next_node)
    cross = cross_edges(profile, Nodes(start, end, kind, plane, line, row, node_class == HOST_CLASS, next_node, prev_node, launched))
    fixed[synced] = np.where(kind[synced] == Kind.LAUNCH, typical, 0)
    fixed[cross.waiting] = 0
    finish = start + fixed
    parts = [
        _forward(chain_src, chain_dst, None, chain_gap, start, finish),
        _forward(launch_src, launch_dst, None, np.full(len(launch_src), Kind.LAUNCH, dtype=np.int8), start, finish),
        _forward(sync_src, sync_dst, sync_weight, np.full(len(sync_src), Kind.SYNC, dtype=np.int8), start, finish),
        _forward(cross.src, cross.dst, cross.weight, cross.gap, start, finish),
    ]
    src, dst, weight, gap = (np.concatenate(columns) for columns in zip(*parts))
    by_dst = np.argsort(dst, kind="stable")
    offsets = np.zeros(len(start) + 1, dtype=np.int64)  # where each node's in-edges begin
    np.cumsum(np.bincount(dst, minlength=len(start)), out=offsets[1:])
    step_start_node, step_end_node = _step_nodes(start, plane, line, row, anchor, steps)
    return Graph(
        start_ps=start,
        duration_ps=end - start,
        fixed_ps=fixed,
        kind=kind,
        plane=plane,
        line=line,
        row=row,
        edge_offsets=offsets,
        edge_src=src[by_dst],
        edge_weight_ps=weight[by_dst],
        edge_gap_kind=gap[by_dst],
        anchor=anchor if anchor is not None else (-1, -1),
        step_start_node=step_start_node,
        step_end_node=step_end_node,
    )


def _forward(
    src: np.ndarray, dst: np.ndarray, nominal: np.ndarray | None, gap: np.ndarray, start: np.ndarray, finish: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The edges that run forward (module docstring), each with its effective weight: its
    ``nominal`` one (0 where None) clipped to the time between the source's fixed part and
    the destination's start. Filtered one kind of edge at a time, and not at all where all
    run forward (the line chains), since at 10M nodes every copy of the edges costs."""
    forward = src < dst
    if not forward.all():
        src, dst, gap = src[forward], dst[forward], gap[forward]
        nominal = None if nominal is None else nominal[forward]
    slack = start[dst] - finish[src]
    weight = np.minimum(slack, 0 if nominal is None else nominal, out=slack)
    return src, dst, weight, gap


def _correlations(profile: Profile, plane: np.ndarray, row: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    corr = np.full(len(nodes), NO_ID, dtype=np.int64)
    node_plane, node_row = plane[nodes], row[nodes]
    for index, source in enumerate(profile.planes):
        mine = np.flatnonzero(node_plane == index)
        corr[mine] = source.events.correlation_id[node_row[mine]]
    return corr


def _launch_edges(profile: Profile, kind: np.ndarray, plane: np.ndarray, row: np.ndarray, node_class: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Launch call (or blocking copy) -> the device work with its correlation id."""
    callers = np.flatnonzero((node_class == HOST_CLASS) & (row >= 0) & np.isin(kind, (Kind.LAUNCH, Kind.SYNC)))
    work = np.flatnonzero((node_class == DEVICE_CLASS) & (row >= 0))
    caller_corr, work_corr = _correlations(profile, plane, row, callers), _correlations(profile, plane, row, work)
    callers, caller_corr = callers[caller_corr != NO_ID], caller_corr[caller_corr != NO_ID]
    work, work_corr = work[work_corr != NO_ID], work_corr[work_corr != NO_ID]
    if not len(callers) or not len(work):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    by_corr = np.argsort(caller_corr, kind="stable")
    caller_corr, callers = caller_corr[by_corr], callers[by_corr]
    at = np.clip(np.searchsorted(caller_corr, work_corr), 0, len(caller_corr) - 1)
    hit = caller_corr[at] == work_corr
    return callers[at[hit]], work[hit]


# A launch call this many times longer than the profile's median launch call blocked: the
# runtime's launch queue was full, and the call returned when a slot freed, as device work
# ended. It waits like a synchronisation (the shared V100 ns trace: 681 of its 4,350 calls,
# 182 ms; on the other shared GPU traces no call reaches 8x their median).
BLOCKED_LAUNCH = 10


def _waits(
    start: np.ndarray, end: np.ndarray, kind: np.ndarray, node_class: np.ndarray, row: np.ndarray, next_node: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """The host calls that may have waited for device work: synchronisations, and launch
    calls that blocked (``BLOCKED_LAUNCH``); the latest return after the awaited work each
    may have (a blocked launch returns within two median calls of it, a synchronisation
    any time); and the median launch call's duration, which a blocked launch keeps."""
    host = (node_class == HOST_CLASS) & (next_node >= 0)
    launches = np.flatnonzero(host & (kind == Kind.LAUNCH) & (row >= 0))
    typical = int(np.median(end[launches] - start[launches])) if len(launches) else 0
    blocked = launches[end[launches] - start[launches] > BLOCKED_LAUNCH * max(typical, 1)]
    syncs = np.flatnonzero(host & (kind == Kind.SYNC))
    waits = np.concatenate((syncs, blocked))
    max_return = np.concatenate((np.full(len(syncs), np.iinfo(np.int64).max), np.full(len(blocked), 2 * typical)))
    order = np.argsort(waits, kind="stable")
    return waits[order], max_return[order], typical


def _sync_edges(
    start: np.ndarray,
    end: np.ndarray,
    kind: np.ndarray,
    node_class: np.ndarray,
    launched: np.ndarray,
    waits: np.ndarray,
    max_return: np.ndarray,
    next_node: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For each call of ``waits`` that waited for device work: that work -> the host piece
    after the call, weighted by the call's return after the work ended (at most its
    ``max_return``). The awaited work is the latest-ending device node that ended inside
    the call and was launched before it began (its launch call's start, else its own start)."""
    device = np.flatnonzero((node_class == DEVICE_CLASS) & (kind != Kind.IDLE))
    by_end = device[np.argsort(end[device], kind="stable")]
    ends, launched_at = end[by_end], launched[by_end]
    src, dst, weight, synced = [], [], [], []
    for node, latest_return in zip(waits.tolist(), max_return.tolist()):
        lo = int(np.searchsorted(ends, start[node], "right"))
        hi = int(np.searchsorted(ends, end[node], "right"))
        window = np.flatnonzero(launched_at[max(lo, hi - SYNC_SEARCH) : hi] <= start[node])
        if not len(window):
            continue
        awaited = int(by_end[max(lo, hi - SYNC_SEARCH) + int(window[-1])])
        following = int(next_node[node])
        returned = int(start[following]) - int(end[awaited])
        if returned > latest_return:
            continue
        src.append(awaited)
        dst.append(following)
        weight.append(returned)
        synced.append(node)
    as_array = (np.asarray(values, dtype=np.int64) for values in (src, dst, weight, synced))
    return tuple(as_array)  # type: ignore[return-value]


def _step_nodes(
    start: np.ndarray, plane: np.ndarray, line: np.ndarray, row: np.ndarray, anchor: tuple[int, int] | None, steps: Steps
) -> tuple[np.ndarray, np.ndarray]:
    """Each step's start and end boundary node (-1 without an anchor)."""
    if anchor is None:
        none = np.full(len(steps), -1, dtype=np.int64)
        return none, none.copy()
    bounds = np.flatnonzero((row == BOUNDARY_ROW) & (plane == anchor[0]) & (line == anchor[1]))
    times = start[bounds]
    return bounds[np.searchsorted(times, steps.start_ps)], bounds[np.searchsorted(times, steps.end_ps)]
