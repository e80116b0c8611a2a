"""Tables: the tabular part of every tool's result, in one shape for every renderer.

A tool result is typed data; the rows a user sorts, searches and exports are a ``Table``
(named, typed columns; rows as tuples), so the JSON, text and CSV renderers, and later the
dashboard, need no per-tool code. In a notebook a table shows its name, columns and row
count (``repr``) or its first rows (``_repr_html_``, from ``stepscope.render.display``), and
becomes a DataFrame (``to_pandas``) or an Arrow table (``to_arrow``), keyed by column key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stepscope.trace import frames


@dataclass(frozen=True)
class Column:
    key: str  # the JSON key scripts rely on
    label: str  # what a person reads in a header
    kind: str = "number"  # "number" | "string" | "bool"


@dataclass(frozen=True, repr=False)
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

    def __repr__(self) -> str:
        from stepscope.render import display  # presentation sits above analysis (tests/test_layers.py)

        return display.table_text(self)

    def _repr_html_(self) -> str:
        from stepscope.render import display

        return display.table_html(self)

    def frame_columns(self) -> list[frames.FrameColumn]:
        return [frames.values_column(column.key, column.kind, [row[i] for row in self.rows]) for i, column in enumerate(self.columns)]

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame``, one column per column key (see ``trace.frames`` for dtypes)."""
        return frames.to_pandas(self.frame_columns())

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` of the same columns."""
        return frames.to_arrow(self.frame_columns())


def ps_to_us(ps: int | float) -> float:
    """Picoseconds as microseconds for display and JSON (exact integers stay alongside)."""
    return ps / 1_000_000


def percent(part: float, whole: float) -> float:
    """part / whole as a percentage in [0, 100]; 0 when the whole is empty."""
    if whole <= 0:
        return 0.0
    return min(100.0, max(0.0, 100.0 * part / whole))
