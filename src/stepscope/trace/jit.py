"""Compiled loops for the few places where a profile must be walked event by event.

``jit`` is numba's ``njit`` with its machine code cached on disk (next to the module, or
in numba's user cache where that is read-only), so a function compiles once per
installation, not once per process. Modules using it are imported lazily, at their first
use, so that ``import stepscope`` does not load numba. Without numba the functions run as
plain Python (right, but slow).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

_Function = TypeVar("_Function", bound=Callable[..., Any])


def _numba() -> ModuleType | None:
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        return None
    return numba


numba = _numba()


def jit(function: _Function) -> _Function:
    """``function`` compiled; typed as ``function`` itself, which is how it is called (numba's
    dispatcher takes the same arguments and returns what the Python function would)."""
    if numba is None:  # pragma: no cover
        return function
    compiled: _Function = numba.njit(cache=True, nogil=True)(function)
    return compiled
