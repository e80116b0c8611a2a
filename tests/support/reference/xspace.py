"""A slow, plain XSpace reader to check the fast one against, and a strict Profile comparison.

:func:`reference_load` decodes with protobuf's message API (``XSpace.ParseFromString``) and
walks every event and stat in Python, as stepscope's reader did before it decoded the wire
format in bulk: stat values from ``WhichOneof``, hot id columns and flow pairs with dicts,
the stats store from Python values (``TypedStats``' own constructor), planes finished by the
general builder (``finish_plane``, which sorts and nests with whole-array operations). The
reader's documented rules are restated here, independently of its code:

- event times: (line timestamp_ns - the smallest timestamp of a line with events) * 1000 +
  offset_ps (0 when the event has num_occurrences), an int64 or the file is rejected; then
  the whole profile is rebased to its earliest event, floored to a nanosecond, and every
  event must still end within an int64;
- an event metadata id the plane lacks gets a placeholder ``<metadata N>``, after the
  plane's own (sorted by id), in the order events first use them;
- stat names come from the plane's stat metadata (``stat_N`` where missing); ref_value
  stats are the named metadata's name ("" when dangling); a stat with no value is int64 0;
- the hot id columns take an event's integer stats of those names that fit an int64 (the
  last one wins); ``flow`` stats pair each flow's first out-endpoint with its in-endpoints;
  an arrow's category is the code in its in-endpoint's bits 58-63 named by the first
  ``flow_categories`` plane stat (a JSON list; code c is its entry c - 1, 0 or an unnamed
  code is "flow"), the categories listed in code order; without that stat every arrow is
  "flow"; the stat is not kept among the plane's stats;
- the "Task Environment" plane's stats go to ``info["task_environment"]``;
- what stepscope's writer adds for XProf is dropped first (``without_xprof_hints``: the
  stats under stat metadata described as XProf hints, the steps line and its metadata).
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from stepscope.errors import ProfileFormatError
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, earliest_start, finish_plane
from stepscope.trace.model import NO_ID, EventMetadata, FlowTable, Line, Profile
from stepscope.trace.stat_types import Stat, StatKind, is_int64
from stepscope.trace.stats import TypedStats
from tests.support.xspaces import without_xprof_hints

HOT = {"correlation_id": "correlation_id", "group_id": "group_id", "step_num": "step_num", "external_id": "external_id"}
KINDS = {
    "double_value": StatKind.DOUBLE,
    "uint64_value": StatKind.UINT64,
    "int64_value": StatKind.INT64,
    "str_value": StatKind.STR,
    "bytes_value": StatKind.BYTES,
}
EPOCH = 10**17
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def reference_load(path: Path) -> Profile:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(data)
    except DecodeError as error:
        raise ProfileFormatError(path, f"is not a valid XSpace protobuf (truncated or corrupt: {error})") from None
    if not space.planes:
        raise ProfileFormatError(path, "is not a profile: the XSpace has no planes")
    space = without_xprof_hints(space)
    base_ns = min((line.timestamp_ns for plane in space.planes for line in plane.lines if line.events), default=0)
    environment: dict[str, Any] = {}
    raws, points = [], []
    flow_categories: list[str] = []
    for proto in space.planes:
        if proto.name == names.TASK_ENVIRONMENT_PLANE:
            stat_names = {key: meta.name for key, meta in proto.stat_metadata.items()}
            for stat in proto.stats:
                name, kind, value = stat_of(stat, stat_names)
                environment.setdefault(name, value)
            if not proto.lines:
                continue
        raw, plane_points = read_plane(path, proto, base_ns)
        if proto.name == names.TASK_ENVIRONMENT_PLANE:
            raw.plane_stats = []
        for stat in [s for s in raw.plane_stats if s.name == names.FLOW_CATEGORIES]:
            flow_categories = flow_categories or json.loads(stat.value)
            raw.plane_stats.remove(stat)
        raws.append(raw)
        points.append(plane_points)
    earliest = earliest_start(raws)
    zero_ps = 0 if earliest is None else earliest // 1000 * 1000
    for raw in raws:  # rebased to the profile's start, every event still ends within an int64
        if len(raw) and (zero_ps < INT64_MIN or max(s + d for s, d in zip(raw.start_ps.tolist(), raw.duration_ps.tolist())) - zero_ps > INT64_MAX):
            raise ProfileFormatError(path, f"plane {raw.name!r} has event times out of range (more than 106 days from the first event)")
    finished = [finish_plane(raw, zero_ps) for raw in raws]
    info: dict[str, Any] = {}
    for key in ("hostnames", "errors", "warnings"):
        if getattr(space, key):
            info[key] = list(getattr(space, key))
    if environment:
        info["task_environment"] = environment
    epoch = 0
    if base_ns < EPOCH:
        for proto in space.planes:
            if proto.name != names.TASK_ENVIRONMENT_PLANE or epoch:
                continue
            stat_names = {key: meta.name for key, meta in proto.stat_metadata.items()}
            for stat in proto.stats:
                name, kind, value = stat_of(stat, stat_names)
                if name == names.PROFILE_START_TIME and kind in (StatKind.INT64, StatKind.UINT64) and value >= EPOCH:
                    epoch = value
                    break
    return Profile(
        planes=[plane for plane, _ in finished],
        start_ns=epoch + base_ns + zero_ps // 1000,
        host=space.hostnames[0] if space.hostnames else path.name.removesuffix(".gz").removesuffix(".pb").removesuffix(".xplane") or "host",
        source=str(path),
        format="xspace",
        flows=pair_flows(points, [order for _, order in finished], flow_categories),
        info=info,
    )


def stat_of(stat: Any, stat_names: dict[int, str]) -> tuple[str, StatKind, Any]:
    name = stat_names.get(stat.metadata_id, f"stat_{stat.metadata_id}")
    field = stat.WhichOneof("value")
    if field is None:
        return name, StatKind.INT64, 0
    if field == "ref_value":
        return name, StatKind.STR, stat_names.get(stat.ref_value, "")
    return name, KINDS[field], getattr(stat, field)


def read_plane(path: Path, proto: Any, base_ns: int) -> tuple[RawPlane, list[tuple[int, int]]]:
    stat_names = {key: meta.name for key, meta in proto.stat_metadata.items()}
    index: dict[int, int] = {}
    meta_names, display, categories, meta_stats, serialized = [], [], [], [], []
    for key in sorted(proto.event_metadata):
        meta = proto.event_metadata[key]
        index[key] = len(meta_names)
        stats = [Stat(*stat_of(s, stat_names)) for s in meta.stats]
        meta_names.append(meta.name)
        display.append(meta.display_name)
        categories.append(next((s.value for s in stats if s.name == names.CATEGORY and isinstance(s.value, str)), ""))
        meta_stats.append([s for s in stats if s.name != names.CATEGORY])
        serialized.append(meta.metadata)
    lines, starts, durations, metadata_ids, line_rows = [], [], [], [], []
    entries: list[tuple[int, str, StatKind, Any]] = []
    for line_index, line in enumerate(proto.lines):
        lines.append(Line(line.id, line.name, line.display_name, line.timestamp_ns, line.duration_ps))
        for event in line.events:
            if event.metadata_id not in index:
                index[event.metadata_id] = len(meta_names)
                meta_names.append(f"<metadata {event.metadata_id}>")
                display.append("")
                categories.append("")
                meta_stats.append([])
                serialized.append(b"")
            row = len(starts)
            starts.append((line.timestamp_ns - base_ns) * 1000 + event.offset_ps)
            durations.append(event.duration_ps)
            metadata_ids.append(index[event.metadata_id])
            line_rows.append(line_index)
            entries.extend((row, *stat_of(stat, stat_names)) for stat in event.stats)
    count = len(starts)
    if durations and min(durations) < 0:
        raise ProfileFormatError(path, f"plane {proto.name!r} has an event with a negative duration")
    if any(not INT64_MIN <= start <= INT64_MAX or duration > INT64_MAX - max(start, 0) for start, duration in zip(starts, durations)):
        raise ProfileFormatError(path, f"plane {proto.name!r} has event times out of range (more than 106 days from the first event)")
    ids: dict[str, np.ndarray] = {}
    flows: list[tuple[int, int]] = []
    for row, name, kind, value in entries:
        integer = kind in (StatKind.INT64, StatKind.UINT64)
        if name in HOT and integer and is_int64(value):
            if HOT[name] not in ids:  # (not setdefault: that would build the column for every entry)
                ids[HOT[name]] = np.full(count, NO_ID, dtype=np.int64)
            ids[HOT[name]][row] = value
        if name == names.FLOW and integer:
            flows.append((row, value % 2**64))
    key_names = sorted({name for _, name, _, _ in entries})
    stats = TypedStats(
        np.asarray([e[0] for e in entries], dtype=np.int64),
        np.asarray([key_names.index(e[1]) for e in entries], dtype=np.int32),
        np.asarray([int(e[2]) for e in entries], dtype=np.int8),
        [e[3] for e in entries],
        key_names,
        np.arange(count, dtype=np.int64),
    )
    raw = RawPlane(
        id=proto.id,
        name=proto.name,
        lines=lines,
        metadata=EventMetadata(meta_names, display, categories, meta_stats, serialized),
        start_ps=np.asarray(starts, dtype=np.int64),
        duration_ps=np.asarray(durations, dtype=np.int64),
        metadata_id=np.asarray(metadata_ids, dtype=np.int32),
        line=np.asarray(line_rows, dtype=np.int32),
        stats=stats,
        ids=ids,
        plane_stats=[Stat(*stat_of(s, stat_names)) for s in proto.stats],
    )
    return raw, flows


def pair_flows(points: list[list[tuple[int, int]]], orders: list[np.ndarray], flow_categories: list[str]) -> FlowTable:
    sources: dict[int, tuple[int, int]] = {}
    sinks: list[tuple[int, int, int]] = []
    code_of_sink: dict[tuple[int, int, int], int] = {}
    for plane, (plane_points, order) in enumerate(zip(points, orders)):
        position = {int(raw): row for row, raw in enumerate(order.tolist())}
        for raw_row, encoded in plane_points:
            direction, flow_id = encoded & 3, (encoded >> 2) & (2**56 - 1)
            if direction & 2:
                sources.setdefault(flow_id, (plane, position[raw_row]))
            if direction & 1:
                sinks.append((flow_id, plane, position[raw_row]))
                code_of_sink[sinks[-1]] = encoded >> 58
    kept = [(f, p, r) for f, p, r in sinks if f in sources and sources[f] != (p, r)]
    rows = [(f, *sources[f], p, r) for f, p, r in kept]
    if not rows:
        return FlowTable.empty()
    table = np.asarray(rows, dtype=np.int64)
    names_of_codes = ["flow", *flow_categories] if flow_categories else ["flow"]
    codes = [code_of_sink[sink] if flow_categories and code_of_sink[sink] < len(names_of_codes) else 0 for sink in kept]
    used = sorted(set(codes))
    return FlowTable(
        table[:, 0],
        np.asarray([used.index(code) for code in codes], dtype=np.int32),
        table[:, 1].astype(np.int32),
        table[:, 2],
        table[:, 3].astype(np.int32),
        table[:, 4],
        [names_of_codes[code] for code in used],
    )


# --- comparing profiles ----------------------------------------------------------------------


def same_value(a: Any, b: Any) -> bool:
    """Equal values of the same type; floats bit for bit (NaN == NaN, -0.0 != 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


def same_stats(a: list[Stat], b: list[Stat]) -> bool:
    return len(a) == len(b) and all(x.name == y.name and x.kind == y.kind and same_value(x.value, y.value) for x, y in zip(a, b))


def same_info(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_info(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_info(x, y) for x, y in zip(a, b))
    return same_value(a, b)


def assert_same_profile(got: Profile, expected: Profile, *, stats_rows: int | None = None, flow_ids: bool = True) -> None:
    """Every field, column, metadata entry, stat and flow of ``got`` is ``expected``'s.

    ``stats_rows``: compare the stats of that many rows per plane (spread evenly), not all.
    ``flow_ids``: false to compare flows as arrows only (a writer numbers them anew): the
    flow table's ids and the ``flow`` stats' values are then not compared.
    """
    assert got.start_ns == expected.start_ns
    assert got.host == expected.host
    assert got.format == expected.format
    assert same_info(got.info, expected.info), (got.info, expected.info)
    assert [p.name for p in got.planes] == [p.name for p in expected.planes]
    for plane, other in zip(got.planes, expected.planes):
        where = plane.name
        assert plane.id == other.id, where
        assert plane.lines == other.lines, where
        meta, other_meta = plane.metadata, other.metadata
        assert meta.names == other_meta.names, where
        assert meta.display_names == other_meta.display_names, where
        assert meta.categories == other_meta.categories, where
        assert meta.serialized == other_meta.serialized, where
        assert len(meta.stats) == len(other_meta.stats) and all(map(same_stats, meta.stats, other_meta.stats)), where
        assert same_stats(plane.plane_stats, other.plane_stats), where
        for column in ("start_ps", "duration_ps", "metadata_id", "line", "depth", "parent", "correlation_id", "external_id", "group_id", "step_num"):
            mine, theirs = getattr(plane.events, column), getattr(other.events, column)
            assert mine.dtype == theirs.dtype, (where, column)
            assert np.array_equal(mine, theirs), (where, column, _first_difference(mine, theirs))
        assert len(plane.stats) == len(other.stats) == len(plane.events), where
        count = len(plane.events)
        rows = range(count) if stats_rows is None or count <= stats_rows else np.linspace(0, count - 1, stats_rows, dtype=int).tolist()
        seen: set[str] = set()  # the stat names of the rows compared, for the column check below
        for row in rows:
            mine, theirs = plane.stats.stats(row), other.stats.stats(row)
            seen.update(s.name for s in mine)
            if not flow_ids:
                mine, theirs = ([s for s in stats if s.name != names.FLOW] for stats in (mine, theirs))
            assert same_stats(mine, theirs), (where, row, mine, theirs)
        if isinstance(plane.stats, TypedStats) and isinstance(other.stats, TypedStats):
            for name in seen - ({names.FLOW} if not flow_ids else set()):
                mine_rows, mine_values = plane.stats.column(name)
                their_rows, their_values = other.stats.column(name)
                order, their_order = np.argsort(mine_rows, kind="stable"), np.argsort(their_rows, kind="stable")
                assert np.array_equal(mine_rows[order], their_rows[their_order]), (where, name)
                assert all(map(same_value, [mine_values[i] for i in order], [their_values[i] for i in their_order])), (where, name)
    flows, other_flows = got.flows, expected.flows
    for column in ("flow_id", "category", "src_plane", "src_event", "dst_plane", "dst_event")[0 if flow_ids else 1 :]:
        mine, theirs = getattr(flows, column), getattr(other_flows, column)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), column
    assert flows.categories == other_flows.categories or len(flows) == 0


def _first_difference(a: np.ndarray, b: np.ndarray) -> Any:
    if a.shape != b.shape:
        return ("shapes", a.shape, b.shape)
    where = np.flatnonzero(a != b)
    return (int(where[0]), a[where[0]], b[where[0]]) if len(where) else None
