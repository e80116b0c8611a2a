"""Edges of the dependency graph (``dependency_graph``) between lines that wait for each
other without a launch or a host synchronisation between them:

- **thread joins**: PyTorch runs ``backward()`` on an autograd thread while the thread
  that called it blocks. Kineto's ``fwdbwd`` flows (forward op -> its backward op) name
  the pair: thread A sources flows into thread B. A piece of A (host compute or idle: no
  launch, synchronisation or input wait; pieces are cut at every op's edges, so A ran no
  op boundary during it) that holds whole pieces of B's work is *blocked*: its own duration becomes 0, B's first work piece inside it depends on A's
  piece before it (a *fork*, weighted by B's recorded start after it: host compute on A),
  and A's piece after it on B's last work piece ending inside it (a *join*, weighted by
  A's recorded return after it: sync). B's idle piece before the fork takes 0 too (it
  waited for the fork), so B's work moves with A's and A's return with B's.
- **stream waits**: ``cudaStreamWaitEvent`` makes a stream wait for the work recorded on
  another stream by ``cudaEventRecord``. Kineto writes each as a ``cuda_sync`` event on
  the waiting stream (``Wait Event``) with ``wait_on_stream`` and
  ``wait_on_cuda_event_record_corr_id`` (the record call's correlation id). The edge goes
  from the last node of the recorded stream launched before the record call began to the
  first node of the waiting stream launched after the wait call began (else starting at
  or after the ``cuda_sync`` event): weight 0, gap kind sync.

Edges here, like every edge, only point forward in processing order (``dependency_graph``
drops the others) and are clipped to the recorded times there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.paths.path_kinds import Kind
from stepscope.trace import names
from stepscope.trace.kinds import FORWARD_BACKWARD_FLOWS, WAIT_RECORD_CORRELATION, WAIT_STREAM, EventKind
from stepscope.trace.model import NO_ID, Profile, distinct_indices

# (src, dst, nominal weight, gap kind) of a group of edges.
_Edges = tuple[np.ndarray, np.ndarray, np.ndarray, int]


@dataclass(frozen=True)
class Nodes:
    """The graph's node columns in processing order, as ``dependency_graph`` builds them."""

    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    plane: npt.NDArray[np.int32]
    line: npt.NDArray[np.int32]
    row: npt.NDArray[np.int64]
    host: npt.NDArray[np.bool_]  # a host piece (else device work or a device boundary)
    next_node: npt.NDArray[np.int64]  # the next node of the same line (-1: none)
    prev_node: npt.NDArray[np.int64]
    launched: npt.NDArray[np.int64]  # a device node's launch call's start (else its own start)


@dataclass(frozen=True)
class CrossEdges:
    """Edges (``src -> dst``, nominal weight, gap kind) and the nodes whose own duration
    becomes 0 in a schedule (their wait is carried by these edges)."""

    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    weight: npt.NDArray[np.int64]
    gap: npt.NDArray[np.int8]
    waiting: npt.NDArray[np.int64]

    @classmethod
    def of(cls, parts: list[_Edges], waiting: list[np.ndarray]) -> CrossEdges:
        def joined(columns: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(columns).astype(dtype) if columns else np.zeros(0, dtype=dtype)

        return cls(
            joined([src for src, _, _, _ in parts], np.int64),
            joined([dst for _, dst, _, _ in parts], np.int64),
            joined([weight for _, _, weight, _ in parts], np.int64),
            joined([np.full(len(src), gap, dtype=np.int8) for src, _, _, gap in parts], np.int8),
            joined(waiting, np.int64),
        )


def cross_edges(profile: Profile, nodes: Nodes) -> CrossEdges:
    """The thread joins and stream waits of ``profile`` (module docstring)."""
    parts: list[_Edges] = []
    waiting: list[np.ndarray] = []
    for plane_index, thread, worker in _fwdbwd_pairs(profile):
        _join(nodes, plane_index, thread, worker, parts, waiting)
    _stream_waits(profile, nodes, parts)
    return CrossEdges.of(parts, waiting)


def _fwdbwd_pairs(profile: Profile) -> list[tuple[int, int, int]]:
    """(host plane, thread line, worker line) where the thread's ops source fwdbwd flows
    into the worker's."""
    flows = profile.flows
    codes = [code for code, category in enumerate(flows.categories) if category in FORWARD_BACKWARD_FLOWS]
    if not codes:
        return []
    mine = np.isin(flows.category, codes) & (flows.src_plane == flows.dst_plane)
    pairs: set[tuple[int, int, int]] = set()
    for plane_index in distinct_indices(flows.src_plane[mine]):
        lines = profile.planes[plane_index].events.line
        here = mine & (flows.src_plane == plane_index)
        src_line, dst_line = lines[flows.src_event[here]], lines[flows.dst_event[here]]
        apart = src_line != dst_line
        pairs.update((plane_index, int(a), int(b)) for a, b in set(zip(src_line[apart].tolist(), dst_line[apart].tolist())))
    return sorted(pairs)


def _join(nodes: Nodes, plane_index: int, thread: int, worker: int, parts: list[_Edges], waiting: list[np.ndarray]) -> None:
    on_plane = nodes.host & (nodes.plane == plane_index)
    pieces = np.flatnonzero(on_plane & (nodes.line == thread) & (nodes.row >= -1))  # (not step boundaries)
    work = np.flatnonzero(on_plane & (nodes.line == worker) & (nodes.kind != Kind.IDLE) & (nodes.end > nodes.start))
    if not len(pieces) or not len(work):
        return
    # The thread's piece holding each worker piece's start, where it holds the whole piece.
    at = np.searchsorted(nodes.start[pieces], nodes.start[work], "right") - 1
    holder = pieces[np.maximum(at, 0)]
    inside = (at >= 0) & (nodes.end[holder] >= nodes.end[work])
    blocked = inside & np.isin(nodes.kind[holder], (Kind.HOST_COMPUTE, Kind.IDLE))
    work, holder = work[blocked], holder[blocked]
    if not len(work):
        return
    # Per blocked piece: its first worker piece (by start) and its last (by end).
    firsts = np.flatnonzero(np.concatenate(([True], holder[1:] != holder[:-1])))
    blocked_pieces, first_work = holder[firsts], work[firsts]
    by_end = np.lexsort((nodes.end[work], holder))
    lasts = by_end[np.concatenate((holder[by_end][1:] != holder[by_end][:-1], [True]))]
    last_work = work[lasts]
    before, after = nodes.prev_node[blocked_pieces], nodes.next_node[blocked_pieces]
    fork = before >= 0
    parts.append((before[fork], first_work[fork], nodes.start[first_work[fork]] - nodes.end[before[fork]], Kind.HOST_COMPUTE))
    join = after >= 0
    parts.append((last_work[join], after[join], nodes.start[after[join]] - nodes.end[last_work[join]], Kind.SYNC))
    idle_before = nodes.prev_node[first_work[fork]]
    waiting.append(blocked_pieces)
    waiting.append(idle_before[(idle_before >= 0) & (nodes.kind[np.maximum(idle_before, 0)] == Kind.IDLE)])


def _stream_waits(profile: Profile, nodes: Nodes, parts: list[_Edges]) -> None:
    """cuda_sync ``Wait Event``s: the recorded stream's last work launched before the record
    call -> the waiting stream's first work launched after the wait call."""
    call_corr, call_start = _host_calls(profile)
    src: list[int] = []
    dst: list[int] = []
    for plane_index, plane in enumerate(profile.planes):
        if not plane.is_device:
            continue
        meta = plane.metadata
        wait_type = meta.kinds == EventKind.STREAM_WAIT
        if not wait_type.any():
            continue
        line_of_stream = {line.id: index for index, line in enumerate(plane.lines)}
        for row in np.flatnonzero(wait_type[plane.events.metadata_id]).tolist():
            metadata_id = int(plane.events.metadata_id[row])
            name, category = meta.names[metadata_id], meta.categories[metadata_id]
            stream = plane.stats.value(row, WAIT_STREAM, name, category)
            record = plane.stats.value(row, WAIT_RECORD_CORRELATION, name, category)
            recorded_line = line_of_stream.get(stream) if isinstance(stream, int) else None
            record_at = _call_start(call_corr, call_start, record)
            if recorded_line is None or record_at is None:
                continue
            wait_at = _call_start(call_corr, call_start, int(plane.events.correlation_id[row]))
            device = ~nodes.host & (nodes.plane == plane_index) & (nodes.row >= 0)
            recorded = np.flatnonzero(device & (nodes.line == recorded_line) & (nodes.launched < record_at))
            waiting_line = device & (nodes.line == int(plane.events.line[row]))
            if wait_at is not None:
                waiters = np.flatnonzero(waiting_line & (nodes.launched > wait_at))
            else:
                waiters = np.flatnonzero(waiting_line & (nodes.start >= plane.events.start_ps[row]))
            if len(recorded) and len(waiters):
                src.append(int(recorded[-1]))
                dst.append(int(waiters[0]))
    if src:
        parts.append((np.asarray(src), np.asarray(dst), np.zeros(len(src), dtype=np.int64), Kind.SYNC))


def _host_calls(profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Correlation ids of the host planes' events, sorted, and each event's start."""
    corr, start = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for plane in profile.planes:
        if plane.name == names.HOST_PLANE:
            linked = plane.events.correlation_id != NO_ID
            corr.append(plane.events.correlation_id[linked].astype(np.int64))
            start.append(plane.events.start_ps[linked].astype(np.int64))
    all_corr, all_start = np.concatenate(corr), np.concatenate(start)
    order = np.argsort(all_corr, kind="stable")
    return all_corr[order], all_start[order]


def _call_start(call_corr: np.ndarray, call_start: np.ndarray, correlation: object) -> int | None:
    if not isinstance(correlation, int) or correlation == NO_ID or not len(call_corr):
        return None
    at = int(np.searchsorted(call_corr, correlation))
    return int(call_start[at]) if at < len(call_corr) and call_corr[at] == correlation else None
