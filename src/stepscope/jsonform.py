"""JSON for every layer: one encoder and one rule for values JSON has no form for.

- ``encode``: msgspec's encoder, with numpy scalars and arrays as Python numbers and lists.
  A non-finite float becomes null: in a tool's result, NaN means "this profile cannot
  support the number" (no flops recorded, no device), and the page and scripts read null.
- ``trace_value``: a value recorded in a trace (a stat, a Chrome event's args) keeps what
  it said: NaN and Infinity as their text, bytes as "<N bytes>", keys as strings, so the
  details pane shows "inf" where the trace holds inf instead of an empty cell.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec


def _default(value: Any) -> Any:
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if tolist is not None:
        return tolist()
    raise TypeError(f"{type(value).__name__} has no JSON form")


_ENCODER = msgspec.json.Encoder(enc_hook=_default)


def encode(value: Any, *, indent: int | None = None) -> bytes:
    """``value`` as JSON (non-finite floats as null); ``indent`` for a person to read."""
    data = _ENCODER.encode(value)
    return msgspec.json.format(data, indent=indent) if indent is not None else data


def builtins(value: Any) -> Any:
    """``value`` (dataclasses, TypedDicts, numpy scalars...) as dicts, lists and scalars."""
    return msgspec.to_builtins(value, enc_hook=_default)


def trace_value(value: Any) -> Any:
    """A trace's value as JSON shows it (see the module docstring)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict):
        return {str(key): trace_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [trace_value(item) for item in value]
    return value
