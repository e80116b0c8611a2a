"""Which frameworks a profile's events come from, for the pages that say something about
the framework: the overview's run environment and the memory profile's reason for having
no memory events (what records memory differs per framework)."""

from __future__ import annotations

import re

from stepscope.trace.kinds import writer_framework
from stepscope.trace.model import Profile

PYTORCH, JAX, TENSORFLOW, PYTHON = "PyTorch", "JAX", "TensorFlow", "Python"

# A framework is named when an event type of the profile shows its hand (a capture may
# hold several: a stepscope capture of a PyTorch job is XSpace with torch's ops in it).
FRAMEWORK_MARKERS = {
    PYTORCH: re.compile(r"^aten::|^ProfilerStep#\d+$|^autograd::"),
    JAX: re.compile(r"^PjitFunction|^jit_|^pjit"),
    TENSORFLOW: re.compile(r"^__inference_|^EagerExecute$|^IteratorGetNext|^tf\.|^Iterator::"),
}


def found_frameworks(profile: Profile) -> list[str]:
    """The frameworks whose events the profile holds, in FRAMEWORK_MARKERS' order; [PYTHON]
    for a stepscope capture of none, [] when nothing tells (a trace of unknown origin)."""
    found = [
        name for name, marker in FRAMEWORK_MARKERS.items() if any(marker.search(event_name) for plane in profile.planes for event_name in plane.metadata.names)
    ]
    if found:
        return found
    writer = writer_framework(profile.format)  # a format only one framework writes names it
    if writer is not None:
        return [writer]
    captured = any(name.startswith("stepscope.") for plane in profile.planes for name in plane.metadata.names)
    return [PYTHON] if captured else []


def frameworks(profile: Profile) -> str:
    """The frameworks in one name ("PyTorch", "JAX + TensorFlow", "Python", "" unknown)."""
    return " + ".join(found_frameworks(profile))
