"""Compiled loops for the few places where a profile must be walked event by event.

``jit`` is numba's ``njit`` with its machine code cached on disk (next to the module, or
in numba's user cache where that is read-only), so a function compiles once per
installation, not once per process. Modules using it are imported lazily, at their first
use, so that ``import stepscope`` does not load numba. Without numba the functions run as
plain Python (right, but slow).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency
    numba = None


def jit(function: Callable[..., Any]) -> Callable[..., Any]:
    if numba is None:  # pragma: no cover
        return function
    return numba.njit(cache=True, nogil=True)(function)
