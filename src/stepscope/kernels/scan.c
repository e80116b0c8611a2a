/* ``scan_fields`` of stepscope/trace/formats/xspace/wire.py (which says what it does),
   line for line: the fields of one message, as the reader splits XSpace and XPlane. */

#include "kernels.h"
#include "wire.h"

/* scan_fields(buf, start, end, depth, out) -> (count, error, position of the error) */
PyObject *
scan_fields(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *buf_object, *out_object;
    long long start, end, depth;
    if (!PyArg_ParseTuple(args, "OLLLO:scan_fields", &buf_object, &start, &end, &depth, &out_object)) {
        return NULL;
    }
    Arrays arrays = {.function = "scan_fields"};
    Array buf_array, out_array;
    if (take(&arrays, buf_object, "buf", UINT8, 1, READ, &buf_array) < 0 || take(&arrays, out_object, "out", INT64, 2, WRITE, &out_array) < 0) {
        return release(&arrays, NULL);
    }
    if (!(0 <= start && start <= end && end <= buf_array.rows)) {
        return release(&arrays, argument_error(&arrays, "start and end must be positions in buf, start <= end"));
    }
    if (depth > DEPTH_LIMIT) {
        return release(&arrays, argument_error(&arrays, "depth is past protobuf's limit (100)"));
    }
    if (out_array.rows != 5) {
        return release(&arrays, argument_error(&arrays, "out must have 5 rows"));
    }
    const uint8_t *buf = buf_array.data;
    int64_t *out = out_array.data;
    const int64_t room = out_array.columns;
    int64_t count = 0, error = 0, at = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t pos = start;
    while (pos < end) {
        int64_t tag_start = pos, field, wire, length;
        pos = read_tag(buf, pos, end, &field, &wire);
        if (pos < 0) {
            error = -pos, at = tag_start;
            break;
        }
        int64_t value_start = pos;
        if (wire == WIRE_LEN) {
            value_start = read_length(buf, pos, end, &length);
            pos = value_start >= 0 ? value_start + length : value_start;
        } else {
            pos = skip(buf, pos, end, field, wire, depth);
        }
        if (pos < 0) {
            error = -pos, at = tag_start;
            break;
        }
        if (count < room) {
            out[count] = field;
            out[room + count] = wire;
            out[2 * room + count] = tag_start;
            out[3 * room + count] = value_start;
            out[4 * room + count] = pos;
        }
        count++;
    }
    Py_END_ALLOW_THREADS
    return release(&arrays, Py_BuildValue("(LLL)", (long long)count, (long long)error, (long long)at));
}
