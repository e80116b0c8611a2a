"""stepscope: a performance profiler for machine-learning training jobs in Python.

The public API is what ``__all__`` lists; everything else may change.

Only the annotations (``step``, ``trace``, ``data``) and the errors load with the package:
a training job that only annotates, or a script that only loads a trace, should not pay
for importing capture, protobuf or grpc (every module costs memory for as long as the
process lives: ~8 MB of RSS in all, a tenth of a trace load's peak). Every other name
loads on first use and is then bound here, so later uses are plain attribute reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.2.0"

# Eager, and in this order: the annotations are the hot path (a bound attribute, never the
# module __getattr__), and importing them imports the ``stepscope.trace`` package first,
# so that the function ``trace`` is what this module's ``trace`` attribute stays.
from stepscope import data  # stepscope.data.instrument / stage, as the docs write them
from stepscope.capture.annotations import step, trace
from stepscope.errors import ProfileFormatError, StepscopeError

if TYPE_CHECKING:
    from stepscope.capture.client import HostResult, capture_remote
    from stepscope.capture.hooks import StepHook
    from stepscope.capture.options import ProfilerOptions
    from stepscope.capture.profiling import profile
    from stepscope.capture.schedule import Schedule, schedule
    from stepscope.capture.service import ProfilerServer, start_server, stop_server
    from stepscope.capture.session import CaptureSession, ProfilerWarning, start, stop
    from stepscope.trace.logdir import Host, Run, discover, make_path, parse_path
    from stepscope.trace.model import EventMetadata, EventTable, FlowTable, Line, Plane, Profile
    from stepscope.trace.readers import load
    from stepscope.trace.writers import save

__all__ = [
    "CaptureSession",
    "EventMetadata",
    "EventTable",
    "FlowTable",
    "Host",
    "HostResult",
    "Line",
    "Plane",
    "Profile",
    "ProfileFormatError",
    "ProfilerOptions",
    "ProfilerServer",
    "ProfilerWarning",
    "Run",
    "Schedule",
    "StepHook",
    "StepscopeError",
    "__version__",
    "capture_remote",
    "data",
    "discover",
    "load",
    "make_path",
    "notebook",
    "parse_path",
    "profile",
    "save",
    "schedule",
    "start",
    "start_server",
    "step",
    "stop",
    "stop_server",
    "trace",
]

# Public name -> the module that defines it, imported on first use.
_LAZY = {
    "CaptureSession": "stepscope.capture.session",
    "ProfilerWarning": "stepscope.capture.session",
    "profile": "stepscope.capture.profiling",
    "start": "stepscope.capture.session",
    "stop": "stepscope.capture.session",
    "StepHook": "stepscope.capture.hooks",
    "Schedule": "stepscope.capture.schedule",
    "schedule": "stepscope.capture.schedule",
    "ProfilerOptions": "stepscope.capture.options",
    "HostResult": "stepscope.capture.client",
    "capture_remote": "stepscope.capture.client",
    "ProfilerServer": "stepscope.capture.service",
    "start_server": "stepscope.capture.service",
    "stop_server": "stepscope.capture.service",
    "Host": "stepscope.trace.logdir",
    "Run": "stepscope.trace.logdir",
    "discover": "stepscope.trace.logdir",
    "make_path": "stepscope.trace.logdir",
    "parse_path": "stepscope.trace.logdir",
    "EventMetadata": "stepscope.trace.model",
    "EventTable": "stepscope.trace.model",
    "FlowTable": "stepscope.trace.model",
    "Line": "stepscope.trace.model",
    "Plane": "stepscope.trace.model",
    "Profile": "stepscope.trace.model",
    "load": "stepscope.trace.readers",
    "save": "stepscope.trace.writers",
}
# Public submodules, imported on first use: ``stepscope.notebook.show(...)`` after ``import stepscope``.
_SUBMODULES = {"notebook": "stepscope.notebook"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    submodule = _SUBMODULES.get(name)
    if module is None and submodule is None:
        raise AttributeError(f"module 'stepscope' has no attribute {name!r}")
    import importlib

    value = importlib.import_module(submodule) if submodule else getattr(importlib.import_module(module or ""), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
