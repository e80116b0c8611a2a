"""Tables: the tabular part of every tool's result, in one shape for every renderer.

A tool result is typed data; the rows a user sorts, searches and exports are a ``Table``
(named, typed columns; rows as tuples), so the JSON, text and CSV renderers, and later the
dashboard, need no per-tool code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Column:
    key: str  # the JSON key scripts rely on
    label: str  # what a person reads in a header
    kind: str = "number"  # "number" | "string" | "bool"


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    rows: list[tuple[Any, ...]]

    @classmethod
    def of(cls, name: str, columns: tuple[Column, ...], records: Iterable[Mapping[str, Any]]) -> Table:
        """A table of ``records`` (a result's row dicts), one column per key; a key a record
        lacks is a missing value."""
        return cls(name, columns, [tuple(record.get(column.key) for column in columns) for record in records])

    def records(self) -> list[dict[str, Any]]:
        keys = [column.key for column in self.columns]
        return [dict(zip(keys, row)) for row in self.rows]


def ps_to_us(ps: int | float) -> float:
    """Picoseconds as microseconds for display and JSON (exact integers stay alongside)."""
    return ps / 1_000_000


def percent(part: float, whole: float) -> float:
    """part / whole as a percentage in [0, 100]; 0 when the whole is empty."""
    if whole <= 0:
        return 0.0
    return min(100.0, max(0.0, 100.0 * part / whole))
