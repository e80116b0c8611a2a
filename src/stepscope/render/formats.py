"""Turning tool results into JSON, terminal text and CSV, and (in their own modules) the
gate's JUnit XML, GitHub Actions annotations, and the report to share as Markdown or one
HTML file; one registry of formats (``FORMATS``), no per-tool code.

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
from dataclasses import dataclass
from typing import Any

from stepscope import jsonform
from stepscope.analysis.registry import ToolResult
from stepscope.analysis.tables import Table
from stepscope.render.cells import cell
from stepscope.render.github import render_github
from stepscope.render.html import read_script, render_html
from stepscope.render.junit import render_junit
from stepscope.render.markdown import render_markdown

TEXT_ROWS = 25  # rows per table on the terminal; JSON and CSV have them all


def render_json(results: Sequence[ToolResult]) -> str:
    document = {result.tool: result.to_json() for result in results}
    return jsonform.encode(document, indent=2).decode() + "\n"


def text_table(table: Table, limit: int = TEXT_ROWS) -> list[str]:
    header = [column.label for column in table.columns]
    body = [[cell(value) for value in row] for row in table.rows[:limit]]
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


# What the report to share (HTML, Markdown) shows when no --tool is given: the overview
# (figures, verdict, step-time chart), then the top ops, kernels and input breakdown.
REPORT_TOOLS = ("overview_page", "framework_op_stats", "kernel_stats", "input_pipeline_analyzer")


@dataclass(frozen=True)
class Format:
    """An output format: how it renders results, the tools ``report`` runs for it when none
    is chosen (empty: the command's default tool), whether ``diff`` also appends the
    Markdown summary to GitHub's step summary file, and a check that it can render at all
    (run before any profile is loaded: html's built script)."""

    render: Callable[[Sequence[ToolResult]], str]
    tools: tuple[str, ...] = ()
    step_summary: bool = False
    check: Callable[[], object] = lambda: None


FORMATS: dict[str, Format] = {
    "text": Format(render_text),
    "json": Format(render_json),
    "csv": Format(render_csv),
    "junit": Format(render_junit),
    "markdown": Format(render_markdown, REPORT_TOOLS),
    "html": Format(render_html, REPORT_TOOLS, check=read_script),
    "github": Format(render_github, step_summary=True),
}


def render(results: Sequence[ToolResult], format_name: str) -> str:
    return FORMATS[format_name].render(results)
