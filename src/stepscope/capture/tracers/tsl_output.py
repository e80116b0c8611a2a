"""Reading back what a TSL-based profiler (JAX, TensorFlow) wrote into a temporary logdir,
and keeping the line TSL logs about that folder out of the user's stderr."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
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


@contextlib.contextmanager
def without_lines(marker: bytes) -> Iterator[None]:
    """Runs the block with the process's stderr (file descriptor 2, where TSL's C++ logging
    writes) held in a temporary file, then writes it on without the lines that hold
    ``marker``. Whatever else was written meanwhile, by any thread, comes out after the
    block, in order. Where descriptor 2 cannot be duplicated (closed), the block runs as is."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    with tempfile.TemporaryFile() as held:
        sys.stderr.flush()
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            rest = memoryview(b"".join(line for line in held.read().splitlines(keepends=True) if marker not in line))
            while rest:
                rest = rest[os.write(2, rest) :]
