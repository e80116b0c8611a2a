"""A stat and the types of its value, as XSpace types them (an XStat's int64, uint64,
double, string or bytes), and a decoded JSON value typed the same way.

Below both the per-event stores (:mod:`stepscope.trace.stats`) and their bulk columns
(:mod:`stepscope.trace.stat_entries`), which use these types.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, TypeGuard

import msgspec

StatValue = int | float | str | bytes


class StatKind(enum.IntEnum):
    """The XStat value types (ref_value is resolved to STR when read)."""

    INT64 = 0
    UINT64 = 1
    DOUBLE = 2
    STR = 3
    BYTES = 4


INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1


def is_int64(value: Any) -> TypeGuard[int]:
    """An int (not a bool) that fits a signed 64-bit id or time."""
    return isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX


@dataclass(frozen=True, slots=True)
class Stat:
    name: str
    kind: StatKind
    value: StatValue


def stat_from_python(name: str, value: Any) -> Stat:
    """Types a decoded JSON value as XSpace would store it.

    Integers past uint64 and containers have no XStat type and become their JSON text.
    """
    if isinstance(value, bool):
        return Stat(name, StatKind.INT64, int(value))
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return Stat(name, StatKind.INT64, value)
        if 0 <= value <= UINT64_MAX:
            return Stat(name, StatKind.UINT64, value)
        return Stat(name, StatKind.STR, str(value))
    if isinstance(value, float):
        return Stat(name, StatKind.DOUBLE, value)
    if isinstance(value, str):
        return Stat(name, StatKind.STR, value)
    if isinstance(value, bytes):
        return Stat(name, StatKind.BYTES, value)
    return Stat(name, StatKind.STR, _json_text(value))


def _json_text(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        return str(value)
