"""Compiled loops for the few places where a profile must be walked event by event.

``jit`` is numba's ``njit`` with its machine code cached on disk (next to the module, or
in numba's user cache where that is read-only), so a function compiles once per
installation, not once per process. Modules using it are imported lazily, at their first
use, so that ``import stepscope`` does not load numba. Without numba the functions run as
plain Python (right, but slow).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

_Function = TypeVar("_Function", bound=Callable[..., Any])


def _numba() -> ModuleType | None:
    first = "numba" not in sys.modules
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return None
    if first and "scipy.linalg" not in sys.modules:
        _array_math_without_blas_probe()
    return numba


def _array_math_without_blas_probe() -> None:
    """Imports numba's array functions with its BLAS probe answering "none".

    Numba imports them with its CPU target, at the first compiled call, and the import
    probes for BLAS by importing ``scipy.linalg`` where scipy is installed (JAX brings it):
    0.26 s of a fresh process's first XSpace read (0.45 -> 0.20 s, measured), for one
    choice, the inner product of ``np.correlate``/``np.convolve`` in compiled code (BLAS's
    dot or numba's own loop), which stepscope's loops never call. ``np.dot`` and the rest
    of numba's linear algebra import scipy themselves when first compiled, as before; the
    probe is put back at once. Only where stepscope is the first to import numba and
    scipy's linear algebra is not loaded yet (then the probe costs nothing anyway)."""
    try:
        from numba.np import linalg
    except ImportError:  # pragma: no cover - numba's layout changed: nothing to skip
        return
    probe = getattr(linalg, "ensure_blas", None)
    if probe is None:  # pragma: no cover - another numba: its own probe, if any, runs
        return

    def none() -> None:
        raise ImportError("stepscope: numba's BLAS probe skipped")

    linalg.ensure_blas = none  # (arraymath binds it at import and calls it once, then)
    try:
        import numba.np.arraymath  # noqa: F401
    except ImportError:  # pragma: no cover - numba imports it again later, probing then
        pass
    finally:
        linalg.ensure_blas = probe


numba = _numba()


def jit(function: _Function) -> _Function:
    """``function`` compiled; typed as ``function`` itself, which is how it is called (numba's
    dispatcher takes the same arguments and returns what the Python function would)."""
    if numba is None:  # pragma: no cover
        return function
    compiled: _Function = numba.njit(cache=True, nogil=True)(function)
    return compiled
