"""A Profile written as XSpace (``*.xplane.pb``), as TSL writes one after a capture.

Line timestamps are nanoseconds since the session start, whose UNIX time is the "Task
Environment" plane's ``profile_start_time`` (XProf turns line timestamps into int64
picoseconds, which an epoch time overflows). Every event's stats are written (for imported
JSON, the Kineto args under XSpace's names) and the source category as a metadata stat, so
XProf's converters read what stepscope read, and :mod:`stepscope.trace.formats.xspace.read`
reads back the same profile. On a profile without device planes the host plane also gets
what XProf needs to find stepscope's steps and framework ops (``xprof_hints.py``), which
the reader drops. The small part of a file (planes, metadata, line headers) is
built with protobuf's messages; the events are encoded in bulk into wire bytes
(:mod:`stepscope.trace.formats.xspace.encode`) and joined to their line headers (protobuf
merges concatenated serialisations).
"""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.files import atomic_output
from stepscope.trace.formats.xspace.encode import encode_events, flow_categories_stat, plane_flows
from stepscope.trace.formats.xspace.schema import EPOCH_NS_THRESHOLD, KIND_REF, PROFILE_STOP_TIME, TASK_ENVIRONMENT_INFO
from stepscope.trace.formats.xspace.xprof_hints import HintStats, HostHints, add_steps_metadata, hint_stats, host_hints, steps_line
from stepscope.trace.model import Line, Plane, Profile
from stepscope.trace.stat_entries import StatEntries
from stepscope.trace.stat_types import INT64_MAX, Stat, StatKind, is_int64, stat_from_python

# The most a kept session start may precede the profile's start when writing.
_MAX_SESSION_LEAD_NS = 86_400 * 10**9


def to_xspace(profile: Profile) -> xplane_pb2.XSpace:
    """The profile as TSL writes a finished capture (see the module's docstring)."""
    return xplane_pb2.XSpace.FromString(b"".join(xspace_chunks(profile)))


def write_xspace(profile: Profile, path: Path) -> None:
    """Writes ``profile`` as XSpace to ``path`` (gzip-compressed if it ends in .gz), atomically."""
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
    encoded in bulk (:mod:`stepscope.trace.formats.xspace.encode`); concatenated
    serialisations merge, so the pieces make one XSpace."""
    chunks: list[bytes | memoryview] = []
    epoch_ns, environment = _session_clock(profile)
    hints = host_hints(profile)
    for index, plane in enumerate(profile.planes):
        flows = plane_flows(profile.flows, index, len(plane.events))
        if len(flows[0]):  # the names of the category codes in its `flow` stats
            plane = replace(plane, plane_stats=[*plane.plane_stats, flow_categories_stat(profile.flows)])
        plane_chunks = _write_plane(plane, profile.start_ns - epoch_ns, flows, hints if hints is not None and hints.plane == index else None)
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
        self._hint_ids: dict[str, int] = {}

    def id(self, name: str) -> int:
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = self._new(name)
        return found

    def hint_id(self, name: str) -> int:
        """The id of stat ``name`` for the stats derived for XProf: an entry of its own,
        marked so that the reader drops its stats (``xprof_hints.py``)."""
        found = self._hint_ids.get(name)
        if found is None:
            found = self._hint_ids[name] = self._new(name)
            self._proto.stat_metadata[found].description = names.XPROF_HINT_DESCRIPTION
        return found

    def _new(self, name: str) -> int:
        found = len(self._ids) + len(self._hint_ids) + 1
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
        proto.bytes_value = bytes(cast(bytes, value))  # a BYTES stat's value (bytes() as before)
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
    _add_distributed_info(environment, profile.info.get(names.KINETO_DISTRIBUTED_INFO))
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


def _add_distributed_info(environment: dict[str, Any], info: object) -> None:
    """Kineto's rank and world size (``distributedInfo``) as Task Environment stats, where
    the environment has none yet."""
    if not isinstance(info, dict):
        return
    for key, stat in (("rank", names.DISTRIBUTED_RANK), ("world_size", names.DISTRIBUTED_WORLD_SIZE)):
        value = info.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and is_int64(value) and value >= 0:
            environment.setdefault(stat, value)


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


def _write_plane(plane: Plane, start_ns: int, flows: tuple[np.ndarray, np.ndarray], hints: HostHints | None = None) -> list[bytes | memoryview]:
    """The plane's serialisation, in pieces. ``start_ns``: the profile's time 0 on the
    session clock the lines are written on; ``flows``: its events' flow stats; ``hints``:
    what to add for XProf (the host plane of a profile without devices)."""
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
    added: list[HintStats] = []
    extra = (lambda own: _hint_entries(plane, own, hints, stat_ids, added)) if hints is not None else None
    encoded = encode_events(plane, starts + shift_of_event, flows, stat_ids.id, extra)
    links = added[0].links if added else None
    if links is not None:
        roots = steps_line(links, start_ns, stat_ids.id)
        add_steps_metadata(proto)

    chunks: list[bytes | memoryview] = [proto.SerializeToString()]  # every stat name known now
    for line_index, header in enumerate(headers):
        events = encoded.line(line_index)
        chunks += [_field_header(_LINES_TAG, len(header) + len(events)), header, events]
    if links is not None:  # the last line: XProf's step roots
        chunks += [_field_header(_LINES_TAG, sum(len(chunk) for chunk in roots)), *roots]
    return chunks


def _hint_entries(
    plane: Plane, own: StatEntries, hints: HostHints, stat_ids: _StatNames, added: list[HintStats]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The XProf hints' stats as the encoder adds them (ids resolved: the derived stats'
    marked entries, a ref's target entry); the hints are kept in ``added``."""
    found = hint_stats(plane, own, hints)
    if found is None:
        return None
    added.append(found)
    ids = np.zeros(len(found.names), dtype=np.int64)
    for key in np.unique(found.key).tolist():  # an entry for the names used only
        ids[key] = stat_ids.hint_id(found.names[key])
    refs = np.asarray([stat_ids.id(text) for text in found.refs] or [0], dtype=np.int64)
    bits = np.where(found.kind == KIND_REF, refs[np.where(found.kind == KIND_REF, found.bits, 0)], found.bits)
    return found.row.astype(np.int64), ids[found.key], found.kind.astype(np.int8), bits.astype(np.int64)


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
