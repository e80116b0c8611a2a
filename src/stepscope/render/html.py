"""The report as one self-contained HTML file: open it from disk, offline, attach it to a
pull request or a chat.

Python writes the sections (``sections``) as HTML; the charts are drawn in the browser by
the report's script (web/report/main.ts: the dashboard's Chart.js and chart data, built by
``make web`` into ``static/report.js``), which is inlined with the charts' data and the
stylesheet, so the page fetches nothing: a Content-Security-Policy of ``default-src
'none'`` says so to the browser as well. Values keep their exact number in ``data-value``.
A source checkout whose script is not built fails in one line naming ``make web``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from pathlib import Path

from stepscope import jsonform
from stepscope.analysis.registry import ToolResult
from stepscope.errors import StepscopeError
from stepscope.render.cells import cell
from stepscope.render.sections import Chart, Figure, Section, Shown, header, sections, title

HERE = Path(__file__).parent
SCRIPT = HERE / "static" / "report.js"
STYLE = HERE / "report.css"
DATA_ID = "stepscope-report-data"  # web/report/main.ts DATA_ID
POLICY = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"
# A "</script" inside inlined text would end the <script> element: "<\/" reads the same in JS and JSON.
_END_TAG = re.compile(r"</(script|!--)", re.IGNORECASE)


def read_script(path: Path = SCRIPT) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StepscopeError(f"{path}: the HTML report's chart script is not built (run `make web` in the source checkout; it needs npm)") from None


def _inline(text: str) -> str:
    return _END_TAG.sub(r"<\\/\1", text)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _figure(figure: Figure) -> str:
    raw = "" if figure.raw is None else f' data-value="{_e(figure.raw)}"'
    return f'<div class="figure" data-metric="{_e(figure.key)}"{raw}><dt>{_e(figure.label)}</dt><dd>{_e(figure.value)}</dd></div>'


def _table(shown: Shown) -> str:
    table = shown.table
    more = f" (top {len(table.rows)} of {shown.total:,})" if shown.total > len(table.rows) else ""
    head = "".join(f'<th data-key="{_e(column.key)}">{_e(label)}</th>' for column, label in zip(table.columns, header(table.columns)))
    rows = []
    for row in table.rows:
        tds = []
        for column, value in zip(table.columns, row):
            shown_text = cell(value)
            full = "" if shown_text == str(value) else f' title="{_e(value)}"'
            tds.append(f'<td class="{_e(column.kind)}" data-key="{_e(column.key)}" data-value="{_e(value)}"{full}>{_e(shown_text)}</td>')
        rows.append(f"<tr>{''.join(tds)}</tr>")
    return (
        f'<table data-table="{_e(table.name)}"><caption>{_e(shown.title)}{_e(more)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _chart(chart: Chart) -> str:
    return f'<figure class="chart"><figcaption>{_e(chart.title)}</figcaption><div class="chart-box"><canvas data-chart="{_e(chart.name)}" role="img" aria-label="{_e(chart.title)}"></canvas></div></figure>'


def _section(section: Section) -> str:
    parts = [f"<h2>{_e(section.title)}</h2>"]
    if section.figures:
        parts.append(f'<dl class="figures">{"".join(_figure(figure) for figure in section.figures)}</dl>')
    parts += [f"<p>{_e(text)}</p>" for text in section.text]
    parts += [
        f'<h3>{_e(heading)}</h3><ul data-list="{_e(heading.lower())}">{"".join(f"<li>{_e(item)}</li>" for item in items)}</ul>'
        for heading, items in section.lists
        if items
    ]
    parts += [_chart(chart) for chart in section.charts]
    parts += [_table(shown) for shown in section.tables]
    return f'<section id="{_e(section.id)}" data-section="{_e(section.id)}">{"".join(parts)}</section>'


def render_html(results: Sequence[ToolResult]) -> str:
    script = read_script()  # first: a missing script fails before any work
    shown = sections(results)
    data = jsonform.encode({"charts": [{"name": c.name, "kind": c.kind, "data": c.data} for s in shown for c in s.charts]}).decode()
    heading = title(results)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(heading)}</title><style>{_inline(STYLE.read_text(encoding='utf-8'))}</style></head>\n"
        f'<body data-state="loading"><header><h1>{_e(heading)}</h1></header>\n<main>\n'
        + "\n".join(_section(section) for section in shown)
        + f'\n</main>\n<script type="application/json" id="{DATA_ID}">{_inline(data)}</script>\n'
        f"<script>{_inline(script)}</script>\n</body></html>\n"
    )
