"""Reading back what a TSL-based profiler (JAX, TensorFlow) wrote into a temporary logdir."""

from __future__ import annotations

from pathlib import Path

from stepscope.errors import ProfileFormatError, StepscopeError
from stepscope.trace.logdir import XPLANE_SUFFIX, discover
from stepscope.trace.model import Profile
from stepscope.trace.readers import load


def read_xspace_folder(log_dir: Path, source: str) -> list[Profile]:
    """Every ``<host>.xplane.pb`` that TSL wrote under ``log_dir`` (TensorBoard's layout),
    loaded; ``source`` names the writer in the error raised when there is none."""
    try:
        runs = discover(log_dir)
    except ProfileFormatError:
        runs = []
    paths = [host.path for run in runs for host in run.hosts if host.path.name.endswith(XPLANE_SUFFIX)]
    if not paths:
        raise StepscopeError(f"{source} wrote no {XPLANE_SUFFIX} file")
    return [load(path) for path in paths]
