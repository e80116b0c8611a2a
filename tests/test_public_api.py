"""The public API is exactly what __all__ says, and every name in it exists."""

from __future__ import annotations

import os
import subprocess
import sys

import stepscope
from tests.support.traces import shared

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
    "Schedule",
    "schedule",
    "profile",
    "start",
    "step",
    "stop",
    "trace",
    "data",
    "notebook",
}


def test_all_is_the_public_api():
    assert set(stepscope.__all__) == EXPECTED
    for name in stepscope.__all__:
        assert hasattr(stepscope, name), name


# Modules that only some uses need: a job that only annotates, or a script that only loads
# a Kineto trace, must not import them (each costs memory for the process's lifetime).
HEAVY = ("google.protobuf", "grpc", "torch", "jax", "stepscope.capture.session", "stepscope.capture.service")


def _imported_after(code: str) -> set[str]:
    """The HEAVY modules a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {{'google', 'grpc', 'torch', 'jax'}} or m.startswith('stepscope.capture.'))))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    )
    return {module for module in result.stdout.split() if module.startswith(HEAVY)}


def test_import_and_a_kineto_load_import_only_what_they_need():
    assert _imported_after("import stepscope\nstepscope.step, stepscope.trace, stepscope.data") == set()
    trace = shared("kineto/alexnet_small.pt.trace.json.gz")
    assert _imported_after(f"import stepscope\nassert stepscope.load({str(trace)!r}).event_count > 0") == set()
    # The lazy names still load what they need, and are then bound, not looked up again.
    assert "google.protobuf" in _imported_after(f"import stepscope\nstepscope.load({str(shared('xplane/tpu_v_inference_4chips.xplane.pb'))!r})")
    assert "stepscope.capture.session" in _imported_after("from stepscope import profile")


def test_lazy_names_are_the_defining_modules_objects():
    from stepscope.capture import annotations, profiling
    from stepscope.trace import readers

    assert stepscope.load is readers.load
    assert stepscope.profile is profiling.profile
    assert stepscope.trace is annotations.trace  # the function, not the stepscope.trace package
    assert "load" in vars(stepscope)  # bound on first use
    assert set(stepscope.__all__) <= set(dir(stepscope))
