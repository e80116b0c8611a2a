/* Protobuf's wire format: the primitives both decoders (scan.c, lines.c) read it with,
   and the numbers they share with stepscope/trace/formats/xspace/wire.py (its error codes,
   state slots and output groups; tests/trace/test_kernels.py checks that they agree).

   Each returns a position: after what it read, or -error. A read never goes past ``end``,
   the end of the message being read. */

#ifndef STEPSCOPE_WIRE_H
#define STEPSCOPE_WIRE_H

#include <stdint.h>

/* Error codes (wire.py's ERRORS), returned negated in place of a position. */
enum { TRUNCATED = 1, LONG_VARINT = 2, BAD_TAG = 3, BAD_WIRE_TYPE = 4, BAD_GROUP = 5, BAD_LENGTH = 6, TOO_DEEP = 7 };

/* Protobuf's nesting limit, and what is left of it inside an XLine. */
#define DEPTH_LIMIT 100
#define LINE_DEPTH (DEPTH_LIMIT - 2)

/* decode_lines' state slots (wire.py's STATE_*). */
enum {
    STATE_LINE, STATE_POS, STATE_EVENTS, STATE_STATS, STATE_TEXT_SIZE, STATE_TEXTS, STATE_HEADS,
    STATE_HEAD_LINE, STATE_HEAD_END, STATE_LINE_FIRST, STATE_ROOM_FOR, STATE_ROOM_NEED, STATE_SIZE
};

/* decode_lines' result when an output is full, and which (wire.py's ROOM, ROOM_*). */
#define ROOM (-1)
enum { ROOM_EVENTS, ROOM_STATS, ROOM_TEXT, ROOM_TEXTS, ROOM_HEADS };

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_START_GROUP = 3, WIRE_END_GROUP = 4, WIRE_FIXED32 = 5 };

/* Position after the varint at ``pos`` (its value in ``value``), or -error. */
static inline int64_t
read_varint(const uint8_t *buf, int64_t pos, int64_t end, uint64_t *value)
{
    uint64_t result = 0;
    unsigned shift = 0;
    for (;;) {
        if (pos >= end) {
            *value = 0;
            return -TRUNCATED;
        }
        uint8_t byte = buf[pos++];
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            break;
        }
        shift += 7;
        if (shift == 70) {
            *value = 0;
            return -LONG_VARINT;
        }
    }
    *value = result;
    return pos;
}

/* Position after the tag at ``pos`` (field number and wire type set), or -error. */
static inline int64_t
read_tag(const uint8_t *buf, int64_t pos, int64_t end, int64_t *field, int64_t *wire)
{
    int64_t start = pos;
    uint64_t value;
    pos = read_varint(buf, pos, end, &value);
    *field = (int64_t)(value >> 3);
    *wire = (int64_t)(value & 7);
    if (pos >= 0) {
        if (pos - start > 5 || value > 0xFFFFFFFFu || *field == 0) {
            pos = -BAD_TAG;
        } else if (*wire > WIRE_FIXED32) {
            pos = -BAD_WIRE_TYPE;
        }
    }
    return pos;
}

/* Position of a length-delimited field's payload (its length set), or -error. */
static inline int64_t
read_length(const uint8_t *buf, int64_t pos, int64_t end, int64_t *length)
{
    int64_t start = pos;
    uint64_t value;
    pos = read_varint(buf, pos, end, &value);
    *length = (int64_t)value;
    if (pos >= 0) {
        if (pos - start > 5 || value >= 2147483647u) {
            pos = -BAD_LENGTH;
        } else if (pos + *length > end) {
            pos = -TRUNCATED;
        }
    }
    return pos;
}

static inline int64_t
skip_scalar(const uint8_t *buf, int64_t pos, int64_t end, int64_t wire)
{
    uint64_t ignored;
    int64_t length;
    switch (wire) {
    case WIRE_VARINT:
        return read_varint(buf, pos, end, &ignored);
    case WIRE_FIXED64:
        return pos + 8 <= end ? pos + 8 : -TRUNCATED;
    case WIRE_FIXED32:
        return pos + 4 <= end ? pos + 4 : -TRUNCATED;
    case WIRE_LEN:
        pos = read_length(buf, pos, end, &length);
        return pos >= 0 ? pos + length : pos;
    default:
        return -BAD_WIRE_TYPE;
    }
}

/* Position after the value of an unknown field whose tag ended at ``pos``, or -error;
   ``depth`` (at most DEPTH_LIMIT, which bounds ``open_groups``): levels left. */
static inline int64_t
skip(const uint8_t *buf, int64_t pos, int64_t end, int64_t field, int64_t wire, int64_t depth)
{
    if (wire == WIRE_END_GROUP) {
        return -BAD_GROUP;
    }
    if (wire != WIRE_START_GROUP) {
        return skip_scalar(buf, pos, end, wire);
    }
    int64_t open_groups[DEPTH_LIMIT + 1];
    int count = 0;
    for (;;) {
        if (wire == WIRE_START_GROUP) {
            if (depth <= 0) {
                return -TOO_DEEP;
            }
            depth--;
            open_groups[count++] = field;
        } else if (wire == WIRE_END_GROUP) {
            if (field != open_groups[count - 1]) {
                return -BAD_GROUP;
            }
            depth++;
            if (--count == 0) {
                return pos;
            }
        } else {
            pos = skip_scalar(buf, pos, end, wire);
            if (pos < 0) {
                return pos;
            }
        }
        pos = read_tag(buf, pos, end, &field, &wire);
        if (pos < 0) {
            return pos;
        }
    }
}

#endif
