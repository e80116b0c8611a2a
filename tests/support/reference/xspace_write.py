"""The XSpace writer as it was before events were encoded in bulk: one protobuf message
per event and per stat, walked in Python. Kept only to check the bulk writer against
(tests/trace/test_xspace_write.py): both must give the same XSpace.

A copy of the old ``to_xspace`` and its helpers (with the flow categories added since); constants it shares with the
reader are imported.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.formats.xspace.schema import (
    EPOCH_NS_THRESHOLD,
    FLOW_IN,
    FLOW_OUT,
    HOT_STATS,
    PROFILE_STOP_TIME,
    TASK_ENVIRONMENT_INFO,
    encode_flow,
)
from stepscope.trace.formats.xspace.write import _MAX_SESSION_LEAD_NS
from stepscope.trace.model import NO_ID, Line, Plane, Profile
from stepscope.trace.stat_types import INT64_MAX, Stat, StatKind, is_int64, stat_from_python


def reference_to_xspace(profile: Profile) -> xplane_pb2.XSpace:
    """The profile as the old writer wrote it."""
    space = xplane_pb2.XSpace()
    flow_stats = _flow_stats(profile)
    epoch_ns, environment = _session_clock(profile)
    for index, plane in enumerate(profile.planes):
        if flow_stats.get(index):
            categories = Stat(names.FLOW_CATEGORIES, StatKind.STR, json.dumps(profile.flows.categories[:63]))
            plane = replace(plane, plane_stats=[*plane.plane_stats, categories])
        _write_plane(space.planes.add(), plane, profile.start_ns - epoch_ns, flow_stats.get(index, {}))
    if environment:
        _write_environment(space.planes.add(), environment)
    space.hostnames.append(_clean(profile.host))
    for key in ("errors", "warnings"):
        getattr(space, key).extend(_clean(str(v)) for v in profile.info.get(key, []))
    return space


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
    # Kineto's rank and world size, kept where the environment has none.
    distributed = profile.info.get(names.KINETO_DISTRIBUTED_INFO)
    if isinstance(distributed, dict):
        for key, stat in (("rank", names.DISTRIBUTED_RANK), ("world_size", names.DISTRIBUTED_WORLD_SIZE)):
            value = distributed.get(key)
            if type(value) is int and 0 <= value <= INT64_MAX:
                environment.setdefault(stat, value)
    start_ns = profile.start_ns
    if start_ns < EPOCH_NS_THRESHOLD:
        environment.pop(names.PROFILE_START_TIME, None)
        return 0, environment
    session = environment.get(names.PROFILE_START_TIME)
    if not (is_int64(session) and session >= EPOCH_NS_THRESHOLD and 0 <= start_ns - session <= _MAX_SESSION_LEAD_NS):
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


def _flow_stats(profile: Profile) -> dict[int, dict[int, list[int]]]:
    """plane -> event row -> encoded `flow` stats. Each arrow gets its own id (its row in
    the flow table), so ids from different source categories cannot collide."""
    flows = profile.flows
    result: dict[int, dict[int, list[int]]] = {}
    for index in range(len(flows)):
        flow_id = index + 1
        # The category as a code in bits 58-63: its index plus one, 0 past the 63rd (the
        # plane stat names.FLOW_CATEGORIES names the codes); added since the old writer.
        code = int(flows.category[index]) + 1
        category_bits = (code if code <= 63 else 0) << 58
        for plane, row, direction in (
            (int(flows.src_plane[index]), int(flows.src_event[index]), FLOW_OUT),
            (int(flows.dst_plane[index]), int(flows.dst_event[index]), FLOW_IN),
        ):
            result.setdefault(plane, {}).setdefault(row, []).append(encode_flow(flow_id, direction) | category_bits)
    return result


def _write_plane(proto: xplane_pb2.XPlane, plane: Plane, start_ns: int, flow_stats: dict[int, list[int]]) -> None:
    """``start_ns``: the profile's time 0 on the session clock the lines are written on."""
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
    hot = {name: getattr(events, column).tolist() for name, column in HOT_STATS.items()}
    for line_index, line in enumerate(plane.lines):
        line_proto = proto.lines.add()
        line_proto.id = line.id
        line_proto.display_id = line.id
        line_proto.name = _clean(line.name)
        if line.display_name:
            line_proto.display_name = _clean(line.display_name)
        rows = plane.line_slice(line_index)
        first, last = (starts[rows.start], starts[rows.stop - 1]) if rows.stop > rows.start else (0, 0)
        line_ns = _line_timestamp(line, start_ns, first, last)
        line_proto.timestamp_ns = line_ns
        shift_ps = (start_ns - line_ns) * 1000
        line_proto.duration_ps = line.duration_ps  # as the source had it (TSL often leaves it 0)
        for row in range(rows.start, rows.stop):
            event = line_proto.events.add()
            metadata_id = meta_ids[row]
            event.metadata_id = metadata_id + 1
            event.offset_ps = starts[row] + shift_ps
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
