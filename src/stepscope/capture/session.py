"""Capture sessions: ``stepscope.profile(logdir)``, ``start`` / ``stop``.

``CaptureSession`` is the in-flight object: it starts the tracers (stepscope's annotation
and Python tracers, and the adapter of every framework the program has imported), and on
``stop`` collects what each recorded, aligns them on the UNIX clock, merges them into one
profile and writes ``<logdir>/plugins/profile/<session>/<host>.xplane.pb`` atomically.
What it returns, the path, is what the tools and XProf open.

One session at a time: a second ``start`` raises a clear error. A tracer that fails to
start or stop is skipped with a warning; the training job never fails because of the
profiler.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.tracers.base import Tracer
from stepscope.capture.tracers.host import HostTracer
from stepscope.capture.tracers.python import PythonTracer
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import make_path
from stepscope.trace.merge import merge_profiles
from stepscope.trace.xspace import write_xspace

SESSION_FORMAT = "%Y_%m_%d_%H_%M_%S"


class ProfilerWarning(UserWarning):
    """A tracer could not start or stop; the capture went on without it."""


def session_name(when: float | None = None) -> str:
    """A session folder name as TensorBoard makes it (local time, second resolution)."""
    return time.strftime(SESSION_FORMAT, time.localtime(time.time() if when is None else when))


def _framework_tracers() -> list[Tracer]:
    """Adapters for the frameworks this program has imported (each imports lazily)."""
    found: list[Tracer] = []
    for module, class_name in (
        ("stepscope.capture.tracers.torch", "TorchTracer"),
        ("stepscope.capture.tracers.jax", "JaxTracer"),
        ("stepscope.capture.tracers.tensorflow", "TensorFlowTracer"),
    ):
        try:
            tracer = getattr(__import__(module, fromlist=[class_name]), class_name)()
        except Exception:  # noqa: BLE001 - an adapter that cannot even load is simply absent
            continue
        if tracer.is_available():
            found.append(tracer)
    return found


# The default tracer set; tests and callers may pass their own.
TracerFactory = Callable[[], list[Tracer]]


def default_tracers() -> list[Tracer]:
    return [HostTracer(), PythonTracer(), *_framework_tracers()]


_lock = threading.Lock()
_current: CaptureSession | None = None


class CaptureSession:
    """One capture in flight."""

    def __init__(
        self,
        logdir: str | Path,
        options: ProfilerOptions | None = None,
        tracers: list[Tracer] | None = None,
        host: str | None = None,
        output: Path | None = None,
    ) -> None:
        self.logdir = Path(logdir)
        self.output = output  # an exact file to write instead of the logdir layout (profiler service)
        self.options = options or ProfilerOptions()
        self.tracers = tracers if tracers is not None else default_tracers()
        self.host = host or socket.gethostname()
        self.session = session_name()
        self.path: Path | None = None  # the written profile, once stopped
        self._started: list[Tracer] = []
        self._timer: threading.Timer | None = None
        self._began = threading.Event()

    def start(self) -> None:
        global _current
        with _lock:
            if _current is not None:
                raise StepscopeError("a stepscope capture is already running; stop it before starting another")
            _current = self
        if self.options.delay_ms:
            self._timer = threading.Timer(self.options.delay_ms / 1000, self._begin)
            self._timer.daemon = True
            self._timer.start()
        else:
            self._begin()

    def _begin(self) -> None:
        for tracer in self.tracers:
            try:
                tracer.start(self.options)
            except Exception as error:  # noqa: BLE001 - the profiler never takes the job down
                warnings.warn(f"stepscope: the {tracer.name} tracer did not start ({error}); capturing without it", ProfilerWarning, stacklevel=3)
                continue
            self._started.append(tracer)
        self._began.set()

    def stop(self) -> Path | None:
        """Stops every tracer and writes the profile; returns its path (None if nothing was
        recorded)."""
        global _current
        try:
            if self._timer is not None:
                self._timer.cancel()
                self._began.wait(timeout=5)  # a delayed start already under way finishes first
            profiles = []
            for tracer in reversed(self._started):
                try:
                    profiles += tracer.stop()
                except Exception as error:  # noqa: BLE001
                    warnings.warn(f"stepscope: the {tracer.name} tracer failed to stop ({error}); its events are lost", ProfilerWarning, stacklevel=2)
            if not profiles:
                warnings.warn("stepscope: the capture recorded no events", ProfilerWarning, stacklevel=2)
                return None
            path = self._free_path()
            try:
                merged = merge_profiles(profiles, host=self.host, source=str(path))
                write_xspace(merged, path)
            except Exception as error:  # noqa: BLE001
                warnings.warn(f"stepscope: could not write the profile to {path} ({error})", ProfilerWarning, stacklevel=2)
                return None
            self.path = path
            return path
        finally:
            with _lock:
                if _current is self:
                    _current = None


    def _free_path(self) -> Path:
        """The session's file; a second capture in the same second gets a suffixed session
        folder rather than overwriting the first."""
        if self.output is not None:
            return self.output
        path = make_path(self.logdir, self.session, self.host)
        suffix = 1
        while path.exists():
            path = make_path(self.logdir, f"{self.session}_{suffix}", self.host)
            suffix += 1
        return path


def start(logdir: str | Path, options: ProfilerOptions | None = None) -> CaptureSession:
    """Starts capturing into ``logdir``; ``stop()`` ends it."""
    session = CaptureSession(logdir, options)
    session.start()
    return session


def stop() -> Path | None:
    """Stops the running capture; returns the written profile's path."""
    session = _current
    if session is None:
        raise StepscopeError("no stepscope capture is running")
    return session.stop()


@contextlib.contextmanager
def profile(logdir: str | Path, options: ProfilerOptions | None = None) -> Iterator[CaptureSession]:
    """``with stepscope.profile(logdir):`` captures the block."""
    session = start(logdir, options)
    try:
        yield session
    finally:
        session.stop()
