"""The report as GitHub-flavoured Markdown: a pull-request comment or a CI job summary.

The sections of ``sections`` (headline figures, the verdict with its evidence and next
steps, top tables), written as GitHub renders them. Text from the profile (op and kernel
names: ``<lambda>``, ``aten::_to_copy``, ``|`` in a signature) is backslash-escaped, so it
shows as written rather than as HTML, emphasis or a broken table (``>`` stays: it quotes
only at a line's start, where no name goes). GitHub refuses a comment
over ``COMMENT_LIMIT`` characters: a report past it is cut at a line, saying so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from stepscope.analysis.registry import ToolResult
from stepscope.render.sections import Section, cells, header, sections, title

COMMENT_LIMIT = 65_536  # characters GitHub accepts in a comment (and a step summary shows)
CUT_NOTE = "\n_(cut to fit a comment; `stepscope report --format html` has the whole report)_\n"
_SPECIAL = re.compile(r"([\\`*_\[\]<|#~!])")


def escape(text: str) -> str:
    """``text`` shown literally in Markdown (inline and in a table cell: one line)."""
    return _SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _section(section: Section) -> list[str]:
    lines = [f"### {escape(section.title)}", ""]
    if section.figures:
        lines += ["| " + " | ".join(escape(figure.label) for figure in section.figures) + " |", "|" + "---|" * len(section.figures)]
        lines += ["| " + " | ".join(escape(figure.value) for figure in section.figures) + " |", ""]
    for paragraph in section.text:
        lines += [escape(paragraph), ""]
    for heading, items in section.lists:
        if items:
            lines += [f"**{escape(heading)}**", "", *(f"- {escape(item)}" for item in items), ""]
    for shown in section.tables:
        more = f" (top {len(shown.table.rows)} of {shown.total:,})" if shown.total > len(shown.table.rows) else ""
        numeric = [column.kind == "number" for column in shown.table.columns]
        lines += [f"**{escape(shown.title)}**{more}", ""]
        lines.append("| " + " | ".join(escape(label) for label in header(shown.table.columns)) + " |")
        lines.append("|" + "".join("---:|" if number else "---|" for number in numeric))
        lines += ["| " + " | ".join(escape(text) for text in row) + " |" for row in cells(shown)]
        lines.append("")
    return lines


def render_markdown(results: Sequence[ToolResult]) -> str:
    lines = [f"## {title(results)}", ""]
    for section in sections(results):
        lines += _section(section)
    return fit("\n".join(lines).rstrip("\n") + "\n")


def fit(text: str, limit: int = COMMENT_LIMIT) -> str:
    """``text``, or as many of its whole lines as fit under ``limit`` with the cut note."""
    if len(text) <= limit:
        return text
    return text[: text.rfind("\n", 0, limit - len(CUT_NOTE)) + 1] + CUT_NOTE
