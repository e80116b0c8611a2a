"""``StepHook``: profiling from a hand-written training loop, every N steps or S seconds.

The seed workflow's Estimator ``ProfilerHook(save_steps, save_secs, output_dir)`` for any
loop: call ``hook.step()`` once per iteration; when a capture is due the hook starts one,
and after ``window_steps`` more steps stops it, marking each captured step with a
``stepscope.step`` annotation so the tools see the steps. A capture that cannot start
(another one is running) is skipped with a warning.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

from stepscope.capture import annotations, handoff
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import CaptureSession, ProfilerWarning
from stepscope.errors import StepscopeError
from stepscope.trace import names


class StepHook:
    def __init__(
        self,
        output_dir: str | Path,
        save_steps: int | None = None,
        save_secs: float | None = None,
        options: ProfilerOptions | None = None,
        window_steps: int = 1,
    ) -> None:
        if (save_steps is None) == (save_secs is None):
            raise StepscopeError("StepHook needs exactly one of save_steps or save_secs")
        if (save_steps is not None and save_steps < 1) or (save_secs is not None and save_secs <= 0) or window_steps < 1:
            raise StepscopeError("StepHook: save_steps, save_secs and window_steps must be positive")
        self.output_dir = Path(output_dir)
        self.save_steps = save_steps
        self.save_secs = save_secs
        self.options = options
        self.window_steps = window_steps
        self.paths: list[Path] = []  # every profile written so far
        self._step = 0
        self._last_capture = time.monotonic()
        self._session: CaptureSession | None = None
        self._window_left = 0
        self._step_start = 0

    def _due(self) -> bool:
        if self.save_steps is not None:
            return self._step % self.save_steps == 0
        return time.monotonic() - self._last_capture >= self.save_secs  # type: ignore[operator]

    def step(self) -> None:
        """Call once per training iteration, at its end."""
        if handoff.pending:
            handoff.run_pending()
        self._step += 1
        now = time.perf_counter_ns()
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

    def _begin(self, now: int) -> None:
        session = CaptureSession(self.output_dir, self.options)
        try:
            session.start()
        except StepscopeError as error:
            warnings.warn(f"stepscope: StepHook skipped a capture ({error})", ProfilerWarning, stacklevel=3)
            return
        self._session, self._window_left, self._step_start = session, self.window_steps, time.perf_counter_ns()

    def _mark_step(self, now: int) -> None:
        recording = annotations.current_recording()
        if recording is not None:
            recording.add(names.STEPSCOPE_STEP, self._step_start, now, {names.STEP_NUM: self._step})

    def _finish(self) -> None:
        session, self._session = self._session, None
        self._last_capture = time.monotonic()
        path = session.stop() if session is not None else None
        if path is not None:
            self.paths.append(path)

    def close(self) -> None:
        """Stops a capture still in progress (e.g. the loop ended inside a window)."""
        if self._session is not None:
            self._finish()
