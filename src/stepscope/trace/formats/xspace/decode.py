"""XSpace bytes -> per-plane columns, without a Python object per event.

Protobuf (``xplane_pb2``) parses what is small and varied: the space's hostnames and
errors, each plane's id, name, event and stat metadata and plane stats, each line's id,
name and timestamp. The bulk, every XEvent and XStat of every line, is decoded by
:mod:`stepscope.trace.formats.xspace.wire` into numpy columns. Both read the same bytes
with the same rules, so a file decodes as ``XSpace.ParseFromString`` would decode it, and
is rejected where it would reject it (with a ProfileFormatError saying where).

Counts are bounded (:mod:`stepscope.trace.limits`: planes, lines, events, metadata entries),
checked from the wire structure before the work each container costs, so reading costs
time in proportion to events, not to empty containers (200,000 empty planes took 60 s).

Where the compiled kernels were not built (:mod:`stepscope.trace.kernels`), files are
decoded with protobuf's message API instead, into the same columns: the Python wire decoder
is the reference the C is tested against, ~25x slower than the messages (the shared TPU
profile: 10 s against 0.4 s). With the C there is no size below which the messages win: it
loads with the package (numba, which compiled the decoder before, took ~0.5 s to load, so
files under 1 MiB went to the messages), reads the smallest files (the 554-byte warm-up
sample, a 2 kB Kineto trace saved as XSpace) in the time the messages take, ~1.8 ms, and
files of 60 kB and more 3-20x faster (the TPU profile: 17 against 170-250 ms).
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from stepscope.errors import ProfileFormatError
from stepscope.protos import xplane_pb2
from stepscope.trace import kernels, limits
from stepscope.trace.formats.xspace import wire
from stepscope.trace.formats.xspace.schema import KIND_BYTES, KIND_DOUBLE, KIND_INT64, KIND_NONE, KIND_REF, KIND_STR, KIND_UINT64
from stepscope.trace.planes_in_parallel import map_planes
from stepscope.trace.stats import TextValues

_WIRE_LEN = 2
_SPACE_PLANES = 1  # XSpace.planes
_PLANE_LINES = 3  # XPlane.lines
_PLANE_EVENT_METADATA = 4  # XPlane.event_metadata (a map)
_PLANE_STAT_METADATA = 5  # XPlane.stat_metadata (a map)

# Files smaller than this read their planes one after another on the calling thread:
# starting the threads (~1 ms a pool on the 2-core VM, three pools a read) cost as much as
# they saved below it. Read on one thread and on two (medians, bench/make_big_profile.py's
# profiles and the shared TPU one): 0.9 MB 34 and 47 ms, 5.6 MB 145 and 144 ms, 11 MB 175
# and 194 ms, 27 MB 348 and 286 ms.
PARALLEL_MIN_BYTES = 16 << 20

_INT64_MAX = 2**63 - 1
_INT64 = struct.Struct("<q")
_DOUBLE = struct.Struct("<d")


@dataclass
class DecodedLines:
    """A plane's events and stats as :func:`wire.decode_lines` wrote them."""

    event_metadata: np.ndarray  # int64, raw XEventMetadata ids
    event_offset: np.ndarray  # int64 offset_ps
    event_duration: np.ndarray  # int64 duration_ps
    event_line: np.ndarray  # int32 index of the line
    stat_event: np.ndarray  # int64 row of the event, ascending
    stat_metadata: np.ndarray  # int64, raw XStatMetadata ids
    stat_kind: np.ndarray  # int8, schema.KIND_*
    stat_bits: np.ndarray  # int64 value bits
    texts: TextValues  # the str/bytes values the stats' bits number
    text_count: int
    line_events: np.ndarray  # int64 number of events of each line


@dataclass
class DecodedPlane:
    proto: xplane_pb2.XPlane  # (at least) everything but the lines
    lines: list[xplane_pb2.XLine]  # (at least) everything but the events
    columns: DecodedLines


@dataclass
class DecodedSpace:
    proto: xplane_pb2.XSpace  # (at least) everything but the planes
    planes: list[DecodedPlane]
    bulk: bool  # decoded by wire.py's decoder (the kernels: C where built), not protobuf's messages
    parallel: bool  # large enough for its planes to be read on threads


def corrupt(path: Path, detail: Any) -> ProfileFormatError:
    return ProfileFormatError(path, f"is not a valid XSpace protobuf (truncated or corrupt: {detail})")


class _Budget:
    """The counts of :mod:`stepscope.trace.limits` a file may reach, checked as it is
    decoded, before the work each container costs (a plane, a line, a metadata entry
    costs time and memory whatever it holds). Shared by the planes decoding on threads:
    each take is one step under the lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = limits.LINES.get()
        self.events = limits.EVENTS.get()
        self.metadata = limits.METADATA.get()
        self._lock = threading.Lock()

    def planes(self, count: int) -> None:
        allowed = limits.PLANES.get()
        if count > allowed:
            raise limits.PLANES.error(self.path, f"has {count:,} planes, more than {allowed:,}", allowed)

    def take_lines(self, count: int) -> None:
        with self._lock:
            self.lines -= count
            left = self.lines
        if left < 0:
            allowed = limits.LINES.get()
            raise limits.LINES.error(self.path, f"has more than {allowed:,} lines", allowed)

    def take_events(self, count: int) -> None:
        with self._lock:
            self.events -= count
            left = self.events
        if left < 0:
            allowed = limits.EVENTS.get()
            raise limits.EVENTS.error(self.path, f"has more than {allowed:,} events", allowed)

    def check_metadata(self, plane: int, entries: int, events: int, stats: int) -> None:
        """At most one entry per event and per stat of the plane, plus the limit."""
        if entries > self.metadata + events + stats:
            raise limits.METADATA.error(
                self.path,
                f"plane {plane} has {entries:,} event and stat metadata entries for {events:,} events and "
                f"{stats:,} stats, more than {self.metadata:,} beyond one per event and stat",
                self.metadata,
            )


def decode_space(path: Path, data: bytes | bytearray, bulk: bool | None = None) -> DecodedSpace:
    """The file's planes as columns; ``bulk`` chooses the decoder (None: the wire decoder
    where the kernels are compiled, see the module docstring)."""
    if bulk is None:
        bulk = kernels.COMPILED
    budget = _Budget(path)
    if not bulk:
        return _decode_messages(path, data, budget)
    buf = np.frombuffer(data, dtype=np.uint8)
    fields = _fields(path, buf, 0, len(buf), wire.DEPTH_LIMIT)
    is_plane = (fields[:, 0] == _SPACE_PLANES) & (fields[:, 1] == _WIRE_LEN)
    budget.planes(int(is_plane.sum()))
    space = xplane_pb2.XSpace()
    _parse(path, space, _joined(data, fields[~is_plane]))

    def decode(plane: tuple[int, list[int]]) -> DecodedPlane:
        index, (start, end) = plane
        return _decode_plane(path, buf, data, start, end, budget, index)

    parallel = len(data) >= PARALLEL_MIN_BYTES
    planes = map_planes(decode, list(enumerate(fields[is_plane][:, 3:5].tolist())), threads=parallel)
    return DecodedSpace(space, planes, bulk=True, parallel=parallel)


def _decode_messages(path: Path, data: bytes | bytearray, budget: _Budget) -> DecodedSpace:
    space = xplane_pb2.XSpace()
    _parse(path, space, data)
    budget.planes(len(space.planes))
    planes = []
    for index, plane in enumerate(space.planes):
        budget.take_lines(len(plane.lines))
        budget.take_events(sum(len(line.events) for line in plane.lines))
        columns = _message_columns(plane)
        budget.check_metadata(index, len(plane.event_metadata) + len(plane.stat_metadata), len(columns.event_offset), len(columns.stat_event))
        planes.append(DecodedPlane(plane, list(plane.lines), columns))
    return DecodedSpace(space, planes, bulk=False, parallel=False)


def _message_columns(plane: xplane_pb2.XPlane) -> DecodedLines:
    """What the wire decoder makes of a plane's lines, from protobuf's messages."""
    metadata: list[int] = []
    offsets: list[int] = []
    durations: list[int] = []
    lines: list[int] = []
    line_events: list[int] = []
    stat_event: list[int] = []
    stat_metadata: list[int] = []
    stat_kind: list[int] = []
    stat_bits: list[int] = []
    texts: list[bytes] = []
    for index, line in enumerate(plane.lines):
        line_events.append(len(line.events))
        for event in line.events:
            row = len(metadata)
            metadata.append(event.metadata_id)
            offsets.append(event.offset_ps)  # 0 when the oneof holds num_occurrences
            durations.append(event.duration_ps)
            lines.append(index)
            for stat in event.stats:
                field = stat.WhichOneof("value")
                stat_event.append(row)
                stat_metadata.append(stat.metadata_id)
                if field == "int64_value":
                    kind, bits = KIND_INT64, stat.int64_value
                elif field == "uint64_value" or field == "ref_value":
                    value = getattr(stat, field)
                    kind = KIND_UINT64 if field == "uint64_value" else KIND_REF
                    bits = value - (1 << 64) if value > _INT64_MAX else value
                elif field == "double_value":
                    kind, bits = KIND_DOUBLE, _INT64.unpack(_DOUBLE.pack(stat.double_value))[0]
                elif field == "str_value":
                    kind, bits = KIND_STR, len(texts)
                    texts.append(stat.str_value.encode("utf-8"))
                elif field == "bytes_value":
                    kind, bits = KIND_BYTES, len(texts)
                    texts.append(stat.bytes_value)
                else:
                    kind, bits = KIND_NONE, 0
                stat_kind.append(kind)
                stat_bits.append(bits)
    offsets_of_texts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(text) for text in texts], out=offsets_of_texts[1:])
    return DecodedLines(
        event_metadata=np.asarray(metadata, dtype=np.int64),
        event_offset=np.asarray(offsets, dtype=np.int64),
        event_duration=np.asarray(durations, dtype=np.int64),
        event_line=np.asarray(lines, dtype=np.int32),
        stat_event=np.asarray(stat_event, dtype=np.int64),
        stat_metadata=np.asarray(stat_metadata, dtype=np.int64),
        stat_kind=np.asarray(stat_kind, dtype=np.int8),
        stat_bits=np.asarray(stat_bits, dtype=np.int64),
        texts=TextValues(b"".join(texts), offsets_of_texts),
        text_count=len(texts),
        line_events=np.asarray(line_events, dtype=np.int64),
    )


def _fields(path: Path, buf: np.ndarray, start: int, end: int, depth: int) -> np.ndarray:
    """The fields of a message as rows of (number, wire type, tag start, value start, value end)."""
    out = np.empty((5, 64), dtype=np.int64)
    count, error, at = wire.scan_fields(buf, start, end, depth, out)
    if error:
        raise corrupt(path, f"{wire.ERRORS[int(error)]}, at byte {at}")
    if count > out.shape[1]:
        out = np.empty((5, count), dtype=np.int64)
        wire.scan_fields(buf, start, end, depth, out)
    return out[:, :count].T


def _joined(data: bytes | bytearray, fields: np.ndarray) -> bytes:
    """The bytes of ``fields`` (rows of wire.scan_fields, in file order), adjacent ones as one slice."""
    if not len(fields):
        return b""
    starts, ends = fields[:, 2], fields[:, 4]
    breaks = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    run_starts = starts[np.concatenate(([0], breaks))].tolist()
    run_ends = ends[np.concatenate((breaks - 1, [len(fields) - 1]))].tolist()
    return b"".join(data[start:end] for start, end in zip(run_starts, run_ends))


def _parse(path: Path, message: Any, data: bytes | bytearray) -> None:
    try:
        message.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as error:
        raise corrupt(path, error) from None


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _decode_plane(path: Path, buf: np.ndarray, data: bytes | bytearray, start: int, end: int, budget: _Budget, index: int) -> DecodedPlane:
    fields = _fields(path, buf, start, end, wire.PLANE_DEPTH)
    is_line = (fields[:, 0] == _PLANE_LINES) & (fields[:, 1] == _WIRE_LEN)
    line_start = np.ascontiguousarray(fields[is_line, 3])
    line_end = np.ascontiguousarray(fields[is_line, 4])
    budget.take_lines(len(line_start))
    if len(line_start):
        columns, heads = _decode_lines(path, buf, line_start, line_end, budget)
    else:  # (most of the cost of a plane without lines)
        columns, heads = _no_lines(), np.empty((0, 3), dtype=np.int64)
    is_metadata = ((fields[:, 0] == _PLANE_EVENT_METADATA) | (fields[:, 0] == _PLANE_STAT_METADATA)) & (fields[:, 1] == _WIRE_LEN)
    budget.check_metadata(index, int(is_metadata.sum()), len(columns.event_offset), len(columns.stat_event))
    # The plane without its lines, parsed inside an XSpace so that protobuf's nesting
    # limit counts as it does for the whole file.
    rest = _joined(data, fields[~is_line])
    wrapper = xplane_pb2.XSpace()
    _parse(path, wrapper, b"\x0a" + _varint(len(rest)) + rest)
    proto = wrapper.planes[0]
    lines = [xplane_pb2.XLine() for _ in range(len(line_start))]
    chunks: list[list[bytes]] = [[] for _ in lines]
    for line, head_start, head_end in heads.tolist():
        chunks[line].append(data[head_start:head_end])
    for line, parts in zip(lines, chunks):
        if parts:
            _parse(path, line, b"".join(parts))
    return DecodedPlane(proto, lines, columns)


def _no_lines() -> DecodedLines:
    empty = np.zeros(0, dtype=np.int64)
    return DecodedLines(
        event_metadata=empty,
        event_offset=empty.copy(),
        event_duration=empty.copy(),
        event_line=np.zeros(0, dtype=np.int32),
        stat_event=empty.copy(),
        stat_metadata=empty.copy(),
        stat_kind=np.zeros(0, dtype=np.int8),
        stat_bits=empty.copy(),
        texts=TextValues(b"", np.zeros(1, dtype=np.int64)),
        text_count=0,
        line_events=empty.copy(),
    )


@dataclass(frozen=True)
class FirstRoom:
    """The first size of wire.decode_lines' outputs, in bytes of the lines per entry.
    The 10M-event profile of bench/make_big_profile.py has 24-35 bytes per event and
    17-29 per stat, the shared TPU profile 26-43 and 15-18. A guess too large costs
    address space (pages nobody writes are never mapped; the arrays are cut to size
    afterwards), but the cut leaves holes in malloc's heap that later allocations fill
    with fresh pages: at the end of a 10M-event load 1,130 MB were resident with guesses
    of 12 and 8 bytes, 1,095 MB with 16 and 12, 1,048 MB with exact sizes (counted in a
    first pass, which cost 0.6 s). A guess too small costs a regrow (one or two for the
    smallest events, about 10 bytes)."""

    event_bytes: int = 16
    stat_bytes: int = 12
    text_share: int = 8  # text bytes: a part of the lines' bytes
    minimum: int = 64

    def size(self, line_bytes: int, per: int) -> int:
        return max(line_bytes // per, self.minimum)


FIRST_ROOM = FirstRoom()


@dataclass
class _Outputs:
    """wire.decode_lines' output arrays, in its argument order, grown as it asks."""

    arrays: list[np.ndarray]

    @classmethod
    def allocate(cls, line_bytes: int, lines: int, events: int) -> _Outputs:
        room = FIRST_ROOM
        stats = room.size(line_bytes, room.stat_bytes)  # (and texts: each is a stat's)
        return cls(
            [
                np.empty(events, dtype=np.int64),
                np.empty(events, dtype=np.int64),
                np.empty(events, dtype=np.int64),
                np.empty(events, dtype=np.int32),
                np.empty(stats, dtype=np.int64),
                np.empty(stats, dtype=np.int64),
                np.empty(stats, dtype=np.int8),
                np.empty(stats, dtype=np.int64),
                np.empty(room.size(line_bytes, room.text_share), dtype=np.uint8),
                np.empty(stats + 1, dtype=np.int64),
                np.empty((max(lines, room.minimum), 3), dtype=np.int64),  # (a line's fields before its events: one range)
                np.zeros(lines, dtype=np.int64),
            ]
        )

    # Which arrays each of wire's ROOM_* groups holds.
    GROUPS = ((0, 1, 2, 3), (4, 5, 6, 7), (8,), (9,), (10,))

    def grow(self, group: int, need: int) -> None:
        """The group's arrays at least ``need`` long (twice as long, or more), values kept."""
        for index in self.GROUPS[group]:
            array = self.arrays[index]
            _resize(array, max(need, 2 * len(array)))

    def cut(self, group: int, length: int) -> None:
        for index in self.GROUPS[group]:
            _resize(self.arrays[index], length)


def _resize(array: np.ndarray, length: int) -> None:
    """``array`` to ``length`` rows, its first rows kept, in place: the arrays own their
    memory, and realloc remaps a large block rather than copying it."""
    array.resize((length, *array.shape[1:]), refcheck=False)


def _decode_lines(path: Path, buf: np.ndarray, line_start: np.ndarray, line_end: np.ndarray, budget: _Budget) -> tuple[DecodedLines, np.ndarray]:
    line_bytes = int((line_end - line_start).sum())
    events = min(FIRST_ROOM.size(line_bytes, FIRST_ROOM.event_bytes), budget.events + 1)
    outputs = _Outputs.allocate(line_bytes, len(line_start), events)
    state = wire.new_state()
    while True:
        error, at = wire.decode_lines(buf, line_start, line_end, state, *outputs.arrays)
        if error != wire.ROOM:
            break
        group, need = int(state[wire.STATE_ROOM_FOR]), int(state[wire.STATE_ROOM_NEED])
        if group == wire.ROOM_EVENTS and need > budget.events:
            budget.take_events(need)  # (raises) before the columns grow past the limit
        outputs.grow(group, need)
    if error:
        raise corrupt(path, f"{wire.ERRORS[int(error)]}, at byte {at}")
    event_count, stat_count, text_count = (int(state[key]) for key in (wire.STATE_EVENTS, wire.STATE_STATS, wire.STATE_TEXTS))
    budget.take_events(event_count)
    for group, length in (
        (wire.ROOM_EVENTS, event_count),
        (wire.ROOM_STATS, stat_count),
        (wire.ROOM_TEXTS, text_count + 1),
        (wire.ROOM_HEADS, int(state[wire.STATE_HEADS])),
    ):
        outputs.cut(group, length)
    (
        event_metadata,
        event_offset,
        event_duration,
        event_line,
        stat_event,
        stat_metadata,
        stat_kind,
        stat_bits,
        text,
        text_offsets,
        heads,
        line_events,
    ) = outputs.arrays
    text = text[: int(state[wire.STATE_TEXT_SIZE])]
    blob = text.tobytes()
    if text_count:
        text_kinds = stat_kind[(stat_kind == KIND_STR) | (stat_kind == KIND_BYTES)]
        _check_utf8(path, text, text_offsets, text_kinds == KIND_STR, blob)  # texts are numbered in stat order
    texts = TextValues(blob, text_offsets)
    return (
        DecodedLines(event_metadata, event_offset, event_duration, event_line, stat_event, stat_metadata, stat_kind, stat_bits, texts, text_count, line_events),
        heads,
    )


def _check_utf8(path: Path, text: np.ndarray, offsets: np.ndarray, is_str: np.ndarray, blob: bytes) -> None:
    """Protobuf's rule for ``string`` fields: each str_value must be valid UTF-8. Only
    values holding a byte past ASCII need a look; Python's strict decoder follows the same
    standard as protobuf's."""
    if blob.isascii():  # (one pass in C, no temporary: the comparison below made a bool per byte)
        return
    high = np.flatnonzero(text >= 0x80)
    suspects = np.unique(np.searchsorted(offsets, high, "right") - 1)
    for index in suspects[is_str[suspects]].tolist():
        start, end = int(offsets[index]), int(offsets[index + 1])
        try:
            blob[start:end].decode("utf-8")
        except UnicodeDecodeError as error:
            raise corrupt(path, f"a str_value stat is not UTF-8: {error.reason}") from None
