/* The module ``stepscope._kernels``: its functions and the numbers it shares with the
   Python it stands for (exported, so that tests/trace/test_kernels.py can check that they
   agree). ``stepscope.trace.kernels`` chooses between it and the Python functions. */

#include "kernels.h"
#include "wire.h"

static PyMethodDef METHODS[] = {
    {"scan_fields", scan_fields, METH_VARARGS, "wire.scan_fields, compiled."},
    {"decode_lines", decode_lines, METH_VARARGS, "wire.decode_lines, compiled."},
    {"encode_sizes", encode_sizes, METH_VARARGS, "encode._sizes, compiled."},
    {"encode_fill", encode_fill, METH_VARARGS, "encode._fill, compiled."},
    {"nest", nest, METH_VARARGS, "presorted._nest, compiled."},
    {"highest_flow_id", highest_flow_id, METH_VARARGS, "arrows._highest_flow_id, compiled."},
    {"first_outs", first_outs, METH_VARARGS, "arrows._first_outs, compiled."},
    {"walk_arrows", walk_arrows, METH_VARARGS, "arrows._walk, compiled."},
    {"scatter_ids", scatter_ids, METH_VARARGS, "hot_ids._scatter, compiled."},
    {"lod_lanes", lod_lanes, METH_VARARGS, "lod_loop.lod_lanes, compiled."},
    {"schedule_starts", schedule_starts, METH_VARARGS, "schedule._schedule_starts, compiled."},
    {"walk_chain", walk_chain, METH_VARARGS, "schedule._walk_chain, compiled."},
    {"scan_chrome_events", scan_chrome_events, METH_VARARGS, "A JSON array of Chrome trace events as columns (chrome/scanned.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT,
    "stepscope._kernels",
    "stepscope's compiled loops (see stepscope.trace.kernels).",
    -1,
    METHODS,
    NULL,
    NULL,
    NULL,
    NULL,
};

typedef struct {
    const char *name;
    long long value;
} Constant;

static const Constant CONSTANTS[] = {
    {"TRUNCATED", TRUNCATED}, {"LONG_VARINT", LONG_VARINT}, {"BAD_TAG", BAD_TAG}, {"BAD_WIRE_TYPE", BAD_WIRE_TYPE},
    {"BAD_GROUP", BAD_GROUP}, {"BAD_LENGTH", BAD_LENGTH}, {"TOO_DEEP", TOO_DEEP}, {"DEPTH_LIMIT", DEPTH_LIMIT},
    {"STATE_LINE", STATE_LINE}, {"STATE_POS", STATE_POS}, {"STATE_EVENTS", STATE_EVENTS}, {"STATE_STATS", STATE_STATS},
    {"STATE_TEXT_SIZE", STATE_TEXT_SIZE}, {"STATE_TEXTS", STATE_TEXTS}, {"STATE_HEADS", STATE_HEADS}, {"STATE_HEAD_LINE", STATE_HEAD_LINE},
    {"STATE_HEAD_END", STATE_HEAD_END}, {"STATE_LINE_FIRST", STATE_LINE_FIRST}, {"STATE_ROOM_FOR", STATE_ROOM_FOR},
    {"STATE_ROOM_NEED", STATE_ROOM_NEED}, {"STATE_SIZE", STATE_SIZE}, {"ROOM", ROOM}, {"ROOM_EVENTS", ROOM_EVENTS},
    {"ROOM_STATS", ROOM_STATS}, {"ROOM_TEXT", ROOM_TEXT}, {"ROOM_TEXTS", ROOM_TEXTS}, {"ROOM_HEADS", ROOM_HEADS},
    {"KIND_INT64", KIND_INT64}, {"KIND_UINT64", KIND_UINT64}, {"KIND_DOUBLE", KIND_DOUBLE}, {"KIND_STR", KIND_STR},
    {"KIND_BYTES", KIND_BYTES}, {"KIND_REF", KIND_REF}, {"KIND_NONE", KIND_NONE}, {"FLOW_IN", FLOW_IN}, {"FLOW_OUT", FLOW_OUT},
    {"FLOW_ID_MASK", FLOW_ID_MASK},
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    PyObject *module = PyModule_Create(&MODULE);
    if (module == NULL) {
        return NULL;
    }
    for (size_t index = 0; index < sizeof(CONSTANTS) / sizeof(CONSTANTS[0]); index++) {
        PyObject *value = PyLong_FromLongLong(CONSTANTS[index].value);
        int added = value == NULL ? -1 : PyModule_AddObjectRef(module, CONSTANTS[index].name, value);
        Py_XDECREF(value);
        if (added < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    return module;
}
