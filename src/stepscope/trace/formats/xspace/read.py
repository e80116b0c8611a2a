"""XSpace (``*.xplane.pb``) read into a Profile.

The reader resolves what XSpace stores indirectly: event times (line ``timestamp_ns`` plus
event ``offset_ps``) become picoseconds from the profile start, stat names come from the
plane's stat metadata, and ``ref_value`` stats become the string they refer to. Metadata
ids are renumbered densely; everything else a plane carries (plane stats, event metadata
stats, serialized metadata, line names and ids) is kept so a write after a read
(:mod:`stepscope.trace.formats.xspace.write`) gives XProf the same profile.
What stepscope's writer added for XProf alone (``xprof_hints.py``: a line of step roots,
grouping links and op names) is dropped, so its files read back as the profile written.

The bulk of a file, every event and stat, is decoded straight from the wire format into
columns (:mod:`stepscope.trace.formats.xspace.decode`,
:mod:`stepscope.trace.formats.xspace.wire`), with protobuf's own rules; this module turns
those columns into planes. The "Task Environment" plane (capture-wide facts such as
``profile_start_time``) becomes ``Profile.info``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from stepscope.errors import ProfileFormatError
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, earliest_start, finish_plane
from stepscope.trace.formats.xspace.arrows import arrows
from stepscope.trace.formats.xspace.decode import DecodedLines, DecodedPlane, decode_space
from stepscope.trace.formats.xspace.hot_ids import hot_id_column
from stepscope.trace.formats.xspace.kinds import xspace_kinds
from stepscope.trace.formats.xspace.schema import (
    EPOCH_NS_THRESHOLD,
    FLOW_CATEGORY,
    FLOW_CATEGORY_SHIFT,
    FLOW_ID_MASK,
    FLOW_IN,
    FLOW_OUT,
    HOT_STATS,
    KIND_NONE,
    KIND_REF,
    TASK_ENVIRONMENT_INFO,
)
from stepscope.trace.formats.xspace.xprof_hints import strip_hints
from stepscope.trace.kinds import kind_array
from stepscope.trace.model import NO_ID, EventMetadata, FlowTable, Line, Plane, Profile, latest_end
from stepscope.trace.planes_in_parallel import map_planes
from stepscope.trace.presorted import finish_presorted
from stepscope.trace.stat_types import INT64_MAX, INT64_MIN, Stat, StatKind, StatValue
from stepscope.trace.stats import TypedStats

_UINT64_MASK = (1 << 64) - 1
_VALUE_FIELDS = {
    "double_value": StatKind.DOUBLE,
    "uint64_value": StatKind.UINT64,
    "int64_value": StatKind.INT64,
    "str_value": StatKind.STR,
    "bytes_value": StatKind.BYTES,
}


class TakenBytes(Protocol):
    """A file's bytes handed over (``readers.FileBytes``): ``take`` gives them up."""

    def take(self) -> bytes | bytearray: ...


def read_xspace(path: Path, data: bytes | bytearray | TakenBytes, *, bulk: bool | None = None) -> Profile:
    """``bulk``: decode with the wire decoder (True) or protobuf's messages (False); None
    chooses (:func:`decode.decode_space`). Both give the same Profile.

    ``data`` given as ``TakenBytes`` is let go once decoded: the columns hold copies of
    what they need, and the file's bytes (a plain argument stays referenced by the
    caller until this returns) were a quarter of the peak, held while the planes were
    finished: 1 GB of 3.9 at bench/scale.py's 10M events."""
    if not isinstance(data, (bytes, bytearray)):
        data = data.take()
    space = decode_space(path, data, bulk)
    del data
    if not space.planes:
        raise ProfileFormatError(path, "is not a profile: the XSpace has no planes")
    for decoded in space.planes:
        strip_hints(decoded)  # what stepscope's writer added for XProf is not the profile
    timestamps = [line.timestamp_ns for plane in space.planes for line, count in zip(plane.lines, plane.columns.line_events.tolist()) if count]
    base_ns = min(timestamps, default=0)
    environment: dict[str, Any] = {}
    kept = []
    for plane in space.planes:
        if plane.proto.name == names.TASK_ENVIRONMENT_PLANE:
            # Capture-wide facts, not a timeline: kept in Profile.info (a plane with
            # lines, which TSL never writes, also stays a plane, without its stats).
            stat_names = {key: meta.name for key, meta in plane.proto.stat_metadata.items()}
            for stat in _stats(plane.proto.stats, stat_names):
                environment.setdefault(stat.name, stat.value)
            if not plane.lines:
                continue
        kept.append(plane)
    raws: list[RawPlane] = []
    points: list[FlowPoints] = []
    flow_categories: list[str] = []  # what the `flow` stats' category codes name (stepscope's files)
    # On threads when large: the compiled loops and large numpy operations release the GIL.
    for raw, plane_points in map_planes(lambda plane: _read_plane(path, plane, base_ns, space.bulk), kept, threads=space.parallel):
        if raw.name == names.TASK_ENVIRONMENT_PLANE:
            raw.plane_stats = []  # in info
        flow_names = next((stat.value for stat in raw.plane_stats if stat.name == names.FLOW_CATEGORIES), None)
        if flow_names is not None:
            raw.plane_stats = [stat for stat in raw.plane_stats if stat.name != names.FLOW_CATEGORIES]
            flow_categories = flow_categories or _flow_category_names(flow_names)
        raws.append(raw)
        points.append(plane_points)
    earliest = earliest_start(raws)
    zero_ps = 0 if earliest is None else (earliest // 1000) * 1000
    _check_span(path, raws, zero_ps)
    finish = finish_presorted if space.bulk else finish_plane  # (finish_presorted's nesting: a kernel, as the decoder)

    pending: list[RawPlane | None] = [*raws]
    raws.clear()

    def finish_one(index: int) -> tuple[Plane, np.ndarray | None]:
        raw, pending[index] = pending[index], None  # let go once finished: its times, rebased into the plane, are garbage then
        assert raw is not None
        return finish(raw, zero_ps)

    finished = map_planes(finish_one, range(len(pending)), threads=space.parallel)
    planes = [plane for plane, _ in finished]
    orders = [order for _, order in finished]
    flows = _pair_flows(points, orders, flow_categories, bulk=space.bulk)
    info: dict[str, Any] = {}
    for key in ("hostnames", "errors", "warnings"):
        values = list(getattr(space.proto, key))
        if values:
            info[key] = values
    if environment:
        info[TASK_ENVIRONMENT_INFO] = environment
    hostnames = space.proto.hostnames
    return Profile(
        planes=planes,
        start_ns=_epoch_offset([plane.proto for plane in space.planes], base_ns) + base_ns + zero_ps // 1000,
        host=hostnames[0] if hostnames else _host_from_path(path),
        source=str(path),
        format="xspace",
        flows=flows,
        info=info,
    )


def _check_span(path: Path, raws: Sequence[RawPlane | None], zero_ps: int) -> None:
    """Every event, rebased to the profile's start, must still end within an int64."""
    for raw in raws:
        if raw is not None and len(raw) and (zero_ps < INT64_MIN or latest_end(raw.start_ps, raw.duration_ps) - zero_ps > INT64_MAX):
            raise ProfileFormatError(path, f"plane {raw.name!r} has event times out of range (more than 106 days from the first event)")


# A plane's flow endpoints: the raw rows of the events carrying a `flow` stat, and the stat.
FlowPoints = tuple[np.ndarray, np.ndarray]


def _flow_category_names(text: StatValue) -> list[str]:
    try:
        decoded = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        decoded = None
    return [str(name) for name in decoded] if isinstance(decoded, list) else []


def _arrow_categories(flow_id: np.ndarray, encoded: np.ndarray, names_of_codes: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each arrow's category (index into the returned names), from the category bits of
    its flow's endpoints; every arrow is FLOW_CATEGORY when the file names no codes."""
    if not names_of_codes:
        return np.zeros(len(flow_id), dtype=np.int32), [FLOW_CATEGORY]
    ids = ((encoded >> np.uint64(2)) & np.uint64(FLOW_ID_MASK)).astype(np.int64)
    codes = (encoded >> np.uint64(FLOW_CATEGORY_SHIFT)).astype(np.int64)
    order = np.argsort(ids, kind="stable")
    found = np.clip(np.searchsorted(ids[order], flow_id), 0, len(ids) - 1)
    code = codes[order][found]
    table = [FLOW_CATEGORY, *names_of_codes]  # code 0 and codes with no name: FLOW_CATEGORY
    code = np.where(code < len(table), code, 0)
    used, index = np.unique(code, return_inverse=True)
    return index.reshape(-1).astype(np.int32), [table[c] for c in used.tolist()]


def _pair_flows(points: list[FlowPoints], orders: list[np.ndarray | None], flow_categories: list[str], *, bulk: bool) -> FlowTable:
    """Arrows from each flow's first out-endpoint to each of its in-endpoints (in file
    order), but none from an event to itself. ``orders[i]`` is plane ``i``'s
    finishing permutation (None: rows kept in place). ``bulk``: paired by
    :func:`stepscope.trace.formats.xspace.arrows.arrows` (the bulk reader's kernels), else
    by :func:`pair_flows_numpy`; the same table."""
    parts, row_parts, encoded_parts = [], [], []
    for plane_index, ((raw_rows, encoded), order) in enumerate(zip(points, orders)):
        if not len(raw_rows):
            continue
        if order is None:
            rows = raw_rows
        else:
            position = np.empty_like(order)
            position[order] = np.arange(len(order))
            rows = position[raw_rows]
        parts.append(plane_index)
        row_parts.append(rows.astype(np.int64, copy=False))
        encoded_parts.append(encoded)
    if not parts:
        return FlowTable.empty()
    counts = [len(rows) for rows in row_parts]
    row = np.concatenate(row_parts)
    encoded = np.concatenate(encoded_parts)
    del row_parts, encoded_parts
    if bulk:
        bounds = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        flow_id, src_plane, src_event, dst_plane, dst_event = arrows(np.asarray(parts, dtype=np.int32), bounds, row, encoded)
    else:
        flow_id, src_plane, src_event, dst_plane, dst_event = pair_flows_numpy(np.repeat(np.asarray(parts, dtype=np.int32), counts), row, encoded)
    if not len(flow_id):
        return FlowTable.empty()
    category, category_names = _arrow_categories(flow_id, encoded, flow_categories)
    return FlowTable(
        flow_id=flow_id,
        category=category,
        src_plane=src_plane,
        src_event=src_event,
        dst_plane=dst_plane,
        dst_event=dst_event,
        categories=category_names,
    )


def pair_flows_numpy(plane: np.ndarray, row: np.ndarray, encoded: np.ndarray) -> tuple[np.ndarray, ...]:
    """(flow id, source plane, source event, sink plane, sink event) of each arrow, in sink
    order, with whole-array operations: endpoint ``i`` is event ``row[i]`` of plane
    ``plane[i]``, ``encoded[i]`` its `flow` stat."""
    direction = (encoded & np.uint64(3)).astype(np.int8)
    flow_id = ((encoded >> np.uint64(2)) & np.uint64(FLOW_ID_MASK)).astype(np.int64)
    outs = np.flatnonzero(direction & FLOW_OUT)
    sinks = np.flatnonzero(direction & FLOW_IN)
    if not len(outs) or not len(sinks):
        sinks = source = sinks[:0]
    else:
        source = _first_source(flow_id, outs, flow_id[sinks])
        keep = np.flatnonzero(source >= 0)
        sinks, source = sinks[keep], source[keep]
        not_self = (plane[source] != plane[sinks]) | (row[source] != row[sinks])
        sinks, source = sinks[not_self], source[not_self]
    return flow_id[sinks], plane[source], row[source], plane[sinks], row[sinks]


def _first_source(flow_id: np.ndarray, outs: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """For each id in ``wanted``, the first point of ``outs`` (ascending) with that flow id; -1 if none."""
    out_ids = flow_id[outs]
    high = int(max(out_ids.max(), wanted.max()))
    if high < 4 * len(flow_id) + (1 << 20):  # ids numbered densely (stepscope writes 1, 2, ...): a table
        first = np.full(high + 1, len(flow_id), dtype=np.int64)
        np.minimum.at(first, out_ids, outs)
        found = first[wanted]
        return np.where(found < len(flow_id), found, -1)
    ids, index = np.unique(out_ids, return_index=True)
    at = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    return np.where(ids[at] == wanted, outs[index[at]], -1)


def _epoch_offset(planes: list[xplane_pb2.XPlane], base_ns: int) -> int:
    """What to add to line timestamps to make them UNIX times.

    TSL normalises a finished capture: line timestamps become nanoseconds since the
    session start, which it records as ``profile_start_time`` on the "Task Environment"
    plane. Older files and other writers keep epoch timestamps (then this is 0).
    """
    if base_ns >= EPOCH_NS_THRESHOLD:
        return 0
    for plane in planes:
        if plane.name != names.TASK_ENVIRONMENT_PLANE:
            continue
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for stat in plane.stats:
            if stat_names.get(stat.metadata_id) == names.PROFILE_START_TIME:
                kind, value = _stat_value(stat, stat_names)
                if kind in (StatKind.UINT64, StatKind.INT64) and value >= EPOCH_NS_THRESHOLD:
                    return int(value)
    return 0


def _host_from_path(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".pb", ".xplane"):
        name = name.removesuffix(suffix)
    return name or "host"


def _stat_value(stat: xplane_pb2.XStat, stat_names: dict[int, str]) -> tuple[StatKind, Any]:
    field = stat.WhichOneof("value")
    if field == "ref_value":
        return StatKind.STR, stat_names.get(stat.ref_value, "")
    if field is None:
        return StatKind.INT64, 0
    return _VALUE_FIELDS[field], getattr(stat, field)


def _stats(protos: Any, stat_names: dict[int, str]) -> list[Stat]:
    result = []
    for stat in protos:
        kind, value = _stat_value(stat, stat_names)
        result.append(Stat(stat_names.get(stat.metadata_id, f"stat_{stat.metadata_id}"), kind, value))
    return result


def _read_plane(path: Path, plane: DecodedPlane, base_ns: int, bulk: bool) -> tuple[RawPlane, FlowPoints]:
    proto = plane.proto
    stat_names = {key: meta.name for key, meta in proto.stat_metadata.items()}
    meta_names: list[str] = []
    display: list[str] = []
    categories: list[str] = []
    meta_stats: list[list[Stat]] = []
    serialized: list[bytes] = []
    known = sorted(proto.event_metadata)
    for key in known:
        meta = proto.event_metadata[key]
        category = ""
        type_stats = _stats(meta.stats, stat_names) if len(meta.stats) else []
        if type_stats:
            category = next((s.value for s in type_stats if s.name == names.CATEGORY and isinstance(s.value, str)), "")
            type_stats = [s for s in type_stats if s.name != names.CATEGORY]
        meta_names.append(meta.name)
        display.append(meta.display_name)
        categories.append(category)
        meta_stats.append(type_stats)
        serialized.append(meta.metadata)
    lines = [
        Line(id=line.id, name=line.name, display_name=line.display_name, timestamp_ns=line.timestamp_ns, duration_ps=line.duration_ps) for line in plane.lines
    ]
    columns = plane.columns
    count = len(columns.event_offset)
    metadata_id, missing = _dense_ids(columns.event_metadata, np.asarray(known, dtype=np.int64))
    for metadata in missing:
        # An event whose type is missing from the plane: kept under a placeholder.
        meta_names.append(f"<metadata {metadata}>")
        display.append("")
        categories.append("")
        meta_stats.append([])
        serialized.append(b"")
    stats, ids, flow_points = _event_stats(count, columns, stat_names, bulk)
    duration_ps = columns.event_duration
    if count and duration_ps.min() < 0:
        raise ProfileFormatError(path, f"plane {proto.name!r} has an event with a negative duration")
    start_ps = _event_starts(columns.event_offset, columns.line_events, plane.lines, base_ns)  # (in place)
    columns.event_metadata = columns.event_offset = None  # type: ignore[assignment]  # garbage now
    if start_ps is None or _may_overflow(start_ps, duration_ps):
        raise ProfileFormatError(path, f"plane {proto.name!r} has event times out of range (more than 106 days from the first event)")
    return RawPlane(
        id=proto.id,
        name=proto.name,
        lines=lines,
        metadata=EventMetadata(meta_names, display, categories, meta_stats, serialized, kind_array(xspace_kinds(meta_names, categories))),
        start_ps=start_ps,
        duration_ps=duration_ps,
        metadata_id=metadata_id,
        line=columns.event_line,
        stats=stats,
        ids=ids,
        plane_stats=_stats(proto.stats, stat_names),
    ), flow_points


def _may_overflow(start_ps: np.ndarray, duration_ps: np.ndarray) -> bool:
    """Whether an event ends past int64 (its start taken as 0 when negative). Elementwise
    only when the largest start and the longest duration together could (three event-sized
    temporaries, 170 MB of fresh pages at 10M events, for a check that nearly always passes)."""
    if not len(start_ps) or int(duration_ps.max()) + max(int(start_ps.max()), 0) <= INT64_MAX:
        return False
    return bool(np.any(duration_ps > INT64_MAX - np.maximum(start_ps, 0)))


# Metadata ids up to this are mapped through a table; larger or negative ones are searched.
_TABLE_IDS = 1 << 22


def _dense_ids(raw: np.ndarray, known: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Each event's metadata as an index: ``known`` (sorted) ids first, then the ids no
    metadata has, in the order events first use them (the second value)."""
    if not len(raw):
        return np.zeros(0, dtype=np.int32), []
    low, high = int(raw.min()), int(raw.max())
    if low >= 0 and high < _TABLE_IDS:
        table = np.full(high + 1, -1, dtype=np.int32)
        inside = known[(known >= 0) & (known <= high)]
        table[inside] = np.searchsorted(known, inside).astype(np.int32)
        dense = table[raw]
    else:
        position = np.minimum(np.searchsorted(known, raw), max(len(known) - 1, 0))
        dense = np.where(known[position] == raw, position, -1).astype(np.int32) if len(known) else np.full(len(raw), -1, dtype=np.int32)
    unknown = np.flatnonzero(dense < 0)
    if not len(unknown):
        return dense, []
    ids, first = np.unique(raw[unknown], return_index=True)
    missing = ids[np.argsort(first, kind="stable")]
    index_of = np.searchsorted(ids, raw[unknown])
    rank = np.empty(len(ids), dtype=np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(len(ids), dtype=np.int32)
    dense[unknown] = len(known) + rank[index_of]
    return dense, missing.tolist()


def _codes(ids: np.ndarray, code: Callable[[int], int]) -> np.ndarray:
    """``code(id)`` of each of ``ids`` (int32), called once per distinct id in ascending
    order; through a table of the ids when they are small, so that the only stat-sized
    array made is the result."""
    if not len(ids):
        return np.zeros(0, dtype=np.int32)
    if ids.min() >= 0 and ids.max() < _TABLE_IDS:
        present = np.zeros(int(ids.max()) + 1, dtype=bool)
        present[ids] = True
        distinct = np.flatnonzero(present)
        table = np.zeros(len(present), dtype=np.int32)
        table[distinct] = [code(i) for i in distinct.tolist()]
        coded: np.ndarray = table[ids]
        return coded
    distinct, inverse = np.unique(ids, return_inverse=True)
    codes = np.asarray([code(i) for i in distinct.tolist()], dtype=np.int32)
    return codes[inverse.reshape(-1)]


def _event_starts(offset_ps: np.ndarray, counts: np.ndarray, lines: list[xplane_pb2.XLine], base_ns: int) -> np.ndarray | None:
    """Event starts in ps from ``base_ns``: (line timestamp - base) * 1000 + offset, for
    events stored line after line (``counts`` per line); None when one does not fit an
    int64. Computed in wrapping uint64 arithmetic once each line's extremes are checked
    exactly (wrapping gives the exact value of any sum that fits), in place: ``offset_ps``
    (the decoder's column, garbage after this) becomes the starts, each line's slice
    shifted by its base, so that no event-sized array is allocated (at 10M events a
    repeated shift and a sum were 160 MB of fresh pages, 0.2 s)."""
    if not len(offset_ps):
        return np.zeros(0, dtype=np.int64)
    used = np.flatnonzero(counts)
    firsts = np.concatenate(([0], np.cumsum(counts)[:-1]))[used]
    lows = np.minimum.reduceat(offset_ps, firsts).tolist()
    highs = np.maximum.reduceat(offset_ps, firsts).tolist()
    bases = []
    for index, low, high in zip(used.tolist(), lows, highs):
        base = (lines[index].timestamp_ns - base_ns) * 1000
        if base + low < INT64_MIN or base + high > INT64_MAX:
            return None
        bases.append(base & _UINT64_MASK)
    wrapping = offset_ps.view(np.uint64)
    for first, count, base in zip(firsts.tolist(), counts[used].tolist(), bases):
        wrapping[first : first + count] += np.uint64(base)
    return offset_ps


def _event_stats(count: int, columns: DecodedLines, stat_names: dict[int, str], bulk: bool) -> tuple[TypedStats, dict[str, np.ndarray], FlowPoints]:
    """The stats store, the hot id columns and the flow endpoints, from decoded stat columns.
    ``bulk``: the bulk decoder ran (the kernels are compiled), so the hot ids take their one-pass loop."""
    event, kind, bits = columns.stat_event, columns.stat_kind, columns.stat_bits
    if not len(event):  # (what the rest gives for no stats, at a fraction of the cost)
        store = TypedStats.from_columns(event, np.zeros(0, dtype=np.int32), kind, bits, columns.texts, [], count)
        return store, {}, (event, bits.view(np.uint64))
    # Stat names: one per distinct metadata id, then one key per distinct name (so two
    # metadata entries of one name are one stat, as a reader of names sees them).
    key_index: dict[str, int] = {}
    key = _codes(columns.stat_metadata, lambda i: key_index.setdefault(stat_names.get(i, f"stat_{i}"), len(key_index)))
    texts = columns.texts
    refs = np.flatnonzero(kind == KIND_REF)
    if len(refs):  # a string stored as the name of a stat metadata entry
        referenced, which = np.unique(bits[refs].view(np.uint64), return_inverse=True)
        texts = texts.with_extra([stat_names.get(i, "") for i in referenced.tolist()])
        bits[refs] = columns.text_count + which.reshape(-1)
        kind[refs] = StatKind.STR
    kind[kind == KIND_NONE] = StatKind.INT64  # no value: int64 0
    ids = {}
    for stat, column in HOT_STATS.items():
        code = key_index.get(stat)
        if code is None:
            continue
        array = hot_id_column(count, event, key, kind, bits, code) if bulk else _hot_id_column(count, event, key, kind, bits, code)
        if array is not None:
            ids[column] = array
    code = key_index.get(names.FLOW)
    flows = np.flatnonzero(key == code) if code is not None else np.zeros(0, dtype=np.int64)
    flows = flows[_is_integer(kind[flows])]
    store = TypedStats.from_columns(event, key, kind, bits, texts, list(key_index), count)
    return store, ids, (event[flows], bits[flows].view(np.uint64))


def _is_integer(kind: np.ndarray) -> np.ndarray:
    integer: np.ndarray = (kind == StatKind.INT64) | (kind == StatKind.UINT64)
    return integer


def _hot_id_column(count: int, event: np.ndarray, key: np.ndarray, kind: np.ndarray, bits: np.ndarray, code: int) -> np.ndarray | None:
    """``hot_ids.hot_id_column`` in numpy, for a file read with protobuf's messages (no compiled kernels)."""
    entries = np.flatnonzero((key == code) & _is_integer(kind) & ((kind == StatKind.INT64) | (bits >= 0)))
    if not len(entries):
        return None
    array = np.full(count, NO_ID, dtype=np.int64)
    array[event[entries]] = bits[entries]
    return array
