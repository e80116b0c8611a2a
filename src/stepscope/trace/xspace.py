"""XSpace (``*.xplane.pb``): reading into a Profile and writing one back.

The reader resolves what XSpace stores indirectly: event times (line ``timestamp_ns`` plus
event ``offset_ps``) become picoseconds from the profile start, stat names come from the
plane's stat metadata, and ``ref_value`` stats become the string they refer to. Metadata
ids are renumbered densely; everything else a plane carries (plane stats, event metadata
stats, serialized metadata, line names and ids) is kept so a write after a read gives XProf
the same profile.

The writer emits every event's stats (for imported JSON, the Kineto args under XSpace's
names) and the source category as a metadata stat, so XProf's converters read what
stepscope read.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from stepscope.errors import ProfileFormatError
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, earliest_start, finish_plane
from stepscope.trace.columns import factorize
from stepscope.trace.model import NO_ID, EventMetadata, FlowTable, Line, Plane, Profile
from stepscope.trace.stats import INT64_MAX, Stat, StatKind, TypedStats, is_int64

# Line timestamps at or past this (1973 in epoch ns) are UNIX times, not session offsets.
EPOCH_NS_THRESHOLD = 10**17
# XSpace field 1..4 with wire type 2 (length-delimited): the only valid first bytes.
_XSPACE_FIRST_BYTES = frozenset({0x0A, 0x12, 0x1A, 0x22})
# Stats copied into the event table's id columns when an event carries them.
_HOT_STATS = {
    names.CORRELATION_ID: "correlation_id",
    names.GROUP_ID: "group_id",
    names.STEP_NUM: "step_num",
    names.EXTERNAL_ID: "external_id",
}
_FIELD_KINDS = {
    "double_value": StatKind.DOUBLE,
    "uint64_value": StatKind.UINT64,
    "int64_value": StatKind.INT64,
    "str_value": StatKind.STR,
    "bytes_value": StatKind.BYTES,
    "ref_value": StatKind.STR,
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


def parse_xspace(path: Path, data: bytes) -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as error:
        raise ProfileFormatError(path, f"is not a valid XSpace protobuf (truncated or corrupt: {error})") from None
    return space


def read_xspace(path: Path, data: bytes) -> Profile:
    space = parse_xspace(path, data)
    if not space.planes:
        raise ProfileFormatError(path, "is not a profile: the XSpace has no planes")
    timestamps = [line.timestamp_ns for plane in space.planes for line in plane.lines if line.events]
    base_ns = min(timestamps, default=0)
    read = [_read_plane(path, plane_proto, base_ns) for plane_proto in space.planes]
    raws = [raw for raw, _ in read]
    earliest = earliest_start(raws)
    zero_ps = 0 if earliest is None else (earliest // 1000) * 1000
    finished = [finish_plane(raw, zero_ps) for raw in raws]
    planes = [plane for plane, _ in finished]
    flows = _pair_flows([points for _, points in read], [order for _, order in finished])
    info: dict[str, Any] = {}
    for key in ("hostnames", "errors", "warnings"):
        values = list(getattr(space, key))
        if values:
            info[key] = values
    host = space.hostnames[0] if space.hostnames else _host_from_path(path)
    return Profile(
        planes=planes,
        start_ns=_epoch_offset(space, base_ns) + base_ns + zero_ps // 1000,
        host=host,
        source=str(path),
        format="xspace",
        flows=flows,
        info=info,
    )


# XSpace's `flow` stat packs direction (bits 0-1), id (bits 2-57) and category (58-63).
FLOW_IN, FLOW_OUT, FLOW_IN_OUT = 1, 2, 3
_FLOW_ID_MASK = (1 << 56) - 1
FLOW_CATEGORY = "flow"


def encode_flow(flow_id: int, direction: int) -> int:
    return direction | ((flow_id & _FLOW_ID_MASK) << 2)


def _pair_flows(points: list[list[tuple[int, int]]], orders: list[np.ndarray]) -> FlowTable:
    """Arrows from each flow's out-endpoint to its in-endpoints."""
    sources: dict[int, tuple[int, int]] = {}
    sinks: list[tuple[int, int, int]] = []
    for plane_index, (plane_points, order) in enumerate(zip(points, orders)):
        if not plane_points:
            continue
        position = np.empty_like(order)
        position[order] = np.arange(len(order))
        for raw_row, encoded in plane_points:
            direction, flow_id = encoded & 3, (encoded >> 2) & _FLOW_ID_MASK
            row = int(position[raw_row])
            if direction & FLOW_OUT:
                sources.setdefault(flow_id, (plane_index, row))
            if direction & FLOW_IN:
                sinks.append((flow_id, plane_index, row))
    rows = [(flow_id, *sources[flow_id], plane, row) for flow_id, plane, row in sinks if flow_id in sources and sources[flow_id] != (plane, row)]
    if not rows:
        return FlowTable.empty()
    table = np.asarray(rows, dtype=np.int64)
    return FlowTable(
        flow_id=table[:, 0],
        category=np.zeros(len(rows), dtype=np.int32),
        src_plane=table[:, 1].astype(np.int32),
        src_event=table[:, 2],
        dst_plane=table[:, 3].astype(np.int32),
        dst_event=table[:, 4],
        categories=[FLOW_CATEGORY],
    )


def _epoch_offset(space: xplane_pb2.XSpace, base_ns: int) -> int:
    """What to add to line timestamps to make them UNIX times.

    TSL normalises a finished capture: line timestamps become nanoseconds since the
    session start, which it records as ``profile_start_time`` on the "Task Environment"
    plane. Older files and other writers keep epoch timestamps (then this is 0).
    """
    if base_ns >= EPOCH_NS_THRESHOLD:
        return 0
    for plane in space.planes:
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


def _event_stats(
    count: int,
    rows: list[int],
    stat_ids: list[int],
    fields: list[str | None],
    values: list[Any],
    stat_names: dict[int, str],
) -> tuple[TypedStats, dict[str, np.ndarray], list[tuple[int, int]]]:
    """The stats store, the hot id columns and the flow endpoints, from flat stat entries."""
    id_codes, distinct_ids = factorize(stat_ids)
    key_names = [stat_names.get(i, f"stat_{i}") for i in distinct_ids]
    field_codes, distinct_fields = factorize(fields)
    field_kind = np.asarray([_FIELD_KINDS.get(f, StatKind.INT64) for f in distinct_fields], dtype=np.int8)
    kinds = field_kind[field_codes] if len(field_codes) else np.zeros(0, dtype=np.int8)
    if "ref_value" in distinct_fields:  # a string stored as the name of a stat metadata entry
        ref_code = distinct_fields.index("ref_value")
        for entry in np.flatnonzero(field_codes == ref_code).tolist():
            values[entry] = stat_names.get(values[entry], "")
    row_array = np.asarray(rows, dtype=np.int64)
    integer = np.isin(kinds, [StatKind.INT64, StatKind.UINT64])

    def entries_of(stat: str) -> np.ndarray:
        if stat not in key_names:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero((id_codes == key_names.index(stat)) & integer)

    ids = {}
    for stat, column in _HOT_STATS.items():
        entries = [e for e in entries_of(stat).tolist() if is_int64(values[e])]
        if entries:
            array = np.full(count, NO_ID, dtype=np.int64)
            array[row_array[entries]] = np.asarray([values[e] for e in entries], dtype=np.int64)
            ids[column] = array
    flows = [(rows[e], int(values[e])) for e in entries_of(names.FLOW).tolist()]
    store = TypedStats(row_array, id_codes.astype(np.int32), kinds, values, key_names, np.arange(count, dtype=np.int64))
    return store, ids, flows


def _read_plane(path: Path, proto: xplane_pb2.XPlane, base_ns: int) -> tuple[RawPlane, list[tuple[int, int]]]:
    stat_names = {key: meta.name for key, meta in proto.stat_metadata.items()}
    metadata_index: dict[int, int] = {}
    meta_names: list[str] = []
    display: list[str] = []
    categories: list[str] = []
    meta_stats: list[list[Stat]] = []
    serialized: list[bytes] = []
    for key in sorted(proto.event_metadata):
        meta = proto.event_metadata[key]
        metadata_index[key] = len(meta_names)
        stats = _stats(meta.stats, stat_names)
        category = next((s.value for s in stats if s.name == names.CATEGORY and isinstance(s.value, str)), "")
        meta_names.append(meta.name)
        display.append(meta.display_name)
        categories.append(category)
        meta_stats.append([s for s in stats if s.name != names.CATEGORY])
        serialized.append(meta.metadata)

    lines: list[Line] = []
    starts: list[int] = []
    durations: list[int] = []
    meta_ids: list[int] = []
    line_rows: list[int] = []
    # Event stats, one entry each: the event's row, the stat's metadata id, its value field.
    stat_rows: list[int] = []
    stat_ids: list[int] = []
    stat_fields: list[str | None] = []
    stat_values: list[Any] = []
    row = 0
    for line_index, line in enumerate(proto.lines):
        lines.append(
            Line(
                id=line.id,
                name=line.name,
                display_name=line.display_name,
                timestamp_ns=line.timestamp_ns,
                duration_ps=line.duration_ps,
            )
        )
        line_base_ps = (line.timestamp_ns - base_ns) * 1000
        for event in line.events:
            metadata_id = event.metadata_id
            if metadata_id not in metadata_index:
                # An event whose type is missing from the plane: keep it under a placeholder.
                metadata_index[metadata_id] = len(meta_names)
                meta_names.append(f"<metadata {metadata_id}>")
                display.append("")
                categories.append("")
                meta_stats.append([])
                serialized.append(b"")
            starts.append(line_base_ps + event.offset_ps)
            durations.append(event.duration_ps)
            meta_ids.append(metadata_index[metadata_id])
            line_rows.append(line_index)
            for stat in event.stats:
                field = stat.WhichOneof("value")
                stat_rows.append(row)
                stat_ids.append(stat.metadata_id)
                stat_fields.append(field)
                stat_values.append(getattr(stat, field) if field is not None else 0)
            row += 1
    stats, ids, flow_points = _event_stats(row, stat_rows, stat_ids, stat_fields, stat_values, stat_names)
    count = row
    if count and min(durations) < 0:
        raise ProfileFormatError(path, f"plane {proto.name!r} has an event with a negative duration")
    try:
        start_ps = np.asarray(starts, dtype=np.int64)
        duration_ps = np.asarray(durations, dtype=np.int64)
    except OverflowError:
        start_ps = duration_ps = None
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
        metadata_id=np.asarray(meta_ids, dtype=np.int32),
        line=np.asarray(line_rows, dtype=np.int32),
        stats=stats,
        ids=ids,
        plane_stats=_stats(proto.stats, stat_names),
    ), flow_points


# --- writing -----------------------------------------------------------------------------------


def to_xspace(profile: Profile) -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace()
    flow_stats = _flow_stats(profile)
    for index, plane in enumerate(profile.planes):
        _write_plane(space.planes.add(), plane, profile.start_ns, flow_stats.get(index, {}))
    space.hostnames.append(_clean(profile.host))
    for key in ("errors", "warnings"):
        getattr(space, key).extend(_clean(str(v)) for v in profile.info.get(key, []))
    return space


def write_xspace(profile: Profile, path: Path) -> None:
    """Writes ``profile`` as XSpace to ``path`` (gzip-compressed if it ends in .gz), atomically."""
    from stepscope.trace.files import atomic_write

    data = to_xspace(profile).SerializeToString()
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    atomic_write(path, data)


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


def _flow_stats(profile: Profile) -> dict[int, dict[int, list[int]]]:
    """plane -> event row -> encoded `flow` stats. Each arrow gets its own id (its row in
    the flow table), so ids from different source categories cannot collide."""
    flows = profile.flows
    result: dict[int, dict[int, list[int]]] = {}
    for index in range(len(flows)):
        flow_id = index + 1
        for plane, row, direction in (
            (int(flows.src_plane[index]), int(flows.src_event[index]), FLOW_OUT),
            (int(flows.dst_plane[index]), int(flows.dst_event[index]), FLOW_IN),
        ):
            result.setdefault(plane, {}).setdefault(row, []).append(encode_flow(flow_id, direction))
    return result


def _write_plane(proto: xplane_pb2.XPlane, plane: Plane, start_ns: int, flow_stats: dict[int, list[int]]) -> None:
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

    events = plane.events
    starts = events.start_ps.tolist()
    durations = events.duration_ps.tolist()
    meta_ids = events.metadata_id.tolist()
    hot = {name: getattr(events, column).tolist() for name, column in _HOT_STATS.items()}
    for line_index, line in enumerate(plane.lines):
        line_proto = proto.lines.add()
        line_proto.id = line.id
        line_proto.display_id = line.id
        line_proto.name = _clean(line.name)
        if line.display_name:
            line_proto.display_name = _clean(line.display_name)
        line_proto.timestamp_ns = start_ns
        rows = plane.line_slice(line_index)
        if rows.stop > rows.start:
            line_proto.duration_ps = max(starts[r] + durations[r] for r in range(rows.start, rows.stop)) - starts[rows.start]
        for row in range(rows.start, rows.stop):
            event = line_proto.events.add()
            metadata_id = meta_ids[row]
            event.metadata_id = metadata_id + 1
            event.offset_ps = starts[row]
            event.duration_ps = durations[row]
            own = plane.stats.stats(row, meta.names[metadata_id], meta.categories[metadata_id])
            present = {stat.name for stat in own}
            for stat in own:
                if stat.name != names.FLOW:  # re-derived from the flow table below
                    _fill_stat(event.stats.add(), stat_ids.id(stat.name), stat)
            for encoded in flow_stats.get(row, ()):
                _fill_stat(event.stats.add(), stat_ids.id(names.FLOW), Stat(names.FLOW, StatKind.UINT64, encoded))
            for name, values in hot.items():
                if values[row] != NO_ID and name not in present:
                    _fill_stat(event.stats.add(), stat_ids.id(name), Stat(name, StatKind.INT64, values[row]))


def _clean(text: str) -> str:
    """Protobuf strings must be valid UTF-8; lone surrogates from JSON escapes are not."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
