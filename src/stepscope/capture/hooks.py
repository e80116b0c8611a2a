"""``StepHook``: profiling from a hand-written training loop, every N steps or S seconds,
or on torch.profiler's schedule.

The seed workflow's Estimator ``ProfilerHook(save_steps, save_secs, output_dir)`` for any
loop: call ``hook.step()`` once per iteration; when a capture is due the hook starts one,
and after ``window_steps`` more steps stops it, marking each captured step with a
``stepscope.step`` annotation so the tools see the steps. A capture that cannot start
(another one is running) is skipped with a warning.

With ``schedule=stepscope.schedule(wait=, warmup=, active=, repeat=)`` instead, the hook
follows torch.profiler's schedule (see ``capture/schedule.py``): steps are numbered from 0
as torch numbers them, warm-up steps run the tracers but are cropped out of the profile
(everything before the first active step's start), and each cycle's active steps are one
profile. ``on_trace_ready(path)`` is called with each profile written, in any mode.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from stepscope.capture import handoff
from stepscope.capture.annotations import current_recording
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.schedule import Action, Schedule
from stepscope.capture.session import CaptureSession, ProfilerWarning
from stepscope.errors import StepscopeError
from stepscope.trace import names
from stepscope.trace.crop import crop
from stepscope.trace.model import Profile

TraceReady = Callable[[Path], object]
RECORDING = (Action.RECORD, Action.RECORD_AND_SAVE)


class StepHook:
    def __init__(
        self,
        output_dir: str | Path,
        save_steps: int | None = None,
        save_secs: float | None = None,
        options: ProfilerOptions | None = None,
        window_steps: int = 1,
        schedule: Schedule | None = None,
        on_trace_ready: TraceReady | None = None,
    ) -> None:
        if sum(choice is not None for choice in (save_steps, save_secs, schedule)) != 1:
            raise StepscopeError("StepHook needs exactly one of save_steps, save_secs or schedule")
        if (save_steps is not None and save_steps < 1) or (save_secs is not None and save_secs <= 0) or window_steps < 1:
            raise StepscopeError("StepHook: save_steps, save_secs and window_steps must be positive")
        self.output_dir = Path(output_dir)
        self.save_steps = save_steps
        self.save_secs = save_secs
        self.options = options
        self.window_steps = window_steps
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.paths: list[Path] = []  # every profile written so far
        self._step = 0
        self._last_capture = time.monotonic()
        self._session: CaptureSession | None = None
        self._window_left = 0
        self._step_start = 0
        self._warmed = False  # the running capture began with warm-up steps (to crop away)
        if schedule is not None:
            self._follow_schedule()

    def _due(self) -> bool:
        if self.save_steps is not None:
            return self._step % self.save_steps == 0
        return time.monotonic() - self._last_capture >= self.save_secs  # type: ignore[operator]  # save_secs is set when save_steps is not (no schedule here: __init__)

    def step(self) -> None:
        """Call once per training iteration, at its end."""
        if handoff.pending:
            handoff.run_pending()
        self._step += 1
        now = time.perf_counter_ns()
        if self.schedule is not None:
            ended = self.schedule.action(self._step - 1)
            if ended in RECORDING:
                self._mark_step(now, self._step - 1)
            if ended is Action.RECORD_AND_SAVE:
                self._finish()
            self._follow_schedule()
            return
        if self._session is not None:
            self._mark_step(now)
            self._window_left -= 1
            if self._window_left == 0:
                self._finish()
            else:
                self._step_start = now
            return
        if self._due():
            self._begin(now)

    def _follow_schedule(self) -> None:
        """Starts a capture where the step about to run (``self._step``) warms up or records."""
        assert self.schedule is not None
        coming = self.schedule.action(self._step)
        if coming is not Action.NONE and self._session is None:
            self._begin(time.perf_counter_ns())
            self._warmed = coming is Action.WARMUP
        self._step_start = time.perf_counter_ns()

    def _begin(self, now: int) -> None:
        session = CaptureSession(self.output_dir, self.options)
        try:
            session.start()
        except StepscopeError as error:
            warnings.warn(f"stepscope: StepHook skipped a capture ({error})", ProfilerWarning, stacklevel=3)
            return
        self._session, self._window_left, self._step_start = session, self.window_steps, time.perf_counter_ns()

    def _mark_step(self, now: int, number: int | None = None) -> None:
        recording = current_recording()
        if recording is not None:
            recording.add(names.STEPSCOPE_STEP, self._step_start, now, {names.STEP_NUM: self._step if number is None else number})

    def _finish(self) -> None:
        session, self._session = self._session, None
        self._last_capture = time.monotonic()
        if session is None:
            return
        profile = session.collect()
        if profile is not None and self._warmed:
            profile = without_warmup(profile)
        path = session.save(profile) if profile is not None else None
        if path is not None:
            self.paths.append(path)
            if self.on_trace_ready is not None:
                self.on_trace_ready(path)

    def close(self) -> None:
        """Stops a capture still in progress (e.g. the loop ended inside a window)."""
        if self._session is not None:
            self._finish()


def without_warmup(profile: Profile) -> Profile:
    """The profile from its first step marker's start on (what the warm-up steps ran before
    it is dropped, as torch.profiler drops its warm-up); as it is where it has no marker."""
    host = profile.plane(names.HOST_PLANE)
    if host is None:
        return profile
    markers = np.flatnonzero(host.events.step_num >= 0)
    if len(markers) == 0:
        return profile
    return crop(profile, int(host.events.start_ps[markers].min()), np.iinfo(np.int64).max)
