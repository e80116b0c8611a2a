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

    def is_available(self) -> bool:
        """True when this tracer's framework is importable *and already imported* by the
        program (a capture never imports torch / jax / tensorflow on its own)."""
        ...

    def start(self, options: ProfilerOptions) -> None: ...

    def stop(self) -> list[Profile]:
        """Stops recording; returns what was recorded (possibly nothing)."""
        ...
