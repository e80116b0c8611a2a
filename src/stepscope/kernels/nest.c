/* ``_nest`` of stepscope/trace/presorted.py (which says how it nests), line for line:
   depth and parent of events sorted by (line, start, longest first).

   The heap and the stack hold at most one line's events, sized by the longest line; a
   parent is always an earlier row of the same line, so every index read is one this
   walk wrote. Ends are computed with wrapping arithmetic, as numpy does. */

#include <stdlib.h>

#include "kernels.h"

/* Whether end point (a_end, a_flag) comes before (b_end, b_flag). */
static inline int
before(int64_t a_end, int8_t a_flag, int64_t b_end, int8_t b_flag)
{
    return a_end < b_end || (a_end == b_end && a_flag < b_flag);
}

static void
walk(const int32_t *line, const int64_t *start, const int64_t *duration, int32_t *depth, int64_t *parent, int64_t count, int64_t *heap_end,
     int8_t *heap_flag, int64_t *latest)
{
    int64_t size = 0;
    for (int64_t row = 0; row < count; row++) {
        if (row > 0 && line[row] != line[row - 1]) {
            size = 0;
        }
        const int64_t time = start[row];
        while (size > 0 && (heap_end[0] < time || (heap_end[0] == time && heap_flag[0] == 0))) {
            size--; /* pop: move the last leaf to the root and sift it down */
            const int64_t end = heap_end[size];
            const int8_t flag = heap_flag[size];
            int64_t at = 0;
            for (;;) {
                int64_t child = 2 * at + 1;
                if (child >= size) {
                    break;
                }
                if (child + 1 < size && before(heap_end[child + 1], heap_flag[child + 1], heap_end[child], heap_flag[child])) {
                    child++;
                }
                if (!before(heap_end[child], heap_flag[child], end, flag)) {
                    break;
                }
                heap_end[at] = heap_end[child];
                heap_flag[at] = heap_flag[child];
                at = child;
            }
            heap_end[at] = end;
            heap_flag[at] = flag;
        }
        depth[row] = (int32_t)size;
        parent[row] = size > 0 ? latest[size - 1] : -1;
        latest[size] = row;
        const int64_t end = wrapping_add(time, duration[row]);
        const int8_t flag = duration[row] > 0 ? 0 : 1;
        int64_t at = size++; /* push: sift the new leaf up */
        while (at > 0) {
            int64_t up = (at - 1) / 2;
            if (!before(end, flag, heap_end[up], heap_flag[up])) {
                break;
            }
            heap_end[at] = heap_end[up];
            heap_flag[at] = heap_flag[up];
            at = up;
        }
        heap_end[at] = end;
        heap_flag[at] = flag;
    }
}

/* Lines where an event ends after its parent: the exact stack walk. */
static void
rewalk_broken_lines(const int32_t *line, const int64_t *start, const int64_t *duration, int32_t *depth, int64_t *parent, int64_t count, int64_t *stack)
{
    int64_t row = 0;
    while (row < count) {
        const int64_t first = row;
        int broken = 0;
        for (; row < count && line[row] == line[first]; row++) {
            int64_t up = parent[row];
            if (up >= 0 && wrapping_add(start[up], duration[up]) < wrapping_add(start[row], duration[row])) {
                broken = 1;
            }
        }
        if (!broken) {
            continue;
        }
        int64_t size = 0;
        for (int64_t event = first; event < row; event++) {
            const int64_t event_start = start[event];
            const int64_t event_end = wrapping_add(event_start, duration[event]);
            while (size > 0) {
                const int64_t top = stack[size - 1];
                const int64_t top_end = wrapping_add(start[top], duration[top]);
                if (top_end <= event_start && !(top_end == event_start && start[top] == event_start)) {
                    size--;
                } else {
                    break;
                }
            }
            while (size > 0 && wrapping_add(start[stack[size - 1]], duration[stack[size - 1]]) < event_end) {
                size--;
            }
            depth[event] = (int32_t)size;
            parent[event] = size > 0 ? stack[size - 1] : -1;
            stack[size++] = event;
        }
    }
}

/* nest(line, start, duration, depth, parent) -> None */
PyObject *
nest(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[5];
    if (!PyArg_ParseTuple(args, "OOOOO:nest", &o[0], &o[1], &o[2], &o[3], &o[4])) {
        return NULL;
    }
    Arrays arrays = {.function = "nest"};
    Array line, start, duration, depth, parent;
    if (take(&arrays, o[0], "line", INT32, 1, READ, &line) < 0 || take(&arrays, o[1], "start", INT64, 1, READ, &start) < 0 ||
        take(&arrays, o[2], "duration", INT64, 1, READ, &duration) < 0 || take(&arrays, o[3], "depth", INT32, 1, WRITE, &depth) < 0 ||
        take(&arrays, o[4], "parent", INT64, 1, WRITE, &parent) < 0) {
        return release(&arrays, NULL);
    }
    const int64_t count = line.rows;
    if (start.rows != count || duration.rows != count || depth.rows != count || parent.rows != count) {
        return release(&arrays, argument_error(&arrays, "the columns differ in length"));
    }
    const int32_t *lines = line.data;
    int64_t longest = 0, first = 0; /* the most events on one line: what the heap and the stack may hold */
    for (int64_t row = 1; row <= count; row++) {
        if (row == count || lines[row] != lines[first]) {
            longest = row - first > longest ? row - first : longest;
            first = row;
        }
    }
    int64_t *heap_end = malloc(sizeof(int64_t) * (size_t)(longest + 1));
    int8_t *heap_flag = malloc((size_t)(longest + 1));
    int64_t *latest = malloc(sizeof(int64_t) * (size_t)(longest + 1)); /* the latest row at each depth */
    if (heap_end == NULL || heap_flag == NULL || latest == NULL) {
        free(heap_end);
        free(heap_flag);
        free(latest);
        PyErr_NoMemory();
        return release(&arrays, NULL);
    }
    Py_BEGIN_ALLOW_THREADS
    walk(lines, start.data, duration.data, depth.data, parent.data, count, heap_end, heap_flag, latest);
    rewalk_broken_lines(lines, start.data, duration.data, depth.data, parent.data, count, heap_end);
    Py_END_ALLOW_THREADS
    free(heap_end);
    free(heap_flag);
    free(latest);
    Py_INCREF(Py_None);
    return release(&arrays, Py_None);
}
