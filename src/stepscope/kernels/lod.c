/* ``lod_lanes`` of stepscope/viewer/lod_loop.py (which says what it answers and why it
   gallops), line for line: the trace viewer's level of detail over the lanes of a query.

   Every lane's slice ``first:stop`` is checked against the event columns and every lane
   against ``lane_shift`` before the loop; in it, an answer's row is written only below its
   column's length, and a position's index row and name are read only when in range (else
   the query stops with ValueError). */

#include "kernels.h"

/* The output columns, as lod_lanes takes them in its ``out`` sequence. */
enum { EVENT_START, EVENT_DURATION, EVENT_ID, EVENT_NAME, RUN_START, RUN_END, RUN_COUNT, RUN_BUSY, LANE_COUNTS, OUTPUTS };

static const char *const OUTPUT_NAMES[OUTPUTS] = {"out[0] (event start)", "out[1] (event duration)", "out[2] (event id)", "out[3] (event name)",
                                                  "out[4] (run start)", "out[5] (run end)", "out[6] (run count)", "out[7] (run busy)",
                                                  "out[8] (lane counts)"};
static const ElementType OUTPUT_TYPES[OUTPUTS] = {FLOAT64, FLOAT64, INT32, INT32, FLOAT32, FLOAT32, UINT32, FLOAT32, INT64};

typedef struct {
    const int64_t *key, *duration, *busy_before, *lane_shift, *ids, *lanes, *first, *stop, *edges;
    const int32_t *name_id;
    int64_t events, ids_count, names, lane_count, width, min_event;
    double *event_start, *event_duration;
    int32_t *event_id, *event_name;
    float *run_start, *run_end, *run_busy;
    uint32_t *run_count;
    int64_t *lane_counts;
    int64_t event_room, run_room;
} Query;

/* The first position in lo:stop whose start (key - shift) is at least target (stop if none). */
static inline int64_t
first_at_or_after(const int64_t *key, int64_t shift, int64_t target, int64_t lo, int64_t stop)
{
    if (lo >= stop || wrapping_sub(key[lo], shift) >= target) {
        return lo;
    }
    int64_t below = lo, step = 1; /* below: a position starting before target */
    int64_t above = below + step;
    while (above < stop && wrapping_sub(key[above], shift) < target) {
        below = above;
        step *= 2;
        above = below + step;
    }
    above = above < stop ? above : stop;
    while (above - below > 1) {
        int64_t middle = (below + above) >> 1;
        if (wrapping_sub(key[middle], shift) < target) {
            below = middle;
        } else {
            above = middle;
        }
    }
    return above;
}

/* The last pixel j with edges[j] <= time, given that lowest is one (guessed, then moved). */
static inline int64_t
pixel_of(const int64_t *edges, int64_t width, int64_t time, int64_t lowest, double scale)
{
    const int64_t last = width - 1;
    const double guess = (double)wrapping_sub(time, edges[0]) * scale;
    int64_t pixel = guess >= 9.2e18 ? INT64_MAX : (guess <= -9.2e18 ? INT64_MIN : (int64_t)guess); /* int() of it, clamped */
    pixel = pixel < lowest ? lowest : pixel;
    pixel = pixel > last ? last : pixel;
    while (pixel > lowest && edges[pixel] > time) {
        pixel--;
    }
    while (pixel < last && edges[pixel + 1] <= time) {
        pixel++;
    }
    return pixel;
}

/* Writes event k of the answer (-1: no room, or a position without an index row or name). */
static inline int
put_event(const Query *q, int64_t k, int64_t position, int64_t start, int64_t duration)
{
    if (k >= q->event_room || (q->ids_count && position >= q->ids_count)) {
        return -1;
    }
    int64_t row = q->ids_count ? q->ids[position] : position;
    if (row < 0 || row >= q->names) {
        return -1;
    }
    q->event_start[k] = (double)start;
    q->event_duration[k] = (double)duration;
    q->event_id[k] = (int32_t)row;
    q->event_name[k] = q->name_id[row];
    return 0;
}

/* Writes run k: begin and end relative to the window, busy ps (-1: no room). */
static inline int
put_run(const Query *q, int64_t k, int64_t begin, int64_t end, int64_t count, int64_t busy)
{
    if (k >= q->run_room) {
        return -1;
    }
    q->run_start[k] = (float)begin;
    q->run_end[k] = (float)end;
    q->run_count[k] = (uint32_t)count;
    q->run_busy[k] = end > begin ? (float)((double)busy / (double)wrapping_sub(end, begin)) : 0.0f;
    return 0;
}

#define OR_FAIL(call)                                                                                                                \
    do {                                                                                                                            \
        if ((call) < 0) {                                                                                                           \
            return -1;                                                                                                              \
        }                                                                                                                           \
    } while (0)

/* Sparse: every event; narrow ones merge while they share a pixel. Counts in ``written``
   (events, runs: kept in locals here, which the compiler keeps in registers). */
static int
sparse_lane(const Query *q, int64_t lo, int64_t hi, int64_t shift, double scale, int64_t written[2])
{
    const int64_t *key = q->key, *duration = q->duration, *edges = q->edges;
    const int64_t origin = edges[0], width = q->width, min_event = q->min_event;
    int64_t events = written[0], runs = written[1];
    int64_t pixel = 0, run_pixel = -1, first_start = 0, last_end = 0, merged = 0, busy = 0;
    for (int64_t p = lo; p < hi; p++) {
        const int64_t s = wrapping_sub(key[p], shift), d = duration[p];
        if (d >= min_event) {
            OR_FAIL(put_event(q, events++, p, wrapping_sub(s, origin), d));
            continue;
        }
        if (pixel < width - 1 && edges[pixel + 1] <= s) {
            pixel = pixel_of(edges, width, s, pixel + 1, scale);
        }
        if (pixel == run_pixel) {
            merged++;
            busy = wrapping_add(busy, d);
            last_end = wrapping_add(s, d); /* ends ascend in a lane: the latest is the last */
            continue;
        }
        if (merged) {
            OR_FAIL(put_run(q, runs++, wrapping_sub(first_start, origin), wrapping_sub(last_end, origin), merged, busy));
        }
        run_pixel = pixel, first_start = s, last_end = wrapping_add(s, d), merged = 1, busy = d;
    }
    if (merged) {
        OR_FAIL(put_run(q, runs++, wrapping_sub(first_start, origin), wrapping_sub(last_end, origin), merged, busy));
    }
    written[0] = events, written[1] = runs;
    return 0;
}

/* Dense: pixel j holds positions a:b between its edges' searches; its first event (a) and
   its last (b - 1) are the only ones that can be wide. */
static int
dense_lane(const Query *q, int64_t lo, int64_t hi, int64_t shift, int64_t written[2])
{
    const int64_t *key = q->key, *duration = q->duration, *busy_before = q->busy_before, *edges = q->edges;
    const int64_t origin = edges[0], width = q->width, min_event = q->min_event;
    int64_t events = written[0], runs = written[1];
    int64_t a = lo;
    for (int64_t j = 0; j < width; j++) {
        const int64_t b = j == width - 1 ? hi : first_at_or_after(key, shift, edges[j + 1], a, hi);
        const int64_t n = b - a;
        if (n > 0) {
            const int64_t head_start = wrapping_sub(key[a], shift), head_duration = duration[a];
            const int64_t tail_start = wrapping_sub(key[b - 1], shift), tail_duration = duration[b - 1];
            const int head_wide = head_duration >= min_event;
            const int tail_wide = n > 1 && tail_duration >= min_event;
            int64_t busy = wrapping_sub(busy_before[b], busy_before[a]);
            int64_t merged = n;
            if (head_wide) {
                OR_FAIL(put_event(q, events++, a, wrapping_sub(head_start, origin), head_duration));
                merged--;
                busy = wrapping_sub(busy, head_duration);
            }
            if (tail_wide) {
                OR_FAIL(put_event(q, events++, b - 1, wrapping_sub(tail_start, origin), tail_duration));
                merged--;
                busy = wrapping_sub(busy, tail_duration);
            }
            if (merged > 0) {
                /* Ends ascend within a lane: the last narrow event ends last. */
                const int64_t begin = head_wide ? wrapping_sub(key[a + 1], shift) : head_start;
                const int64_t end = tail_wide ? wrapping_add(wrapping_sub(key[b - 2], shift), duration[b - 2]) : wrapping_add(tail_start, tail_duration);
                OR_FAIL(put_run(q, runs++, wrapping_sub(begin, origin), wrapping_sub(end, origin), merged, busy));
            }
        }
        a = b;
    }
    written[0] = events, written[1] = runs;
    return 0;
}

/* Answers the lanes in order; (events, runs) written, or -1 in *events on bad input. */
static void
answer(const Query *q, int64_t *events_out, int64_t *runs_out)
{
    const int64_t span = wrapping_sub(q->edges[q->width], q->edges[0]);
    const double scale = (double)q->width / (double)(span > 1 ? span : 1);
    int64_t written[2] = {0, 0}; /* events, runs */
    for (int64_t k = 0; k < q->lane_count; k++) {
        const int64_t shift = q->lane_shift[q->lanes[k]], lo = q->first[k], hi = q->stop[k];
        const int64_t events_before = written[0], runs_before = written[1];
        int failed = hi - lo <= q->width ? sparse_lane(q, lo, hi, shift, scale, written) : dense_lane(q, lo, hi, shift, written);
        if (failed) {
            *events_out = -1;
            return;
        }
        q->lane_counts[k] = written[0] - events_before;
        q->lane_counts[q->lane_count + k] = written[1] - runs_before;
    }
    *events_out = written[0];
    *runs_out = written[1];
}

/* Checks the lanes' slices against the columns and the lanes against lane_shift. */
static const char *
check_lanes(const Query *q, int64_t busy_count, int64_t shift_count)
{
    if (busy_count < q->events + 1) {
        return "busy_before must have one entry more than key";
    }
    for (int64_t k = 0; k < q->lane_count; k++) {
        if (!(0 <= q->first[k] && q->first[k] <= q->stop[k] && q->stop[k] <= q->events)) {
            return "a lane's first:stop is not a slice of key";
        }
        if (!(0 <= q->lanes[k] && q->lanes[k] < shift_count)) {
            return "a lane is not in lane_shift";
        }
    }
    return NULL;
}

/* lod_lanes(key, duration, busy_before, lane_shift, ids, name_id, lanes, first, stop,
             edges, min_event, out) -> (events, runs) */
PyObject *
lod_lanes(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[10], *out_object;
    long long min_event;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOLO:lod_lanes", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &min_event, &out_object)) {
        return NULL;
    }
    static const char *const names[] = {"key", "duration", "busy_before", "lane_shift", "ids", "name_id", "lanes", "first", "stop", "edges"};
    Arrays arrays = {.function = "lod_lanes"};
    Array in[10], out[OUTPUTS];
    for (int index = 0; index < 10; index++) {
        if (take(&arrays, o[index], names[index], index == 5 ? INT32 : INT64, 1, READ, &in[index]) < 0) {
            return release(&arrays, NULL);
        }
    }
    if (!PySequence_Check(out_object) || PySequence_Size(out_object) != OUTPUTS) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "lod_lanes: argument 'out' must be a sequence of %d arrays", OUTPUTS);
        return release(&arrays, NULL);
    }
    for (int index = 0; index < OUTPUTS; index++) {
        PyObject *item = PySequence_GetItem(out_object, index);
        if (item == NULL) {
            return release(&arrays, NULL);
        }
        int taken = take(&arrays, item, OUTPUT_NAMES[index], OUTPUT_TYPES[index], index == LANE_COUNTS ? 2 : 1, WRITE, &out[index]);
        Py_DECREF(item); /* (the buffer taken keeps the array alive) */
        if (taken < 0) {
            return release(&arrays, NULL);
        }
    }
    Query q = {
        .key = in[0].data, .duration = in[1].data, .busy_before = in[2].data, .lane_shift = in[3].data, .ids = in[4].data, .name_id = in[5].data,
        .lanes = in[6].data, .first = in[7].data, .stop = in[8].data, .edges = in[9].data,
        .events = in[0].rows, .ids_count = in[4].rows, .names = in[5].rows, .lane_count = in[6].rows, .width = in[9].rows - 1, .min_event = min_event,
        .event_start = out[EVENT_START].data, .event_duration = out[EVENT_DURATION].data, .event_id = out[EVENT_ID].data, .event_name = out[EVENT_NAME].data,
        .run_start = out[RUN_START].data, .run_end = out[RUN_END].data, .run_count = out[RUN_COUNT].data, .run_busy = out[RUN_BUSY].data,
        .lane_counts = out[LANE_COUNTS].data,
    };
    q.event_room = out[EVENT_START].rows;
    for (int index = EVENT_DURATION; index <= EVENT_NAME; index++) {
        q.event_room = out[index].rows < q.event_room ? out[index].rows : q.event_room;
    }
    q.run_room = out[RUN_START].rows;
    for (int index = RUN_END; index <= RUN_BUSY; index++) {
        q.run_room = out[index].rows < q.run_room ? out[index].rows : q.run_room;
    }
    const char *problem = NULL;
    if (in[1].rows != q.events || in[7].rows != q.lane_count || in[8].rows != q.lane_count) {
        problem = "duration must have one entry per key, first and stop one per lane";
    } else if (q.width < 1) {
        problem = "edges must have at least 2 entries (1 pixel)";
    } else if (out[LANE_COUNTS].rows != 2 || out[LANE_COUNTS].columns != q.lane_count) {
        problem = "out[8] (lane counts) must have 2 rows and one column per lane";
    } else {
        problem = check_lanes(&q, in[2].rows, in[3].rows);
    }
    if (problem != NULL) {
        return release(&arrays, argument_error(&arrays, problem));
    }
    int64_t events, runs = 0;
    Py_BEGIN_ALLOW_THREADS
    answer(&q, &events, &runs);
    Py_END_ALLOW_THREADS
    if (events < 0) {
        return release(&arrays, argument_error(&arrays, "out is too short for the answer, or a position has no index row or name"));
    }
    return release(&arrays, Py_BuildValue("(LL)", (long long)events, (long long)runs));
}
