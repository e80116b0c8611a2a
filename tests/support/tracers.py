"""What the JAX and TensorFlow tracer tests share: the helpers their child scripts define,
the checks of a capture's summary, and the check that a tracer stays out of a program
that never imported its framework.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

STEPS = 3  # the steps of each scenario's training loop, numbered 0..STEPS-1

# Helpers the child scripts define (formatted into them as ``{helpers}``). ``describe`` sums up
# what a tracer's stop() returned, read through stepscope's model: the step numbers are
# the ``EventTable.step_num`` values of the events named "train", in time order.
CHILD_HELPERS = """
import tempfile
from stepscope.capture.options import ProfilerOptions
from stepscope.errors import StepscopeError

SCRATCH = OUT / "tmp"
SCRATCH.mkdir()
tempfile.tempdir = str(SCRATCH)


def left_behind():
    return sorted(path.name for path in SCRATCH.iterdir())


def describe(profiles, before_ns=None, after_ns=None, name="train"):
    summary = {"count": len(profiles), "before_ns": before_ns, "after_ns": after_ns}
    if not profiles:
        return summary
    profile = profiles[0]
    try:
        profile.validate()
        summary["invalid"] = None
    except Exception as error:
        summary["invalid"] = repr(error)
    marks = []
    for plane in profile.planes:
        for row in range(len(plane.events)):
            if plane.event_name(row) == name:
                marks.append((int(plane.events.start_ps[row]), int(plane.events.step_num[row]), plane.name))
    marks.sort()
    summary.update(
        start_ns=profile.start_ns,
        span_ps=profile.span_ps,
        source=profile.source,
        format=profile.format,
        planes={plane.name: len(plane.events) for plane in profile.planes},
        steps=[step for _, step, _ in marks],
        step_planes=sorted({plane for *_, plane in marks}),
    )
    return summary
"""


def ours(names: list[str], prefix: str) -> list[str]:
    return [name for name in names if name.startswith(prefix)]


def assert_capture(summary: dict, source: str) -> None:
    """One valid XSpace profile with STEPS "train" events numbered 0..STEPS-1, whose time 0
    lies between the clock readings taken before start() and after stop()."""
    assert summary["count"] == 1
    assert summary["invalid"] is None, summary["invalid"]
    assert summary["format"] == "xspace" and summary["source"] == source
    assert summary["steps"] == list(range(STEPS))
    assert summary["before_ns"] <= summary["start_ns"] <= summary["after_ns"]
    # The last event ends before stop() returned, too (span_ps is from time 0, in ps).
    assert summary["start_ns"] + summary["span_ps"] // 1000 <= summary["after_ns"]


def check_unavailable(module: str, class_name: str, framework: str) -> None:
    """In a fresh interpreter that never imported ``framework``: the tracer says it is not
    available, the session does not pick it, and neither imports the framework."""
    code = textwrap.dedent(
        f"""
        import json, sys
        from {module} import {class_name}
        from stepscope.capture.session import default_tracers
        print(json.dumps({{
            "available": {class_name}().is_available(),
            "session_picks": [tracer.name for tracer in default_tracers()],
            "imported": {framework!r} in sys.modules,
        }}))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["available"] is False
    assert result["imported"] is False
    assert class_name not in result["session_picks"] and framework not in result["session_picks"]
