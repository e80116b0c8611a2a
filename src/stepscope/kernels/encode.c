/* ``_sizes`` and ``_fill`` of stepscope/trace/formats/xspace/encode.py
   (which says what they write), line for line: a plane's XEvents as protobuf wire bytes.

   A stat's text is read from ``text_offsets`` and ``text_blob`` only after its number and
   range are checked; the buffer is written only where its room allows, so sizes that do
   not match the events raise instead of writing past the end. */

#include <string.h>

#include "kernels.h"

/* Wire tags: XLine.events / XEvent.stats (field 4, length-delimited), fields 1-3 (varint),
   XStat's values. */
enum { TAG_SUB = 0x22, TAG_1 = 0x08, TAG_2 = 0x10, TAG_3 = 0x18, TAG_DOUBLE = 0x11, TAG_UINT64 = 0x18, TAG_INT64 = 0x20, TAG_STR = 0x2A, TAG_BYTES = 0x32, TAG_REF = 0x38 };

/* A varint's size: an int64 below 0 is its 64-bit two's complement (10 bytes). */
static inline int64_t
varint_size(int64_t value)
{
    uint64_t bits = (uint64_t)value;
    int64_t size = 1;
    while (bits >= 128) {
        bits >>= 7;
        size++;
    }
    return size;
}

typedef struct {
    const int64_t *metadata, *offset, *duration, *entry_row, *entry_id, *entry_bits, *text_offsets;
    const int8_t *entry_kind;
    int64_t events, entries, texts;
} Events;

/* The columns both passes take, checked: events and entries of one length each. */
static int
take_events(Arrays *arrays, PyObject **objects, int text_offsets_at, Events *e)
{
    static const char *const names[] = {"metadata", "offset", "duration", "entry_row", "entry_id", "entry_kind", "entry_bits"};
    Array columns[7], text_offsets;
    for (int index = 0; index < 7; index++) {
        if (take(arrays, objects[index], names[index], index == 5 ? INT8 : INT64, 1, READ, &columns[index]) < 0) {
            return -1;
        }
    }
    if (take(arrays, objects[text_offsets_at], "text_offsets", INT64, 1, READ, &text_offsets) < 0) {
        return -1;
    }
    *e = (Events){
        .metadata = columns[0].data, .offset = columns[1].data, .duration = columns[2].data, .entry_row = columns[3].data,
        .entry_id = columns[4].data, .entry_kind = columns[5].data, .entry_bits = columns[6].data, .text_offsets = text_offsets.data,
        .events = columns[0].rows, .entries = columns[3].rows, .texts = text_offsets.rows - 1,
    };
    if (columns[1].rows != e->events || columns[2].rows != e->events || columns[4].rows != e->entries || columns[5].rows != e->entries ||
        columns[6].rows != e->entries) {
        argument_error(arrays, "the event columns, or the entry columns, differ in length");
        return -1;
    }
    return 0;
}

/* Whether text ``number`` exists and its range ascends (a string or bytes stat's value). */
static inline int
text_ok(const Events *e, int64_t number)
{
    return 0 <= number && number < e->texts && e->text_offsets[number] <= e->text_offsets[number + 1];
}

/* encode_sizes(metadata, offset, duration, entry_row, entry_id, entry_kind, entry_bits,
                text_offsets, event_size, stat_size) -> total */
PyObject *
encode_sizes(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[10];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO:encode_sizes", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9])) {
        return NULL;
    }
    Arrays arrays = {.function = "encode_sizes"};
    Events e;
    Array event_size_array, stat_size_array;
    if (take_events(&arrays, o, 7, &e) < 0 || take(&arrays, o[8], "event_size", INT64, 1, WRITE, &event_size_array) < 0 ||
        take(&arrays, o[9], "stat_size", INT64, 1, WRITE, &stat_size_array) < 0) {
        return release(&arrays, NULL);
    }
    if (event_size_array.rows != e.events || stat_size_array.rows != e.entries) {
        return release(&arrays, argument_error(&arrays, "event_size and stat_size must have one entry per event and per stat"));
    }
    int64_t *event_size = event_size_array.data, *stat_size = stat_size_array.data;
    int64_t total = 0, entry = 0;
    int bad_text = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t event = 0; event < e.events && !bad_text; event++) {
        int64_t size = 2 + varint_size(e.metadata[event]) + varint_size(e.offset[event]);
        if (e.duration[event] != 0) {
            size += 1 + varint_size(e.duration[event]);
        }
        for (; entry < e.entries && e.entry_row[entry] == event; entry++) {
            int kind = e.entry_kind[entry];
            int64_t stat = 2 + varint_size(e.entry_id[entry]);
            if (kind == KIND_DOUBLE) {
                stat += 8;
            } else if (kind == KIND_STR || kind == KIND_BYTES) {
                int64_t number = e.entry_bits[entry];
                if (!text_ok(&e, number)) {
                    bad_text = 1;
                    break;
                }
                int64_t length = wrapping_sub(e.text_offsets[number + 1], e.text_offsets[number]);
                stat = wrapping_add(stat, wrapping_add(varint_size(length), length));
            } else {
                stat += varint_size(e.entry_bits[entry]);
            }
            stat_size[entry] = stat;
            size = wrapping_add(size, wrapping_add(1 + varint_size(stat), stat));
        }
        event_size[event] = size;
        total = wrapping_add(total, wrapping_add(1 + varint_size(size), size));
    }
    Py_END_ALLOW_THREADS
    if (bad_text) {
        return release(&arrays, argument_error(&arrays, "a text stat's number is not in text_offsets, or its offsets descend"));
    }
    return release(&arrays, PyLong_FromLongLong(total));
}

/* Appends ``value`` as a varint at ``at`` if ``room`` allows; the position after it, or -1. */
static inline int64_t
put_varint(uint8_t *buffer, int64_t room, int64_t at, int64_t value)
{
    uint64_t bits = (uint64_t)value;
    if (at < 0 || room - at < varint_size(value)) {
        return -1;
    }
    while (bits >= 128) {
        buffer[at++] = (uint8_t)((bits & 0x7F) | 0x80);
        bits >>= 7;
    }
    buffer[at++] = (uint8_t)bits;
    return at;
}

/* Appends one byte (a tag) then a varint; the position after them, or -1. */
static inline int64_t
put_tagged(uint8_t *buffer, int64_t room, int64_t at, uint8_t tag, int64_t value)
{
    if (at < 0 || at >= room) {
        return -1;
    }
    buffer[at] = tag;
    return put_varint(buffer, room, at + 1, value);
}

/* Writes the events' entries; the position after the last, or -1 (no room, or a bad text). */
static int64_t
fill(const Events *e, const uint8_t *text_blob, int64_t blob_size, const int64_t *event_size, const int64_t *stat_size, uint8_t *buffer, int64_t room,
     int64_t *event_end)
{
    int64_t at = 0, entry = 0;
    for (int64_t event = 0; event < e->events; event++) {
        at = put_tagged(buffer, room, at, TAG_SUB, event_size[event]);
        at = put_tagged(buffer, room, at, TAG_1, e->metadata[event]);
        at = put_tagged(buffer, room, at, TAG_2, e->offset[event]);
        if (e->duration[event] != 0) {
            at = put_tagged(buffer, room, at, TAG_3, e->duration[event]);
        }
        for (; entry < e->entries && e->entry_row[entry] == event; entry++) {
            at = put_tagged(buffer, room, at, TAG_SUB, stat_size[entry]);
            at = put_tagged(buffer, room, at, TAG_1, e->entry_id[entry]);
            int kind = e->entry_kind[entry];
            int64_t bits = e->entry_bits[entry];
            if (kind == KIND_INT64) {
                at = put_tagged(buffer, room, at, TAG_INT64, bits);
            } else if (kind == KIND_UINT64) {
                at = put_tagged(buffer, room, at, TAG_UINT64, bits);
            } else if (kind == KIND_REF) { /* ref_value: the id of the stat metadata naming the string */
                at = put_tagged(buffer, room, at, TAG_REF, bits);
            } else if (kind == KIND_DOUBLE) { /* little-endian */
                if (at < 0 || room - at < 9) {
                    return -1;
                }
                buffer[at++] = TAG_DOUBLE;
                for (int byte = 0; byte < 8; byte++) {
                    buffer[at++] = (uint8_t)(((uint64_t)bits >> (8 * byte)) & 0xFF);
                }
            } else {
                if (!text_ok(e, bits)) {
                    return -1;
                }
                int64_t start = e->text_offsets[bits];
                int64_t length = wrapping_sub(e->text_offsets[bits + 1], start); /* (below 0 if past int64: refused below) */
                at = put_tagged(buffer, room, at, kind == KIND_STR ? TAG_STR : TAG_BYTES, length);
                if (at < 0 || start < 0 || start > blob_size || length < 0 || length > blob_size - start || length > room - at) {
                    return -1;
                }
                memcpy(buffer + at, text_blob + start, (size_t)length);
                at += length;
            }
        }
        if (at < 0) {
            return -1;
        }
        event_end[event] = at;
    }
    return at;
}

/* encode_fill(metadata, offset, duration, entry_row, entry_id, entry_kind, entry_bits,
               text_blob, text_offsets, event_size, stat_size, buffer, event_end) -> end */
PyObject *
encode_fill(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[13];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOO:encode_fill", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11],
                          &o[12])) {
        return NULL;
    }
    Arrays arrays = {.function = "encode_fill"};
    Events e;
    Array blob, event_size, stat_size, buffer, event_end;
    if (take_events(&arrays, o, 8, &e) < 0 || take(&arrays, o[7], "text_blob", UINT8, 1, READ, &blob) < 0 ||
        take(&arrays, o[9], "event_size", INT64, 1, READ, &event_size) < 0 || take(&arrays, o[10], "stat_size", INT64, 1, READ, &stat_size) < 0 ||
        take(&arrays, o[11], "buffer", UINT8, 1, WRITE, &buffer) < 0 || take(&arrays, o[12], "event_end", INT64, 1, WRITE, &event_end) < 0) {
        return release(&arrays, NULL);
    }
    if (event_size.rows != e.events || event_end.rows != e.events || stat_size.rows != e.entries) {
        return release(&arrays, argument_error(&arrays, "event_size, event_end and stat_size must have one entry per event and per stat"));
    }
    int64_t at;
    Py_BEGIN_ALLOW_THREADS
    at = fill(&e, blob.data, blob.rows, event_size.data, stat_size.data, buffer.data, buffer.rows, event_end.data);
    Py_END_ALLOW_THREADS
    if (at < 0) {
        return release(&arrays, argument_error(&arrays, "the buffer is too small for the events (sizes from other columns?), or a text is not in text_blob"));
    }
    return release(&arrays, PyLong_FromLongLong(at));
}
