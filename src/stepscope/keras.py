"""``stepscope.keras.ProfilerCallback``: capture a window of ``model.fit`` batches.

The TensorBoard callback's ``profile_batch`` for stepscope::

    from stepscope.keras import ProfilerCallback

    model.fit(x, y, epochs=2, callbacks=[ProfilerCallback("logs", profile_batch=(10, 20))])

``profile_batch`` means what it means to ``keras.callbacks.TensorBoard``:

- ``N`` (an int > 0): profile batch N only;
- ``(start, stop)`` (or the string ``"start,stop"``): batches start..stop, both included;
- ``0`` (or ``(0, 0)``): profile nothing.

Batches are counted as TensorBoard counts them: from 1, across epochs (batch 1 of the
second epoch of a 100-batch epoch is batch 101), restarting at each ``fit``. One
``on_train_batch_begin`` call is one batch, so with ``steps_per_execution=k`` a "batch" is
one execution of k steps. Validation batches run between epochs are not counted; when the
window spans an epoch end they are captured but are no step.

The capture starts at the beginning of batch ``start``, before the batch runs, and stops
at the end of batch ``stop``, or at the end of training if fewer batches run. Each profiled
batch is marked as a step (a ``stepscope.step`` event whose ``step_num`` is the batch
number, spanning ``on_train_batch_begin`` .. ``on_train_batch_end``), so the tools find the
steps. Keras calls ``on_train_batch_end`` once the batch's logs are computed, so on every
backend the step's span includes the batch's computation. Each written profile's path is
appended to ``callback.paths``. A capture that cannot start (another one is running)
warns and training goes on.

Keras is imported when ``ProfilerCallback`` is first used, not when this module is
imported. The callback subclasses ``keras.callbacks.Callback`` (Keras 3 on the
TensorFlow, JAX and PyTorch backends; ``tf.keras`` is Keras 3 in TensorFlow >= 2.16), or
``tf_keras.callbacks.Callback`` where ``TF_USE_LEGACY_KERAS`` makes ``tf.keras`` the
legacy Keras 2 package.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

from stepscope.capture.annotations import current_recording
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import CaptureSession, ProfilerWarning
from stepscope.errors import StepscopeError
from stepscope.trace import names

__all__ = ["ProfilerCallback"]  # noqa: F822 - made on first use (module __getattr__), so Keras loads lazily

ProfileBatch = int | str | tuple[int, int] | list[int]


def parse_profile_batch(profile_batch: ProfileBatch) -> tuple[int, int]:
    """``(start, stop)`` of the batches to profile, ``(0, 0)`` for none."""
    value: Any = profile_batch
    if isinstance(value, str):
        try:
            value = tuple(int(part) for part in value.split(","))
        except ValueError:
            value = profile_batch
    if isinstance(value, int) and not isinstance(value, bool):
        start, stop = value, value
    elif isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        start, stop = value
    else:
        start, stop = -1, -1
    if (start, stop) != (0, 0) and not 1 <= start <= stop:
        raise StepscopeError(
            "profile_batch must be 0 (off), a batch number N >= 1, or a pair (start, stop) of batch "
            f"numbers with 1 <= start <= stop (batches count from 1), not {profile_batch!r}"
        )
    return start, stop


class _Profiling:
    """The callback's logic, apart from Keras (mixed into ``ProfilerCallback``)."""

    def __init__(self, log_dir: str | Path, profile_batch: ProfileBatch = 2, options: ProfilerOptions | None = None) -> None:
        super().__init__()
        self.log_dir = Path(log_dir)
        self.start_batch, self.stop_batch = parse_profile_batch(profile_batch)
        self.options = options
        self.paths: list[Path] = []  # every profile this callback wrote, in order
        self._batch = 0  # the global number of the batch running or last run (from 1)
        self._session: CaptureSession | None = None
        self._step_start: int | None = None

    @property
    def enabled(self) -> bool:
        return self.start_batch > 0

    def on_train_begin(self, logs: Any = None) -> None:
        self._finish()  # a capture left open by an interrupted fit ends here
        self._batch = 0

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self._batch += 1
        if self._batch == self.start_batch:
            self._begin()
        if self._session is not None:
            self._step_start = time.perf_counter_ns()

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if self._session is None:
            return
        self._mark_step(time.perf_counter_ns())
        if self._batch >= self.stop_batch:
            self._finish()

    def on_train_end(self, logs: Any = None) -> None:
        self._finish()

    def _begin(self) -> None:
        try:
            session = CaptureSession(self.log_dir, self.options)
            session.start()
        except Exception as error:
            warnings.warn(
                f"stepscope: ProfilerCallback could not start a capture at batch {self._batch} ({error}); training goes on unprofiled",
                ProfilerWarning,
                stacklevel=2,
            )
            return
        self._session = session

    def _mark_step(self, now: int) -> None:
        start, self._step_start = self._step_start, None
        recording = current_recording()
        if recording is not None and start is not None:
            recording.add(names.STEPSCOPE_STEP, start, now, {names.STEP_NUM: self._batch})

    def _finish(self) -> None:
        session, self._session = self._session, None
        self._step_start = None
        if session is None:
            return
        try:
            path = session.stop()
        except Exception as error:
            warnings.warn(f"stepscope: ProfilerCallback could not finish its capture ({error})", ProfilerWarning, stacklevel=2)
            return
        if path is not None:
            self.paths.append(path)


def _callback_base() -> type:
    """The Callback class that ``tf.keras`` / ``keras`` gives this program."""
    if os.environ.get("TF_USE_LEGACY_KERAS", "").strip().lower() in ("1", "true", "yes"):
        try:
            import tf_keras

            legacy: type = tf_keras.callbacks.Callback
            return legacy
        except ImportError:
            pass
    import keras

    base: type = keras.callbacks.Callback
    return base


def _make_callback_class(base: type) -> type:
    return type(
        "ProfilerCallback",
        (_Profiling, base),
        {
            "__module__": __name__,
            "__qualname__": "ProfilerCallback",
            "__doc__": """A Keras callback that profiles the batches ``profile_batch`` names.

    ``ProfilerCallback(log_dir, profile_batch=2, options=None)`` writes
    ``<log_dir>/plugins/profile/<session>/<host>.xplane.pb`` (see the module's docs for
    how batches are counted); ``callback.paths`` lists the profiles written.
    """,
        },
    )


def __getattr__(name: str) -> Any:
    if name == "ProfilerCallback":
        cls = _make_callback_class(_callback_base())
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "ProfilerCallback"])
