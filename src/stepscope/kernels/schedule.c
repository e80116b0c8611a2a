/* ``_schedule_starts`` of stepscope/analysis/schedule.py (which says what it computes),
   line for line: earliest starts through a dependency graph whose in-edges are grouped
   by destination (CSR), one pass in node order.

   Every edge's source is checked to be a node and every offset to lie within the edges
   before the loop; sums wrap as numpy's int64 arithmetic does. */

#include "kernels.h"

/* schedule_starts(offsets, src, weight, residual, fixed, starts) -> None (starts in place) */
PyObject *
schedule_starts(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objects[6];
    if (!PyArg_ParseTuple(args, "OOOOOO:schedule_starts", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4], &objects[5])) {
        return NULL;
    }
    static const char *const NAMES[] = {"offsets", "src", "weight", "residual", "fixed", "starts"};
    Arrays arrays = {.function = "schedule_starts"};
    Array taken[6];
    for (int index = 0; index < 6; index++) {
        if (take(&arrays, objects[index], NAMES[index], INT64, 1, index == 5 ? WRITE : READ, &taken[index]) < 0) {
            return release(&arrays, NULL);
        }
    }
    const int64_t *offsets = taken[0].data, *src = taken[1].data, *weight = taken[2].data, *residual = taken[3].data, *fixed = taken[4].data;
    int64_t *starts = taken[5].data;
    const Py_ssize_t nodes = taken[5].rows, edges = taken[1].rows;
    if (taken[0].rows != nodes + 1) {
        return release(&arrays, argument_error(&arrays, "offsets must have one entry more than starts"));
    }
    if (taken[3].rows != nodes || taken[4].rows != nodes) {
        return release(&arrays, argument_error(&arrays, "residual, fixed and starts differ in length"));
    }
    if (taken[2].rows != edges) {
        return release(&arrays, argument_error(&arrays, "src and weight differ in length"));
    }
    for (Py_ssize_t node = 0; node < nodes; node++) {
        if (!(0 <= offsets[node] && offsets[node] <= offsets[node + 1] && offsets[node + 1] <= edges)) {
            return release(&arrays, argument_error(&arrays, "offsets are not a rising sequence of positions in src"));
        }
    }
    for (Py_ssize_t edge = 0; edge < edges; edge++) {
        if (!(0 <= src[edge] && src[edge] < nodes)) {
            return release(&arrays, argument_error(&arrays, "an edge's source is out of range"));
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t node = 0; node < nodes; node++) {
        const int64_t lo = offsets[node], hi = offsets[node + 1];
        if (lo < hi) {
            int64_t reach = INT64_MIN;
            for (int64_t edge = lo; edge < hi; edge++) {
                const int64_t source = src[edge];
                const int64_t candidate = wrapping_add(wrapping_add(starts[source], fixed[source]), weight[edge]);
                if (candidate > reach) {
                    reach = candidate;
                }
            }
            starts[node] = wrapping_add(reach, residual[node]);
        }
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    return release(&arrays, Py_None);
}
