/* Arrays through the buffer protocol: the checks every kernel's arguments go through. */

#include "kernels.h"

static const char *const TYPE_NAMES[] = {"int8", "int32", "int64", "uint8", "uint32", "uint64", "float32", "float64"};

/* Whether a buffer's format and item size are ``type``'s: struct-module codes in native
   (or little-endian standard) order, of the right kind and size. */
static int
has_type(const Py_buffer *view, ElementType type)
{
    const char *format = view->format == NULL ? "B" : view->format;
    if (*format == '@' || *format == '=' || *format == (PY_BIG_ENDIAN ? '>' : '<')) {
        format++;
    }
    if (format[0] == '\0' || format[1] != '\0') {
        return 0;
    }
    char kind;
    switch (format[0]) {
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n':
        kind = 'i';
        break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N':
        kind = 'u';
        break;
    case 'f': case 'd':
        kind = 'f';
        break;
    default:
        return 0;
    }
    switch (type) {
    case INT8: return kind == 'i' && view->itemsize == 1;
    case INT32: return kind == 'i' && view->itemsize == 4;
    case INT64: return kind == 'i' && view->itemsize == 8;
    case UINT8: return kind == 'u' && view->itemsize == 1;
    case UINT32: return kind == 'u' && view->itemsize == 4;
    case UINT64: return kind == 'u' && view->itemsize == 8;
    case FLOAT32: return kind == 'f' && view->itemsize == 4;
    case FLOAT64: return kind == 'f' && view->itemsize == 8;
    }
    return 0;
}

int
take(Arrays *arrays, PyObject *object, const char *name, ElementType type, int ndim, int access, Array *out)
{
    if (arrays->count == MAX_ARRAYS) {
        PyErr_Format(PyExc_SystemError, "%s: more than %d arrays", arrays->function, MAX_ARRAYS);
        return -1;
    }
    Py_buffer *view = &arrays->views[arrays->count];
    if (!PyObject_CheckBuffer(object) || PyObject_GetBuffer(object, view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        PyObject *type_name = PyType_GetName(Py_TYPE(object));
        if (type_name != NULL) {
            PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be a numpy array of %s, not %U", arrays->function, name, TYPE_NAMES[type], type_name);
            Py_DECREF(type_name);
        }
        return -1;
    }
    arrays->count++;
    if (!has_type(view, type)) {
        PyErr_Format(PyExc_TypeError, "%s: argument '%s' must be a numpy array of %s (its buffer format is '%s', %zd-byte items)", arrays->function, name,
                     TYPE_NAMES[type], view->format == NULL ? "B" : view->format, view->itemsize);
        return -1;
    }
    if (view->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: argument '%s' must have %d dimension%s, not %d", arrays->function, name, ndim, ndim == 1 ? "" : "s", view->ndim);
        return -1;
    }
    if (!PyBuffer_IsContiguous(view, 'C')) {
        PyErr_Format(PyExc_ValueError, "%s: argument '%s' must be C-contiguous", arrays->function, name);
        return -1;
    }
    if (access == WRITE && view->readonly) {
        PyErr_Format(PyExc_ValueError, "%s: argument '%s' is read-only, and it is written to", arrays->function, name);
        return -1;
    }
    out->data = view->buf;
    out->rows = view->shape[0];
    out->columns = ndim == 2 ? view->shape[1] : 1;
    return 0;
}

PyObject *
release(Arrays *arrays, PyObject *result)
{
    for (int index = 0; index < arrays->count; index++) {
        PyBuffer_Release(&arrays->views[index]);
    }
    arrays->count = 0;
    return result;
}

PyObject *
argument_error(const Arrays *arrays, const char *message)
{
    PyErr_Format(PyExc_ValueError, "%s: %s", arrays->function, message);
    return NULL;
}
