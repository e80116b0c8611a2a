/* ``_schedule_starts`` and ``_walk_chain`` of stepscope/analysis/paths/schedule.py (which says
   what they compute), line for line: earliest starts through a dependency graph whose
   in-edges are grouped by destination (CSR), one pass in node order; and the walk back
   along binding predecessors that gives a step's critical path.

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

/* walk_chain(pred, starts, node, floor, out) -> count: ``_walk_chain`` of schedule.py (the
   chain of binding predecessors from ``node`` back to the first node starting at or before
   ``floor``, or without one), written to ``out[:count]``. ``node`` and every predecessor
   read are checked to be nodes where they are used, and ``out`` to have room (a chain of a
   DAG numbered in processing order is at most as long as its nodes). */
PyObject *
walk_chain(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *pred_object, *starts_object, *out_object;
    long long first, floor_ps;
    if (!PyArg_ParseTuple(args, "OOLLO:walk_chain", &pred_object, &starts_object, &first, &floor_ps, &out_object)) {
        return NULL;
    }
    Arrays arrays = {.function = "walk_chain"};
    Array pred, starts, out;
    if (take(&arrays, pred_object, "pred", INT64, 1, READ, &pred) < 0 || take(&arrays, starts_object, "starts", INT64, 1, READ, &starts) < 0
        || take(&arrays, out_object, "out", INT64, 1, WRITE, &out) < 0) {
        return release(&arrays, NULL);
    }
    if (pred.rows != starts.rows) {
        return release(&arrays, argument_error(&arrays, "pred and starts differ in length"));
    }
    const int64_t *up = pred.data, *start = starts.data;
    int64_t *chain = out.data;
    const Py_ssize_t nodes = pred.rows, room = out.rows;
    int64_t node = first;
    Py_ssize_t count = 0;
    int error = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        if (!(0 <= node && node < nodes)) {
            error = 1;
            break;
        }
        if (count >= room) {
            error = 2;
            break;
        }
        chain[count++] = node;
        if (!(start[node] > floor_ps && up[node] >= 0)) {
            break;
        }
        node = up[node];
    }
    Py_END_ALLOW_THREADS
    if (error == 1) {
        return release(&arrays, argument_error(&arrays, "a node of the chain is out of range"));
    }
    if (error == 2) {
        return release(&arrays, argument_error(&arrays, "the chain is longer than out"));
    }
    return release(&arrays, PyLong_FromSsize_t(count));
}
