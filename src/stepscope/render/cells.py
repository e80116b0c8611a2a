"""One cell of a table as a person reads it (text tables, Markdown, HTML): the same numbers
written the same way in every format, so a figure pasted from one matches the others."""

from __future__ import annotations

import math
from typing import Any

NAME_CHARS = 60  # longer texts (C++ kernel signatures, XLA ops' HLO) are cut to this


def cell(value: Any, limit: int = NAME_CHARS) -> str:
    """``-`` for a missing value, yes/no, grouped numbers (3 decimals below a million)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def duration_us(us: float) -> str:
    """A time in microseconds in the unit that reads best: s, ms or us."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:,.3f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:,.3f} ms"
    return f"{us:,.1f} us"
