"""The public API is exactly what __all__ says, and every name in it exists."""

from __future__ import annotations

import stepscope

EXPECTED = {
    "EventMetadata",
    "EventTable",
    "FlowTable",
    "Host",
    "Line",
    "Plane",
    "Profile",
    "ProfileFormatError",
    "Run",
    "StepscopeError",
    "__version__",
    "discover",
    "load",
    "make_path",
    "parse_path",
    "save",
    "HostResult",
    "ProfilerServer",
    "capture_remote",
    "start_server",
    "stop_server",
    "CaptureSession",
    "ProfilerOptions",
    "ProfilerWarning",
    "StepHook",
    "profile",
    "start",
    "step",
    "stop",
    "trace",
    "data",
}


def test_all_is_the_public_api():
    assert set(stepscope.__all__) == EXPECTED
    for name in stepscope.__all__:
        assert hasattr(stepscope, name), name
