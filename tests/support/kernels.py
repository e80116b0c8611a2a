"""stepscope's kernels (``stepscope.trace.kernels``) run as their Python functions in this
process, to compare the C with the reference it was written from."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

# Every module holding kernels, imported so that ``kernels.PYTHON`` lists them all.
from stepscope.analysis.paths import schedule  # noqa: F401
from stepscope.trace import (
    kernels,
    presorted,  # noqa: F401
)
from stepscope.trace.formats.xspace import arrows, encode, hot_ids, wire  # noqa: F401
from stepscope.viewer import lod_loop  # noqa: F401

# The kernels, by name, and where each Python function is defined (module, function).
KERNELS = {
    "scan_fields": ("stepscope.trace.formats.xspace.wire", "scan_fields"),
    "decode_lines": ("stepscope.trace.formats.xspace.wire", "decode_lines"),
    "encode_sizes": ("stepscope.trace.formats.xspace.encode", "_sizes"),
    "encode_fill": ("stepscope.trace.formats.xspace.encode", "_fill"),
    "nest": ("stepscope.trace.presorted", "_nest"),
    "highest_flow_id": ("stepscope.trace.formats.xspace.arrows", "_highest_flow_id"),
    "first_outs": ("stepscope.trace.formats.xspace.arrows", "_first_outs"),
    "walk_arrows": ("stepscope.trace.formats.xspace.arrows", "_walk"),
    "scatter_ids": ("stepscope.trace.formats.xspace.hot_ids", "_scatter"),
    "lod_lanes": ("stepscope.viewer.lod_loop", "lod_lanes"),
    "schedule_starts": ("stepscope.analysis.paths.schedule", "_schedule_starts"),
    "walk_chain": ("stepscope.analysis.paths.schedule", "_walk_chain"),
}


@contextlib.contextmanager
def python_kernels() -> Iterator[None]:
    """Inside the block every kernel is its Python function, wherever the package calls it."""
    saved = []
    for function in kernels.PYTHON.values():
        module = sys.modules[function.__module__]
        saved.append((module, function.__name__, getattr(module, function.__name__)))
        setattr(module, function.__name__, function)
    try:
        yield
    finally:
        for module, attribute, value in saved:
            setattr(module, attribute, value)
