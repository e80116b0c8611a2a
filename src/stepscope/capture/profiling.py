"""``stepscope.profile(logdir, options, schedule=None, on_trace_ready=None)``: the context
manager around a capture, of the whole block (a session) or on torch.profiler's schedule
(a ``StepHook``). Apart from ``session.py`` because the schedule's hook is built on it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stepscope.capture.hooks import StepHook, TraceReady
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.schedule import Schedule
from stepscope.capture.session import start


@contextlib.contextmanager
def profile(
    logdir: str | Path,
    options: ProfilerOptions | None = None,
    schedule: Schedule | None = None,
    on_trace_ready: TraceReady | None = None,
) -> Iterator[Any]:
    """``with stepscope.profile(logdir):`` captures the block (see ``session.start``) and
    yields its session. With ``schedule`` (``stepscope.schedule(wait=, warmup=, active=,
    repeat=)``, as torch.profiler's), it yields a ``StepHook`` instead, whose ``step()`` the
    loop calls at the end of each iteration, as ``torch.profiler.profile``'s. Either way
    ``on_trace_ready(path)`` is called with each profile written."""
    if schedule is not None:
        hook = StepHook(logdir, options=options, schedule=schedule, on_trace_ready=on_trace_ready)
        try:
            yield hook
        finally:
            hook.close()
        return
    session = start(logdir, options)
    try:
        yield session
    finally:
        path = session.stop()
        if path is not None and on_trace_ready is not None:
            on_trace_ready(path)
