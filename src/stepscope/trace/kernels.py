"""The loops that walk a profile event by event, compiled (C) where that was built, else as
their Python, chosen once per process.

The XSpace wire decoder and encoder, the nesting of presorted planes, the bulk reader's
flow pairing and hot id columns and the trace viewer's level of detail are written in
Python, each marked ``@kernel(name)``, and in C (``src/stepscope/kernels/*.c``, the
extension ``stepscope._kernels``, built by ``pip install`` against Python's limited API).
Where the extension imports and ``STEPSCOPE_PURE_PYTHON`` is unset (or "0"), ``@kernel``
puts the C function in the Python one's place; callers see one function either way. The
C takes the same arguments, returns the same values and raises where its arguments'
types, lengths or indexes would make the Python fail; tests compare the two.

Why C, not numba (which compiled these loops before): numba and llvmlite are 208 MB of
install, and a process paid 0.6-0.8 s to import numba and load the loops' machine code from
its cache before its first bulk read, query or write (6 s the first time after an install,
to compile); the C is a ~150 kB library that imports in 0.5 ms and runs the loops as fast: the
10M-event profile of bench/make_big_profile.py is read, written and viewed within 0.96-1.08x
of numba's times, each kernel within 0.6-1.15x (bench/README.md). The Python stays as the
reference the tests hold the C to, and as the fallback where no compiler was at hand: right,
but 50-600x slower (the shared TPU profile's wire decode: 10 s against 17 ms), so without
the C the reader takes protobuf's messages instead (:mod:`stepscope.trace.formats.xspace.decode`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

_Function = TypeVar("_Function", bound=Callable[..., Any])

# Set to anything but "" or "0": the Python code, not the compiled extensions (the
# annotations' ``_spans`` too, see stepscope.capture.annotations).
PURE_PYTHON_ENV = "STEPSCOPE_PURE_PYTHON"


def pure_python() -> bool:
    """Whether ``STEPSCOPE_PURE_PYTHON`` asks for the Python code."""
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def _load() -> ModuleType | None:
    if pure_python():
        return None
    try:
        from stepscope import _kernels
    except ImportError:  # not built (no compiler at install): the Python loops
        return None
    return _kernels


native = _load()
COMPILED = native is not None

# Kernel name -> its Python function (the reference the tests compare the C with).
PYTHON: dict[str, Callable[..., Any]] = {}


def kernel(name: str) -> Callable[[_Function], _Function]:
    """Marks a Python function as kernel ``name``: it is replaced by the compiled one of
    that name when the extension is in use, and kept in ``PYTHON`` either way."""

    def choose(function: _Function) -> _Function:
        PYTHON[name] = function
        if native is None:
            return function
        compiled: _Function = getattr(native, name)
        return compiled

    return choose
