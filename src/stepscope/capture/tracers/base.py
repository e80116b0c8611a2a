"""The interface every tracer (framework adapter) implements.

A tracer is created per capture session, imports its framework lazily (only in
``is_available`` and ``start``), and gives back what it recorded as stepscope Profiles
whose ``start_ns`` is a UNIX epoch time, so the session can align every source on one
clock and merge them. A tracer that fails raises; the session turns that into a warning
and goes on with the others: a profiler failure never stops the training job.
"""

from __future__ import annotations

from typing import Protocol

from stepscope.capture.options import ProfilerOptions
from stepscope.trace.model import Profile


class Tracer(Protocol):
    name: str
    # True when ``start`` records only the thread that calls it (torch's profiler, the
    # Python tracer): a capture started by the profiler server then starts it on the
    # training thread at its next step boundary, and stops it there with ``halt``.
    thread_affine: bool

    def is_available(self) -> bool:
        """True when this tracer's framework is importable *and already imported* by the
        program (a capture never imports torch / jax / tensorflow on its own)."""
        ...

    def start(self, options: ProfilerOptions) -> None: ...

    def stop(self) -> list[Profile]:
        """Stops recording; returns what was recorded (possibly nothing)."""
        ...


class ThreadAffineTracer(Tracer, Protocol):
    def will_record(self, options: ProfilerOptions) -> bool:
        """Whether ``start(options)`` would record anything (else a remote capture does not
        hand it to the training thread at all)."""
        ...

    def halt(self) -> None:
        """Stops recording without collecting, on the thread that started it (a no-op when
        not recording); ``stop``, which may run on any thread, then collects. ``stop``
        halts first when this was not called."""
        ...
