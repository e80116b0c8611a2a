/* stepscope's compiled kernels (the extension module ``stepscope._kernels``): what every
   source file shares.

   Built against Python's limited API (Py_LIMITED_API 0x030B0000, setup.py), so one abi3
   binary serves every CPython from 3.11 on. Arrays come in through the buffer protocol
   (numpy's C API is not used): ``take`` checks each one's type, dimensions, contiguity and
   writability, and each kernel checks the lengths it relies on before its loop, which
   runs with the GIL released (threads decode planes and answer viewer queries side by
   side). Every read and write inside a loop stays within the arrays given: an index that
   the data itself supplies is checked where it is used. */

#ifndef STEPSCOPE_KERNELS_H
#define STEPSCOPE_KERNELS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Element types of the arrays the kernels take (numpy's dtypes of the same names). */
typedef enum { INT8, INT32, INT64, UINT8, UINT32, UINT64, FLOAT32, FLOAT64 } ElementType;

#define MAX_ARRAYS 24

/* The arrays one call has taken, released together (``release``) whatever happens. */
typedef struct {
    const char *function;
    int count;
    Py_buffer views[MAX_ARRAYS];
} Arrays;

/* An array's elements and its shape (rows, and columns for two dimensions). */
typedef struct {
    void *data;
    Py_ssize_t rows;
    Py_ssize_t columns;
} Array;

enum { READ = 0, WRITE = 1 };

/* Stat value kinds: stepscope.trace.stat_types.StatKind's values (INT64 to BYTES) and the
   two more the XSpace decoder writes (schema.py's KIND_*). */
enum { KIND_INT64, KIND_UINT64, KIND_DOUBLE, KIND_STR, KIND_BYTES, KIND_REF, KIND_NONE };

/* XSpace's `flow` stat packs direction (bits 0-1) and id (bits 2-57): schema.py's FLOW_*. */
#define FLOW_IN 1
#define FLOW_OUT 2
#define FLOW_ID_MASK ((INT64_C(1) << 56) - 1)

/* Takes ``object`` (argument ``name``) as a C-contiguous array of ``type`` with ``ndim``
   (1 or 2) dimensions, writable when ``access`` is WRITE. 0, or -1 with TypeError (not an
   array of that type) or ValueError (other dimensions, not contiguous, read-only) set. */
int take(Arrays *arrays, PyObject *object, const char *name, ElementType type, int ndim, int access, Array *out);

/* Releases every array taken; returns ``result`` (for ``return release(&arrays, value)``). */
PyObject *release(Arrays *arrays, PyObject *result);

/* Raises ValueError "<function>: <message>" and returns NULL. */
PyObject *argument_error(const Arrays *arrays, const char *message);

/* Two's-complement arithmetic on int64, as numpy's and numba's: no undefined overflow. */
static inline int64_t
wrapping_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static inline int64_t
wrapping_sub(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* The kernels, one per Python function they stand for (each file says which). */
PyObject *scan_fields(PyObject *self, PyObject *args);
PyObject *decode_lines(PyObject *self, PyObject *args);
PyObject *encode_sizes(PyObject *self, PyObject *args);
PyObject *encode_fill(PyObject *self, PyObject *args);
PyObject *nest(PyObject *self, PyObject *args);
PyObject *highest_flow_id(PyObject *self, PyObject *args);
PyObject *first_outs(PyObject *self, PyObject *args);
PyObject *walk_arrows(PyObject *self, PyObject *args);
PyObject *scatter_ids(PyObject *self, PyObject *args);
PyObject *lod_lanes(PyObject *self, PyObject *args);
PyObject *schedule_starts(PyObject *self, PyObject *args);
PyObject *walk_chain(PyObject *self, PyObject *args);
PyObject *scan_chrome_events(PyObject *self, PyObject *args);

#endif
