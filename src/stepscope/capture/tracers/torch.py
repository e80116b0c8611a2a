"""The PyTorch tracer: torch.profiler (Kineto) for a capture session.

It records what ``torch.profiler.profile`` records (aten ops, autograd, ``record_function``
ranges on the host; kernels, copies and runtime calls on the accelerator), exports the
Kineto trace with ``export_chrome_trace`` into a temporary folder, reads it back with
stepscope's Kineto reader and deletes the folder. Kineto's ``baseTimeNanoseconds`` + ``ts``
is a UNIX epoch time, so the profile's ``start_ns`` needs no shifting.

The options, as TensorFlow means them:

=======================  ==================================================================
``host_tracer_level``    0, 1: no torch ops (1 is annotations only, which stepscope's own
                         annotation tracer records); 2: CPU ops; 3: CPU ops with input
                         shapes, memory events, Python stacks and FLOP estimates
``device_tracer_level``  1: the accelerator torch reports available (CUDA, XPU, ...), when
                         Kineto supports it; 0: none
=======================  ==================================================================

With nothing to record (no CPU ops asked for, no accelerator) the tracer starts nothing
and ``stop`` returns no profile. torch is never imported here unless the program already
imported it.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol

from stepscope.capture.options import ProfilerOptions
from stepscope.errors import StepscopeError
from stepscope.trace.model import Profile
from stepscope.trace.readers import load

# What the returned profile says it was read from (its temporary file is gone by then).
SOURCE = "torch.profiler"
# The temporary folder the trace is exported into (removed before stop() returns).
TEMP_PREFIX = "stepscope-torch-"

# Host level from which torch's CPU ops are traced, and from which the verbose extras are on.
_HOST_OPS_LEVEL = 2
_HOST_VERBOSE_LEVEL = 3


class _TorchProfile(Protocol):
    """What the tracer uses of a ``torch.profiler.profile`` (whose own methods are unannotated)."""

    def __enter__(self) -> object: ...
    def __exit__(self, kind: None, error: None, traceback: None, /) -> object: ...
    def export_chrome_trace(self, path: str) -> object: ...


class TorchTracer:
    """``torch.profiler`` behind stepscope's :class:`~stepscope.capture.tracers.base.Tracer`."""

    name = "torch"
    # torch records the ops of the thread that enabled its profiler (see capture/handoff.py).
    thread_affine = True

    def __init__(self) -> None:
        self._profiler: _TorchProfile | None = None  # the entered torch.profiler.profile, while recording
        self._halted = False

    def is_available(self) -> bool:
        if "torch" not in sys.modules:
            return False
        try:
            profiler = importlib.import_module("torch.profiler")
        except Exception:
            return False
        return hasattr(profiler, "profile") and hasattr(profiler, "ProfilerActivity")

    def start(self, options: ProfilerOptions) -> None:
        if self._profiler is not None:
            raise StepscopeError("the torch tracer is already recording; stop it first")
        torch = sys.modules.get("torch")
        if torch is None:
            raise StepscopeError("the torch tracer needs a program that has imported torch")
        import torch.profiler as torch_profiler  # torch is loaded already: this binds, not loads

        activities = _activities(torch, torch_profiler, options)
        if not activities:
            # An empty list would make torch trace everything it supports: start nothing.
            return
        if _profiler_active(torch):
            # torch allows one profiler per process, and it would start "inside" another
            # without complaint, then stop the program's own when stopped.
            raise StepscopeError("a torch profiler is already running in this program; stepscope does not trace torch ops while it runs")
        verbose = options.host_tracer_level >= _HOST_VERBOSE_LEVEL
        profiler: _TorchProfile = torch_profiler.profile(
            activities=activities,
            record_shapes=verbose,
            profile_memory=verbose,
            with_stack=verbose,
            with_flops=verbose,
        )
        profiler.__enter__()
        self._profiler, self._halted = profiler, False

    def will_record(self, options: ProfilerOptions) -> bool:
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        import torch.profiler as torch_profiler

        return bool(_activities(torch, torch_profiler, options))

    def install_boundary(self) -> None:
        install_step_boundary()

    def halt(self) -> None:
        if self._profiler is not None and not self._halted:
            self._halted = True
            self._profiler.__exit__(None, None, None)

    def stop(self) -> list[Profile]:
        self.halt()
        profiler, self._profiler = self._profiler, None
        if profiler is None:  # never started, nothing to record, or start() failed
            return []
        with tempfile.TemporaryDirectory(prefix=TEMP_PREFIX) as folder:
            path = Path(folder) / "torch.pt.trace.json"
            profiler.export_chrome_trace(str(path))
            profile = load(path)
        return [dataclasses.replace(profile, source=SOURCE)]


_boundary_hook: Any = None


def install_step_boundary() -> None:
    """Makes every PyTorch optimizer ``step()`` a step boundary (see capture/handoff.py), so
    a remote capture reaches the training thread of a job that never calls
    ``stepscope.step``. Installed once per process and never removed: torch iterates its
    global hook dict on every ``step()``, and changing it from another thread during that
    loop would raise in the job; the hook itself costs one list check per step."""
    global _boundary_hook
    if _boundary_hook is not None or "torch" not in sys.modules:
        return
    # torch.optim deletes its `optimizer` attribute: import the module by name (loaded already).
    register = getattr(importlib.import_module("torch.optim.optimizer"), "register_optimizer_step_pre_hook", None)
    if register is None:  # torch < 2.0
        return
    from stepscope.capture import handoff

    def at_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if handoff.pending:
            handoff.run_pending()

    _boundary_hook = register(at_step)


def _activities(torch: Any, torch_profiler: Any, options: ProfilerOptions) -> list[Any]:
    """The ProfilerActivity values the options ask for, among those Kineto supports here."""
    activity = torch_profiler.ProfilerActivity
    supported = set(torch_profiler.supported_activities())
    wanted = []
    if options.host_tracer_level >= _HOST_OPS_LEVEL:
        wanted.append(activity.CPU)
    if options.device_tracer_level >= 1:
        device = _device_activity(torch, activity)
        if device is not None:
            wanted.append(device)
    return [item for item in wanted if item in supported]


def _profiler_active(torch: Any) -> bool:
    enabled = getattr(torch.autograd, "_profiler_enabled", None)
    return bool(enabled()) if enabled is not None else False


def _device_activity(torch: Any, activity: Any) -> Any:
    """The activity of the accelerator torch reports available (CUDA, XPU, MTIA, HPU or a
    PrivateUse1 backend), or None (no accelerator, or one Kineto cannot trace, like MPS)."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        if not accelerator.is_available():
            return None
        device = accelerator.current_accelerator()
        kind = getattr(device, "type", None)
        if not kind:
            return None
        private_use = getattr(torch._C, "_get_privateuse1_backend_name", lambda: None)()
        if kind == private_use:
            return getattr(activity, "PrivateUse1", None)
        return getattr(activity, kind.upper(), None)
    # Releases before torch.accelerator (2.6): CUDA (ROCm reports itself as CUDA too).
    return activity.CUDA if torch.cuda.is_available() else None
