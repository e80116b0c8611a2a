"""Dense tables, in a real Chromium at 1280x800 and 1920x1080: one line
per row, long names cut with an ellipsis and whole in the title and the row's details, the
table as tall as the window and its last column on screen.

Expected names come from the trace files themselves (gzip + json here), not from the page
or the API.
"""

from __future__ import annotations

import gzip
import json
import re

import pytest

from tests.support.dashboard.browser import offered, open_tool, page_url, wait_ready
from tests.support.dashboard.logdir import TPU_SESSION
from tests.support.traces import shared

GPU = dict(run="gpu", host="v100_resnet_ns_resolution")
GPU_TRACE = "kineto/v100_resnet_ns_resolution.pt.trace.json.gz"
VIEWPORTS = [(1280, 800), (1920, 1080)]

# Rows wholly on screen (below the sticky top bar, above the window's bottom), the height
# of every body row, and the table box's bottom edge: measured in the page.
ROWS_ON_SCREEN = """table => {
  const top = document.querySelector('.topbar').getBoundingClientRect().bottom;
  const rows = [...table.querySelectorAll('tbody tr')];
  const inside = rows.filter(r => { const b = r.getBoundingClientRect(); return b.top >= top && b.bottom <= innerHeight; });
  return {
    inside: inside.length,
    heights: [...new Set(rows.map(r => r.getBoundingClientRect().height))],
    lineHeight: parseFloat(getComputedStyle(table.querySelector('tbody td')).lineHeight),
    boxBottom: table.closest('.table-scroll').getBoundingClientRect().bottom,
    lastRight: table.querySelector('thead th:last-child').getBoundingClientRect().right,
  };
}"""


def longest_kernel_name() -> str:
    """The longest GPU kernel name in the trace (Kineto's "kernel" events)."""
    with gzip.open(shared(GPU_TRACE)) as handle:
        events = json.load(handle)["traceEvents"]
    return max((event["name"] for event in events if event.get("cat") == "kernel"), key=len)


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_kernel_stats_rows_are_one_line_and_fill_the_window(browser, server, viewport):
    width, height = viewport
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        open_tool(page, server, "kernel_stats", **GPU)
        table = page.locator('table[data-table="kernels"]')
        measured = table.evaluate(ROWS_ON_SCREEN)
        # XProf's kernel stats show 15-20 rows at this size; the page opens on at least 15.
        assert measured["inside"] >= 15, measured
        # One line per row: every row as high as every other, less than two lines high.
        assert len(measured["heights"]) == 1, measured["heights"]
        assert measured["heights"][0] < 2 * measured["lineHeight"]
        # The table reaches the window's bottom (205 rows: far more than a screen holds).
        assert measured["boxBottom"] >= height - 1
        # Every column, the last one too, is on screen without scrolling sideways.
        assert measured["lastRight"] <= width
        assert table.locator('th[data-key="total_duration_us"]').bounding_box()["x"] + 10 < width

        # The longest name (608 characters) is cut, and whole in its title.
        name = longest_kernel_name()
        assert len(name) == 608
        cells = table.locator("td[data-key=kernel_name]")
        index = cells.evaluate_all("(cells, name) => cells.findIndex(cell => cell.dataset.value === name)", name)
        assert index >= 0
        cell = cells.nth(index)
        assert cell.evaluate("td => td.scrollWidth > td.clientWidth")
        assert cell.get_attribute("title") == name
        assert cell.evaluate("td => getComputedStyle(td).textOverflow") == "ellipsis"
        # A click on the row (not on the name's link) opens its details: the whole name, wrapped.
        row = cell.locator("xpath=..")
        row.locator("td[data-key=occurrences]").click()
        assert row.get_attribute("aria-expanded") == "true"
        details = row.locator("xpath=following-sibling::tr[1]")
        assert details.get_attribute("class") == "row-details"
        whole = details.locator("dd[data-key=kernel_name]")
        assert whole.inner_text() == name
        assert whole.bounding_box()["height"] > 2 * measured["lineHeight"]  # wrapped, not cut
        # Every column, hidden ones too, but a time once: not its exact picosecond twin.
        assert details.locator("dd[data-key=total_duration_us]").count() == 1
        assert details.locator("dd[data-key=total_duration_ps]").count() == 0
        row.locator("td[data-key=occurrences]").click()
        assert row.get_attribute("aria-expanded") == "false"
        assert table.locator("tr.row-details").count() == 0
        assert errors == []
    finally:
        context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_trace_details_keep_labels_whole_and_decode_the_memory_breakdown(browser, server, viewport):
    """Beside the longest kernel name (608 characters, wrapped anywhere) the "Name" label
    stays on one line (it used to shrink to one letter a line: "N / a / m / e"); a TPU
    broadcast's memory_access_breakdown reads as words with the exact byte count
    (f32[5,1024,1024,256]: 5*1024*1024*256*4 bytes, written to HBM), not "<12 bytes>"."""
    width, height = viewport
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        open_tool(page, server, "trace_viewer", **GPU, find=longest_kernel_name())
        pane = page.locator("#tv-details")
        pane.locator(".tv-args").wait_for(timeout=60_000)
        label = pane.locator('[data-field="name"] .tv-label')
        assert label.inner_text() == "Name"
        assert pane.locator('[data-field="name"] .tv-name').inner_text() == longest_kernel_name()
        assert label.evaluate("e => e.getBoundingClientRect().height < 1.5 * parseFloat(getComputedStyle(e).lineHeight)")

        # "broadcast.2" names two events, in time order the host's "XLA::TPU emitting for
        # broadcast.2" and then the device op (XLA's short name): the second match is the op.
        open_tool(page, server, "trace_viewer", run=f"tpu/{TPU_SESSION}", host="tpu_host", find="broadcast.2")
        page.wait_for_function("() => document.querySelector('#tv-details .tv-name')?.textContent.startsWith('XLA::TPU emitting')")
        page.press("#tv-search", "Enter")
        row = pane.locator('.tv-args tr:has(td[data-key="name"]:text-is("memory_access_breakdown"))')
        row.wait_for(timeout=60_000)
        assert pane.locator('[data-field="name"] .tv-name').inner_text() == "broadcast.2"
        assert row.locator('td[data-key="value"]').inner_text() == f"write, HBM (memory space 1): {5 * 1024 * 1024 * 256 * 4:,} bytes"
    finally:
        context.close()


# Every table of the table component on the page: its last shown column's right edge, its
# scroll box's (a table wider than its box scrolls sideways) and its hidden columns.
TABLE_EDGES = """() => [...document.querySelectorAll('#tool .table-scroll > table[data-table]')].filter(t => t.offsetParent).map(t => ({
  table: t.dataset.table,
  last: t.querySelector('thead th:last-child').dataset.key,
  right: t.querySelector('thead th:last-child').getBoundingClientRect().right,
  box: t.parentElement.getBoundingClientRect().right,
  wider: t.parentElement.scrollWidth - t.parentElement.clientWidth,
}))"""
# Each page's least-read columns (docs/dashboard.md's table of them), by table: hidden at
# first, in the column chooser, and in a row's details.
LEAST_READ = {
    ("hlo_stats", "hlo_ops"): {"total_time_us", "avg_time_us", "flops", "bytes_accessed"},
    ("framework_op_stats", "framework_ops"): {"avg_time_us", "cumulative_self_time_percent"},
    ("roofline_model", "ops"): {"level", "attainable_gflops_per_second", "flops", "bytes_accessed"},
}


# Tables in cards of their own: the title on the toolbar's line (search,
# columns, export), not a line of its own above it. By tool: (table, title) on the TPU run.
TITLED = {
    "hlo_stats": [("hlo_ops", "HLO op stats")],
    "framework_op_stats": [("framework_ops", "Framework ops")],
    "memory_profile": [("peak_holders", "Memory held at the peak, by op"), ("allocations", "Largest allocations")],
}
# The title's and the search box's vertical middles, and the card's own headings.
TITLE_LINE = """block => {
  const middle = e => { const b = e.getBoundingClientRect(); return b.top + b.height / 2; };
  const title = block.querySelector('.table-toolbar h3');
  return {title: title.textContent, apart: Math.abs(middle(title) - middle(block.querySelector('input[data-search]'))),
          headings: block.closest('.card').querySelectorAll(':scope > h2').length};
}"""


def places(logdir) -> dict[str, dict[str, str]]:
    return {
        "gpu": dict(run="gpu", host="v100_resnet_ns_resolution"),
        "tpu": dict(run=f"tpu/{TPU_SESSION}", host="tpu_host"),
        "cpu": dict(run=logdir.cpu_run, host=logdir.cpu_host),
    }


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_every_tables_last_column_is_on_screen(browser, server, logdir, viewport):
    """On every page the menu offers for the GPU, TPU and CPU runs (the compare page against
    the demo's first run, a CPU run: the widest pair), each table's last shown column ends
    inside the window and inside the table's box: no table scrolls sideways. The TPU's
    HLO op stats (17 number and name columns before) and the roofline's op table are the
    widest; their least-read columns start hidden but stay in the chooser and the details."""
    width, height = viewport
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    base_run, base_host = logdir.before
    measured: dict[tuple[str, str, str], dict] = {}
    try:
        for kind, place in places(logdir).items():
            for tool in offered(page, server, **place):
                extra = dict(base_run=base_run, base_host=base_host) if tool == "diff" else {}
                page.goto(page_url(server.url, **place, tool=tool, **extra))
                wait_ready(page, tool)
                for edge in page.evaluate(TABLE_EDGES):
                    measured[(kind, tool, edge["table"])] = edge
                for table, title in TITLED.get(tool, []) if kind == "tpu" else []:
                    line = page.locator(f'[data-table-block="{table}"]').evaluate(TITLE_LINE)
                    assert line["title"] == title and line["apart"] < 4 and line["headings"] == 0, line
                if (kind, tool) == ("tpu", "hlo_stats"):
                    # An op's name on hover: its whole HLO text ("%<instruction> = <shape> <op>(...)").
                    titles = page.locator('table[data-table="hlo_ops"] td[data-key="name"]').evaluate_all("cells => cells.map(c => [c.dataset.value, c.title])")
                    assert titles and all(re.match(r"%\S+ = \S", title) for _, title in titles), titles
                    assert any(title.startswith(f"%{name} = ") for name, title in titles)
                for (tool_name, table), keys in LEAST_READ.items():
                    if tool_name != tool or kind != "tpu":
                        continue
                    block = page.locator(f'table[data-table="{table}"]')
                    shown = set(block.locator("thead th").evaluate_all("ths => ths.map(th => th.dataset.key)"))
                    assert shown.isdisjoint(keys), (tool, shown & keys)
                    chooser = page.locator(f'details[data-columns="{table}"]')
                    assert all(not chooser.locator(f'input[data-column="{key}"]').is_checked() for key in keys)
                    block.locator("tbody tr").first.locator("td.num").first.click()
                    assert all(block.locator(f'tr.row-details dd[data-key="{key}"]').count() == 1 for key in keys)
        # The pages and tables measured: every run's overview tables, and the wide ones.
        for needed in [
            ("gpu", "kernel_stats", "kernels"),
            ("tpu", "hlo_stats", "hlo_ops"),
            ("tpu", "roofline_model", "ops"),
            ("gpu", "roofline_model", "ops"),
            ("tpu", "framework_op_stats", "framework_ops"),
            ("cpu", "framework_op_stats", "framework_ops"),
            ("cpu", "diff", "ops"),
            ("tpu", "graph_viewer", "nodes"),
        ]:
            assert needed in measured, needed
        off = {where: edge for where, edge in measured.items() if edge["right"] > min(width, edge["box"]) + 0.5 or edge["wider"] > 0}
        assert off == {}, off
        assert errors == []
    finally:
        context.close()
