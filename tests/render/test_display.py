"""How profiles, tool results and tables show themselves in a notebook (render/display.py):
short reprs, escaped and bounded HTML, the profile's verdict being the overview tool's own.

Expected counts come from the trace file read with json and gzip.
"""

from __future__ import annotations

import html
import re

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.registry import tool_names
from stepscope.analysis.tables import Column, Table
from stepscope.render.display import HTML_ROWS
from tests.support.traces import read_json, shared

A100 = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")


@pytest.fixture(scope="module")
def profile():
    return stepscope.load(A100)


@pytest.fixture(scope="module")
def trace_events():
    return [event for event in read_json(A100)["traceEvents"] if event.get("ph") in ("X", "i")]


def test_a_profile_repr_is_one_line_of_its_figures(profile, trace_events):
    text = repr(profile)
    steps = {event["name"] for event in trace_events if re.fullmatch(r"ProfilerStep#\d+", event["name"])}
    span_us = max(event["ts"] + event.get("dur", 0) for event in trace_events) - min(event["ts"] for event in trace_events)
    assert "\n" not in text and len(text) < 300  # the dataclass's was 34,754 characters
    assert f"{len(trace_events):,} events" in text
    assert f"{len(steps)} steps (ProfilerStep)" in text
    assert f"span {span_us / 1000:,.3f} ms" in text  # (under a second: ms, three decimals)
    assert repr(profile.planes[0]).startswith("<Plane '/host:CPU'")


def test_a_profile_html_has_its_planes_and_the_overviews_verdict(profile, trace_events):
    shown = profile._repr_html_()
    overview = run_tool("overview_page", profile)
    assert f"<b>Verdict:</b> {html.escape(overview.recommendation['summary'])}" in shown
    assert f"{len(trace_events):,} events" in shown
    for plane in profile.planes:
        assert f">{html.escape(plane.name)}</td>" in shown


@pytest.mark.parametrize("name", tool_names())
def test_every_tool_result_shows_a_short_repr_and_bounded_html(profile, name):
    result = run_tool(name, profile)
    text = repr(result)
    assert text.startswith(f"<stepscope {name} result>") and len(text.splitlines()) <= 7 and len(text) < 2000
    tables = result.tables()
    shown = result._repr_html_()
    for line in result.summary():
        assert html.escape(line) in shown
    for table in tables:
        assert f"{table.name} ({len(table.rows)} row" in text
        assert f"<b>{html.escape(table.name)}</b> ({len(table.rows):,} row" in shown
    assert shown.count("<tr>") == sum(min(len(table.rows), HTML_ROWS) for table in tables) + len(tables)  # rows + headers
    for table in tables:
        if len(table.rows) > HTML_ROWS:
            assert f"... {len(table.rows) - HTML_ROWS:,} more row" in shown


def test_a_table_shows_its_shape_and_escapes_its_cells():
    rows = [(f"<script>alert({i})</script>", i) for i in range(HTML_ROWS + 5)]
    table = Table("a&b", (Column("name", "Name <x>", "string"), Column("n", "N")), rows)
    assert repr(table) == "<stepscope Table 'a&b': 15 rows, 2 columns (name, n)>"
    shown = table._repr_html_()
    assert "<script>" not in shown and "&lt;script&gt;alert(0)&lt;/script&gt;" in shown
    assert "Name &lt;x&gt;" in shown and "<b>a&amp;b</b>" in shown
    assert "alert(9)" in shown and "alert(10)" not in shown and "... 5 more rows" in shown
