"""Capture sessions: ``start`` / ``stop`` (and ``stepscope.profile``, in profiling.py).

``CaptureSession`` is the in-flight object: it starts the tracers (stepscope's annotation
and Python tracers, and the adapter of every framework the program has imported), and on
``stop`` collects what each recorded, aligns them on the UNIX clock, merges them into one
profile and writes ``<logdir>/plugins/profile/<session>/<host>.xplane.pb`` atomically.
What it returns, the path, is what the tools and XProf open.

One session at a time per process. ``CaptureSession.start`` refuses a second one with
``StepscopeError`` (the Keras callback and the step hook turn that into a warning);
``stepscope.start`` / ``stepscope.profile`` never raise: while another capture records (a
remote capture through the profiler server, say), they warn and record nothing, and the
running capture goes on untouched. A tracer that fails to start or stop is skipped with a
warning; the training job never fails because of the profiler.

A forked child does not inherit a running capture: it starts with none, and a session
object it inherited stops as a no-op (its files and spool belong to the parent).

A session started by the profiler server (``remote=True``) runs on a gRPC thread; tracers
that only record the thread that starts them (torch, Python) are started and halted on the
training thread at its step boundaries instead (``handoff.py``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from stepscope.capture import handoff
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.tracers.base import ThreadAffineTracer, Tracer
from stepscope.capture.tracers.host import HostTracer
from stepscope.capture.tracers.python import PythonTracer
from stepscope.errors import StepscopeError
from stepscope.trace.formats.xspace.write import write_xspace
from stepscope.trace.logdir import make_path
from stepscope.trace.merge import merge_profiles
from stepscope.trace.model import Profile

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
        except Exception:
            continue
        if tracer.is_available():
            found.append(tracer)
    return found


# The default tracer set; tests and callers may pass their own.
TracerFactory = Callable[[], list[Tracer]]


def default_tracers() -> list[Tracer]:
    return [HostTracer(), PythonTracer(), *_framework_tracers()]


# How long a remote capture's stop waits for the training thread's next step boundary to
# halt the thread-affine tracers (a step longer than this loses their events).
HALT_WAIT_S = 30.0

# The phases a session goes through (the profiler server reports them to its clients).
WAITING, RECORDING, STOPPING, MERGING, WRITING, DONE = "waiting", "recording", "stopping", "merging", "writing", "done"


def _install_boundary(tracer: Tracer) -> None:
    """Lets the tracer's framework mark step boundaries of its own (torch's optimizer step)."""
    install = getattr(tracer, "install_boundary", None)
    if install is not None:
        with contextlib.suppress(Exception):
            install()


def prepare_step_boundaries() -> None:
    """Installs the frameworks' step boundaries now, on the calling thread (the profiler
    server does this at start, before the training loop runs)."""
    for tracer in _framework_tracers():
        _install_boundary(tracer)


_lock = threading.Lock()
_current: CaptureSession | None = None  # the session recording in this process
_started: CaptureSession | None = None  # the last one ``start()`` made, for ``stop()``
_forked_during_capture = False  # this process is a child forked while its parent captured


def _after_fork_in_child() -> None:
    # The child records nothing of the parent's capture and may start its own; ``_started``
    # stays, so a ``stop()`` the child runs stops nothing (its session is the parent's).
    # ``_forked_during_capture``: a ``stop()`` with no session of the child's own (a second
    # one, or one during the parent's remote capture) does nothing either.
    global _lock, _current, _forked_during_capture
    _forked_during_capture = _current is not None or _started is not None
    _lock, _current = threading.Lock(), None


os.register_at_fork(after_in_child=_after_fork_in_child)


def _thread_affine(tracer: Tracer) -> TypeGuard[ThreadAffineTracer]:
    """Whether ``tracer`` records only the thread that starts it (see ``Tracer.thread_affine``)."""
    return bool(getattr(tracer, "thread_affine", False))


@dataclass
class _Deferred:
    """A thread-affine tracer of a remote capture and the hand-off that starts it."""

    tracer: ThreadAffineTracer
    start: handoff.Task


class CaptureSession:
    """One capture in flight."""

    def __init__(
        self,
        logdir: str | Path,
        options: ProfilerOptions | None = None,
        tracers: list[Tracer] | None = None,
        host: str | None = None,
        output: Path | None = None,
        remote: bool = False,
    ) -> None:
        self.logdir = Path(logdir)
        self.output = output  # an exact file to write instead of the logdir layout (profiler service)
        self.options = options or ProfilerOptions()
        self.tracers = tracers if tracers is not None else default_tracers()
        self.host = host or socket.gethostname()
        self.remote = remote  # started by the profiler server, off the training thread
        self.session = session_name()
        self.path: Path | None = None  # the written profile, once stopped
        self.phase = WAITING
        self.warnings: list[str] = []  # what the capture missed, in words (for the client)
        self._pid = os.getpid()
        self._running = False
        self._started: list[Tracer] = []
        self._deferred: list[_Deferred] = []
        self._timer: threading.Timer | None = None
        self._began = threading.Event()

    def start(self) -> None:
        global _current
        with _lock:
            if _current is not None:
                what = "a remote capture (through the profiler server)" if _current.remote else "a stepscope capture"
                raise StepscopeError(f"{what} is already running in this process; stop it before starting another")
            _current = self
            self._running = True
        if self.options.delay_ms:
            self._timer = threading.Timer(self.options.delay_ms / 1000, self._begin)
            self._timer.daemon = True
            self._timer.start()
        else:
            self._begin()

    def _begin(self) -> None:
        for tracer in self.tracers:
            if self.remote and _thread_affine(tracer):
                if not tracer.will_record(self.options):
                    continue
                _install_boundary(tracer)
                task = handoff.post(functools.partial(self._start_tracer, tracer))
                self._deferred.append(_Deferred(tracer, task))
            else:
                self._start_tracer(tracer)
        self.phase = RECORDING
        self._began.set()

    def _start_tracer(self, tracer: Tracer) -> None:
        try:
            tracer.start(self.options)
        except Exception as error:
            self._warn(f"the {tracer.name} tracer did not start ({error}); capturing without it")
            return
        self._started.append(tracer)

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        warnings.warn(f"stepscope: {message}", ProfilerWarning, stacklevel=4)

    def stop(self) -> Path | None:
        """Stops every tracer and writes the profile; returns its path (None if nothing was
        recorded, or if this session never started or belongs to another process)."""
        profile = self.collect()
        return None if profile is None else self.save(profile)

    def save(self, profile: Profile) -> Path | None:
        """Writes what ``collect`` returned (or a crop of it) as this session's profile;
        returns its path, or None (with a warning) where it could not be written."""
        path = self._free_path()
        self.phase = WRITING
        try:
            write_xspace(profile, path)
        except Exception as error:
            self._warn(f"could not write the profile to {path} ({error})")
            return None
        finally:
            self.phase = DONE
        self.path = path
        return path

    def collect(self) -> Profile | None:
        """Stops every tracer and merges what they recorded into one profile (None if
        nothing was recorded). Writing it is the caller's part (``stop`` or the server)."""
        global _current
        if not self._running or self._pid != os.getpid():
            return None
        self._running = False
        try:
            self.phase = STOPPING
            if self._timer is not None:
                self._timer.cancel()
                self._began.wait(timeout=5)  # a delayed start already under way finishes first
            self._halt_deferred()
            profiles = []
            for tracer in reversed(self._started):
                try:
                    profiles += tracer.stop()
                except Exception as error:
                    self._warn(f"the {tracer.name} tracer failed to stop ({error}); its events are lost")
            if not profiles:
                self._warn("the capture recorded no events")
                return None
            self.phase = MERGING
            return merge_profiles(profiles, host=self.host, source=str(self.output or self.logdir))
        except Exception as error:
            self._warn(f"could not assemble the profile ({error})")
            return None
        finally:
            with _lock:
                if _current is self:
                    _current = None

    def _halt_deferred(self) -> None:
        """Halts the thread-affine tracers of a remote capture on the thread they started on
        (at its next step boundary), and gives up on those that never started."""
        deadline = time.monotonic() + HALT_WAIT_S
        for deferred in self._deferred:
            if handoff.cancel(deferred.start):
                self._warn(
                    f"the {deferred.tracer.name} tracer recorded nothing: the training thread reached no step boundary"
                    " during the capture (call stepscope.step(n) in the training loop; PyTorch optimizers' step() counts too)"
                )
                continue
            deferred.start.wait(HALT_WAIT_S)  # started, or being started right now
            if deferred.tracer not in self._started:
                continue
            owner = deferred.start.ran_on
            halt = handoff.post(deferred.tracer.halt, thread=owner)
            while not halt.wait(0.05):
                if owner is None or not handoff.thread_alive(owner) or time.monotonic() > deadline:
                    break
            if not halt.done.is_set():
                # The halt stays queued: the tracer stops at the thread's next boundary, and
                # what it recorded is dropped.
                self._started.remove(deferred.tracer)
                self._warn(
                    f"the {deferred.tracer.name} tracer's events are lost: the training thread reached no step"
                    f" boundary within {HALT_WAIT_S:.0f} s of the capture's end"
                )

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
    """Starts capturing into ``logdir``; ``stop()`` ends it. While another capture records
    in this process, warns and returns a session that records nothing (its ``stop``
    returns None): the job goes on, and so does the other capture."""
    global _started
    session = CaptureSession(logdir, options)
    try:
        session.start()
    except StepscopeError as error:
        warnings.warn(f"stepscope: this capture records nothing: {error}", ProfilerWarning, stacklevel=2)
    _started = session
    return session


def stop() -> Path | None:
    """Stops the capture ``start()`` began; returns the written profile's path. In a child
    forked during a capture it does nothing (None), as docs/capture.md says."""
    global _started
    session, _started = _started, None
    if session is None:
        if _forked_during_capture:
            return None
        raise StepscopeError("no stepscope capture is running")
    return session.stop()
