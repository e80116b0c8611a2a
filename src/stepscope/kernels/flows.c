/* The bulk reader's walks over stat columns, line for line as their Python:
   - ``_highest_flow_id``, ``_first_outs`` and ``_walk`` of
     stepscope/trace/formats/xspace/arrows.py (flow endpoints paired into arrows);
   - ``_scatter`` of stepscope/trace/formats/xspace/hot_ids.py (the hot id columns).

   The indexes the data supplies (a flow's slot, an endpoint's plane, a stat's event) are
   checked where they are used: one out of range stops the walk with ValueError. */

#include "kernels.h"

static inline int64_t
flow_id(uint64_t encoded)
{
    return (int64_t)((encoded >> 2) & (uint64_t)FLOW_ID_MASK);
}

/* highest_flow_id(encoded) -> the highest flow id (0 when none) */
PyObject *
highest_flow_id(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *encoded_object;
    if (!PyArg_ParseTuple(args, "O:highest_flow_id", &encoded_object)) {
        return NULL;
    }
    Arrays arrays = {.function = "highest_flow_id"};
    Array encoded;
    if (take(&arrays, encoded_object, "encoded", UINT64, 1, READ, &encoded) < 0) {
        return release(&arrays, NULL);
    }
    const uint64_t *values = encoded.data;
    int64_t high = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < encoded.rows; i++) {
        int64_t id = flow_id(values[i]);
        high = id > high ? id : high;
    }
    Py_END_ALLOW_THREADS
    return release(&arrays, PyLong_FromLongLong(high));
}

/* The slot of endpoint ``i``: ``slots[i]``, or its flow id when there are no slots. */
static inline int64_t
slot_of(const uint64_t *encoded, const int64_t *slots, int64_t slot_count, int64_t i)
{
    return slot_count ? slots[i] : flow_id(encoded[i]);
}

/* first_outs(encoded, slots, first) -> None */
PyObject *
first_outs(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[3];
    if (!PyArg_ParseTuple(args, "OOO:first_outs", &o[0], &o[1], &o[2])) {
        return NULL;
    }
    Arrays arrays = {.function = "first_outs"};
    Array encoded, slots, first;
    if (take(&arrays, o[0], "encoded", UINT64, 1, READ, &encoded) < 0 || take(&arrays, o[1], "slots", INT64, 1, READ, &slots) < 0 ||
        take(&arrays, o[2], "first", INT64, 1, WRITE, &first) < 0) {
        return release(&arrays, NULL);
    }
    if (slots.rows != 0 && slots.rows != encoded.rows) {
        return release(&arrays, argument_error(&arrays, "slots must be empty or have one entry per endpoint"));
    }
    const uint64_t *values = encoded.data;
    int64_t *firsts = first.data;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t i = 0; i < encoded.rows; i++) {
        if (values[i] & FLOW_OUT) {
            int64_t slot = slot_of(values, slots.data, slots.rows, i);
            if (slot < 0 || slot >= first.rows) {
                bad = 1;
                break;
            }
            if (firsts[slot] < 0) {
                firsts[slot] = i;
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        return release(&arrays, argument_error(&arrays, "a flow's slot is not in first"));
    }
    Py_INCREF(Py_None);
    return release(&arrays, Py_None);
}

typedef struct {
    const int32_t *parts;
    const int64_t *bounds, *rows, *slots, *first;
    const uint64_t *encoded;
    int64_t part_count, endpoints, slot_count, first_count;
    int64_t *flow_ids, *src_event, *dst_event;
    int32_t *src_plane, *dst_plane;
    int64_t room; /* -1: count only */
} Walk;

/* The part holding endpoint ``source`` (searchsorted(bounds, source, "right") - 1), or -1. */
static int64_t
part_of(const Walk *w, int64_t source)
{
    int64_t lo = 0, hi = w->part_count + 1;
    while (lo < hi) {
        int64_t middle = lo + (hi - lo) / 2;
        if (w->bounds[middle] <= source) {
            lo = middle + 1;
        } else {
            hi = middle;
        }
    }
    return lo - 1 < w->part_count ? lo - 1 : -1;
}

/* The arrows into the in-endpoints, counted (and written when there is room); -1 on bad input. */
static int64_t
walk(const Walk *w)
{
    int64_t at = 0, part = 0;
    for (int64_t i = 0; i < w->endpoints; i++) {
        while (part < w->part_count && i >= w->bounds[part + 1]) {
            part++;
        }
        if (part == w->part_count) {
            return -1;
        }
        if (!(w->encoded[i] & FLOW_IN)) {
            continue;
        }
        int64_t slot = slot_of(w->encoded, w->slots, w->slot_count, i);
        if (slot < 0 || slot >= w->first_count) {
            return -1;
        }
        int64_t source = w->first[slot];
        if (source < 0) {
            continue; /* no out-endpoint */
        }
        if (source >= w->endpoints) {
            return -1;
        }
        if (w->bounds[part] <= source && source < w->bounds[part + 1] && w->rows[source] == w->rows[i]) {
            continue; /* an event to itself */
        }
        if (w->room >= 0) {
            int64_t source_part = part_of(w, source);
            if (at >= w->room || source_part < 0) {
                return -1;
            }
            w->flow_ids[at] = flow_id(w->encoded[i]);
            w->src_plane[at] = w->parts[source_part];
            w->src_event[at] = w->rows[source];
            w->dst_plane[at] = w->parts[part];
            w->dst_event[at] = w->rows[i];
        }
        at++;
    }
    return at;
}

/* walk_arrows(parts, bounds, rows, encoded, slots, first, fill, flow_ids, src_plane,
               src_event, dst_plane, dst_event) -> count */
PyObject *
walk_arrows(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[11];
    int fill;
    if (!PyArg_ParseTuple(args, "OOOOOOpOOOOO:walk_arrows", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &fill, &o[6], &o[7], &o[8], &o[9], &o[10])) {
        return NULL;
    }
    Arrays arrays = {.function = "walk_arrows"};
    Array parts, bounds, rows, encoded, slots, first, out[5];
    static const char *const out_names[] = {"flow_ids", "src_plane", "src_event", "dst_plane", "dst_event"};
    if (take(&arrays, o[0], "parts", INT32, 1, READ, &parts) < 0 || take(&arrays, o[1], "bounds", INT64, 1, READ, &bounds) < 0 ||
        take(&arrays, o[2], "rows", INT64, 1, READ, &rows) < 0 || take(&arrays, o[3], "encoded", UINT64, 1, READ, &encoded) < 0 ||
        take(&arrays, o[4], "slots", INT64, 1, READ, &slots) < 0 || take(&arrays, o[5], "first", INT64, 1, READ, &first) < 0) {
        return release(&arrays, NULL);
    }
    for (int index = 0; index < 5; index++) {
        if (take(&arrays, o[6 + index], out_names[index], index % 2 ? INT32 : INT64, 1, fill ? WRITE : READ, &out[index]) < 0) {
            return release(&arrays, NULL);
        }
    }
    if (bounds.rows != parts.rows + 1 || rows.rows != encoded.rows || (slots.rows != 0 && slots.rows != encoded.rows)) {
        return release(&arrays, argument_error(&arrays, "bounds must have one entry more than parts, rows one per endpoint, slots none or one per endpoint"));
    }
    Walk w = {
        .parts = parts.data, .bounds = bounds.data, .rows = rows.data, .slots = slots.data, .first = first.data, .encoded = encoded.data,
        .part_count = parts.rows, .endpoints = encoded.rows, .slot_count = slots.rows, .first_count = first.rows,
        .flow_ids = out[0].data, .src_plane = out[1].data, .src_event = out[2].data, .dst_plane = out[3].data, .dst_event = out[4].data,
        .room = -1,
    };
    if (fill) {
        w.room = out[0].rows;
        for (int index = 1; index < 5; index++) {
            w.room = out[index].rows < w.room ? out[index].rows : w.room;
        }
    }
    int64_t count;
    Py_BEGIN_ALLOW_THREADS
    count = walk(&w);
    Py_END_ALLOW_THREADS
    if (count < 0) {
        return release(&arrays, argument_error(&arrays, "an endpoint is past the parts' bounds, a slot or a first endpoint is out of range, or the outputs are too short"));
    }
    return release(&arrays, PyLong_FromLongLong(count));
}

/* scatter_ids(event, key, kind, bits, code, int64, uint64, column) -> how many matched */
PyObject *
scatter_ids(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[5];
    long long code, int64_kind, uint64_kind;
    if (!PyArg_ParseTuple(args, "OOOOLLLO:scatter_ids", &o[0], &o[1], &o[2], &o[3], &code, &int64_kind, &uint64_kind, &o[4])) {
        return NULL;
    }
    Arrays arrays = {.function = "scatter_ids"};
    Array event, key, kind, bits, column;
    if (take(&arrays, o[0], "event", INT64, 1, READ, &event) < 0 || take(&arrays, o[1], "key", INT32, 1, READ, &key) < 0 ||
        take(&arrays, o[2], "kind", INT8, 1, READ, &kind) < 0 || take(&arrays, o[3], "bits", INT64, 1, READ, &bits) < 0 ||
        take(&arrays, o[4], "column", INT64, 1, WRITE, &column) < 0) {
        return release(&arrays, NULL);
    }
    if (key.rows != event.rows || kind.rows != event.rows || bits.rows != event.rows) {
        return release(&arrays, argument_error(&arrays, "the stat columns differ in length"));
    }
    const int64_t *events = event.data, *values = bits.data;
    const int32_t *keys = key.data;
    const int8_t *kinds = kind.data;
    int64_t *out = column.data;
    int64_t found = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int64_t index = 0; index < event.rows; index++) {
        if (keys[index] == code && (kinds[index] == int64_kind || (kinds[index] == uint64_kind && values[index] >= 0))) {
            if (events[index] < 0 || events[index] >= column.rows) {
                bad = 1;
                break;
            }
            out[events[index]] = values[index];
            found++;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        return release(&arrays, argument_error(&arrays, "a stat's event is not a row of column"));
    }
    return release(&arrays, PyLong_FromLongLong(found));
}
