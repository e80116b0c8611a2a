"""``stepscope.profile(logdir, options, schedule=None, on_trace_ready=None)``: the context
manager around a capture, of the whole block (a session) or on torch.profiler's schedule
(a ``StepHook``). Apart from ``session.py`` because the schedule's hook is built on it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import overload

from stepscope.capture.hooks import StepHook, TraceReady
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.schedule import Schedule
from stepscope.capture.session import CaptureSession, start


# What the block gets: the session, or the hook when a schedule is given (by position or name).
@overload
def profile(
    logdir: str | Path, options: ProfilerOptions | None = None, schedule: None = None, on_trace_ready: TraceReady | None = None
) -> AbstractContextManager[CaptureSession]: ...
@overload
def profile(
    logdir: str | Path, options: ProfilerOptions | None, schedule: Schedule, on_trace_ready: TraceReady | None = None
) -> AbstractContextManager[StepHook]: ...
@overload
def profile(
    logdir: str | Path, options: ProfilerOptions | None = None, *, schedule: Schedule, on_trace_ready: TraceReady | None = None
) -> AbstractContextManager[StepHook]: ...
def profile(
    logdir: str | Path,
    options: ProfilerOptions | None = None,
    schedule: Schedule | None = None,
    on_trace_ready: TraceReady | None = None,
) -> AbstractContextManager[CaptureSession] | AbstractContextManager[StepHook]:
    """``with stepscope.profile(logdir):`` captures the block (see ``session.start``) and
    yields its session. With ``schedule`` (``stepscope.schedule(wait=, warmup=, active=,
    repeat=)``, as torch.profiler's), it yields a ``StepHook`` instead, whose ``step()`` the
    loop calls at the end of each iteration, as ``torch.profiler.profile``'s. Either way
    ``on_trace_ready(path)`` is called with each profile written. Nothing starts before
    the block is entered."""
    if schedule is not None:
        return _scheduled(logdir, options, schedule, on_trace_ready)
    return _whole_block(logdir, options, on_trace_ready)


@contextlib.contextmanager
def _scheduled(logdir: str | Path, options: ProfilerOptions | None, schedule: Schedule, on_trace_ready: TraceReady | None) -> Iterator[StepHook]:
    hook = StepHook(logdir, options=options, schedule=schedule, on_trace_ready=on_trace_ready)
    try:
        yield hook
    finally:
        hook.close()


@contextlib.contextmanager
def _whole_block(logdir: str | Path, options: ProfilerOptions | None, on_trace_ready: TraceReady | None) -> Iterator[CaptureSession]:
    session = start(logdir, options)
    try:
        yield session
    finally:
        path = session.stop()
        if path is not None and on_trace_ready is not None:
            on_trace_ready(path)
