"""The TensorFlow tracer: ``tf.profiler.experimental`` (TSL's profiler inside TensorFlow).

It records what ``tf.profiler.experimental.start`` records (TraceMe annotations such as
``tf.profiler.experimental.Trace``, TensorFlow's op and function execution on the host,
and the device planes of the accelerators TensorFlow runs on), lets TensorFlow write its
XSpace into a temporary folder, reads the ``.xplane.pb`` back with stepscope's XSpace
reader and deletes the folder. The reader places TSL's session-relative times on the UNIX
clock with the "Task Environment" plane's ``profile_start_time``, so the profile's
``start_ns`` is an epoch time. No profiler server is started.

The options, as TensorFlow means them:

=======================  ==================================================================
``host_tracer_level``    passed on (``tf.profiler.experimental.ProfilerOptions``)
``device_tracer_level``  passed on
``python_tracer_level``  passed on as 0: TSL's Python tracer replaces the ``sys.setprofile``
                         hook of stepscope's own Python tracer, which records Python calls
                         when asked (see ``stepscope.capture.tracers.jax``)
``delay_ms``             the capture session's business (it starts the tracers late)
=======================  ==================================================================

Each level is passed as a ``Level``, not a Python int. TensorFlow 2.21's binding hands
TSL each option as a C++ variant of bool, int and string, and a Python int (a float, a
numpy integer, a string alike) does not arrive as the int: TSL's session manager logs
"host_tracer_level expects an i value" (``i``: int's mangled type name) for every option
and traces at its defaults (host level 2, device level 1, whatever was asked). That is
what pybind11 does when it tries bool before int, since any object with a truth value
converts to a bool; an object with ``__index__`` and no ``__bool__`` fails that and
arrives as an int. Measured on TensorFlow 2.21 on the CPU: no warning, and a 3-step
``tf.function`` loop records 0, 36 and 84 host events at levels 0, 1 and 2
(``tests/capture/test_tf_tracer.py``). TensorFlow releases that cast the options to ints
directly take a ``Level`` as one too.

TensorFlow writes its XSpace into a temporary folder, which is gone when ``stop`` returns,
and logs "Collecting XSpace to repository: <that folder>/...": that line, naming a folder
the user never sees, is kept out of the process's stderr (``tsl_output.without_lines``);
the rest of what TensorFlow logs meanwhile is passed on.

One profiler at a time: TensorFlow allows one profiler session per process. If the
program is already profiling with ``tf.profiler.experimental.start`` (or a Keras
TensorBoard callback with ``profile_batch``), or a capture through TensorFlow's profiler
server is under way, :meth:`TensorFlowTracer.start` raises a
:class:`~stepscope.errors.StepscopeError` and the other session goes on untouched. In
the second case TensorFlow keeps the session that failed to start as its current one and
would refuse every later ``start``; the tracer clears it.

With JAX in the same process: TensorFlow and jaxlib each carry their own copy of TSL's
profiler, with their own one-session lock and their own TraceMe buffers, so neither wins:
both tracers start and each records only its own framework's events (measured with
TensorFlow 2.21 and JAX 0.10.2 on the CPU, in either order). On a GPU both would ask CUPTI
for device activity, which allows one subscriber per process; that case is untested here.
TensorFlow 2.21 imports jax by itself where jax is installed; the JAX tracer stays out of
such a program until JAX has initialized a backend (``JaxTracer.is_available``).

tensorflow is never imported here unless the program already imported it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.tracers.tsl_output import read_xspace_folder, without_lines
from stepscope.errors import StepscopeError
from stepscope.trace.model import Profile

# What the returned profile says it was read from (its temporary file is gone by then).
SOURCE = "tf.profiler"
# The temporary folder TensorFlow writes its trace into (removed before stop() returns).
TEMP_PREFIX = "stepscope-tensorflow-"
# What TSL logs when it writes the XSpace into the temporary folder (save_profile.cc).
EXPORT_LINE = b"Collecting XSpace to repository:"
# TensorFlow's Python module holding the running profiler (private to TensorFlow).
_PROFILER_MODULE = "tensorflow.python.profiler.profiler_v2"


class Level:
    """An option's value as TensorFlow's binding reads an int: convertible by ``__index__``,
    with no truth value of its own (see the module's docstring)."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return repr(self.value)


class TensorFlowTracer:
    """``tf.profiler.experimental`` behind stepscope's :class:`~stepscope.capture.tracers.base.Tracer`."""

    name = "tensorflow"
    thread_affine = False

    def __init__(self) -> None:
        self._log_dir: Path | None = None  # TensorFlow's output folder, while recording

    def is_available(self) -> bool:
        return "tensorflow" in sys.modules

    def start(self, options: ProfilerOptions) -> None:
        if self._log_dir is not None:
            raise StepscopeError("the tensorflow tracer is already recording; stop it first")
        if "tensorflow" not in sys.modules:
            raise StepscopeError("the tensorflow tracer needs a program that has imported tensorflow")
        tf = sys.modules["tensorflow"]
        experimental = tf.profiler.experimental
        tf_options = experimental.ProfilerOptions(
            host_tracer_level=Level(options.host_tracer_level),
            python_tracer_level=Level(0),
            device_tracer_level=Level(options.device_tracer_level),
            delay_ms=Level(0),
        )
        log_dir = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
        program_profiling = _running_profiler() is not None
        try:
            experimental.start(str(log_dir), options=tf_options)
        except Exception as error:
            shutil.rmtree(log_dir, ignore_errors=True)
            if type(error).__name__ != "AlreadyExistsError":
                raise
            if program_profiling:
                raise StepscopeError(
                    "TensorFlow's profiler is already running in this program (tf.profiler.experimental.start,"
                    " or a Keras TensorBoard callback with profile_batch); stepscope records no TensorFlow"
                    " events while it runs"
                ) from error
            _forget_failed_start(experimental)
            raise StepscopeError(
                "another TensorFlow profiler session is active in this process (probably a capture through"
                " TensorFlow's profiler server); stepscope records no TensorFlow events while it runs"
            ) from error
        except BaseException:
            shutil.rmtree(log_dir, ignore_errors=True)
            raise
        self._log_dir = log_dir

    def stop(self) -> list[Profile]:
        log_dir, self._log_dir = self._log_dir, None
        if log_dir is None:  # never started, or start() failed
            return []
        try:
            with without_lines(EXPORT_LINE):
                sys.modules["tensorflow"].profiler.experimental.stop()
            return [dataclasses.replace(profile, source=SOURCE) for profile in read_xspace_folder(log_dir, SOURCE)]
        finally:
            shutil.rmtree(log_dir, ignore_errors=True)


def _running_profiler() -> Any:
    """TensorFlow's current profiler session object, None when there is none (or where this
    TensorFlow keeps it elsewhere)."""
    return getattr(sys.modules.get(_PROFILER_MODULE), "_profiler", None)


def _forget_failed_start(experimental: Any) -> None:
    """TensorFlow keeps a session whose start failed because TSL's lock was taken as its
    current profiler (``profiler_v2.start`` resets it for every other error); ``stop``
    with ``save=False`` forgets it without exporting. Only called when there was no
    session before this start, so the program's own is never the one forgotten."""
    if _running_profiler() is None:
        return
    with contextlib.suppress(Exception):
        experimental.stop(save=False)
