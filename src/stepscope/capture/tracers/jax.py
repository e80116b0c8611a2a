"""The JAX tracer: ``jax.profiler`` (TSL's profiler inside jaxlib) for a capture session.

It records what ``jax.profiler.start_trace`` records (TraceMe annotations such as
``jax.profiler.TraceAnnotation`` / ``StepTraceAnnotation``, JAX's dispatch and XLA's
host-side work, and the device planes of the accelerators XLA runs on), lets JAX write
its XSpace into a temporary folder, reads the ``.xplane.pb`` back with stepscope's XSpace
reader and deletes the folder. TSL stamps events relative to the session; the reader
places them on the UNIX clock with the "Task Environment" plane's ``profile_start_time``,
so the profile's ``start_ns`` is an epoch time. No profiler server is started.

The options, as TensorFlow means them, and what JAX makes of them:

=======================  ==================================================================
``host_tracer_level``    passed on (``ProfileOptions.host_tracer_level``, TSL's meaning)
``python_tracer_level``  not passed on: TSL's Python tracer is always off here (see below)
``device_tracer_level``  cannot be passed on: jaxlib does not expose it (an assignment to
                         ``ProfileOptions.device_tracer_level`` is a plain Python attribute
                         that TSL never sees); JAX always traces its devices
``delay_ms``             the capture session's business (it starts the tracers late)
=======================  ==================================================================

Why no Python tracer: TSL's Python tracer installs its hook with ``PyEval_SetProfile``
on every thread, which replaces the ``sys.setprofile`` hook of stepscope's own Python
tracer (measured: after ``start_trace`` the stepscope tracer records no further call,
and does not get its hook back after ``stop_trace``). Python calls are recorded once, by
stepscope's tracer, when ``python_tracer_level`` asks for them.

One profiler at a time: jax.profiler allows one trace per process. If the program (or a
library) is already tracing with ``jax.profiler``, :meth:`JaxTracer.start` raises a
:class:`~stepscope.errors.StepscopeError` and the program's own trace goes on untouched.
A session held at the TSL level instead (a capture through ``jax.profiler.start_server``
in progress) is not visible when the trace starts: jaxlib reports it only at the end, so
:meth:`JaxTracer.stop` raises, and it first clears jax.profiler's state, which jax would
otherwise leave "already started" for the rest of the process.

With TensorFlow in the same process: jaxlib and TensorFlow each carry their own copy of
TSL's profiler, with their own one-session lock and their own TraceMe buffers. Neither
wins: the JAX tracer and the TensorFlow tracer both start, and each records only its own
framework's events (measured with JAX 0.10.2 and TensorFlow 2.21 on the CPU, in either
import and start order). On a GPU both would ask CUPTI for device activity, which allows
one subscriber per process; that case is untested here.

jax is never imported here unless the program already imported it, and a program that
imported TensorFlow is traced with JAX only once JAX has initialized a backend (see
:meth:`JaxTracer.is_available`).
"""

from __future__ import annotations

import dataclasses
import importlib
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.tracers.tsl_output import read_xspace_folder
from stepscope.errors import StepscopeError
from stepscope.trace.model import Profile

# What the returned profile says it was read from (its temporary file is gone by then).
SOURCE = "jax.profiler"
# The temporary folder JAX writes its trace into (removed before stop() returns).
TEMP_PREFIX = "stepscope-jax-"
# TSL's Python tracer level asked for, whatever the options say (see the module doc).
_TSL_PYTHON_TRACER_LEVEL = 0


class JaxTracer:
    """``jax.profiler`` behind stepscope's :class:`~stepscope.capture.tracers.base.Tracer`."""

    name = "jax"
    thread_affine = False

    def __init__(self) -> None:
        self._log_dir: Path | None = None  # JAX's output folder, while recording
        self._session: Any = None  # jax.profiler's session object of this capture

    def is_available(self) -> bool:
        """jax is imported, and either TensorFlow is not, or JAX has initialized a backend.

        TensorFlow imports jax on its own where jax is installed (TensorFlow 2.21's
        ``tensorflow.lite.python.util`` does ``from jax import jit``), so in a TensorFlow
        program ``"jax" in sys.modules`` does not mean the program uses JAX. Starting a JAX
        trace there would initialize JAX's backend (``start_trace`` does), which on a GPU
        takes most of its memory away from TensorFlow. In a program that has imported both,
        JAX is traced once it has run something (made an array, compiled a function)."""
        if "jax" not in sys.modules:
            return False
        if "tensorflow" not in sys.modules:
            return True
        return _backends_initialized()

    def start(self, options: ProfilerOptions) -> None:
        if self._log_dir is not None:
            raise StepscopeError("the jax tracer is already recording; stop it first")
        if "jax" not in sys.modules:
            raise StepscopeError("the jax tracer needs a program that has imported jax")
        jax_profiler = importlib.import_module("jax.profiler")  # jax is loaded: this binds
        profile_options = jax_profiler.ProfileOptions()
        profile_options.host_tracer_level = options.host_tracer_level
        profile_options.python_tracer_level = _TSL_PYTHON_TRACER_LEVEL
        log_dir = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        try:
            if _jax_state_session() is not None:
                raise StepscopeError(
                    "jax.profiler is already tracing in this program (jax.profiler.start_trace or trace); stepscope records no JAX events while it runs"
                )
            jax_profiler.start_trace(str(log_dir), profiler_options=profile_options)
        except BaseException:
            shutil.rmtree(log_dir, ignore_errors=True)
            raise
        self._log_dir = log_dir
        self._session = _jax_state_session()

    def stop(self) -> list[Profile]:
        log_dir, session = self._log_dir, self._session
        self._log_dir = self._session = None
        if log_dir is None:  # never started, or start() failed
            return []
        try:
            jax_profiler = importlib.import_module("jax.profiler")
            try:
                jax_profiler.stop_trace()
            except Exception as error:
                _forget_session(session)
                if "ALREADY_EXISTS" in str(error):
                    raise StepscopeError(
                        "jax.profiler recorded nothing: another profiler session of jaxlib was active when"
                        " the capture started (a capture through jax.profiler.start_server, or another"
                        f" tool); jaxlib said: {error}"
                    ) from error
                raise
            return [dataclasses.replace(profile, source=SOURCE) for profile in read_xspace_folder(log_dir, SOURCE)]
        finally:
            shutil.rmtree(log_dir, ignore_errors=True)


def _backends_initialized() -> bool:
    """Whether JAX has created a backend (client) yet; True where this jax does not say."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    check = getattr(bridge, "backends_are_initialized", None)
    if check is None:
        return True
    try:
        return bool(check())
    except Exception:
        return True


def _jax_state() -> Any:
    """jax.profiler's module-level trace state (private to jax; None where it is not found)."""
    module = sys.modules.get("jax._src.profiler")
    return getattr(module, "_profile_state", None)


def _jax_state_session() -> Any:
    return getattr(_jax_state(), "profile_session", None)


def _forget_session(session: Any) -> None:
    """After a failed ``stop_trace``, clears jax.profiler's state if it still holds this
    capture's session: jax resets it only on success, and would refuse every later trace."""
    state = _jax_state()
    if state is None or session is None or not hasattr(state, "reset"):
        return
    with state.lock:
        if state.profile_session is session:
            state.reset()
