"""Sizes as people write them in settings ("2GiB", "512M", "1.5G") and read them in messages.

One parser for every size setting (the readers' input limit, the dashboard workers' memory
cap, the export cache's budget), so each accepts the same spellings: a whole or decimal
number with an optional K, M, G or T suffix (powers of 1024, optionally followed by "iB"
or "B").
"""

from __future__ import annotations

import os
import re

from stepscope.errors import StepscopeError

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)
# Values that switch a size setting off.
NO_LIMIT = frozenset({"none", "off", "unlimited", "0"})


def parse_size(text: str) -> int:
    """``"8G"``, ``"512M"``, ``"1.5GiB"``, ``"1048576"`` -> bytes."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a size (give bytes, or a number with K, M, G or T)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def size_setting(name: str, default: int | None) -> int | None:
    """The size in the environment variable ``name``; ``default`` when it is unset or empty;
    None for "none" / "off" / "unlimited" / "0" (no limit)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if text.lower() in NO_LIMIT:
        return None
    try:
        return parse_size(text)
    except ValueError as error:
        raise StepscopeError(f"{name}: {error}; or 'none' for no limit") from None


def size_text(size: int) -> str:
    """``2.0 GiB``, ``512.0 MiB``, ``10 bytes``: a size for a message."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
