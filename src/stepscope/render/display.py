"""How profiles, tool results and tables show themselves in a notebook: the short ``repr``
(a few lines, where the dataclasses' own were 35,000 characters for a profile and 74,000 for
a result) and ``_repr_html_`` (escaped HTML, a bounded number of rows, saying how many more).

The model's and the results' display methods import this module when first called: they
live on the classes (IPython looks for them there), the presentation lives here.
A profile's verdict is the overview tool's own (its recommendation and step figures), run
once per profile and kept while the profile lives.
"""

from __future__ import annotations

import weakref
from html import escape

from stepscope.analysis.registry import ToolResult, run_tool
from stepscope.analysis.tables import Column, Table
from stepscope.analysis.tools.overview_page import OverviewResult
from stepscope.render.cells import cell as cell_text
from stepscope.render.cells import duration_us
from stepscope.trace.model import Profile
from stepscope.trace.steps import find_steps

HTML_ROWS = 10  # rows of each table in a notebook; to_pandas() has them all
HTML_PLANES = 12
TEXT_SUMMARY_LINES = 4
TEXT_COLUMNS = 8
OVERVIEW = "overview_page"

_overviews: weakref.WeakKeyDictionary[Profile, OverviewResult] = weakref.WeakKeyDictionary()


def duration_text(ps: float) -> str:
    """A duration given in ps, in the unit that reads best (the reports' own wording)."""
    return duration_us(ps / 1e6)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def overview_of(profile: Profile) -> OverviewResult:
    result = _overviews.get(profile)
    if result is None:
        found = run_tool(OVERVIEW, profile)
        assert isinstance(found, OverviewResult)
        result = _overviews[profile] = found
    return result


def profile_text(profile: Profile) -> str:
    steps = find_steps(profile)
    return (
        f"<stepscope Profile of host {profile.host!r} ({profile.format}, {profile.source}): "
        f"{_plural(len(profile.planes), 'plane')}, {_plural(profile.event_count, 'event')}, "
        f"{_plural(len(steps), 'step')} ({steps.source}), span {duration_text(profile.span_ps)}>"
    )


def profile_html(profile: Profile) -> str:
    overview = overview_of(profile)
    times = overview.step_time_us
    aside = f" ({len(overview.set_aside)} set aside)" if overview.set_aside else ""
    steps = (
        f"{_plural(len(overview.steps), 'step')} from {overview.step_source}{aside}, "
        f"mean step time {duration_text(times['mean'] * 1e6)}, median {duration_text(times['median'] * 1e6)}"
    )
    planes = Table(
        "planes",
        (_column("plane", "string"), _column("lines"), _column("events")),
        [(plane.name, len(plane.lines), len(plane.events)) for plane in profile.planes],
    )
    return (
        '<div class="stepscope-profile">'
        f"<p><b>stepscope profile</b> of host <code>{escape(profile.host)}</code> "
        f"({escape(profile.format)}, <code>{escape(profile.source)}</code>)<br>"
        f"{_plural(len(profile.planes), 'plane')}, {_plural(profile.event_count, 'event')}, "
        f"span {duration_text(profile.span_ps)}; {escape(steps)}</p>"
        f"<p><b>Verdict:</b> {escape(overview.recommendation['summary'])}</p>"
        f"{_table_html(planes, HTML_PLANES)}</div>"
    )


def result_text(result: ToolResult) -> str:
    summary = result.summary()
    lines = [f"<stepscope {result.tool} result>"]
    lines += [f"  {line}" for line in summary[:TEXT_SUMMARY_LINES]]
    if len(summary) > TEXT_SUMMARY_LINES:
        lines.append(f"  ... {len(summary) - TEXT_SUMMARY_LINES} more summary lines (result.summary())")
    tables = ", ".join(f"{table.name} ({_plural(len(table.rows), 'row')})" for table in result.tables())
    lines.append(f"  tables: {tables or 'none'}")
    return "\n".join(lines)


def result_html(result: ToolResult) -> str:
    summary = "".join(f"<li>{escape(line)}</li>" for line in result.summary())
    tables = "".join(_table_html(table, HTML_ROWS) for table in result.tables())
    return f'<div class="stepscope-result"><p><b>{escape(result.tool)}</b></p><ul>{summary}</ul>{tables}</div>'


def table_text(table: Table) -> str:
    keys = [column.key for column in table.columns]
    shown = ", ".join(keys[:TEXT_COLUMNS]) + (f", ... {len(keys) - TEXT_COLUMNS} more" if len(keys) > TEXT_COLUMNS else "")
    return f"<stepscope Table {table.name!r}: {_plural(len(table.rows), 'row')}, {_plural(len(keys), 'column')} ({shown})>"


def table_html(table: Table) -> str:
    return _table_html(table, HTML_ROWS)


def _table_html(table: Table, limit: int) -> str:
    def cell(tag: str, text: str, numeric: bool) -> str:
        return f'<{tag} style="text-align:{"right" if numeric else "left"}">{escape(text)}</{tag}>'

    numeric = [column.kind == "number" for column in table.columns]
    header = "".join(cell("th", column.label, n) for column, n in zip(table.columns, numeric))
    body = "".join("<tr>" + "".join(cell("td", cell_text(value), n) for value, n in zip(row, numeric)) + "</tr>" for row in table.rows[:limit])
    more = len(table.rows) - limit
    note = f"<p><i>... {_plural(more, 'more row')} (.to_pandas() has them all)</i></p>" if more > 0 else ""
    caption = f'<caption style="text-align:left"><b>{escape(table.name)}</b> ({_plural(len(table.rows), "row")})</caption>'
    return f'<table class="stepscope-table">{caption}<thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>{note}'


def _column(key: str, kind: str = "number") -> Column:
    return Column(key, key, kind)
