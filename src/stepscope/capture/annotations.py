"""Annotations: ``stepscope.trace("name", **args)`` and ``stepscope.step(n)``.

Usable as context managers from any thread, and ``trace`` as a decorator. When no capture
is recording, ``trace`` returns one shared do-nothing context manager, so an annotated
training loop pays a function call and nothing else. While recording, an annotation
appends one tuple to a list (``list.append`` is atomic under the GIL, so threads need no
lock) and notes its thread's name the first time; the session turns them into events at
the end.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from stepscope.trace import names

F = TypeVar("F", bound=Callable[..., Any])
_now = time.perf_counter_ns
_thread_id = threading.get_ident


class Recording:
    """Where annotations go while a capture records (one at a time)."""

    def __init__(self, level: int) -> None:
        self.level = level  # host_tracer_level
        # (name, start perf ns, end perf ns, thread id, args or None)
        self.events: list[tuple[str, int, int, int, dict[str, Any] | None]] = []
        # Thread id -> name, noted at a thread's first event (it may be gone by the end).
        self.threads: dict[int, str] = {}

    def add(self, name: str, start: int, end: int, args: dict[str, Any] | None) -> None:
        thread = _thread_id()
        if thread not in self.threads:
            self.threads[thread] = threading.current_thread().name
        self.events.append((name, start, end, thread, args))


_recording: Recording | None = None


def set_recording(recording: Recording | None) -> None:
    global _recording
    _recording = recording


def current_recording() -> Recording | None:
    return _recording


class _Span:
    __slots__ = ("_name", "_args", "_start", "_recording")

    def __init__(self, name: str, args: dict[str, Any] | None, recording: Recording) -> None:
        self._name = name
        self._args = args
        self._recording = recording
        self._start = 0

    def __enter__(self) -> _Span:
        self._start = _now()
        return self

    def __exit__(self, *exc: object) -> None:
        self._recording.add(self._name, self._start, _now(), self._args)


class _Idle:
    """The context manager handed out while nothing records."""

    __slots__ = ()

    def __enter__(self) -> _Idle:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_IDLE = _Idle()


class _Trace:
    """``stepscope.trace``: a context manager factory and a decorator."""

    __slots__ = ()

    def __call__(self, name: str, **args: Any) -> _Span | _Idle:
        recording = _recording
        if recording is None:
            return _IDLE
        return _Span(name, args or None, recording)

    def function(self, name: str | None = None, **args: Any) -> Callable[[F], F]:
        """``@stepscope.trace.function()``: annotate every call of the function."""

        def decorate(func: F) -> F:
            label = name or getattr(func, "__qualname__", repr(func))

            @functools.wraps(func)
            def wrapper(*call_args: Any, **call_kwargs: Any) -> Any:
                recording = _recording
                if recording is None:
                    return func(*call_args, **call_kwargs)
                with _Span(label, args or None, recording):
                    return func(*call_args, **call_kwargs)

            return wrapper  # type: ignore[return-value]

        return decorate


trace = _Trace()


def step(number: int, **args: Any) -> _Span | _Idle:
    """``with stepscope.step(n):`` marks one training step; the tools find it by its
    ``step_num`` stat, as they find JAX's and TensorFlow's step annotations."""
    recording = _recording
    if recording is None:
        return _IDLE
    return _Span(names.STEPSCOPE_STEP, {names.STEP_NUM: int(number), **args}, recording)
