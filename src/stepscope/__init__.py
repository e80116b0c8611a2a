"""stepscope: a performance profiler for machine-learning training jobs in Python.

The public API is what ``__all__`` lists; everything else may change.
"""

from __future__ import annotations

__version__ = "0.1.0"

from stepscope import data  # stepscope.data.instrument / stage, as the docs write them
from stepscope.capture.annotations import step, trace
from stepscope.capture.hooks import StepHook
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.session import CaptureSession, ProfilerWarning, profile, start, stop
from stepscope.errors import ProfileFormatError, StepscopeError
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
    "StepHook",
    "StepscopeError",
    "__version__",
    "capture_remote",
    "data",
    "discover",
    "load",
    "make_path",
    "parse_path",
    "profile",
    "save",
    "start",
    "start_server",
    "step",
    "stop",
    "stop_server",
    "trace",
]

# The profiler service and remote capture need grpc; a training job that only annotates
# should not pay for importing it, so these load on first use.
_LAZY = {
    "HostResult": "stepscope.capture.client",
    "capture_remote": "stepscope.capture.client",
    "ProfilerServer": "stepscope.capture.service",
    "start_server": "stepscope.capture.service",
    "stop_server": "stepscope.capture.service",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'stepscope' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
