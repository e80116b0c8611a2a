/* ``decode_lines`` of stepscope/trace/formats/xspace/wire.py (which says what it does and
   why it works in one pass with a state to resume from), line for line: every XEvent and
   XStat of a plane's lines into columns.

   Besides the file's bytes (below each message's end, see wire.h), what it reads and
   writes is bounded by the arguments' checks: the state's counts within the outputs'
   lengths, each line range within the file, the event and stat columns of one length
   each. An output is written at a count only after the count is compared with its room. */

#include <string.h>

#include "kernels.h"
#include "wire.h"

/* The outputs, as decode_lines takes them after (buf, line_start, line_end, state). */
enum {
    EVENT_METADATA, EVENT_OFFSET, EVENT_DURATION, EVENT_LINE, STAT_EVENT, STAT_METADATA, STAT_KIND, STAT_BITS,
    OUT_TEXT, OUT_TEXT_OFFSETS, OUT_HEADS, OUT_LINE_EVENTS, OUTPUTS
};

static const char *const OUTPUT_NAMES[OUTPUTS] = {
    "event_metadata", "event_offset", "event_duration", "event_line", "stat_event", "stat_metadata", "stat_kind", "stat_bits",
    "out_text", "out_text_offsets", "out_heads", "out_line_events",
};
static const ElementType OUTPUT_TYPES[OUTPUTS] = {INT64, INT64, INT64, INT32, INT64, INT64, INT8, INT64, UINT8, INT64, INT64, INT64};

typedef struct {
    const uint8_t *buf;
    const int64_t *line_start, *line_end;
    int64_t lines;
    int64_t *event_metadata, *event_offset, *event_duration;
    int32_t *event_line;
    int64_t *stat_event, *stat_metadata, *stat_bits;
    int8_t *stat_kind;
    uint8_t *out_text;
    int64_t *out_text_offsets, *out_heads, *out_line_events;
    int64_t event_room, stat_room, text_room, texts_room, head_room;
} Lines;

/* A varint inline (the hot loop's values), as wire.py's loops decode it. */
#define INLINE_VARINT(value, stop)                                                                                                   \
    do {                                                                                                                            \
        unsigned shift_ = 0;                                                                                                        \
        value = 0;                                                                                                                  \
        for (;;) {                                                                                                                  \
            if (pos >= (stop)) {                                                                                                    \
                error = TRUNCATED;                                                                                                  \
                break;                                                                                                              \
            }                                                                                                                       \
            uint8_t byte_ = buf[pos++];                                                                                             \
            value |= (uint64_t)(byte_ & 0x7F) << shift_;                                                                            \
            if (byte_ < 0x80) {                                                                                                     \
                break;                                                                                                              \
            }                                                                                                                       \
            shift_ += 7;                                                                                                            \
            if (shift_ == 70) {                                                                                                     \
                error = LONG_VARINT;                                                                                                \
                break;                                                                                                              \
            }                                                                                                                       \
        }                                                                                                                           \
    } while (0)

/* A field's tag at ``pos``: one byte inline, else read_tag (errors: goto failed). */
#define TAG(stop)                                                                                                                    \
    do {                                                                                                                            \
        at = pos;                                                                                                                   \
        uint8_t first_ = buf[pos];                                                                                                  \
        field = first_ >> 3;                                                                                                        \
        wire = first_ & 7;                                                                                                          \
        pos++;                                                                                                                      \
        if (first_ >= 0x80 || field == 0 || wire > WIRE_FIXED32) {                                                                  \
            pos = read_tag(buf, at, (stop), &field, &wire);                                                                         \
            if (pos < 0) {                                                                                                          \
                error = -pos;                                                                                                       \
                goto failed;                                                                                                        \
            }                                                                                                                       \
        }                                                                                                                           \
    } while (0)

/* A length-delimited value's length at ``pos``: one byte inline, else read_length. */
#define LENGTH(stop)                                                                                                                 \
    do {                                                                                                                            \
        length = pos < (stop) ? buf[pos] : 0x80;                                                                                    \
        if (length < 0x80) {                                                                                                        \
            pos++;                                                                                                                  \
            if (pos + length > (stop)) {                                                                                            \
                error = TRUNCATED;                                                                                                  \
                goto failed;                                                                                                        \
            }                                                                                                                       \
        } else {                                                                                                                    \
            pos = read_length(buf, pos, (stop), &length);                                                                           \
            if (pos < 0) {                                                                                                          \
                error = -pos;                                                                                                       \
                goto failed;                                                                                                        \
            }                                                                                                                       \
        }                                                                                                                           \
    } while (0)

/* Decodes from ``state`` on; returns (error, at) as wire.decode_lines does. */
static void
decode(const Lines *o, int64_t *state, int64_t *error_out, int64_t *at_out)
{
    const uint8_t *buf = o->buf;
    int64_t line = state[STATE_LINE];
    int64_t pos = state[STATE_POS];
    int64_t events = state[STATE_EVENTS];
    int64_t stats = state[STATE_STATS];
    int64_t text_size = state[STATE_TEXT_SIZE];
    int64_t texts = state[STATE_TEXTS];
    int64_t heads = state[STATE_HEADS];
    int64_t last_head_line = state[STATE_HEAD_LINE];
    int64_t last_head_end = state[STATE_HEAD_END];
    int64_t line_first_event = state[STATE_LINE_FIRST];
    int64_t error = 0, at = 0, room_for = -1, room_need = 0, resume = 0;
    int64_t field, wire, length;
    int64_t event_at = 0, event_stats = 0, event_text_size = 0, event_texts = 0;
    if (line == 0 && pos < 0) {
        o->out_text_offsets[0] = 0;
    }
    for (; line < o->lines; line++, pos = -1) {
        if (pos < 0) {
            pos = o->line_start[line];
            line_first_event = events;
        }
        const int64_t line_stop = o->line_end[line];
        while (pos < line_stop) {
            /* --- a field of the line */
            TAG(line_stop);
            if (field != 4 || wire != WIRE_LEN) {
                pos = skip(buf, pos, line_stop, field, wire, LINE_DEPTH);
                if (pos < 0) {
                    error = -pos;
                    goto failed;
                }
                if (last_head_line == line && last_head_end == at && heads > 0) {
                    o->out_heads[3 * (heads - 1) + 2] = pos;
                } else {
                    if (heads == o->head_room) {
                        room_for = ROOM_HEADS, room_need = heads + 1, resume = at;
                        goto full;
                    }
                    o->out_heads[3 * heads] = line;
                    o->out_heads[3 * heads + 1] = at;
                    o->out_heads[3 * heads + 2] = pos;
                    last_head_line = line;
                    heads++;
                }
                last_head_end = pos;
                continue;
            }
            if (events == o->event_room) {
                room_for = ROOM_EVENTS, room_need = events + 1, resume = at;
                goto full;
            }
            event_at = at;
            event_stats = stats;
            event_text_size = text_size;
            event_texts = texts;
            LENGTH(line_stop);
            /* --- an event */
            const int64_t event_stop = pos + length;
            int64_t metadata_id = 0, offset = 0, duration = 0;
            int data_case = 0; /* the member of the oneof `data` given last: 2 offset_ps, 5 num_occurrences */
            while (pos < event_stop) {
                TAG(event_stop);
                if (wire == WIRE_VARINT && (field == 1 || field == 2 || field == 3 || field == 5)) {
                    uint64_t value;
                    INLINE_VARINT(value, event_stop);
                    if (error) {
                        goto failed;
                    }
                    if (field == 1) {
                        metadata_id = (int64_t)value;
                    } else if (field == 2) {
                        offset = (int64_t)value;
                        data_case = 2;
                    } else if (field == 3) {
                        duration = (int64_t)value;
                    } else {
                        data_case = 5;
                    }
                    continue;
                }
                if (field != 4 || wire != WIRE_LEN) {
                    pos = skip(buf, pos, event_stop, field, wire, LINE_DEPTH - 1);
                    if (pos < 0) {
                        error = -pos;
                        goto failed;
                    }
                    continue;
                }
                LENGTH(event_stop);
                /* --- a stat of the event */
                const int64_t stat_stop = pos + length;
                int64_t stat_id = 0, bits = 0, text_start = 0, text_end = 0;
                int kind = KIND_NONE;
                while (pos < stat_stop) {
                    TAG(stat_stop);
                    if (wire == WIRE_VARINT && (field == 1 || field == 3 || field == 4 || field == 7)) {
                        uint64_t value;
                        INLINE_VARINT(value, stat_stop);
                        if (error) {
                            goto failed;
                        }
                        if (field == 1) {
                            stat_id = (int64_t)value;
                        } else {
                            bits = (int64_t)value;
                            kind = field == 3 ? KIND_UINT64 : (field == 4 ? KIND_INT64 : KIND_REF);
                        }
                    } else if (wire == WIRE_FIXED64 && field == 2) {
                        if (pos + 8 > stat_stop) {
                            error = TRUNCATED;
                            goto failed;
                        }
                        uint64_t value = 0;
                        for (int index = 0; index < 8; index++) {
                            value |= (uint64_t)buf[pos + index] << (8 * index);
                        }
                        bits = (int64_t)value;
                        pos += 8;
                        kind = KIND_DOUBLE;
                    } else if (wire == WIRE_LEN && (field == 5 || field == 6)) {
                        pos = read_length(buf, pos, stat_stop, &length);
                        if (pos < 0) {
                            error = -pos;
                            goto failed;
                        }
                        text_start = pos;
                        text_end = pos + length;
                        pos = text_end;
                        kind = field == 5 ? KIND_STR : KIND_BYTES;
                    } else {
                        pos = skip(buf, pos, stat_stop, field, wire, LINE_DEPTH - 2);
                        if (pos < 0) {
                            error = -pos;
                            goto failed;
                        }
                    }
                }
                if (stats == o->stat_room) {
                    room_for = ROOM_STATS, room_need = stats + 1;
                    goto event_full;
                }
                if (kind == KIND_STR || kind == KIND_BYTES) {
                    const int64_t size = text_end - text_start;
                    if (texts == o->texts_room) {
                        room_for = ROOM_TEXTS, room_need = texts + 2;
                        goto event_full;
                    }
                    if (text_size + size > o->text_room) {
                        room_for = ROOM_TEXT, room_need = text_size + size;
                        goto event_full;
                    }
                    memcpy(o->out_text + text_size, buf + text_start, (size_t)size);
                    o->out_text_offsets[texts + 1] = text_size + size;
                    bits = texts;
                    text_size += size;
                    texts++;
                }
                o->stat_event[stats] = events;
                o->stat_metadata[stats] = stat_id;
                o->stat_kind[stats] = (int8_t)kind;
                o->stat_bits[stats] = bits;
                stats++;
            }
            o->event_metadata[events] = metadata_id;
            o->event_offset[events] = data_case == 2 ? offset : 0;
            o->event_duration[events] = duration;
            o->event_line[events] = (int32_t)line;
            events++;
        }
        o->out_line_events[line] = events - line_first_event;
    }
    goto done;
event_full: /* the event again, from its start, once there is room */
    stats = event_stats;
    text_size = event_text_size;
    texts = event_texts;
    resume = event_at;
full:
    pos = resume;
    error = ROOM;
    state[STATE_ROOM_FOR] = room_for;
    state[STATE_ROOM_NEED] = room_need;
failed:
done:
    state[STATE_LINE] = line;
    state[STATE_POS] = pos;
    state[STATE_EVENTS] = events;
    state[STATE_STATS] = stats;
    state[STATE_TEXT_SIZE] = text_size;
    state[STATE_TEXTS] = texts;
    state[STATE_HEADS] = heads;
    state[STATE_HEAD_LINE] = last_head_line;
    state[STATE_HEAD_END] = last_head_end;
    state[STATE_LINE_FIRST] = line_first_event;
    *error_out = error;
    *at_out = at;
}

/* Whether ``state`` can be resumed from with these outputs: counts within their rooms,
   the line and position within the lines given. */
static int
valid_state(const Lines *o, const int64_t *state)
{
    int64_t line = state[STATE_LINE], pos = state[STATE_POS], events = state[STATE_EVENTS];
    if (!(0 <= line && line <= o->lines)) {
        return 0;
    }
    if (pos >= 0 && !(line < o->lines && o->line_start[line] <= pos && pos <= o->line_end[line])) {
        return 0;
    }
    return 0 <= events && events <= o->event_room && 0 <= state[STATE_STATS] && state[STATE_STATS] <= o->stat_room && 0 <= state[STATE_TEXT_SIZE] &&
           state[STATE_TEXT_SIZE] <= o->text_room && 0 <= state[STATE_TEXTS] && state[STATE_TEXTS] <= o->texts_room && 0 <= state[STATE_HEADS] &&
           state[STATE_HEADS] <= o->head_room && 0 <= state[STATE_LINE_FIRST] && state[STATE_LINE_FIRST] <= events;
}

/* decode_lines(buf, line_start, line_end, state, <the 12 outputs>) -> (error, at) */
PyObject *
decode_lines(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objects[4 + OUTPUTS];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOO:decode_lines", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4], &objects[5],
                          &objects[6], &objects[7], &objects[8], &objects[9], &objects[10], &objects[11], &objects[12], &objects[13], &objects[14],
                          &objects[15])) {
        return NULL;
    }
    Arrays arrays = {.function = "decode_lines"};
    Array buf, line_start, line_end, state, out[OUTPUTS];
    if (take(&arrays, objects[0], "buf", UINT8, 1, READ, &buf) < 0 || take(&arrays, objects[1], "line_start", INT64, 1, READ, &line_start) < 0 ||
        take(&arrays, objects[2], "line_end", INT64, 1, READ, &line_end) < 0 || take(&arrays, objects[3], "state", INT64, 1, WRITE, &state) < 0) {
        return release(&arrays, NULL);
    }
    for (int index = 0; index < OUTPUTS; index++) {
        if (take(&arrays, objects[4 + index], OUTPUT_NAMES[index], OUTPUT_TYPES[index], index == OUT_HEADS ? 2 : 1, WRITE, &out[index]) < 0) {
            return release(&arrays, NULL);
        }
    }
    Lines o = {
        .buf = buf.data, .line_start = line_start.data, .line_end = line_end.data, .lines = line_start.rows,
        .event_metadata = out[EVENT_METADATA].data, .event_offset = out[EVENT_OFFSET].data, .event_duration = out[EVENT_DURATION].data,
        .event_line = out[EVENT_LINE].data, .stat_event = out[STAT_EVENT].data, .stat_metadata = out[STAT_METADATA].data,
        .stat_kind = out[STAT_KIND].data, .stat_bits = out[STAT_BITS].data, .out_text = out[OUT_TEXT].data,
        .out_text_offsets = out[OUT_TEXT_OFFSETS].data, .out_heads = out[OUT_HEADS].data, .out_line_events = out[OUT_LINE_EVENTS].data,
        .event_room = out[EVENT_OFFSET].rows, .stat_room = out[STAT_EVENT].rows, .text_room = out[OUT_TEXT].rows,
        .texts_room = out[OUT_TEXT_OFFSETS].rows - 1, .head_room = out[OUT_HEADS].rows,
    };
    if (line_end.rows != o.lines) {
        return release(&arrays, argument_error(&arrays, "line_start and line_end differ in length"));
    }
    for (int64_t line = 0; line < o.lines; line++) {
        if (!(0 <= o.line_start[line] && o.line_start[line] <= o.line_end[line] && o.line_end[line] <= buf.rows)) {
            return release(&arrays, argument_error(&arrays, "a line's range is not within buf"));
        }
    }
    for (int index = EVENT_METADATA; index <= EVENT_LINE; index++) {
        if (out[index].rows != o.event_room) {
            return release(&arrays, argument_error(&arrays, "the event columns differ in length"));
        }
    }
    for (int index = STAT_EVENT; index <= STAT_BITS; index++) {
        if (out[index].rows != o.stat_room) {
            return release(&arrays, argument_error(&arrays, "the stat columns differ in length"));
        }
    }
    if (o.texts_room < 0 || out[OUT_HEADS].columns != 3 || out[OUT_LINE_EVENTS].rows < o.lines) {
        return release(&arrays, argument_error(&arrays, "out_text_offsets is empty, out_heads has not 3 columns or out_line_events is shorter than the lines"));
    }
    if (state.rows < STATE_SIZE || !valid_state(&o, state.data)) {
        return release(&arrays, argument_error(&arrays, "state does not fit the lines and outputs given"));
    }
    int64_t error, at;
    Py_BEGIN_ALLOW_THREADS
    decode(&o, state.data, &error, &at);
    Py_END_ALLOW_THREADS
    return release(&arrays, Py_BuildValue("(LL)", (long long)error, (long long)at));
}
