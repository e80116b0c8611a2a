"""Annotations: ``stepscope.trace("name", **args)`` and ``stepscope.step(n)``.

Usable as context managers from any thread, and ``trace`` as a decorator. When no capture
is recording, ``trace`` returns one shared do-nothing context manager, so an annotated
training loop pays a call and nothing else. While recording, an annotation appends one
tuple to a list (``list.append`` is atomic under the GIL, so threads need no lock) and
notes its thread's name the first time; the session turns them into events at the end.

Two implementations record exactly the same tuples: the compiled one in ``_spans.c`` (built
by ``pip install -e .``; 3-4x cheaper while recording, measured in bench/overhead.py) and
the pure-Python classes below, used where the extension was not built or
``STEPSCOPE_PURE_PYTHON=1`` is set. The Python one keeps each thread's native id in a
thread-local: ``threading.get_native_id`` is a system call on every use.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, ParamSpec, Protocol, TypeVar, cast

from stepscope.capture.handoff import pending as _handoffs
from stepscope.capture.handoff import run_pending as _run_handoffs
from stepscope.trace import names
from stepscope.trace.kernels import pure_python

P = ParamSpec("P")
R = TypeVar("R")
# One annotated block as a recording keeps it: (name, start perf ns, end perf ns, thread id, args or None).
Record = tuple[str, int, int, int, dict[str, Any] | None]
_now = time.perf_counter_ns
# The kernel's thread id: unlike threading.get_ident it is not handed to the next thread as
# soon as one ends, and it is the tid PyTorch's and TSL's tracers record too. Read once per
# thread (a system call) and kept in a thread-local, which a fork replaces in the child.
_native_id = threading.get_native_id
_thread_ids = threading.local()


def _thread_id() -> int:
    try:
        return _thread_ids.id  # type: ignore[no-any-return]  # a threading.local's attributes are Any (set just below)
    except AttributeError:
        _thread_ids.id = thread = _native_id()
        return thread


class Annotation(Protocol):
    """What ``trace(...)``, ``step(...)`` and ``stepscope.data.stage(...)`` return, compiled or
    not: a context manager that records its block while a capture records and never
    swallows the block's exception (``__exit__`` returns None)."""

    def __enter__(self) -> object: ...
    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None, /) -> None: ...


class TraceFunction(Protocol):
    """``stepscope.trace.function``: ``@stepscope.trace.function(name=None, **args)``."""

    def __call__(self, name: str | None = None, **args: object) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


class Trace(Protocol):
    """``stepscope.trace``: ``_spans.trace`` (typed by ``_spans.pyi``) or ``_py_trace``."""

    function: TraceFunction

    def __call__(self, name: str, **args: object) -> Annotation: ...


class Recording:
    """Where annotations go while a capture records (one at a time).

    A process forked while recording (a DataLoader worker) gets a ``SpooledRecording``
    that appends its events to a file in ``spool_dir``; the session reads them back, so
    work done in worker processes reaches the profile.
    """

    def __init__(self, level: int, spool_dir: str | None = None) -> None:
        self.level = level  # host_tracer_level
        self.spool_dir = spool_dir
        self.events: list[Record] = []
        # Thread id -> name, noted at a thread's first event (it may be gone by the end).
        self.threads: dict[int, str] = {}

    def add(self, name: str, start: int, end: int, args: dict[str, Any] | None) -> None:
        thread = _thread_id()
        if thread not in self.threads:
            self.threads[thread] = threading.current_thread().name
        self.events.append((name, start, end, thread, args))


class SpooledRecording(Recording):
    """A forked child's recording: every event is written through to its spool file at
    once (worker processes may end with ``os._exit``, which skips any later flush)."""

    def __init__(self, parent: Recording) -> None:
        super().__init__(parent.level, parent.spool_dir)
        self._file = open(os.path.join(parent.spool_dir or ".", f"{os.getpid()}.jsonl"), "a", buffering=1)  # noqa: SIM115 - kept open for the recording's life: every event is written through

    def add(self, name: str, start: int, end: int, args: dict[str, Any] | None) -> None:
        # A worker that outlives the capture (persistent DataLoader workers) stops writing
        # once the session has collected and removed its spool.
        if os.fstat(self._file.fileno()).st_nlink == 0:
            self._file.close()
            set_recording(None)
            return
        thread = _thread_id()
        if thread not in self.threads:
            self.threads[thread] = threading.current_thread().name
        record = [name, start, end, thread, self.threads[thread], args]
        self._file.write(json.dumps(record, default=str) + "\n")


_recording: Recording | None = None


def _after_fork_in_child() -> None:
    global _thread_ids
    _thread_ids = threading.local()  # the forking thread's id was the parent's
    if _recording is not None and _recording.spool_dir is not None:
        try:
            set_recording(SpooledRecording(_recording))
        except OSError:
            set_recording(None)  # the worker runs unrecorded rather than failing


os.register_at_fork(after_in_child=_after_fork_in_child)


def read_spools(spool_dir: str) -> list[tuple[int, list[Record], dict[int, str]]]:
    """(pid, records, thread names) for every forked process that recorded something."""
    result = []
    for entry in sorted(os.listdir(spool_dir)):
        if not entry.endswith(".jsonl"):
            continue
        records, threads = [], {}
        with open(os.path.join(spool_dir, entry)) as stream:
            for line in stream:
                try:
                    name, start, end, thread, thread_name, args = json.loads(line)
                except (ValueError, TypeError):
                    continue  # a line cut short by a worker that died mid-write
                records.append((name, start, end, thread, args))
                threads[thread] = thread_name
        result.append((int(entry.removesuffix(".jsonl")), records, threads))
    return result


def set_recording(recording: Recording | None) -> None:
    global _recording
    _recording = recording
    if COMPILED:
        _spans.set_recording(recording)


def current_recording() -> Recording | None:
    return _recording


class _PySpan:
    """One annotated block (the pure-Python path)."""

    __slots__ = ("_args", "_name", "_recording", "_start")

    def __init__(self, name: str, args: dict[str, Any] | None, recording: Recording) -> None:
        self._name = name
        self._args = args
        self._recording = recording
        self._start = 0

    def __enter__(self) -> _PySpan:
        self._start = _now()
        return self

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        self._recording.add(self._name, self._start, _now(), self._args)


class _PyIdle:
    """The context manager handed out while nothing records (the pure-Python path)."""

    __slots__ = ()

    def __enter__(self) -> _PyIdle:
        return self

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        return None


_PY_IDLE = _PyIdle()


def _py_trace(name: str, **args: Any) -> _PySpan | _PyIdle:
    """``with stepscope.trace("name", **args):`` records the block as an event."""
    recording = _recording
    if recording is None:
        return _PY_IDLE
    return _PySpan(name, args or None, recording)


def _load_compiled() -> bool:
    """Whether the compiled annotations are in use (given the Recording class here): not
    where ``STEPSCOPE_PURE_PYTHON=1`` asks for the classes above or the extension was not built."""
    if pure_python():
        return False
    try:
        from stepscope.capture import _spans
    except ImportError:  # not built (no compiler at install): the classes above
        return False
    _spans.configure(Recording, lambda: threading.current_thread().name)
    return True


COMPILED = _load_compiled()
if COMPILED:
    from stepscope.capture import _spans

# What the rest of the package (and stepscope.data, stepscope.step) make spans with:
# ``_Span(name, args or None, recording)`` and the shared idle object.
_Span: Callable[[str, dict[str, Any] | None, Recording], Annotation] = _spans.Span if COMPILED else _PySpan
_IDLE: Annotation = _spans.IDLE if COMPILED else _PY_IDLE


def _trace_function(name: str | None = None, **args: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``@stepscope.trace.function()``: annotate every call of the function."""

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        qualname: str = getattr(func, "__qualname__", repr(func))
        label = name or qualname

        @functools.wraps(func)
        def wrapper(*call_args: P.args, **call_kwargs: P.kwargs) -> R:
            recording = _recording
            if recording is None:
                return func(*call_args, **call_kwargs)
            with _Span(label, args or None, recording):
                return func(*call_args, **call_kwargs)

        return wrapper

    return decorate


# The pure-Python ``trace`` is a plain function (the cheapest call Python has: it is called
# on every annotated block even when nothing records); the compiled one an object with a
# vectorcall slot and a __dict__, so both take the attribute. (To mypy a function has no
# attributes of its own: the cast says that this one has ``function`` from here on.)
_PY_TRACE = cast(Trace, _py_trace)
_PY_TRACE.function = _trace_function
if COMPILED:
    _spans.trace.function = _trace_function
trace: Trace = _spans.trace if COMPILED else _PY_TRACE


def step(number: int, tokens: int | float | None = None, samples: int | float | None = None, **args: Any) -> Annotation:
    """``with stepscope.step(n):`` marks one training step; the tools find it by its
    ``step_num`` stat, as they find JAX's and TensorFlow's step annotations.

    ``tokens`` and ``samples`` (what the step processed) are kept as stats of the marker,
    and the overview turns them into tokens/s and samples/s over the step's time.

    A step is also where a capture started by the profiler server hands the training
    thread what only it can do (see ``capture/handoff.py``)."""
    if _handoffs:
        _run_handoffs()
    recording = _recording
    if recording is None:
        return _IDLE
    counts = {key: value for key, value in ((names.STEP_TOKENS, tokens), (names.STEP_SAMPLES, samples)) if value is not None}
    return _Span(names.STEPSCOPE_STEP, {names.STEP_NUM: int(number), **counts, **args}, recording)
