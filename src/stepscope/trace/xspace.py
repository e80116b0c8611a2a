"""XSpace (``*.xplane.pb``): reading into a Profile and writing one back.

The reader resolves what XSpace stores indirectly: event times (line ``timestamp_ns`` plus
event ``offset_ps``) become picoseconds from the profile start, stat names come from the
plane's stat metadata, and ``ref_value`` stats become the string they refer to. Metadata
ids are renumbered densely; everything else a plane carries (plane stats, event metadata
stats, serialized metadata, line names and ids) is kept so a write after a read gives XProf
the same profile.

The reader decodes the bulk of a file, every event and stat, straight from the wire format
into columns (:mod:`stepscope.trace.xspace_decode`, :mod:`stepscope.trace.wire`), with
protobuf's own rules; this module turns those columns into planes. The "Task Environment"
plane (capture-wide facts such as ``profile_start_time``) becomes ``Profile.info``.

The writer writes as TSL does after a capture: line timestamps in nanoseconds since the
session start, whose UNIX time is the "Task Environment" plane's ``profile_start_time``
(XProf turns line timestamps into int64 picoseconds, which an epoch time overflows). It
emits every event's stats (for imported JSON, the Kineto args under XSpace's names) and the
source category as a metadata stat, so XProf's converters read what stepscope read. The
small part of a file (planes, metadata, line headers) is built with protobuf's messages;
the events are encoded in bulk into wire bytes (:mod:`stepscope.trace.xspace_encode`) and
joined to their line headers (protobuf merges concatenated serialisations).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from stepscope.errors import ProfileFormatError
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, earliest_start, finish_plane
from stepscope.trace.model import NO_ID, EventMetadata, FlowTable, Line, Plane, Profile
from stepscope.trace.stats import (
    INT64_MAX,
    INT64_MIN,
    Stat,
    StatKind,
    TypedStats,
    is_int64,
    stat_from_python,
)
from stepscope.trace.xspace_decode import (
    KIND_NONE,
    KIND_REF,
    DecodedLines,
    DecodedPlane,
    decode_space,
)

# Line timestamps at or past this (1973 in epoch ns) are UNIX times, not session offsets.
EPOCH_NS_THRESHOLD = 10**17
# Profile.info key holding the "Task Environment" plane's stats (name -> value).
TASK_ENVIRONMENT_INFO = "task_environment"
# TSL's other session stat, next to names.PROFILE_START_TIME.
PROFILE_STOP_TIME = "profile_stop_time"
_UINT64_MASK = (1 << 64) - 1
# The most a kept session start may precede the profile's start when writing.
_MAX_SESSION_LEAD_NS = 86_400 * 10**9
# XSpace field 1..4 with wire type 2 (length-delimited): the only valid first bytes.
_XSPACE_FIRST_BYTES = frozenset({0x0A, 0x12, 0x1A, 0x22})
# Stats copied into the event table's id columns when an event carries them.
_HOT_STATS = {
    names.CORRELATION_ID: "correlation_id",
    names.GROUP_ID: "group_id",
    names.STEP_NUM: "step_num",
    names.EXTERNAL_ID: "external_id",
}
_VALUE_FIELDS = {
    "double_value": StatKind.DOUBLE,
    "uint64_value": StatKind.UINT64,
    "int64_value": StatKind.INT64,
    "str_value": StatKind.STR,
    "bytes_value": StatKind.BYTES,
}


def looks_like_xspace(data: bytes) -> bool:
    return bool(data) and data[0] in _XSPACE_FIRST_BYTES


def read_xspace(path: Path, data: bytes, *, bulk: bool | None = None) -> Profile:
    """``bulk``: decode with the compiled decoder (True) or protobuf's messages (False);
    None chooses by size. Both give the same Profile."""
    space = decode_space(path, data, bulk)
    if not space.planes:
        raise ProfileFormatError(path, "is not a profile: the XSpace has no planes")
    timestamps = [
        line.timestamp_ns
        for plane in space.planes
        for line, count in zip(plane.lines, plane.columns.line_events.tolist())
        if count
    ]
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
    raws: list[RawPlane | None] = []
    points: list[FlowPoints] = []
    for plane in kept:
        raw, plane_points = _read_plane(path, plane, base_ns)
        if raw.name == names.TASK_ENVIRONMENT_PLANE:
            raw.plane_stats = []  # in info
        raws.append(raw)
        points.append(plane_points)
    earliest = earliest_start(raws)
    zero_ps = 0 if earliest is None else (earliest // 1000) * 1000
    _check_span(path, raws, zero_ps)
    if space.bulk:
        from stepscope.trace.presorted import (
            finish_presorted as finish,  # compiled, as the decoder
        )
    else:
        finish = finish_plane
    planes, orders = [], []
    for index, raw in enumerate(raws):
        plane, order = finish(raw, zero_ps)
        raws[index] = None  # its times, rebased into the plane, are garbage now
        planes.append(plane)
        orders.append(order)
    flows = _pair_flows(points, orders)
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


def _check_span(path: Path, raws: list[RawPlane | None], zero_ps: int) -> None:
    """Every event, rebased to the profile's start, must still end within an int64."""
    for raw in raws:
        if raw is not None and len(raw) and (
            zero_ps < INT64_MIN or int((raw.start_ps + raw.duration_ps).max()) - zero_ps > INT64_MAX
        ):
            raise ProfileFormatError(
                path, f"plane {raw.name!r} has event times out of range (more than 106 days from the first event)"
            )


# XSpace's `flow` stat packs direction (bits 0-1), id (bits 2-57) and category (58-63).
FLOW_IN, FLOW_OUT, FLOW_IN_OUT = 1, 2, 3
_FLOW_ID_MASK = (1 << 56) - 1
FLOW_CATEGORY = "flow"


def encode_flow(flow_id: int, direction: int) -> int:
    return direction | ((flow_id & _FLOW_ID_MASK) << 2)


# A plane's flow endpoints: the raw rows of the events carrying a `flow` stat, and the stat.
FlowPoints = tuple[np.ndarray, np.ndarray]


def _pair_flows(points: list[FlowPoints], orders: list[np.ndarray | None]) -> FlowTable:
    """Arrows from each flow's first out-endpoint to each of its in-endpoints (in file
    order), but none from an event to itself. ``orders[i]`` is plane ``i``'s
    finishing permutation (None: rows kept in place)."""
    plane_parts, row_parts, encoded_parts = [], [], []
    for plane_index, ((raw_rows, encoded), order) in enumerate(zip(points, orders)):
        if not len(raw_rows):
            continue
        if order is None:
            rows = raw_rows
        else:
            position = np.empty_like(order)
            position[order] = np.arange(len(order))
            rows = position[raw_rows]
        plane_parts.append(np.full(len(raw_rows), plane_index, dtype=np.int32))
        row_parts.append(rows)
        encoded_parts.append(encoded)
    if not plane_parts:
        return FlowTable.empty()
    plane = np.concatenate(plane_parts)
    row = np.concatenate(row_parts)
    encoded = np.concatenate(encoded_parts)
    direction = (encoded & np.uint64(3)).astype(np.int8)
    flow_id = ((encoded >> np.uint64(2)) & np.uint64(_FLOW_ID_MASK)).astype(np.int64)
    del encoded
    outs = np.flatnonzero(direction & FLOW_OUT)
    sinks = np.flatnonzero(direction & FLOW_IN)
    if not len(outs) or not len(sinks):
        return FlowTable.empty()
    source = _first_source(flow_id, outs, flow_id[sinks])
    keep = np.flatnonzero(source >= 0)
    sinks, source = sinks[keep], source[keep]
    not_self = (plane[source] != plane[sinks]) | (row[source] != row[sinks])
    sinks, source = sinks[not_self], source[not_self]
    if not len(sinks):
        return FlowTable.empty()
    return FlowTable(
        flow_id=flow_id[sinks],
        category=np.zeros(len(sinks), dtype=np.int32),
        src_plane=plane[source],
        src_event=row[source],
        dst_plane=plane[sinks],
        dst_event=row[sinks],
        categories=[FLOW_CATEGORY],
    )


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


def _read_plane(path: Path, plane: DecodedPlane, base_ns: int) -> tuple[RawPlane, FlowPoints]:
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
        stats = _stats(meta.stats, stat_names) if len(meta.stats) else []
        if stats:
            category = next((s.value for s in stats if s.name == names.CATEGORY and isinstance(s.value, str)), "")
            stats = [s for s in stats if s.name != names.CATEGORY]
        meta_names.append(meta.name)
        display.append(meta.display_name)
        categories.append(category)
        meta_stats.append(stats)
        serialized.append(meta.metadata)
    lines = [
        Line(id=line.id, name=line.name, display_name=line.display_name, timestamp_ns=line.timestamp_ns, duration_ps=line.duration_ps)
        for line in plane.lines
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
    stats, ids, flow_points = _event_stats(count, columns, stat_names)
    duration_ps = columns.event_duration
    if count and duration_ps.min() < 0:
        raise ProfileFormatError(path, f"plane {proto.name!r} has an event with a negative duration")
    start_ps = _event_starts(columns.event_offset, columns.line_events, plane.lines, base_ns)
    columns.event_metadata = columns.event_offset = None  # type: ignore[assignment]  # garbage now
    if start_ps is None or np.any(duration_ps > INT64_MAX - np.maximum(start_ps, 0)):
        raise ProfileFormatError(
            path, f"plane {proto.name!r} has event times out of range (more than 106 days from the first event)"
        )
    return RawPlane(
        id=proto.id,
        name=proto.name,
        lines=lines,
        metadata=EventMetadata(meta_names, display, categories, meta_stats, serialized),
        start_ps=start_ps,
        duration_ps=duration_ps,
        metadata_id=metadata_id,
        line=columns.event_line,
        stats=stats,
        ids=ids,
        plane_stats=_stats(proto.stats, stat_names),
    ), flow_points


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


def _distinct(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)``, through a table when the ids are small."""
    if len(ids) and ids.min() >= 0 and ids.max() < _TABLE_IDS:
        present = np.zeros(int(ids.max()) + 1, dtype=bool)
        present[ids] = True
        distinct = np.flatnonzero(present)
        table = np.zeros(len(present), dtype=np.int32)
        table[distinct] = np.arange(len(distinct), dtype=np.int32)
        return distinct, table[ids]
    distinct, inverse = np.unique(ids, return_inverse=True)
    return distinct, inverse.reshape(-1)


def _event_starts(offset_ps: np.ndarray, counts: np.ndarray, lines: list[xplane_pb2.XLine], base_ns: int) -> np.ndarray | None:
    """Event starts in ps from ``base_ns``: (line timestamp - base) * 1000 + offset, for
    events stored line after line (``counts`` per line); None when one does not fit an
    int64. Computed in wrapping uint64 arithmetic once each line's extremes are checked
    exactly (wrapping gives the exact value of any sum that fits)."""
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
    shift = np.repeat(np.asarray(bases, dtype=np.uint64), counts[used])
    return (offset_ps.view(np.uint64) + shift).view(np.int64)


def _event_stats(count: int, columns: DecodedLines, stat_names: dict[int, str]) -> tuple[TypedStats, dict[str, np.ndarray], FlowPoints]:
    """The stats store, the hot id columns and the flow endpoints, from decoded stat columns."""
    event, kind, bits = columns.stat_event, columns.stat_kind, columns.stat_bits
    if not len(event):  # (what the rest gives for no stats, at a fraction of the cost)
        store = TypedStats.from_columns(event, np.zeros(0, dtype=np.int32), kind, bits, columns.texts, [], count)
        return store, {}, (event, bits.view(np.uint64))
    # Stat names: one per distinct metadata id, then one key per distinct name (so two
    # metadata entries of one name are one stat, as a reader of names sees them).
    distinct, inverse = _distinct(columns.stat_metadata)
    key_index: dict[str, int] = {}
    codes = np.asarray(
        [key_index.setdefault(stat_names.get(i, f"stat_{i}"), len(key_index)) for i in distinct.tolist()], dtype=np.int32
    )
    key = codes[inverse] if len(codes) else np.zeros(0, dtype=np.int32)
    texts = columns.texts
    refs = np.flatnonzero(kind == KIND_REF)
    if len(refs):  # a string stored as the name of a stat metadata entry
        referenced, which = np.unique(bits[refs].view(np.uint64), return_inverse=True)
        texts = texts.with_extra([stat_names.get(i, "") for i in referenced.tolist()])
        bits[refs] = columns.text_count + which.reshape(-1)
        kind[refs] = StatKind.STR
    kind[kind == KIND_NONE] = StatKind.INT64  # no value: int64 0
    integer = (kind == StatKind.INT64) | (kind == StatKind.UINT64)
    ids = {}
    for stat, column in _HOT_STATS.items():
        code = key_index.get(stat)
        if code is None:
            continue
        entries = np.flatnonzero((key == code) & integer & ((kind == StatKind.INT64) | (bits >= 0)))
        if len(entries):
            array = np.full(count, NO_ID, dtype=np.int64)
            array[event[entries]] = bits[entries]
            ids[column] = array
    code = key_index.get(names.FLOW)
    flows = np.flatnonzero((key == code) & integer) if code is not None else np.zeros(0, dtype=np.int64)
    store = TypedStats.from_columns(event, key, kind, bits, texts, list(key_index), count)
    return store, ids, (event[flows], bits[flows].view(np.uint64))


# --- writing -----------------------------------------------------------------------------------


def to_xspace(profile: Profile) -> xplane_pb2.XSpace:
    """The profile as TSL writes a finished capture (see the module's docstring)."""
    return xplane_pb2.XSpace.FromString(b"".join(xspace_chunks(profile)))


def write_xspace(profile: Profile, path: Path) -> None:
    """Writes ``profile`` as XSpace to ``path`` (gzip-compressed if it ends in .gz), atomically."""
    from stepscope.trace.files import atomic_output

    chunks = xspace_chunks(profile)
    with atomic_output(path) as stream:
        if path.name.endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=stream, compresslevel=6) as packed:
                packed.writelines(chunks)
        else:
            stream.writelines(chunks)


def xspace_chunks(profile: Profile) -> list[bytes | memoryview]:
    """The serialised XSpace, in pieces: a plane's skeleton (id, name, metadata, plane
    stats) and each line's header come from protobuf messages, its events from one buffer
    encoded in bulk (:mod:`stepscope.trace.xspace_encode`); concatenated serialisations
    merge, so the pieces make one XSpace."""
    from stepscope.trace.xspace_encode import plane_flows  # imports numba: only when writing

    chunks: list[bytes | memoryview] = []
    epoch_ns, environment = _session_clock(profile)
    for index, plane in enumerate(profile.planes):
        flows = plane_flows(profile.flows, index, len(plane.events))
        plane_chunks = _write_plane(plane, profile.start_ns - epoch_ns, flows)
        chunks += [_field_header(_PLANES_TAG, sum(len(chunk) for chunk in plane_chunks)), *plane_chunks]
    tail = xplane_pb2.XSpace()
    if environment:
        _write_environment(tail.planes.add(), environment)
    tail.hostnames.append(_clean(profile.host))
    for key in ("errors", "warnings"):
        getattr(tail, key).extend(_clean(str(v)) for v in profile.info.get(key, []))
    chunks.append(tail.SerializeToString())  # after the planes: the environment plane comes last
    return chunks


# XSpace.planes and XPlane.lines: fields 1 and 3, length-delimited.
_PLANES_TAG = 0x0A
_LINES_TAG = 0x1A


def _field_header(tag: int, length: int) -> bytes:
    """A length-delimited field's tag and length (a varint)."""
    header = bytearray((tag,))
    while length >= 0x80:
        header.append((length & 0x7F) | 0x80)
        length >>= 7
    header.append(length)
    return bytes(header)


class _StatNames:
    def __init__(self, proto: xplane_pb2.XPlane) -> None:
        self._proto = proto
        self._ids: dict[str, int] = {}

    def id(self, name: str) -> int:
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self._ids) + 1
            meta = self._proto.stat_metadata[found]
            meta.id = found
            meta.name = _clean(name)
        return found


def _fill_stat(proto: xplane_pb2.XStat, stat_id: int, stat: Stat) -> None:
    proto.metadata_id = stat_id
    value = stat.value
    if stat.kind == StatKind.DOUBLE:
        proto.double_value = float(value)
    elif stat.kind == StatKind.UINT64:
        proto.uint64_value = int(value)
    elif stat.kind == StatKind.INT64:
        proto.int64_value = int(value)
    elif stat.kind == StatKind.BYTES:
        proto.bytes_value = bytes(value)
    else:
        proto.str_value = _clean(str(value))


def _session_clock(profile: Profile) -> tuple[int, dict[str, Any]]:
    """The UNIX time (ns) line timestamps are written relative to, and the stats of the
    "Task Environment" plane that records it (empty: write no such plane).

    The session start the profile was read with is kept when it is still at or before the
    profile's start (by a day at most: XProf's picosecond times must stay in an int64); otherwise (a profile from JSON, or merged with earlier events) the
    session starts at the profile's start. A profile whose clock is not UNIX time
    (``start_ns`` before 1973) is written with its own timestamps and no session start,
    as before, since a reader would take any ``profile_start_time`` as the epoch.
    """
    kept = profile.info.get(TASK_ENVIRONMENT_INFO)
    environment = dict(kept) if isinstance(kept, dict) else {}
    start_ns = profile.start_ns
    if start_ns < EPOCH_NS_THRESHOLD:
        environment.pop(names.PROFILE_START_TIME, None)
        return 0, environment
    session = environment.get(names.PROFILE_START_TIME)
    if not (is_int64(session) and EPOCH_NS_THRESHOLD <= session and 0 <= start_ns - session <= _MAX_SESSION_LEAD_NS):
        session = start_ns
    environment[names.PROFILE_START_TIME] = session
    stop = environment.get(PROFILE_STOP_TIME)
    if not (is_int64(stop) and stop >= session):
        environment[PROFILE_STOP_TIME] = start_ns + -(-profile.span_ps // 1000)
    return session, environment


def _write_environment(proto: xplane_pb2.XPlane, environment: dict[str, Any]) -> None:
    proto.name = names.TASK_ENVIRONMENT_PLANE
    stat_ids = _StatNames(proto)
    for name, value in environment.items():
        # TSL writes its environment stats (times, counts) as uint64.
        if is_int64(value) and value >= 0:
            stat = Stat(name, StatKind.UINT64, value)
        else:
            stat = stat_from_python(name, value)
        _fill_stat(proto.stats.add(), stat_ids.id(name), stat)


def _write_plane(plane: Plane, start_ns: int, flows: tuple[np.ndarray, np.ndarray]) -> list[bytes | memoryview]:
    """The plane's serialisation, in pieces. ``start_ns``: the profile's time 0 on the
    session clock the lines are written on; ``flows``: its events' flow stats."""
    from stepscope.trace.xspace_encode import encode_events

    proto = xplane_pb2.XPlane()
    proto.id = plane.id
    proto.name = _clean(plane.name)
    stat_ids = _StatNames(proto)
    for stat in plane.plane_stats:
        _fill_stat(proto.stats.add(), stat_ids.id(stat.name), stat)
    meta = plane.metadata
    for index in range(len(meta)):
        entry = proto.event_metadata[index + 1]
        entry.id = index + 1
        entry.name = _clean(meta.names[index])
        if meta.display_names[index]:
            entry.display_name = _clean(meta.display_names[index])
        if meta.serialized[index]:
            entry.metadata = meta.serialized[index]
        for stat in meta.stats[index]:
            _fill_stat(entry.stats.add(), stat_ids.id(stat.name), stat)
        if meta.categories[index]:
            _fill_stat(entry.stats.add(), stat_ids.id(names.CATEGORY), Stat(names.CATEGORY, StatKind.STR, meta.categories[index]))

    starts = plane.events.start_ps
    offsets = plane.line_offsets.tolist()
    headers, shifts = [], np.zeros(len(plane.lines), dtype=np.int64)
    for line_index, line in enumerate(plane.lines):
        lo, hi = offsets[line_index], offsets[line_index + 1]
        first, last = (int(starts[lo]), int(starts[hi - 1])) if hi > lo else (0, 0)
        line_ns = _line_timestamp(line, start_ns, first, last)
        shifts[line_index] = (start_ns - line_ns) * 1000  # fits: see _line_timestamp
        header = xplane_pb2.XLine(id=line.id, display_id=line.id, name=_clean(line.name), timestamp_ns=line_ns, duration_ps=line.duration_ps)
        if line.display_name:  # duration_ps: as the source had it (TSL often leaves it 0)
            header.display_name = _clean(line.display_name)
        headers.append(header.SerializeToString())
    # Each event's offset from its line's timestamp; events past the last line are not written.
    shift_of_event = np.zeros(len(starts), dtype=np.int64)
    shift_of_event[: offsets[-1]] = np.repeat(shifts, np.diff(offsets))
    encoded = encode_events(plane, starts + shift_of_event, flows, stat_ids.id)

    chunks: list[bytes | memoryview] = [proto.SerializeToString()]  # every stat name known now
    for line_index, header in enumerate(headers):
        events = encoded.line(line_index)
        chunks += [_field_header(_LINES_TAG, len(header) + len(events)), header, events]
    return chunks


def _line_timestamp(line: Line, start_ns: int, first_ps: int, last_ps: int) -> int:
    """The line's own session timestamp where it is one (so a read-write-read keeps it)
    and its events' offsets from it are non-negative int64s; else the profile's start."""
    own = line.timestamp_ns
    shift_ps = (start_ns - own) * 1000
    if 0 <= own < EPOCH_NS_THRESHOLD and shift_ps + first_ps >= 0 and shift_ps + last_ps <= INT64_MAX:
        return own
    return start_ns


def _clean(text: str) -> str:
    """Protobuf strings must be valid UTF-8; lone surrogates from JSON escapes are not."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
