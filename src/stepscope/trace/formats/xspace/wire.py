"""Protobuf's wire format, decoded in bulk: XSpace's structure, and every XEvent and XStat
of its lines as numpy columns.

Protobuf's Python API parses a file quickly, but reading it back builds a Python object for
every event and stat, which is where a reader of millions of events spent its time. Here a
loop walks the bytes once and writes what the model keeps: an event's metadata id, offset
and duration, a stat's event, metadata id, kind and 64-bit value; the payload of string and
bytes stats is copied into one blob. ``scan_fields`` and ``decode_lines`` are kernels
(:mod:`stepscope.trace.kernels`): the C of ``src/stepscope/kernels/scan.c`` and ``lines.c``
runs in their place, line for line the same, where it was built.

What a field means follows protobuf's own parser (upb, behind the ``protobuf`` package), so
that a file decodes here as it does there, and is rejected where it is rejected:
- a field whose number is known but whose wire type is not the declared one is an unknown
  field, and unknown fields are skipped (groups included);
- a scalar field given twice keeps the last value; in a oneof the member given last wins
  (an event whose ``num_occurrences`` comes after its ``offset_ps`` has offset 0);
- varints are at most 10 bytes (bits past 64 dropped), tags at most 5 bytes and 32 bits,
  lengths at most 5 bytes and below 2**31 - 1; field number 0, wire types 6 and 7, an
  end-group tag without its start and groups nested past protobuf's depth limit (100
  levels of messages and groups) are corrupt;
- ``string`` fields must be UTF-8: the caller checks the values in the blob.

tests/trace/test_xspace_fast.py checks all this against protobuf itself, on generated,
damaged and hand-made files, and tests/trace/test_kernels_wire.py the C against this Python.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.trace.formats.xspace.schema import (
    KIND_BYTES,
    KIND_DOUBLE,
    KIND_INT64,
    KIND_NONE,
    KIND_REF,
    KIND_STR,
    KIND_UINT64,
)
from stepscope.trace.kernels import kernel

# Error codes (returned negated in place of a position).
TRUNCATED = 1
LONG_VARINT = 2
BAD_TAG = 3
BAD_WIRE_TYPE = 4
BAD_GROUP = 5
BAD_LENGTH = 6
TOO_DEEP = 7
ERRORS = {
    TRUNCATED: "a field runs past the end of its message",
    LONG_VARINT: "a varint is longer than 10 bytes",
    BAD_TAG: "a field tag is malformed (field number 0, or longer than 32 bits)",
    BAD_WIRE_TYPE: "a field has wire type 6 or 7",
    BAD_GROUP: "an end-group tag has no matching start",
    BAD_LENGTH: "a length is malformed (longer than 5 bytes, or 2 GiB or more)",
    TOO_DEEP: "messages and groups are nested more than 100 deep",
}

# Protobuf's nesting limit, and what is left of it at each XSpace message.
DEPTH_LIMIT = 100
PLANE_DEPTH = DEPTH_LIMIT - 1
LINE_DEPTH = DEPTH_LIMIT - 2


# What the kernels take: the file's bytes, int64 (int8, int32) columns, and positions and
# counts (a Python int or np.int64).
_Bytes = npt.NDArray[np.uint8]
_Int64s = npt.NDArray[np.int64]
_Int = int | np.int64

_WIRE_VARINT = 0
_WIRE_FIXED64 = 1
_WIRE_LEN = 2
_WIRE_START_GROUP = 3
_WIRE_END_GROUP = 4
_WIRE_FIXED32 = 5


# Helpers for the structure and the rare paths (unknown fields, long tags); decode_lines'
# hot loop decodes inline.


def _varint(buf: _Bytes, pos: _Int, end: _Int) -> tuple[np.uint64, _Int]:
    """(value, position after it), or (0, -error)."""
    result = np.uint64(0)
    shift = np.uint64(0)
    error = 0
    while True:
        if pos >= end:
            error = TRUNCATED
            break
        byte = buf[pos]
        pos += 1
        result |= np.uint64(byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += np.uint64(7)
        if shift == np.uint64(70):
            error = LONG_VARINT
            break
    if error:
        result = np.uint64(0)
        pos = -error
    return result, pos


def _tag(buf: _Bytes, pos: _Int, end: _Int) -> tuple[np.int64, np.int64, _Int]:
    """(field number, wire type, position after the tag), or (0, 0, -error)."""
    start = pos
    value, pos = _varint(buf, pos, end)
    field = np.int64(value >> np.uint64(3))
    wire = np.int64(value & np.uint64(7))
    if pos >= 0:
        if pos - start > 5 or value > np.uint64(0xFFFFFFFF) or field == 0:
            pos = -BAD_TAG
        elif wire > _WIRE_FIXED32:
            pos = -BAD_WIRE_TYPE
    return field, wire, pos


def _length(buf: _Bytes, pos: _Int, end: _Int) -> tuple[np.int64, _Int]:
    """(length, position of the payload) of a length-delimited field, or (0, -error)."""
    start = pos
    value, pos = _varint(buf, pos, end)
    length = np.int64(value)
    if pos >= 0:
        if pos - start > 5 or value >= np.uint64(2147483647):
            pos = -BAD_LENGTH
        elif pos + length > end:
            pos = -TRUNCATED
    return length, pos


def _skip_scalar(buf: _Bytes, pos: _Int, end: _Int, wire: _Int) -> _Int:
    """Position after a value of wire type varint, fixed64, length-delimited or fixed32."""
    if wire == _WIRE_VARINT:
        _, pos = _varint(buf, pos, end)
        return pos
    if wire == _WIRE_FIXED64:
        return pos + 8 if pos + 8 <= end else -TRUNCATED
    if wire == _WIRE_FIXED32:
        return pos + 4 if pos + 4 <= end else -TRUNCATED
    if wire == _WIRE_LEN:
        length, pos = _length(buf, pos, end)
        return pos + length if pos >= 0 else pos
    return -BAD_WIRE_TYPE


def _skip(buf: _Bytes, pos: _Int, end: _Int, field: _Int, wire: _Int, depth: _Int) -> _Int:
    """Position after the value of an unknown field whose tag ended at ``pos``, or -error.

    ``depth``: nesting levels left to the message the field is in.
    """
    if wire == _WIRE_END_GROUP:
        return -BAD_GROUP
    if wire != _WIRE_START_GROUP:
        return _skip_scalar(buf, pos, end, wire)
    open_groups = np.empty(DEPTH_LIMIT + 1, dtype=np.int64)
    count = 0
    while True:
        if wire == _WIRE_START_GROUP:
            if depth <= 0:
                return -TOO_DEEP
            depth -= 1
            open_groups[count] = field
            count += 1
        elif wire == _WIRE_END_GROUP:
            if field != open_groups[count - 1]:
                return -BAD_GROUP
            depth += 1
            count -= 1
            if count == 0:
                return pos
        else:
            pos = _skip_scalar(buf, pos, end, wire)
            if pos < 0:
                return pos
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return pos


@kernel("scan_fields")
def scan_fields(buf: _Bytes, start: _Int, end: _Int, depth: _Int, out: _Int64s) -> tuple[int, _Int, _Int]:
    """The fields of the message ``buf[start:end]``: column ``i`` of ``out`` (int64, 5 rows)
    gets field ``i``'s number, wire type, tag start, value start and value end (for a
    length-delimited field the value is its payload), while ``out`` has room. Returns (the
    number of fields, error, position of the error); call again with a bigger ``out`` when
    the number is larger than its room."""
    count = 0
    pos = start
    while pos < end:
        tag_start = pos
        field, wire, pos = _tag(buf, pos, end)
        if pos < 0:
            return count, -pos, tag_start
        value_start = pos
        if wire == _WIRE_LEN:
            length, value_start = _length(buf, pos, end)
            pos = value_start + length if value_start >= 0 else value_start
        else:
            pos = _skip(buf, pos, end, field, wire, depth)
        if pos < 0:
            return count, -pos, tag_start
        if count < out.shape[1]:
            out[0, count] = field
            out[1, count] = wire
            out[2, count] = tag_start
            out[3, count] = value_start
            out[4, count] = pos
        count += 1
    return count, 0, 0


def _fixed64(buf: _Bytes, pos: _Int) -> np.int64:
    value = np.uint64(0)
    for index in range(8):
        value |= np.uint64(buf[pos + index]) << np.uint64(8 * index)
    return np.int64(value)


# decode_lines' progress, kept in an int64 array between calls (see ROOM).
STATE_LINE = 0  # the line being decoded
STATE_POS = 1  # where in it to go on (-1: at its start)
STATE_EVENTS = 2  # counts so far: events, stats, text bytes, texts, head ranges
STATE_STATS = 3
STATE_TEXT_SIZE = 4
STATE_TEXTS = 5
STATE_HEADS = 6
STATE_HEAD_LINE = 7  # the line and end of the last head range (adjacent fields join it)
STATE_HEAD_END = 8
STATE_LINE_FIRST = 9  # the line's first event
STATE_ROOM_FOR = 10  # after ROOM: which output is full (ROOM_*), and the length it needs
STATE_ROOM_NEED = 11
STATE_SIZE = 12

# decode_lines' result when an output array is full (not an error: grow it, call again).
ROOM = -1
ROOM_EVENTS = 0  # event_* columns
ROOM_STATS = 1  # stat_* columns
ROOM_TEXT = 2  # out_text
ROOM_TEXTS = 3  # out_text_offsets
ROOM_HEADS = 4  # out_heads


def new_state() -> _Int64s:
    """decode_lines' state before its first call."""
    state = np.zeros(STATE_SIZE, dtype=np.int64)
    state[STATE_POS] = -1
    state[STATE_HEAD_LINE] = -1
    state[STATE_HEAD_END] = -1
    return state


@kernel("decode_lines")
def decode_lines(
    buf: _Bytes,
    line_start: _Int64s,
    line_end: _Int64s,
    state: _Int64s,
    event_metadata: _Int64s,
    event_offset: _Int64s,
    event_duration: _Int64s,
    event_line: npt.NDArray[np.int32],
    stat_event: _Int64s,
    stat_metadata: _Int64s,
    stat_kind: npt.NDArray[np.int8],
    stat_bits: _Int64s,
    out_text: _Bytes,
    out_text_offsets: _Int64s,
    out_heads: _Int64s,
    out_line_events: _Int64s,
) -> tuple[_Int, _Int]:
    """Decodes the XLines ``buf[line_start[i]:line_end[i]]``: their events (field 4) and the
    events' stats; every other field of a line is left to protobuf, as byte ranges.

    One pass, into arrays of a guessed size: when one is full it returns ROOM, with
    ``state`` saying which and the length needed; the caller grows that array (keeping
    what it holds) and calls again with the same state, and the decoder goes on from the
    start of the event (or line field) it could not store. (Counting first and filling in
    a second pass read every byte twice: a third of a 10M-event load.) It fills:

    - per event: ``event_metadata``, ``event_offset`` (offset_ps), ``event_duration``
      (int64) and ``event_line`` (int32, the index of its line);
    - per stat: ``stat_event`` (int64, the event's row), ``stat_metadata`` (int64),
      ``stat_kind`` (int8, KIND_*) and ``stat_bits`` (int64: an int64, a uint64's or a
      double's 64 bits, the number of a text, or a ref's id);
    - ``out_text`` uint8: the string and bytes values one after another, text ``j`` being
      ``out_text[out_text_offsets[j]:out_text_offsets[j + 1]]``;
    - ``out_heads`` int64 (ranges, 3): line index, start, end of the bytes holding the
      line's other fields (adjacent fields of a line are one range);
    - ``out_line_events`` int64, one per line: how many events it has.

    Returns (0, 0) when done (the counts are in ``state``), (ROOM, 0), or (error, position
    of the error).

    Tags, lengths and varints are decoded inline with a fast path for one byte (the
    helpers were calls numba did not inline: 3-5x slower, measured; the C keeps the shape).
    """
    line = state[STATE_LINE]
    pos = state[STATE_POS]
    events = state[STATE_EVENTS]
    stats = state[STATE_STATS]
    text_size = state[STATE_TEXT_SIZE]
    texts = state[STATE_TEXTS]
    heads = state[STATE_HEADS]
    last_head_line = state[STATE_HEAD_LINE]
    last_head_end = state[STATE_HEAD_END]
    line_first_event = state[STATE_LINE_FIRST]
    event_room = len(event_offset)
    stat_room = len(stat_event)
    text_room = len(out_text)
    texts_room = len(out_text_offsets) - 1
    head_room = out_heads.shape[0]
    error: _Int = 0
    at: _Int = 0
    room_for = -1
    room_need: _Int = 0
    resume: _Int = 0  # where to go on after ROOM
    if line == 0 and pos < 0:
        out_text_offsets[0] = 0
    while line < len(line_start):
        if pos < 0:
            pos = line_start[line]
            line_first_event = events
        line_stop = line_end[line]
        while pos < line_stop:
            # --- a field of the line
            at = pos
            byte = buf[pos]
            field = np.int64(byte >> 3)
            wire = np.int64(byte & 7)
            pos += 1
            if byte >= 0x80 or field == 0 or wire > _WIRE_FIXED32:
                field, wire, pos = _tag(buf, at, line_stop)
                if pos < 0:
                    error = -pos
                    break
            if field != 4 or wire != _WIRE_LEN:
                pos = _skip(buf, pos, line_stop, field, wire, LINE_DEPTH)
                if pos < 0:
                    error = -pos
                    break
                if last_head_line == line and last_head_end == at:
                    out_heads[heads - 1, 2] = pos
                else:
                    if heads == head_room:
                        room_for, room_need, resume = ROOM_HEADS, heads + 1, at
                        break
                    out_heads[heads, 0] = line
                    out_heads[heads, 1] = at
                    out_heads[heads, 2] = pos
                    last_head_line = line
                    heads += 1
                last_head_end = pos
                continue
            if events == event_room:
                room_for, room_need, resume = ROOM_EVENTS, events + 1, at
                break
            event_at = at
            event_stats = stats
            event_text_size = text_size
            event_texts = texts
            length = np.int64(buf[pos]) if pos < line_stop else np.int64(0x80)
            if length < 0x80:
                pos += 1
                if pos + length > line_stop:
                    error = TRUNCATED
                    break
            else:
                length, pos = _length(buf, pos, line_stop)
                if pos < 0:
                    error = -pos
                    break
            # --- an event
            event_stop = pos + length
            metadata_id = np.int64(0)
            offset = np.int64(0)
            duration = np.int64(0)
            data_case = 0  # the member of the oneof `data` given last: 2 offset_ps, 5 num_occurrences
            while pos < event_stop:
                at = pos
                byte = buf[pos]
                field = np.int64(byte >> 3)
                wire = np.int64(byte & 7)
                pos += 1
                if byte >= 0x80 or field == 0 or wire > _WIRE_FIXED32:
                    field, wire, pos = _tag(buf, at, event_stop)
                    if pos < 0:
                        error = -pos
                        break
                if wire == _WIRE_VARINT and (field == 1 or field == 2 or field == 3 or field == 5):
                    value = np.uint64(0)
                    shift = np.uint64(0)
                    while True:
                        if pos >= event_stop:
                            error = TRUNCATED
                            break
                        byte = buf[pos]
                        pos += 1
                        value |= np.uint64(byte & 0x7F) << shift
                        if byte < 0x80:
                            break
                        shift += np.uint64(7)
                        if shift == np.uint64(70):
                            error = LONG_VARINT
                            break
                    if error:
                        break
                    if field == 1:
                        metadata_id = np.int64(value)
                    elif field == 2:
                        offset = np.int64(value)
                        data_case = 2
                    elif field == 3:
                        duration = np.int64(value)
                    else:
                        data_case = 5
                    continue
                if field != 4 or wire != _WIRE_LEN:
                    pos = _skip(buf, pos, event_stop, field, wire, LINE_DEPTH - 1)
                    if pos < 0:
                        error = -pos
                        break
                    continue
                length = np.int64(buf[pos]) if pos < event_stop else np.int64(0x80)
                if length < 0x80:
                    pos += 1
                    if pos + length > event_stop:
                        error = TRUNCATED
                        break
                else:
                    length, pos = _length(buf, pos, event_stop)
                    if pos < 0:
                        error = -pos
                        break
                # --- a stat of the event
                stat_stop = pos + length
                stat_id = np.int64(0)
                kind = KIND_NONE
                bits = np.int64(0)
                text_start: _Int = 0
                text_end: _Int = 0
                while pos < stat_stop:
                    at = pos
                    byte = buf[pos]
                    field = np.int64(byte >> 3)
                    wire = np.int64(byte & 7)
                    pos += 1
                    if byte >= 0x80 or field == 0 or wire > _WIRE_FIXED32:
                        field, wire, pos = _tag(buf, at, stat_stop)
                        if pos < 0:
                            error = -pos
                            break
                    if wire == _WIRE_VARINT and (field == 1 or field == 3 or field == 4 or field == 7):
                        value = np.uint64(0)
                        shift = np.uint64(0)
                        while True:
                            if pos >= stat_stop:
                                error = TRUNCATED
                                break
                            byte = buf[pos]
                            pos += 1
                            value |= np.uint64(byte & 0x7F) << shift
                            if byte < 0x80:
                                break
                            shift += np.uint64(7)
                            if shift == np.uint64(70):
                                error = LONG_VARINT
                                break
                        if error:
                            break
                        if field == 1:
                            stat_id = np.int64(value)
                        else:
                            bits = np.int64(value)
                            kind = KIND_UINT64 if field == 3 else (KIND_INT64 if field == 4 else KIND_REF)
                    elif wire == _WIRE_FIXED64 and field == 2:
                        if pos + 8 > stat_stop:
                            error = TRUNCATED
                            break
                        bits = _fixed64(buf, pos)
                        pos += 8
                        kind = KIND_DOUBLE
                    elif wire == _WIRE_LEN and (field == 5 or field == 6):
                        length, pos = _length(buf, pos, stat_stop)
                        if pos < 0:
                            error = -pos
                            break
                        text_start = pos
                        text_end = pos + length
                        pos = text_end
                        kind = KIND_STR if field == 5 else KIND_BYTES
                    else:
                        pos = _skip(buf, pos, stat_stop, field, wire, LINE_DEPTH - 2)
                        if pos < 0:
                            error = -pos
                            break
                if error:
                    break
                if stats == stat_room:
                    room_for, room_need = ROOM_STATS, stats + 1
                    break
                if kind in (KIND_STR, KIND_BYTES):
                    size = text_end - text_start
                    if texts == texts_room:
                        room_for, room_need = ROOM_TEXTS, texts + 2
                        break
                    if text_size + size > text_room:
                        room_for, room_need = ROOM_TEXT, text_size + size
                        break
                    for index in range(size):  # (a loop compiles faster than a slice copy)
                        out_text[text_size + index] = buf[text_start + index]
                    out_text_offsets[texts + 1] = text_size + size
                    bits = np.int64(texts)
                    text_size += size
                    texts += 1
                stat_event[stats] = events
                stat_metadata[stats] = stat_id
                stat_kind[stats] = kind
                stat_bits[stats] = bits
                stats += 1
            if error:
                break
            if room_for >= 0:  # the event again, from its start, once there is room
                stats = event_stats
                text_size = event_text_size
                texts = event_texts
                resume = event_at
                break
            event_metadata[events] = metadata_id
            event_offset[events] = offset if data_case == 2 else 0
            event_duration[events] = duration
            event_line[events] = line
            events += 1
        if error or room_for >= 0:
            break
        out_line_events[line] = events - line_first_event
        line += 1
        pos = -1
    if room_for >= 0:
        pos = resume
        error = ROOM
        state[STATE_ROOM_FOR] = room_for
        state[STATE_ROOM_NEED] = room_need
    state[STATE_LINE] = line
    state[STATE_POS] = pos
    state[STATE_EVENTS] = events
    state[STATE_STATS] = stats
    state[STATE_TEXT_SIZE] = text_size
    state[STATE_TEXTS] = texts
    state[STATE_HEADS] = heads
    state[STATE_HEAD_LINE] = last_head_line
    state[STATE_HEAD_END] = last_head_end
    state[STATE_LINE_FIRST] = line_first_event
    return error, at
