"""XSpace's events encoded in bulk: a plane's XEvents as protobuf wire bytes, line by line.

The writer (:mod:`stepscope.trace.formats.xspace.write`) builds the small part of a file
with protobuf's message API (planes, metadata, line headers); the events, millions of them, are written
here straight into one buffer by a compiled loop, from the event table, the stat stores'
columns (:mod:`stepscope.trace.stat_entries`) and the flow table. Protobuf merges the
fields of concatenated serialisations, so a line header followed by ``0x22, length,
XEvent`` entries is a valid XLine.

An event's stats come in the order the per-event writer wrote them: its own stats (but
``flow``, re-derived from the flow table), then its flow endpoints (by flow, the source
before the sink), then its id columns (correlation_id, group_id, step_num, external_id)
that its own stats lack, then those the writer adds for XProf (``xprof_hints.py``). Stat
metadata ids are numbered in the order of first use, after those of plane and metadata
stats, as before.

Two passes: sizes (an XEvent is length-prefixed), then bytes. Both are kernels
(:mod:`stepscope.trace.kernels`): the C of ``src/stepscope/kernels/encode.c`` runs in
their place where it was built.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from stepscope.trace import names
from stepscope.trace.formats.xspace.schema import (
    FLOW_CATEGORY_CODES,
    FLOW_CATEGORY_SHIFT,
    FLOW_ID_MASK,
    FLOW_IN,
    FLOW_OUT,
    HOT_STATS,  # written in this order
)
from stepscope.trace.kernels import kernel
from stepscope.trace.model import NO_ID, EventTable, FlowTable, Plane
from stepscope.trace.stat_entries import EventTypes, StatEntries, stat_entries
from stepscope.trace.stat_types import Stat, StatKind

# Wire tags: XLine.events / XEvent.stats (field 4, length-delimited), XEvent.metadata_id,
# offset_ps, duration_ps and XStat.metadata_id (fields 1-3, varint), XStat's values.
_TAG_SUB = 0x22
_TAG_1 = 0x08
_TAG_2 = 0x10
_TAG_3 = 0x18
_TAG_DOUBLE = 0x11  # field 2, fixed64
_TAG_UINT64 = 0x18  # field 3
_TAG_INT64 = 0x20  # field 4
_TAG_STR = 0x2A  # field 5
_TAG_BYTES = 0x32  # field 6
_TAG_REF = 0x38  # field 7, varint: ref_value, the id of the stat metadata naming the string

# What the kernels take: int64 (int8 for kinds) contiguous columns, the uint8 buffer, and
# positions and values (a Python int or np.int64).
_Bytes = npt.NDArray[np.uint8]
_Int64s = npt.NDArray[np.int64]
_Int = int | np.int64


def _varint_size(value: _Int) -> int:
    if value < 0:
        return 10  # an int64 below 0 is its 64-bit two's complement
    size = 1
    while value >= 128:
        value >>= 7
        size += 1
    return size


def _put_varint(buffer: _Bytes, at: _Int, value: _Int) -> _Int:
    if value < 0:
        for _ in range(9):  # the low 63 bits, 7 at a time (an arithmetic shift keeps them)
            buffer[at] = (value & 0x7F) | 0x80
            value >>= 7
            at += 1
        buffer[at] = 1  # bit 63
        return at + 1
    while value >= 128:
        buffer[at] = (value & 0x7F) | 0x80
        value >>= 7
        at += 1
    buffer[at] = value
    return at + 1


@kernel("encode_sizes")
def _sizes(
    metadata: _Int64s,
    offset: _Int64s,
    duration: _Int64s,
    entry_row: _Int64s,
    entry_id: _Int64s,
    entry_kind: npt.NDArray[np.int8],
    entry_bits: _Int64s,
    text_offsets: _Int64s,
    event_size: _Int64s,
    stat_size: _Int64s,
) -> _Int:
    """Each event's and each stat's message size; returns the total of the XLine entries."""
    entry = 0
    entries = len(entry_row)
    total = 0
    for event in range(len(metadata)):
        size = 2 + _varint_size(metadata[event]) + _varint_size(offset[event])
        if duration[event] != 0:
            size += 1 + _varint_size(duration[event])
        while entry < entries and entry_row[entry] == event:
            kind = entry_kind[entry]
            stat = 2 + _varint_size(entry_id[entry])
            if kind == 2:  # DOUBLE
                stat += 8
            elif kind == 3 or kind == 4:  # STR, BYTES
                number = entry_bits[entry]
                length = text_offsets[number + 1] - text_offsets[number]
                stat += _varint_size(length) + length
            else:
                stat += _varint_size(entry_bits[entry])
            stat_size[entry] = stat
            size += 1 + _varint_size(stat) + stat
            entry += 1
        event_size[event] = size
        total += 1 + _varint_size(size) + size
    return total


@kernel("encode_fill")
def _fill(
    metadata: _Int64s,
    offset: _Int64s,
    duration: _Int64s,
    entry_row: _Int64s,
    entry_id: _Int64s,
    entry_kind: npt.NDArray[np.int8],
    entry_bits: _Int64s,
    text_blob: _Bytes,
    text_offsets: _Int64s,
    event_size: _Int64s,
    stat_size: _Int64s,
    buffer: _Bytes,
    event_end: _Int64s,
) -> _Int:
    entry = 0
    entries = len(entry_row)
    at: _Int = 0
    for event in range(len(metadata)):
        buffer[at] = _TAG_SUB
        at = _put_varint(buffer, at + 1, event_size[event])
        buffer[at] = _TAG_1
        at = _put_varint(buffer, at + 1, metadata[event])
        buffer[at] = _TAG_2
        at = _put_varint(buffer, at + 1, offset[event])
        if duration[event] != 0:
            buffer[at] = _TAG_3
            at = _put_varint(buffer, at + 1, duration[event])
        while entry < entries and entry_row[entry] == event:
            buffer[at] = _TAG_SUB
            at = _put_varint(buffer, at + 1, stat_size[entry])
            buffer[at] = _TAG_1
            at = _put_varint(buffer, at + 1, entry_id[entry])
            kind = entry_kind[entry]
            bits = entry_bits[entry]
            if kind == 0:  # INT64
                buffer[at] = _TAG_INT64
                at = _put_varint(buffer, at + 1, bits)
            elif kind == 1:  # UINT64
                buffer[at] = _TAG_UINT64
                at = _put_varint(buffer, at + 1, bits)
            elif kind == 2:  # DOUBLE, little-endian
                buffer[at] = _TAG_DOUBLE
                at += 1
                for byte in range(8):
                    buffer[at] = (bits >> (8 * byte)) & 0xFF
                    at += 1
            elif kind == 5:  # REF
                buffer[at] = _TAG_REF
                at = _put_varint(buffer, at + 1, bits)
            else:
                buffer[at] = _TAG_STR if kind == 3 else _TAG_BYTES
                start = text_offsets[bits]
                length = text_offsets[bits + 1] - start
                at = _put_varint(buffer, at + 1, length)
                buffer[at : at + length] = text_blob[start : start + length]
                at += length
            entry += 1
        event_end[event] = at
    return at


def encode_flow_bits(flow_id: np.ndarray, direction: int, category: np.ndarray | None = None) -> np.ndarray:
    """The `flow` stat: ``category`` codes (0..63, see schema) in bits 58-63, as uint64 bits in an int64."""
    bits = ((flow_id & FLOW_ID_MASK) << 2) | direction
    if category is not None:
        bits = bits | (category.astype(np.int64) << FLOW_CATEGORY_SHIFT)
    return bits


def flow_categories_stat(flows: FlowTable) -> Stat:
    """The plane stat naming the category codes (see schema.FLOW_CATEGORY_CODES)."""
    return Stat(names.FLOW_CATEGORIES, StatKind.STR, json.dumps(flows.categories[:FLOW_CATEGORY_CODES]))


def flow_category_codes(flows: FlowTable) -> np.ndarray:
    """Each arrow's category code: its index in ``flows.categories`` plus one, 0 past the 63rd."""
    codes = flows.category.astype(np.int64) + 1
    return np.where(codes <= FLOW_CATEGORY_CODES, codes, 0)


def plane_flows(flows: FlowTable, plane: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The `flow` stats of plane ``plane``'s events: rows and encoded values, sorted by row,
    a row's in the order of the flow table, the source before the sink. Each arrow has its
    own id (its row in the table, from 1)."""
    flow_id = np.arange(1, len(flows) + 1, dtype=np.int64)
    category = flow_category_codes(flows)
    rows, order, bits = [], [], []
    for side, (planes, events, direction) in enumerate(((flows.src_plane, flows.src_event, FLOW_OUT), (flows.dst_plane, flows.dst_event, FLOW_IN))):
        mine = np.flatnonzero((planes == plane) & (events >= 0) & (events < count))
        rows.append(np.asarray(events[mine], dtype=np.int64))
        order.append(2 * mine + side)
        bits.append(encode_flow_bits(flow_id[mine], direction, category[mine]))
    row, sequence = np.concatenate(rows), np.concatenate(order)
    sort = np.lexsort((sequence, row))
    return row[sort], np.concatenate(bits)[sort]


class EncodedEvents:
    """A plane's XLine ``events`` entries: ``line(i)`` is line ``i``'s, as bytes to append
    to its header."""

    def __init__(self, buffer: np.ndarray, bounds: np.ndarray) -> None:
        self._buffer = buffer.data  # a memoryview of the whole buffer
        self._bounds = bounds.tolist()

    def line(self, index: int) -> memoryview:
        return self._buffer[self._bounds[index] : self._bounds[index + 1]]


# Stats a writer adds to the events, given their own (``extra`` of :func:`encode_events`):
# rows (ascending), stat metadata ids, kinds (StatKind's, or 5: a ref_value) and values.
ExtraStats = Callable[[StatEntries], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None]


def encode_events(
    plane: Plane, offset_ps: np.ndarray, flows: tuple[np.ndarray, np.ndarray], stat_id: Callable[[str], int], extra: ExtraStats | None = None
) -> EncodedEvents:
    """``offset_ps``: each event's XEvent.offset_ps; ``flows``: :func:`plane_flows`;
    ``stat_id``: the plane's stat metadata id of a name (made on first use); ``extra``:
    stats to write after each event's own (the XProf hints), asked once the own are known."""
    events = plane.events
    count = len(events)
    types = EventTypes(events.metadata_id, plane.metadata.names, plane.metadata.categories)
    # Own `flow` stats are not written (nor converted): flows come from the flow table.
    own = stat_entries(plane.stats, np.arange(count, dtype=np.int64), types, frozenset({names.FLOW}))
    row, key, kind, bits, stat_names = _event_stats(own, events, flows)
    ids = np.zeros(len(stat_names), dtype=np.int64)
    if len(key):
        used, first = np.unique(key, return_index=True)
        for code in used[np.argsort(first)].tolist():
            ids[code] = stat_id(stat_names[code])
    entry_id = ids[key]
    added = extra(own) if extra is not None else None
    if added is not None and len(added[0]):
        order = np.argsort(np.concatenate((row, added[0])), kind="stable")  # an event's added stats after its own
        row, entry_id, kind, bits = (np.concatenate(pair)[order] for pair in zip((row, entry_id, kind, bits), added))
    metadata = events.metadata_id.astype(np.int64) + 1
    buffer, event_end = _encode(metadata, offset_ps, events.duration_ps, row, entry_id, kind, bits, own.text_blob, own.text_offsets)
    bounds = np.concatenate(([0], event_end))[plane.line_offsets]
    return EncodedEvents(buffer, bounds)


def encode_int_events(metadata_id: np.ndarray, offset_ps: np.ndarray, duration_ps: np.ndarray, stats: list[tuple[int, np.ndarray]]) -> memoryview:
    """One line's XEvent entries, each event with the same INT64 stats: ``stats`` is
    (stat metadata id, each event's value) in the order written."""
    count = len(metadata_id)
    row = np.repeat(np.arange(count, dtype=np.int64), len(stats))
    entry_id = np.tile(np.asarray([stat for stat, _ in stats], dtype=np.int64), count)
    bits = np.stack([np.asarray(values, dtype=np.int64) for _, values in stats], axis=1).reshape(-1) if stats else row
    kind = np.full(len(row), StatKind.INT64, dtype=np.int8)
    buffer, _ = _encode(metadata_id, offset_ps, duration_ps, row, entry_id, kind, bits, np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))
    return buffer.data


def _encode(
    metadata: np.ndarray,
    offset_ps: np.ndarray,
    duration_ps: np.ndarray,
    row: np.ndarray,
    entry_id: np.ndarray,
    kind: np.ndarray,
    bits: np.ndarray,
    text_blob: np.ndarray,
    text_offsets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """XEvent entries of events (metadata ids, offsets, durations) and their stat entries
    (sorted by row); the bytes and each event's end in them."""
    count = len(metadata)
    # The kernels take contiguous columns of these types.
    metadata, offset, duration, row, entry_id, bits = (
        np.ascontiguousarray(column, dtype=np.int64) for column in (metadata, offset_ps, duration_ps, row, entry_id, bits)
    )
    kind = np.ascontiguousarray(kind, dtype=np.int8)
    text_blob, text_offsets = np.ascontiguousarray(text_blob), np.ascontiguousarray(text_offsets)
    event_size = np.zeros(count, dtype=np.int64)
    stat_size = np.zeros(len(row), dtype=np.int64)
    total = _sizes(metadata, offset, duration, row, entry_id, kind, bits, text_offsets, event_size, stat_size)
    buffer = np.empty(total, dtype=np.uint8)
    event_end = np.zeros(count, dtype=np.int64)
    written = _fill(metadata, offset, duration, row, entry_id, kind, bits, text_blob, text_offsets, event_size, stat_size, buffer, event_end)
    assert written == total, (written, total)
    return buffer, event_end


def _event_stats(
    own: StatEntries, events: EventTable, flows: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Every stat written, sorted by event, in writing order: row, key (into the returned
    names), kind, bits (texts: numbered in ``own``'s table)."""
    own_names = own.names
    stat_names = [*own_names, names.FLOW, *HOT_STATS]
    rows, keys, kinds, bits = [own.row], [own.key.astype(np.int64)], [own.kind], [own.bits]
    flow_rows, flow_bits = flows
    if len(flow_rows):
        rows.append(flow_rows)
        keys.append(np.full(len(flow_rows), len(own_names), dtype=np.int64))
        kinds.append(np.full(len(flow_rows), StatKind.UINT64, dtype=np.int8))
        bits.append(flow_bits)
    for index, (name, column) in enumerate(HOT_STATS.items()):
        values = getattr(events, column)
        wanted = values != NO_ID
        if not wanted.any():
            continue
        present = _named(own, name)
        if present.any():
            wanted[own.row[present]] = False
        hot = np.flatnonzero(wanted)
        rows.append(hot)
        keys.append(np.full(len(hot), len(own_names) + 1 + index, dtype=np.int64))
        kinds.append(np.full(len(hot), StatKind.INT64, dtype=np.int8))
        bits.append(values[hot].astype(np.int64))
    if len(rows) == 1:
        return rows[0], keys[0], kinds[0], bits[0], stat_names
    row = np.concatenate(rows)
    order = np.argsort(row, kind="stable")  # parts sorted by row: a merge of runs
    return row[order], np.concatenate(keys)[order], np.concatenate(kinds)[order], np.concatenate(bits)[order], stat_names


def _named(entries: StatEntries, name: str) -> np.ndarray:
    """Which entries are stat ``name`` (a mask)."""
    codes = [code for code, key in enumerate(entries.names) if key == name]
    if not codes:
        return np.zeros(len(entries), dtype=bool)
    return np.isin(entries.key, codes)
