/* The compiled fast path of stepscope's annotations (``capture/annotations.py``).

   It records exactly what the pure-Python path records: one tuple
   (name, start perf ns, end perf ns, native thread id, args or None) appended to the
   recording's ``events`` list at the end of each block, and the thread's name in its
   ``threads`` dict the first time a thread records. What it saves, measured on the bench
   machine (bench/overhead.py): the Python frames of ``trace``, ``__init__``,
   ``__enter__``, ``__exit__`` and ``Recording.add``, and the ``gettid`` system call that
   ``threading.get_native_id`` makes on every call (~225 ns there); a thread's id is read
   once and kept in a thread-local variable, which a fork resets in the child.

   Any recording that is not exactly ``Recording`` (a forked worker's spooled one) gets
   ``recording.add(name, start, end, args)``, as the pure-Python path does. The list
   append happens under the GIL, so threads need no lock here either.

   Built by ``pip install`` (setup.py, an optional extension): when it is not built,
   ``annotations.py`` uses its pure-Python classes, and tests check that both record the
   same events.

   It is written against the limited API of Python 3.11 (setup.py defines Py_LIMITED_API),
   so one binary serves every CPython from 3.11 on: heap types, and the clock read below
   rather than CPython's private perf-counter function. ``trace(...)`` is called through
   vectorcall where the running Python is 3.12 or later (vectorcall is in the stable ABI
   from 3.12: the flag, the ``__vectorcalloffset__`` member and the calling convention,
   declared below because 3.11's limited headers hide them) and through ``tp_call`` on
   3.11, which builds an argument tuple per call (about 100-150 ns more per recorded
   block, measured on the bench machine). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <pthread.h>
#include <time.h>

/* The calling thread's native id as an int (read once per thread and kept for its life;
   NULL: not read yet) and the last recording (by generation) whose threads dict has its
   name. */
static _Thread_local PyObject *cached_thread_key = NULL;
static _Thread_local unsigned long long noted_in = 0;

static void
forget_thread_id(void)
{
    /* In a forked child the one thread left has a new id (its old int is left behind). */
    cached_thread_key = NULL;
    noted_in = 0;
}

static PyObject *get_native_id = NULL; /* threading.get_native_id */

/* ``*slot = value``, releasing what was there (Py_XSETREF, outside the limited API). */
static inline void
replace(PyObject **slot, PyObject *value)
{
    PyObject *old = *slot;
    *slot = value;
    Py_XDECREF(old);
}

/* A borrowed reference to the calling thread's id as an int, or NULL on error. */
static inline PyObject *
thread_key(void)
{
    if (cached_thread_key == NULL) {
        cached_thread_key = PyObject_CallNoArgs(get_native_id);
    }
    return cached_thread_key;
}

/* ``time.perf_counter_ns``, the clock the host tracer pins to UNIX time. On Linux CPython
   reads it as CLOCK_MONOTONIC, and so does ``now_ns`` (the module checks at import that the
   two agree); elsewhere, or where they do not, ``now_ns`` calls the Python function. */
static PyObject *perf_counter_ns = NULL;
static int monotonic_is_perf_counter = 0;

static inline long long
monotonic_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) {
        return -1;
    }
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Nanoseconds, or -1 with an exception set. */
static inline long long
now_ns(void)
{
    if (monotonic_is_perf_counter) {
        return monotonic_ns();
    }
    PyObject *value = PyObject_CallNoArgs(perf_counter_ns);
    if (value == NULL) {
        return -1;
    }
    long long ns = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return ns;
}

/* Whether CLOCK_MONOTONIC is perf_counter_ns's clock: three readings of ours, each between
   two of Python's, in order (one clock); 0 where they disagree or an error is set. */
static int
check_monotonic_clock(void)
{
#if defined(__linux__)
    for (int round = 0; round < 3; round++) {
        PyObject *before = PyObject_CallNoArgs(perf_counter_ns);
        long long ours = monotonic_ns();
        PyObject *after = PyObject_CallNoArgs(perf_counter_ns);
        long long low = before ? PyLong_AsLongLong(before) : -1, high = after ? PyLong_AsLongLong(after) : -1;
        Py_XDECREF(before);
        Py_XDECREF(after);
        if (PyErr_Occurred()) {
            return -1;
        }
        if (ours < 0 || ours < low || ours > high) {
            return 0;
        }
    }
    return 1;
#else
    return 0;
#endif
}

/* Module state (one interpreter: the module is single-phase). */
static PyObject *recording_type = NULL; /* annotations.Recording: its events are appended here */
static PyObject *thread_name = NULL;    /* () -> the current thread's name */
static PyObject *current = NULL;        /* the recording annotations go to, or NULL */
static PyObject *current_events = NULL; /* its events list when it is a plain Recording */
static PyObject *current_threads = NULL;
static unsigned long long current_generation = 0; /* numbers each plain recording set (from 1) */
static unsigned long long generations = 0;
static PyObject *idle = NULL;           /* the shared do-nothing context manager */
static PyTypeObject *IdleType = NULL, *SpanType = NULL, *TracerType = NULL; /* heap types */
static PyObject *str_events = NULL, *str_threads = NULL, *str_add = NULL, *str_name = NULL;

/* ---- the idle context manager ---- */

typedef struct {
    PyObject_HEAD
} IdleObject;

static PyObject *
idle_enter(PyObject *self, PyObject *unused)
{
    return Py_NewRef(self);
}

static PyObject *
idle_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_RETURN_NONE;
}

static PyMethodDef idle_methods[] = {
    {"__enter__", idle_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))idle_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot idle_slots[] = {
    {Py_tp_doc, "The context manager handed out while nothing records."},
    {Py_tp_methods, idle_methods},
    {0, NULL},
};

static PyType_Spec idle_spec = {
    .name = "stepscope.capture._spans.Idle",
    .basicsize = sizeof(IdleObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = idle_slots,
};

/* ---- one annotated block ---- */

typedef struct {
    PyObject_HEAD
    PyObject *name;
    PyObject *args;      /* a dict, or NULL for None */
    PyObject *recording; /* where it goes */
    PyObject *events;    /* the recording's events list (a plain Recording), else NULL */
    PyObject *threads;
    unsigned long long generation; /* the recording's number when it is the current one, else 0 */
    long long start;
} SpanObject;

/* A span of ``name`` (args: a new reference or NULL) into ``recording``. */
static PyObject *
span_make(PyObject *name, PyObject *args, PyObject *recording)
{
    PyObject *events = NULL, *threads = NULL;
    unsigned long long generation = 0;
    if (recording == current && current_events != NULL) {
        events = Py_NewRef(current_events);
        threads = Py_NewRef(current_threads);
        generation = current_generation;
    }
    else if (Py_TYPE(recording) == (PyTypeObject *)recording_type) {
        events = PyObject_GetAttr(recording, str_events);
        threads = events ? PyObject_GetAttr(recording, str_threads) : NULL;
        if (threads == NULL || !PyList_CheckExact(events) || !PyDict_CheckExact(threads)) {
            Py_XDECREF(events); /* not the lists it was made with: the slow path */
            Py_XDECREF(threads);
            events = threads = NULL;
            PyErr_Clear();
        }
    }
    SpanObject *span = PyObject_GC_New(SpanObject, SpanType);
    if (span == NULL) {
        Py_XDECREF(args);
        Py_XDECREF(events);
        Py_XDECREF(threads);
        return NULL;
    }
    span->name = Py_NewRef(name);
    span->args = args;
    span->recording = Py_NewRef(recording);
    span->events = events;
    span->threads = threads;
    span->generation = generation;
    span->start = 0;
    PyObject_GC_Track(span);
    return (PyObject *)span;
}

static PyObject *
span_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *name, *span_args, *recording;
    if (kwargs != NULL && PyDict_Size(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "Span() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "Span", 3, 3, &name, &span_args, &recording)) {
        return NULL;
    }
    return span_make(name, span_args == Py_None ? NULL : Py_NewRef(span_args), recording);
}

static int
span_traverse(SpanObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE((PyObject *)self)); /* a heap type: its instances hold it */
    Py_VISIT(self->name);
    Py_VISIT(self->args);
    Py_VISIT(self->recording);
    Py_VISIT(self->events);
    Py_VISIT(self->threads);
    return 0;
}

static int
span_clear(SpanObject *self)
{
    Py_CLEAR(self->name);
    Py_CLEAR(self->args);
    Py_CLEAR(self->recording);
    Py_CLEAR(self->events);
    Py_CLEAR(self->threads);
    return 0;
}

static void
span_dealloc(SpanObject *self)
{
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    PyObject_GC_UnTrack(self);
    span_clear(self);
    PyObject_GC_Del(self);
    Py_DECREF(type);
}

static PyObject *
span_enter(SpanObject *self, PyObject *unused)
{
    self->start = now_ns();
    if (self->start < 0) {
        return NULL;
    }
    return Py_NewRef((PyObject *)self);
}

static inline int
may_be_tracked(PyObject *object)
{
    return PyObject_GC_IsTracked(object); /* 0 for an object of a type without GC */
}

static PyObject *
span_exit(SpanObject *self, PyObject *const *unused, Py_ssize_t nargs)
{
    long long end = now_ns();
    if (end < 0) {
        return NULL;
    }
    PyObject *start = PyLong_FromLongLong(self->start);
    PyObject *stop = PyLong_FromLongLong(end);
    if (start == NULL || stop == NULL) {
        goto fail;
    }
    if (self->events == NULL) { /* recording.add(name, start, end, args) */
        PyObject *done = PyObject_CallMethodObjArgs(self->recording, str_add, self->name, start, stop, self->args ? self->args : Py_None, NULL);
        Py_DECREF(start);
        Py_DECREF(stop);
        if (done == NULL) {
            return NULL;
        }
        Py_DECREF(done);
        Py_RETURN_NONE;
    }
    PyObject *thread = thread_key();
    if (thread == NULL) {
        goto fail;
    }
    if (self->generation == 0 || self->generation != noted_in) {
        int known = PyDict_Contains(self->threads, thread);
        if (known == 0) {
            PyObject *label = PyObject_CallNoArgs(thread_name);
            known = label == NULL ? -1 : PyDict_SetItem(self->threads, thread, label);
            Py_XDECREF(label);
        }
        if (known < 0) {
            goto fail;
        }
        noted_in = self->generation;
    }
    PyObject *record = PyTuple_New(5);
    if (record == NULL) {
        goto fail;
    }
    PyObject *args = self->args ? self->args : Py_None;
    PyTuple_SetItem(record, 0, Py_NewRef(self->name)); /* cannot fail: a new 5-tuple */
    PyTuple_SetItem(record, 1, start);
    PyTuple_SetItem(record, 2, stop);
    PyTuple_SetItem(record, 3, Py_NewRef(thread));
    PyTuple_SetItem(record, 4, Py_NewRef(args));
    /* What the collector does to such a tuple at its first pass (nothing in it can hold a
       reference cycle), done now: a capture keeps millions of them. */
    if (!may_be_tracked(self->name) && !may_be_tracked(args)) {
        PyObject_GC_UnTrack(record);
    }
    int failed = PyList_Append(self->events, record);
    Py_DECREF(record);
    if (failed) {
        return NULL;
    }
    Py_RETURN_NONE;
fail:
    Py_XDECREF(start);
    Py_XDECREF(stop);
    return NULL;
}

static PyMethodDef span_methods[] = {
    {"__enter__", (PyCFunction)span_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))span_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot span_slots[] = {
    {Py_tp_doc, "Span(name, args, recording): one annotated block, recorded when it ends."},
    {Py_tp_new, span_new},
    {Py_tp_dealloc, span_dealloc},
    {Py_tp_traverse, span_traverse},
    {Py_tp_clear, span_clear},
    {Py_tp_methods, span_methods},
    {0, NULL},
};

static PyType_Spec span_spec = {
    .name = "stepscope.capture._spans.Span",
    .basicsize = sizeof(SpanObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = span_slots,
};

/* ---- trace(name, **args): a callable object (a function has no attributes to set, and
   ``trace.function`` is the decorator) ---- */

typedef struct {
    PyObject_HEAD
    void *vectorcall; /* tracer_vectorcall where the Python running is 3.12+, else unused */
    PyObject *dict;
} TracerObject;

/* The stable ABI's vectorcall (3.12+), as 3.12's limited headers declare it. */
#define STABLE_TPFLAGS_HAVE_VECTORCALL (1UL << 11)
#define STABLE_VECTORCALL_ARGUMENTS_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))

/* The keyword arguments but ``name``, as a new dict, or NULL (none, or an error set). */
static PyObject *
span_args(PyObject *kwargs, int name_given)
{
    if (PyDict_Size(kwargs) == (name_given ? 1 : 0)) {
        return NULL;
    }
    PyObject *copy = PyDict_Copy(kwargs); /* the caller's dict may be the user's own (``**args``) */
    if (copy != NULL && name_given && PyDict_DelItem(copy, str_name) < 0) {
        Py_CLEAR(copy);
    }
    return copy;
}

static PyObject *
tracer_call(PyObject *callable, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t nargs = PyTuple_Size(args);
    PyObject *name = nargs == 1 ? PyTuple_GetItem(args, 0) : NULL;
    int name_given = 0; /* ``name=`` given as a keyword */
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "trace() takes 1 positional argument but %zd were given", nargs);
        return NULL;
    }
    if (kwargs != NULL) {
        PyObject *keyword = PyDict_GetItemWithError(kwargs, str_name);
        if (keyword == NULL && PyErr_Occurred()) {
            return NULL;
        }
        if (keyword != NULL) {
            if (name != NULL) {
                PyErr_SetString(PyExc_TypeError, "trace() got multiple values for argument 'name'");
                return NULL;
            }
            name = keyword;
            name_given = 1;
        }
    }
    if (name == NULL) {
        PyErr_SetString(PyExc_TypeError, "trace() missing 1 required positional argument: 'name'");
        return NULL;
    }
    if (current == NULL) {
        return Py_NewRef(idle);
    }
    PyObject *recorded = kwargs == NULL ? NULL : span_args(kwargs, name_given);
    if (recorded == NULL && PyErr_Occurred()) {
        return NULL;
    }
    return span_make(name, recorded, current);
}

static PyObject *
tracer_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = (Py_ssize_t)(nargsf & ~STABLE_VECTORCALL_ARGUMENTS_OFFSET);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_Size(kwnames);
    PyObject *name = nargs == 1 ? args[0] : NULL;
    Py_ssize_t name_at = -1; /* ``name=`` given as a keyword */
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "trace() takes 1 positional argument but %zd were given", nargs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GetItem(kwnames, i);
        if (key == str_name || PyUnicode_Compare(key, str_name) == 0) {
            if (name != NULL) {
                PyErr_SetString(PyExc_TypeError, "trace() got multiple values for argument 'name'");
                return NULL;
            }
            name = args[nargs + i];
            name_at = i;
        }
    }
    if (name == NULL) {
        PyErr_SetString(PyExc_TypeError, "trace() missing 1 required positional argument: 'name'");
        return NULL;
    }
    if (current == NULL) {
        return Py_NewRef(idle);
    }
    PyObject *kwargs = NULL;
    if (nkw > (name_at >= 0 ? 1 : 0)) {
        kwargs = PyDict_New();
        if (kwargs == NULL) {
            return NULL;
        }
        for (Py_ssize_t i = 0; i < nkw; i++) {
            if (i != name_at && PyDict_SetItem(kwargs, PyTuple_GetItem(kwnames, i), args[nargs + i]) < 0) {
                Py_DECREF(kwargs);
                return NULL;
            }
        }
    }
    return span_make(name, kwargs, current);
}

static int
tracer_traverse(TracerObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE((PyObject *)self));
    Py_VISIT(self->dict);
    return 0;
}

static int
tracer_clear(TracerObject *self)
{
    Py_CLEAR(self->dict);
    return 0;
}

static void
tracer_dealloc(TracerObject *self)
{
    PyTypeObject *type = Py_TYPE((PyObject *)self);
    PyObject_GC_UnTrack(self);
    tracer_clear(self);
    PyObject_GC_Del(self);
    Py_DECREF(type);
}

static PyMemberDef tracer_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(TracerObject, dict), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}, /* "__vectorcalloffset__" on 3.12+ (module init) */
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot tracer_slots[] = {
    {Py_tp_doc, "trace(name, **args): ``with stepscope.trace(\"name\", **args):`` records the block as an event."},
    {Py_tp_call, tracer_call},
    {Py_tp_dealloc, tracer_dealloc},
    {Py_tp_traverse, tracer_traverse},
    {Py_tp_clear, tracer_clear},
    {Py_tp_members, tracer_members},
    {0, NULL},
};

static PyType_Spec tracer_spec = {
    .name = "stepscope.capture._spans.Tracer",
    .basicsize = sizeof(TracerObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = tracer_slots,
};

/* ---- module functions ---- */

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *type, *name_of_thread;
    if (!PyArg_ParseTuple(args, "O!O:configure", &PyType_Type, &type, &name_of_thread)) {
        return NULL;
    }
    replace(&recording_type, Py_NewRef(type));
    replace(&thread_name, Py_NewRef(name_of_thread));
    Py_RETURN_NONE;
}

static PyObject *
set_recording(PyObject *module, PyObject *recording)
{
    PyObject *events = NULL, *threads = NULL;
    if (recording == Py_None) {
        recording = NULL;
    }
    else if (recording_type != NULL && Py_TYPE(recording) == (PyTypeObject *)recording_type) {
        events = PyObject_GetAttr(recording, str_events);
        threads = events ? PyObject_GetAttr(recording, str_threads) : NULL;
        if (threads == NULL) {
            Py_XDECREF(events);
            return NULL;
        }
        if (!PyList_CheckExact(events) || !PyDict_CheckExact(threads)) {
            Py_CLEAR(events);
            Py_CLEAR(threads);
        }
    }
    Py_XINCREF(recording);
    replace(&current, recording);
    replace(&current_events, events);
    replace(&current_threads, threads);
    current_generation = events != NULL ? ++generations : 0;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS, "configure(Recording, thread_name): the plain recording type and () -> the thread's name."},
    {"set_recording", set_recording, METH_O, "set_recording(recording or None): where annotations go from now on."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef spans_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "stepscope.capture._spans",
    .m_doc = "The compiled fast path of stepscope's annotations.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__spans(void)
{
    IdleType = (PyTypeObject *)PyType_FromSpec(&idle_spec);
    SpanType = (PyTypeObject *)PyType_FromSpec(&span_spec);
    if (Py_Version >= 0x030C0000) {
        tracer_members[1] = (PyMemberDef){"__vectorcalloffset__", T_PYSSIZET, offsetof(TracerObject, vectorcall), READONLY, NULL};
        tracer_spec.flags |= STABLE_TPFLAGS_HAVE_VECTORCALL;
    }
    TracerType = (PyTypeObject *)PyType_FromSpec(&tracer_spec);
    if (IdleType == NULL || SpanType == NULL || TracerType == NULL) {
        return NULL;
    }
    PyObject *time_module = PyImport_ImportModule("time");
    perf_counter_ns = time_module ? PyObject_GetAttrString(time_module, "perf_counter_ns") : NULL;
    Py_XDECREF(time_module);
    PyObject *threading_module = PyImport_ImportModule("threading");
    get_native_id = threading_module ? PyObject_GetAttrString(threading_module, "get_native_id") : NULL;
    Py_XDECREF(threading_module);
    if (perf_counter_ns == NULL || get_native_id == NULL || (monotonic_is_perf_counter = check_monotonic_clock()) < 0) {
        return NULL;
    }
    str_events = PyUnicode_InternFromString("events");
    str_threads = PyUnicode_InternFromString("threads");
    str_add = PyUnicode_InternFromString("add");
    str_name = PyUnicode_InternFromString("name");
    if (str_events == NULL || str_threads == NULL || str_add == NULL || str_name == NULL) {
        return NULL;
    }
    if (pthread_atfork(NULL, NULL, forget_thread_id) != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
        return NULL;
    }
    PyObject *module = PyModule_Create(&spans_module);
    if (module == NULL) {
        return NULL;
    }
    idle = PyObject_New(PyObject, IdleType);
    TracerObject *tracer = PyObject_GC_New(TracerObject, TracerType);
    if (idle == NULL || tracer == NULL) {
        Py_XDECREF((PyObject *)tracer);
        Py_DECREF(module);
        return NULL;
    }
    tracer->vectorcall = Py_Version >= 0x030C0000 ? (void *)tracer_vectorcall : NULL;
    tracer->dict = NULL;
    PyObject_GC_Track(tracer);
    if (PyModule_AddObjectRef(module, "IDLE", idle) < 0 || PyModule_AddObject(module, "trace", (PyObject *)tracer) < 0 ||
        PyModule_AddObjectRef(module, "Span", (PyObject *)SpanType) < 0 || PyModule_AddObjectRef(module, "Idle", (PyObject *)IdleType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
