"""Turning tool results into JSON, terminal text and CSV (and the gate's JUnit XML, in
``junit``); one registry, no per-tool code.

JSON is the result's ``to_json()`` form, encoded by ``jsonform`` (NaN, which JSON lacks,
becomes null).
Text prints the result's summary lines and its tables, aligned. CSV writes its tables one
after another, each under a ``# <table>`` line (a single table for the common case of one).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from typing import Any

from stepscope import jsonform
from stepscope.analysis.registry import ToolResult
from stepscope.analysis.tables import Table
from stepscope.render.junit import render_junit

TEXT_ROWS = 25  # rows per table on the terminal; JSON and CSV have them all


def render_json(results: Sequence[ToolResult]) -> str:
    document = {result.tool: result.to_json() for result in results}
    return jsonform.encode(document, indent=2).decode() + "\n"


def cell_text(value: Any) -> str:
    """A table cell as a person reads it (terminal and notebook tables alike)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def text_table(table: Table, limit: int = TEXT_ROWS) -> list[str]:
    header = [column.label for column in table.columns]
    body = [[cell_text(value) for value in row] for row in table.rows[:limit]]
    widths = [max(len(cells[i]) for cells in [header, *body]) for i in range(len(header))]
    numeric = [column.kind == "number" for column in table.columns]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric)).rstrip()

    lines = [f"{table.name} ({len(table.rows)} rows)", line(header), line(["-" * w for w in widths])]
    lines += [line(cells) for cells in body]
    if len(table.rows) > limit:
        lines.append(f"... {len(table.rows) - limit} more rows (use --format csv or json for all)")
    return lines


def render_text(results: Sequence[ToolResult]) -> str:
    out: list[str] = []
    for result in results:
        out += [f"== {result.tool} ==", *result.summary(), ""]
        for table in result.tables():
            if table.rows:
                out += [*text_table(table), ""]
    return "\n".join(out)


def render_csv(results: Sequence[ToolResult]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    tables = [(result.tool, table) for result in results for table in result.tables()]
    for tool_name, table in tables:
        if len(tables) > 1:
            buffer.write(f"# {tool_name}.{table.name}\n")
        write_csv_table(writer, table)
    return buffer.getvalue()


def write_csv_table(writer: Any, table: Table) -> None:
    """One table: a header row of column keys, then the rows (missing values empty)."""
    writer.writerow([column.key for column in table.columns])
    for row in table.rows:
        writer.writerow(["" if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in row])


def table_csv(table: Table) -> str:
    buffer = io.StringIO()
    write_csv_table(csv.writer(buffer, lineterminator="\n"), table)
    return buffer.getvalue()


RENDERERS: dict[str, Callable[[Sequence[ToolResult]], str]] = {
    "text": render_text,
    "json": render_json,
    "csv": render_csv,
    "junit": render_junit,
}


def render(results: Sequence[ToolResult], format_name: str) -> str:
    return RENDERERS[format_name](results)
