"""The dashboard page in a real headless Chromium, driven by Playwright, on real profiles.

Every number checked on the page is compared with the tool JSON the API serves (which
test_api compares with `stepscope report`). Screenshots of every page go to screenshots/.
"""

from __future__ import annotations

import re
import shutil
from urllib.parse import parse_qs, urlparse

import playwright.sync_api as playwright_api
import pytest

from stepscope.analysis import applicability
from tests.support.dashboard.browser import (
    READY_TIMEOUT_MS,
    SCREENSHOTS,
    chart,
    data,
    open_tool,
    page_url,
    shot,
    wait_ready,
)
from tests.support.dashboard.logdir import CPU_ONLY_HOST, GPU_HOSTS, TPU_SESSION
from tests.support.perfetto_trace import read_pftrace
from tests.support.service_job import Job
from tests.support.tables import biggest_first, searched
from tests.support.traces import read_json, shared

GPU = dict(run="gpu", host="v100_resnet_ns_resolution")
CPU_ONLY = dict(run="cpu_only", host=CPU_ONLY_HOST)
TPU = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host")


def metric(page, key: str) -> str:
    return page.locator(f'[data-metric="{key}"]').first.get_attribute("data-value")


def number_shown(text: str) -> float:
    """The number in a formatted cell/card: '1,234.5 ms' -> 1234.5."""
    digits = "".join(c for c in text.split()[0] if c.isdigit() or c in ".-")
    return float(digits)


def tables(server, tool: str, **where: str) -> dict[str, dict]:
    document = server.ready("/api/tables", **where, tool=tool).json()
    return {table["name"]: table for table in document["tables"]}


def column(table: dict, key: str) -> list:
    index = [c["key"] for c in table["columns"]].index(key)
    return [row[index] for row in table["rows"]]


def test_overview_page_shows_the_tools_numbers(page, server):
    expected = data(server, "overview_page", **GPU)
    open_tool(page, server, "overview_page", **GPU)
    assert float(metric(page, "step_time_mean_us")) == pytest.approx(expected["step_time_us"]["mean"])
    assert float(metric(page, "device_busy_percent")) == pytest.approx(expected["device"]["busy_percent"])
    assert int(metric(page, "step_count")) == len(expected["steps"])
    assert metric(page, "env_framework") == expected["environment"]["framework"]
    # The step-time graph: one stacked bar per step, its parts the breakdown, summing to the step.
    shown = chart(page, "step_time")
    # Labels are the step numbers with thousands separators ("1,009"), as Python's "," format writes them.
    assert shown["labels"] == [f"{step['step']:,}" for step in expected["steps"]]
    for index, step in enumerate(expected["steps"]):
        parts = [dataset["data"][index] for dataset in shown["datasets"]]
        assert sum(parts) == pytest.approx(step["step_time_us"], rel=1e-9)
    assert expected["recommendation"]["summary"] in page.locator("#recommendation").inner_text()
    # Each finding shows its evidence and links to the tool and rows that show it, on this run and host.
    assert expected["recommendation"]["evidence"]
    for finding in expected["recommendation"]["evidence"]:
        item = page.locator(f'#recommendation li[data-finding="{finding["finding"]}"]')
        assert finding["text"] in item.inner_text()
        href = parse_qs(urlparse(item.locator(":scope > a").get_attribute("href")).query)
        assert href == {
            "run": [GPU["run"]],
            "host": [GPU["host"]],
            "tool": [finding["tool"]],
            "sort": [f"{finding['table']}:{finding['sort_key']}:desc"],
            "q": [f"{finding['table']}:{finding['query']}"],
        }
        # Under it, what fixing it would buy, linked to the critical path.
        if finding["predicted"]:
            assert item.locator(".predicted-gain").inner_text() == f"What if {finding['predicted']['text']}"
    top = page.locator('table[data-table="top_ops"] tbody tr')
    assert top.count() == len(expected["top_ops"])
    shot(page, "overview_page_gpu")


def test_the_overviews_headline_figures_follow_from_the_numbers_below(page, server):
    """One number per figure: the device-bound sentence quotes the breakdown's
    device compute share as the breakdown card shows it; the summary card says which
    statistic each of its shares is; the two idles are named apart; the device work in no
    step is a warning whose share follows from the devices table below it."""
    expected = data(server, "overview_page", **GPU)
    open_tool(page, server, "overview_page", **GPU)
    summary = page.locator('[data-metric="recommendation_summary"]').inner_text()
    quoted = re.search(r"computes for ([\d.]+)%", summary)
    shown = page.locator('#breakdown [data-metric="breakdown_device_compute_percent"]')
    assert quoted and float(quoted.group(1)) == number_shown(shown.inner_text()) == round(float(shown.get_attribute("data-value")), 1)
    assert float(shown.get_attribute("data-value")) == pytest.approx(expected["breakdown_percent"]["device_compute"])
    labels = page.locator("#summary .metric-label").all_inner_texts()
    assert "Input (mean per step)" in labels and "Kernel launch (median per step)" in labels
    assert "Idle (no host or device activity)" in page.locator("#breakdown dt").all_inner_texts()
    assert "summed time" in page.locator("#breakdown-basis").inner_text()
    # The outside-steps warning: its share is the devices table's busy outside the steps
    # over its busy time (one GPU), to the tenth shown.
    warning = page.locator("#outside-steps").inner_text()
    assert expected["recommendation"]["outside_steps"] in warning
    row = page.locator('table[data-table="devices"] tbody tr').first
    busy, outside = (float(row.locator(f'td[data-key="{key}"]').get_attribute("data-value")) for key in ("busy_time_us", "busy_outside_steps_us"))
    share = re.match(r"([\d.]+)% of the device busy time", warning)
    assert share and float(share.group(1)) == round(100 * outside / busy, 1)


GPU_FIGURES = {
    "gpu_utilization_percent": "utilization_percent",
    "gpu_sm_efficiency_percent": "sm_efficiency_percent",
    "gpu_achieved_occupancy_percent": "achieved_occupancy_percent",
    "gpu_tensor_core_percent": "tensor_core_percent",
}


def test_overview_gpu_section_shows_the_figures_and_the_top_kernels_pie(page, server):
    """The GPU card: the four figures of the tool's ``gpus`` entry (each with its definition
    under it and on hover) and the top-kernels pie, its slices the tool's."""
    (gpu,) = data(server, "overview_page", **GPU)["gpus"]
    open_tool(page, server, "overview_page", **GPU)
    section = page.locator(f'#gpu .gpu-device[data-device="{gpu["device"]}"]')
    assert section.is_visible()
    assert section.locator("h3").inner_text() == f"{gpu['device']} ({gpu['sm_count']} SMs)"
    for key, field in GPU_FIGURES.items():
        value = section.locator(f'[data-metric="{key}"]')
        assert float(value.get_attribute("data-value")) == pytest.approx(gpu[field])
        # What the user reads: the percentage to one decimal ("97.5%").
        assert number_shown(value.inner_text()) == pytest.approx(round(gpu[field], 1))
        figure = value.locator("xpath=..")
        definition = figure.locator(".metric-definition")
        assert definition.is_visible() and definition.inner_text() == figure.get_attribute("title")
    # All four figures are known on this trace: no note saying why one is missing.
    assert section.locator("[data-note]").count() == 0
    shown = chart(page, "top_kernels_0")
    assert shown["datasets"][0]["data"] == [s["total_duration_us"] for s in gpu["top_kernels"]]
    assert len(shown["labels"]) == len(gpu["top_kernels"]) == 11
    assert shown["labels"][-1] == "other" and gpu["top_kernels"][-1]["other"]
    # Short labels: the kernel's name without "void " and its parameter list.
    assert shown["labels"][0] == gpu["top_kernels"][0]["kernel_name"].removeprefix("void ").split("(")[0][:63] + "…"
    assert section.locator('canvas[data-chart="top_kernels_0"]').is_visible()
    SCREENSHOTS.mkdir(exist_ok=True)
    section.screenshot(path=str(SCREENSHOTS / "overview_page_gpu_section.png"))


def test_overview_gpu_section_says_why_a_figure_is_missing(page, server, logdir):
    """The ROCm trace records no grids and no occupancy: those figures show a dash and a
    line says why; utilisation and the pie are still there."""
    (logdir.root / "rocm").mkdir()
    shutil.copy(shared("kineto/mi250_rocm_toy_train.pt.trace.json.gz"), logdir.root / "rocm")
    where = dict(run="rocm", host="mi250_rocm_toy_train")
    server.wait_for_run("rocm")
    (gpu,) = data(server, "overview_page", **where)["gpus"]
    assert gpu["sm_efficiency_percent"] is None and gpu["achieved_occupancy_percent"] is None
    open_tool(page, server, "overview_page", **where)
    section = page.locator(f'#gpu .gpu-device[data-device="{gpu["device"]}"]')
    assert section.locator('[data-metric="gpu_sm_efficiency_percent"]').get_attribute("data-value") == "null"
    assert section.locator('[data-metric="gpu_achieved_occupancy_percent"]').get_attribute("data-value") == "null"
    assert section.locator('[data-note="sm_efficiency"]').inner_text() == f"SM efficiency: {gpu['sm_efficiency_note']}"
    assert section.locator('[data-note="occupancy"]').inner_text() == f"Achieved occupancy: {gpu['occupancy_note']}"
    assert float(section.locator('[data-metric="gpu_utilization_percent"]').get_attribute("data-value")) == pytest.approx(gpu["utilization_percent"])
    assert chart(page, "top_kernels_0")["datasets"][0]["data"] == [s["total_duration_us"] for s in gpu["top_kernels"]]


def test_a_tpu_profile_has_no_gpu_section(page, server):
    assert data(server, "overview_page", **TPU)["gpus"] == []
    open_tool(page, server, "overview_page", **TPU)
    assert page.locator("#summary").is_visible()
    assert page.locator("#gpu").count() == 0


@pytest.mark.parametrize("where", ["gpu", "cpu"])
def test_a_recommendations_evidence_link_opens_the_rows_it_rests_on(page, server, logdir, where):
    """Clicking a finding's evidence opens its tool with its table sorted and searched: the
    rows shown are those of the tool's table (from the tables API) that hold the search text
    in a text column, biggest first by the sort key."""
    place = GPU if where == "gpu" else dict(run=logdir.cpu_run, host=logdir.cpu_host)
    evidence = data(server, "overview_page", **place)["recommendation"]["evidence"]
    for finding in evidence:
        assert finding["table"] is not None, "both runs' findings point at rows"
        expected = tables(server, finding["tool"], **place)[finding["table"]]
        rows = biggest_first(expected, searched(expected, finding["query"]), finding["sort_key"])
        assert rows
        open_tool(page, server, "overview_page", **place)
        page.locator(f'#recommendation li[data-finding="{finding["finding"]}"] > a').click()
        page.wait_for_url(f"**tool={finding['tool']}**", timeout=30_000)
        wait_ready(page, finding["tool"])
        table = f'table[data-table="{finding["table"]}"]'
        assert page.input_value(f'input[data-search="{finding["table"]}"]') == finding["query"]
        assert page.locator(f'{table} th[data-key="{finding["sort_key"]}"]').get_attribute("aria-sort") == "descending"
        shown = page.locator(f"{table} tbody tr")
        assert shown.count() == min(len(rows), 500)
        key = [c["key"] for c in expected["columns"]].index(finding["sort_key"])
        values = page.locator(f'{table} td[data-key="{finding["sort_key"]}"]').evaluate_all("cells => cells.map(c => c.dataset.value)")
        assert [float(v) for v in values] == pytest.approx([row[key] for row in rows[:500]])
        if finding["query"]:
            names = page.locator(f'{table} td[data-key="name"]').evaluate_all("cells => cells.map(c => c.textContent)")
            assert finding["query"] in names, "the op the finding names is among the rows shown"
    shot(page, f"evidence_link_{where}")


def test_a_step_bar_opens_the_trace_viewer_on_that_step(page, server):
    expected = data(server, "overview_page", **GPU)
    step = expected["steps"][1]
    open_tool(page, server, "overview_page", **GPU)
    # The centre of step 1's tallest bar segment, from Chart.js (CSS px in the canvas).
    point = page.evaluate(
        """() => { const chart = window.__stepscope.charts.step_time;
                   const bars = chart.data.datasets.map((_, i) => chart.getDatasetMeta(i)).filter(m => !m.hidden).map(m => m.data[1]);
                   const bar = bars.reduce((a, b) => (Math.abs(b.base - b.y) > Math.abs(a.base - a.y) ? b : a));
                   return {x: bar.x, y: (bar.y + bar.base) / 2}; }"""
    )
    page.locator('canvas[data-chart="step_time"]').click(position=point)
    page.wait_for_url("**tool=trace_viewer**", timeout=30_000)
    wait_ready(page, "trace_viewer")
    query = parse_qs(urlparse(page.url).query)
    # The step's window: its start and start + step time, exact picoseconds from the JSON.
    assert query["start_ps"] == [str(step["start_ps"])] and query["end_ps"] == [str(step["start_ps"] + step["step_time_ps"])]
    assert query["run"] == [GPU["run"]] and query["host"] == [GPU["host"]]
    view = page.evaluate("window.__stepscope.trace.view()")
    assert view["start_ps"] == pytest.approx(step["start_ps"]) and view["end_ps"] == pytest.approx(step["start_ps"] + step["step_time_ps"])


def test_an_op_row_opens_its_events_in_the_trace_viewer(page, server):
    """An op's name links to the trace viewer, which opens searching for it and shows the
    first of its events; the count of matches is the trace's count of events holding the name."""
    expected = data(server, "framework_op_stats", **GPU)
    op = expected["rows"][0]["name"]
    open_tool(page, server, "framework_op_stats", **GPU)
    page.locator(f'table[data-table="framework_ops"] td[data-key="name"] a.cell-link:text-is("{op}")').first.click()
    page.wait_for_url("**tool=trace_viewer**", timeout=30_000)
    wait_ready(page, "trace_viewer")
    assert parse_qs(urlparse(page.url).query)["find"] == [op]
    assert page.locator("#tv-search").input_value() == op
    status = page.locator("#tv-search-status[data-total]")
    status.wait_for(timeout=60_000)
    first = server.get("/api/trace/find", **GPU, text=op).json()["match"]
    assert int(status.get_attribute("data-total")) == first["total"] and int(status.get_attribute("data-ordinal")) == 1
    page.wait_for_function("id => document.querySelector('#tv-details').dataset.id === String(id)", arg=first["id"], timeout=60_000)


def test_collapsed_trace_sections_stay_collapsed_after_a_reload(page, server):
    """The sections a user collapsed are kept per run and host (localStorage), and the
    timeline opens with them collapsed."""
    open_tool(page, server, "trace_viewer", **GPU)
    tracks = server.get("/api/trace/tracks", **GPU).json()
    device = next(section for section in tracks["sections"] if section.startswith("/device:"))
    assert page.evaluate("() => window.__stepscope.trace.collapsed()") == []
    key = f"stepscope.trace.collapsed:{GPU['run']}\u0000{GPU['host']}"
    page.evaluate("([key, name]) => localStorage.setItem(key, JSON.stringify([name]))", [key, device])
    page.reload()
    wait_ready(page, "trace_viewer")
    page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0")
    assert page.evaluate("() => window.__stepscope.trace.collapsed()") == [device]
    assert page.evaluate("() => window.__stepscope.trace.drawn().lanes") > 0  # the other sections still draw


def test_a_cpu_only_profile_shows_only_what_applies(page, server, logdir):
    """No accelerator: no device busy figures, no devices table, no all-zero step columns
    (each said in one line), and kernel_stats says there is no GPU instead of empty panels."""
    where = dict(run=logdir.cpu_run, host=logdir.cpu_host)
    expected = data(server, "overview_page", **where)
    assert expected["devices"] == [], "the CPU capture has no device plane"
    steps = next(table for table in server.ready("/api/tables", **where, tool="overview_page").json()["tables"] if table["name"] == "steps")
    keys = [c["key"] for c in steps["columns"]]
    # Columns the page leaves out: the breakdown's <category>_us columns that are 0 in every step.
    zero = [k for i, k in enumerate(keys) if k.endswith("_us") and k != "step_time_us" and all(row[i] == 0 for row in steps["rows"])]
    assert "device_compute_us" in zero and "host_compute_us" not in zero
    open_tool(page, server, "overview_page", **where)
    assert page.locator("#no-device").is_visible()
    assert page.locator('[data-metric="device_busy_percent"]').count() == 0
    assert page.locator('[data-metric="kernel_launch_percent"]').count() == 0
    assert page.locator('table[data-table="devices"]').count() == 0
    shown = page.locator('table[data-table="steps"] th').evaluate_all("cells => cells.map(cell => cell.dataset.key)")
    assert shown == [k for k in keys if k not in zero]
    assert page.locator("#breakdown-zero").is_visible()
    assert page.locator('[data-metric="breakdown_device_compute_percent"]').count() == 0
    # No GPU: no GPU card, no top-kernels pie.
    assert expected["gpus"] == []
    assert page.locator("#gpu").count() == 0
    assert page.locator('canvas[data-chart^="top_kernels"]').count() == 0
    shot(page, "overview_page_cpu")
    open_tool(page, server, "kernel_stats", **where)
    assert page.locator("#tool-unavailable").inner_text() == f"Kernel stats: {applicability.NO_GPU_KERNELS}."
    assert page.locator('table[data-table="kernels"]').count() == 0


def _any_flops(node: dict) -> bool:
    return node["flops"] is not None or any(_any_flops(child) for child in node["children"])


@pytest.mark.parametrize("where", [CPU_ONLY, TPU], ids=["cpu_only", "tpu"])
def test_input_ops_and_op_profile_pages_show_only_what_applies(page, server, where):
    """HTA's CPU-only trace and the TPU run have no input events: the input pipeline page is
    the tool's one line. framework_op_stats draws a pie only for a side with ops and says
    which side has none; op_profile drops the FLOPS legend where no op has a FLOP count."""
    pipeline = data(server, "input_pipeline_analyzer", **where)
    assert pipeline["input_ops"] == []
    open_tool(page, server, "input_pipeline_analyzer", **where)
    assert page.locator("#input-note").inner_text() == pipeline["note"]
    assert pipeline["note"].startswith("No input-pipeline events in this profile")
    assert page.locator("#tool canvas").count() == 0 and page.locator("#tool table").count() == 0

    ops = data(server, "framework_op_stats", **where)
    sides = {row["host_or_device"] for row in ops["rows"]}
    open_tool(page, server, "framework_op_stats", **where)
    for side in ("Host", "Device"):
        assert page.locator(f'canvas[data-chart="{side.lower()}_op_types"]').count() == (1 if side in sides else 0)
    assert page.locator("#ops-missing").count() == (0 if len(sides) == 2 else 1)
    if "Device" not in sides:
        assert page.locator("#ops-missing").inner_text().startswith("No device-side ops in this profile")
    assert page.locator('table[data-table="framework_ops"] tbody tr').count() == min(len(ops["rows"]), 500)

    tree = data(server, "op_profile", **where)
    open_tool(page, server, "op_profile", **where)
    flops = _any_flops(tree["root"])
    assert page.locator("#no-flops").count() == (0 if flops else 1)
    assert page.locator("#op-tree-card .legend").count() == (1 if flops else 0)
    assert page.locator('[data-metric="peak_teraflops_per_second"]').count() == (0 if tree["peak_teraflops_per_second"] is None else 1)


def test_input_pipeline_of_a_cpu_capture(page, server, logdir):
    where = dict(run=logdir.cpu_run, host=logdir.cpu_host)
    expected = data(server, "input_pipeline_analyzer", **where)
    open_tool(page, server, "input_pipeline_analyzer", **where)
    assert float(metric(page, "input_percent_mean")) == pytest.approx(expected["input_percent"]["mean"])
    shown = chart(page, "input_wait")
    input_series = next(d for d in shown["datasets"] if "input" in d["label"].lower())
    assert input_series["data"] == pytest.approx([step["input_us"] for step in expected["steps"]])
    assert page.locator('table[data-table="steps"] tbody tr').count() == len(expected["steps"])
    shot(page, "input_pipeline_analyzer_cpu")


def test_framework_op_stats_sort_search_idle_and_export(page, server, tmp_path):
    expected = tables(server, "framework_op_stats", **GPU)["framework_ops"]
    open_tool(page, server, "framework_op_stats", **GPU)
    rows = page.locator('table[data-table="framework_ops"] tbody tr')
    assert rows.count() == min(len(expected["rows"]), 500)

    header = page.locator('table[data-table="framework_ops"] th[data-key="total_self_time_us"]')
    header.click()
    header.click() if header.get_attribute("aria-sort") != "descending" else None
    assert header.get_attribute("aria-sort") == "descending"
    first = float(rows.first.locator('td[data-key="total_self_time_us"]').get_attribute("data-value"))
    assert first == pytest.approx(max(column(expected, "total_self_time_us")))
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    first = float(rows.first.locator('td[data-key="total_self_time_us"]').get_attribute("data-value"))
    assert first == pytest.approx(min(column(expected, "total_self_time_us")))

    page.fill('input[data-search="framework_ops"]', "conv")
    matching = [name for name, kind in zip(column(expected, "name"), column(expected, "type")) if "conv" in name.lower() or "conv" in kind.lower()]
    assert 0 < len(matching) < len(expected["rows"])
    assert rows.count() == len(matching)
    page.fill('input[data-search="framework_ops"]', "")

    # Pie charts: time by op type on host and on device, from the same rows.
    for chart_name, side in (("host_op_types", "Host"), ("device_op_types", "Device")):
        shown = chart(page, chart_name)
        total = sum(t for t, s in zip(column(expected, "total_self_time_us"), column(expected, "host_or_device")) if s == side)
        assert sum(shown["datasets"][0]["data"]) == pytest.approx(total, rel=1e-9)

    idle_rows = tables(server, "framework_op_stats", **GPU)["idle"]["rows"]
    page.check("#include-idle")
    assert rows.count() == min(len(expected["rows"]) + len(idle_rows), 500)
    page.uncheck("#include-idle")

    with page.expect_download() as download:
        page.click('[data-export="framework_ops"]')
    saved = tmp_path / "ops.csv"
    download.value.save_as(saved)
    assert saved.read_bytes() == server.get("/api/csv", **GPU, tool="framework_op_stats", table="framework_ops").body
    shot(page, "framework_op_stats_gpu")


def test_kernel_stats(page, server):
    expected = data(server, "kernel_stats", **GPU)
    open_tool(page, server, "kernel_stats", **GPU)
    assert float(metric(page, "total_kernel_time_us")) == pytest.approx(expected["total_kernel_time_us"])
    assert float(metric(page, "tensor_core_percent")) == pytest.approx(expected["tensor_core_percent"])
    assert page.locator("#tensor-core-share").inner_text().startswith(f"TensorCore kernels (by name): {expected['tensor_core_percent']:.1f}% of kernel time")
    rows = page.locator('table[data-table="kernels"] tbody tr')
    assert rows.count() == min(len(expected["rows"]), 500)
    header = page.locator('table[data-table="kernels"] th[data-key="occurrences"]')
    header.click()
    if header.get_attribute("aria-sort") != "descending":
        header.click()
    assert int(rows.first.locator('td[data-key="occurrences"]').get_attribute("data-value")) == max(row["occurrences"] for row in expected["rows"])
    shot(page, "kernel_stats_gpu")


def visible_in(page, scroller, cell) -> bool:
    """Whether the cell lies inside the scroll box's visible width (bounding boxes, CSS px)."""
    box = page.locator(cell).first.bounding_box()
    outer = page.locator(scroller).first.bounding_box()
    return box is not None and outer["x"] - 0.5 <= box["x"] and box["x"] + box["width"] <= outer["x"] + outer["width"] + 0.5


@pytest.mark.parametrize("width", [1280, 1600])
def test_kernel_stats_fits_the_page(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        open_tool(page, server, "kernel_stats", **GPU)
        scroller = '[data-table-block="kernels"] .table-scroll'
        # Unscrolled: occurrences and total time are on screen, no sideways scrolling needed.
        assert page.eval_on_selector(scroller, "e => e.scrollLeft") == 0
        for key in ("occurrences", "total_duration_us"):
            assert visible_in(page, scroller, f'table[data-table="kernels"] th[data-key="{key}"]'), key
            assert visible_in(page, scroller, f'table[data-table="kernels"] tbody tr td[data-key="{key}"]'), key
        shot(page, f"kernel_stats_gpu_{width}")
        # Long kernel names are cut on one line instead of widening the table or wrapping:
        # no name cell is two lines high (test_dense_tables checks the ellipsis and title).
        lines = page.eval_on_selector_all(
            'table[data-table="kernels"] tbody tr td[data-key="kernel_name"]',
            "cells => Math.max(...cells.map(c => c.clientHeight / parseFloat(getComputedStyle(c).lineHeight)))",
        )
        assert lines < 2
    finally:
        context.close()


def test_tables_sticky_first_column_and_column_chooser(browser, server):
    # 800 px: narrow enough that the kernel table must scroll sideways.
    context = browser.new_context(viewport={"width": 800, "height": 900})
    page = context.new_page()
    try:
        open_tool(page, server, "kernel_stats", **GPU)
        scroller = '[data-table-block="kernels"] .table-scroll'
        assert page.eval_on_selector(scroller, "e => e.scrollWidth > e.clientWidth")
        first = 'table[data-table="kernels"] tbody tr td[data-key="kernel_name"]'
        before = page.locator(first).first.bounding_box()["x"]
        page.eval_on_selector(scroller, "e => { e.scrollLeft = 300; }")
        assert page.eval_on_selector(scroller, "e => e.scrollLeft") > 0
        # Sticky: the name column has not moved while the rest scrolled under it.
        assert page.locator(first).first.bounding_box()["x"] == pytest.approx(before, abs=1)

        # The chooser lists every column of the API's table; the exact-ps twin of the total starts hidden.
        expected = tables(server, "kernel_stats", **GPU)["kernels"]
        keys = [c["key"] for c in expected["columns"]]
        page.click('details[data-columns="kernels"] > summary')
        boxes = page.locator('details[data-columns="kernels"] input[data-column]')
        assert [boxes.nth(i).get_attribute("data-column") for i in range(boxes.count())] == keys
        header = 'table[data-table="kernels"] th[data-key="{}"]'
        assert page.locator(header.format("total_duration_ps")).count() == 0
        page.uncheck('details[data-columns="kernels"] input[data-column="op_name"]')
        assert page.locator(header.format("op_name")).count() == 0
        assert page.locator('table[data-table="kernels"] tbody tr').first.locator('td[data-key="op_name"]').count() == 0
        # Remembered for this table (localStorage) after a reload.
        page.reload()
        wait_ready(page, "kernel_stats")
        assert page.locator(header.format("op_name")).count() == 0
        assert page.locator(header.format("occurrences")).count() == 1
        page.click('details[data-columns="kernels"] > summary')
        page.check('details[data-columns="kernels"] input[data-column="op_name"]')
        assert page.locator(header.format("op_name")).count() == 1
    finally:
        context.close()


def address(page) -> dict[str, list[str]]:
    """The page's query as the page itself has it now (pushState included)."""
    return parse_qs(page.evaluate("location.search")[1:])


def test_table_sort_and_search_in_the_address(page, server, tmp_path):
    expected = tables(server, "framework_op_stats", **GPU)["framework_ops"]
    open_tool(page, server, "framework_op_stats", **GPU)
    table = 'table[data-table="framework_ops"]'
    rows = page.locator(f"{table} tbody tr")
    header = page.locator(f'{table} th[data-key="total_self_time_us"]')
    header.click()  # a new column sorts ascending
    assert address(page)["sort"] == ["framework_ops:total_self_time_us:asc"]
    header.click()
    assert address(page)["sort"] == ["framework_ops:total_self_time_us:desc"]
    page.fill('input[data-search="framework_ops"]', "conv")
    query = address(page)
    assert query["q"] == ["framework_ops:conv"]
    assert query["run"] == [GPU["run"]] and query["tool"] == ["framework_op_stats"]
    # The rows a user would get: names or types containing "conv", biggest self time first.
    matching = sorted(
        (
            t
            for n, k, t in zip(column(expected, "name"), column(expected, "type"), column(expected, "total_self_time_us"))
            if "conv" in n.lower() or "conv" in k.lower()
        ),
        reverse=True,
    )
    shared_link = page.evaluate("location.href")

    # A shared link opens the same sorted, filtered table.
    page.goto(shared_link)
    wait_ready(page, "framework_op_stats")
    assert header.get_attribute("aria-sort") == "descending"
    assert page.input_value('input[data-search="framework_ops"]') == "conv"
    assert rows.count() == len(matching)
    assert [float(v) for v in rows.locator('td[data-key="total_self_time_us"]').evaluate_all("cells => cells.map(c => c.dataset.value)")] == pytest.approx(
        matching
    )

    # The export is still the whole table, not the sorted, filtered rows.
    with page.expect_download() as download:
        page.click('[data-export="framework_ops"]')
    saved = tmp_path / "ops.csv"
    download.value.save_as(saved)
    assert saved.read_bytes() == server.get("/api/csv", **GPU, tool="framework_op_stats", table="framework_ops").body

    # Back: the search goes (one entry for the search), then the descending sort becomes ascending.
    page.go_back()
    page.wait_for_function("() => !new URLSearchParams(location.search).has('q')")
    assert page.input_value('input[data-search="framework_ops"]') == ""
    assert rows.count() == min(len(expected["rows"]), 500)
    page.go_back()
    page.wait_for_function("() => (new URLSearchParams(location.search).get('sort') || '').endsWith(':asc')")
    assert header.get_attribute("aria-sort") == "ascending"
    page.go_forward()
    page.wait_for_function("() => (new URLSearchParams(location.search).get('sort') || '').endsWith(':desc')")
    assert header.get_attribute("aria-sort") == "descending"


def test_op_profile_tree_and_details(page, server):
    expected = data(server, "op_profile", **TPU)
    open_tool(page, server, "op_profile", **TPU)
    root = expected["root"]
    program = root["children"][0]
    node = page.locator(f'[data-node="{root["name"]} / {program["name"]}"]')
    node.wait_for()
    node.click()
    details = page.locator("#op-details")
    assert float(details.locator('[data-metric="time_us"]').get_attribute("data-value")) == pytest.approx(program["time_us"])
    assert int(details.locator('[data-metric="occurrences"]').get_attribute("data-value")) == program["occurrences"]
    # Expand the program: its categories appear.
    toggle = node.locator("[aria-expanded]").first if node.get_attribute("aria-expanded") is None else node
    if toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    category = program["children"][0]
    page.locator(f'[data-node="{root["name"]} / {program["name"]} / {category["name"]}"]').wait_for()
    shot(page, "op_profile_tpu")


def test_op_profile_options_from_the_registry(page, server):
    """The options bar: op_profile's device and top_n, offered as the registry lists them
    (the devices from the result), kept in the address, and the page shows the answer the
    API gives for those options; back returns to the defaults."""
    default = data(server, "op_profile", **TPU)
    open_tool(page, server, "op_profile", **TPU)
    device = page.locator('#tool-options select[name="option-device"]')
    offered = device.locator("option").evaluate_all("options => options.map(option => option.value)")
    assert offered == ["", *default["devices"], "all", "/host:CPU"]
    device.select_option("all")
    page.wait_for_function("() => new URLSearchParams(location.search).get('device') === 'all'")
    wait_ready(page, "op_profile")
    every = data(server, "op_profile", **TPU, device="all")
    assert every["device"] == "all devices" and every != default
    first = every["root"]["children"][0]
    page.locator(f'[data-node="all devices / {first["name"]}"]').wait_for()
    top_n = page.locator('#tool-options input[name="option-top_n"]')
    assert top_n.input_value() == "10"
    top_n.fill("1")
    top_n.dispatch_event("change")
    page.wait_for_function("() => new URLSearchParams(location.search).get('top_n') === '1'")
    wait_ready(page, "op_profile")
    assert parse_qs(urlparse(page.url).query) == {"run": [TPU["run"]], "host": ["tpu_host"], "tool": ["op_profile"], "device": ["all"], "top_n": ["1"]}
    folded = data(server, "op_profile", **TPU, device="all", top_n="1")
    # top_n=1: the root shows its first program and, if there are more, one "(K more)" node
    programs = folded["root"]["children"]
    assert programs[0]["name"] == first["name"] and len(programs) == min(2, len(every["root"]["children"]))
    if len(programs) == 2:
        page.locator(f'[data-node="all devices / {programs[1]["name"]}"]').wait_for()
    shot(page, "op_profile_options")
    page.go_back()
    page.go_back()
    wait_ready(page, "op_profile")
    assert "device" not in parse_qs(urlparse(page.url).query)
    assert page.locator('#tool-options select[name="option-device"]').input_value() == ""


def test_op_profile_more_rows_and_keyboard(page, server):
    """A "(K more)" row loads the tool with top_n large enough to show its K nodes (top_n
    + K: its siblings), keeping the open rows; the arrow keys walk the tree."""
    folded = data(server, "op_profile", **TPU, top_n="1")
    root = folded["root"]
    more = root["children"][-1]
    assert more["folded"] > 0, "top_n=1 folds the TPU run's other programs"
    page.goto(page_url(server.url, **TPU, tool="op_profile", top_n="1"))
    wait_ready(page, "op_profile")
    page.locator(f'[data-node="{root["name"]} / {more["name"]}"]').click()
    wanted = str(1 + more["folded"])
    page.wait_for_function("n => new URLSearchParams(location.search).get('top_n') === n", arg=wanted)
    wait_ready(page, "op_profile")
    shown = data(server, "op_profile", **TPU, top_n=wanted)["root"]["children"]
    assert len(shown) == len(root["children"]) - 1 + more["folded"] and not any(child["folded"] for child in shown)
    for child in shown:
        page.locator(f'[data-node="{root["name"]} / {child["name"]}"]').wait_for()
    assert page.locator('#tool-options input[name="option-top_n"]').input_value() == wanted

    # Keyboard: Down to the first program, Right opens it, Right enters it, Left back, Left closes.
    first, category = shown[0], shown[0]["children"][0]
    program_path = f"{root['name']} / {first['name']}"
    page.locator(f'[data-node="{root["name"]}"]').focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.node") == program_path
    assert page.locator("#op-details .op-details-body").get_attribute("data-selected") == program_path
    page.keyboard.press("ArrowRight")
    assert page.locator(f'[data-node="{program_path}"]').get_attribute("aria-expanded") == "true"
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.node") == f"{program_path} / {category['name']}"
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("document.activeElement.dataset.node") == program_path
    page.keyboard.press("ArrowLeft")
    assert page.locator(f'[data-node="{program_path}"]').get_attribute("aria-expanded") == "false"


def test_memory_profile_of_a_cpu_capture(page, server, logdir):
    where = dict(run=logdir.cpu_run, host=logdir.cpu_host)
    expected = data(server, "memory_profile", **where)
    assert expected["devices"], "the capture at host_tracer_level=3 records memory"
    device = max(expected["devices"], key=lambda d: d["peak_allocated_bytes"])  # the page opens on the largest peak
    open_tool(page, server, "memory_profile", **where)
    assert int(metric(page, "peak_allocated_bytes")) == device["peak_allocated_bytes"]
    reserved = page.locator('[data-metric="peak_reserved_bytes"]').first
    if device["peak_reserved_bytes"] is None:  # a source without a reserved figure says so
        assert reserved.inner_text() == "not recorded"
    else:
        assert int(reserved.get_attribute("data-value")) == device["peak_reserved_bytes"]
    shown = chart(page, "memory_timeline")
    allocated = next(d for d in shown["datasets"] if "alloc" in d["label"].lower())
    values = [point["y"] if isinstance(point, dict) else point for point in allocated["data"]]
    assert max(values) == device["peak_allocated_bytes"] or max(values) == pytest.approx(device["peak_allocated_bytes"] / 2**20)
    shot(page, "memory_profile_cpu")


def test_memory_profile_of_a_profile_without_memory_events_says_why_in_one_line(page, server):
    """HTA's CPU-only Kineto trace has no [memory] event (read from the file here): the menu
    greys memory_profile out, and opened anyway its page is the reason in one line (it names
    profile_memory), with no chart, summary or table."""
    raw = read_json(shared(f"kineto/{CPU_ONLY_HOST}.pt.trace.json.gz"))
    assert not any(event.get("name") == "[memory]" for event in raw["traceEvents"])
    expected = data(server, "memory_profile", **CPU_ONLY)
    assert expected["devices"] == []
    open_tool(page, server, "memory_profile", **CPU_ONLY)
    assert page.locator("#tool-unavailable").inner_text() == f"Memory profile: {applicability.NO_MEMORY_EVENTS}."
    assert "profile_memory=True" in applicability.NO_MEMORY_EVENTS
    assert page.locator('#tool-select option[value="memory_profile"]').is_disabled()
    assert page.locator("#tool canvas").count() == 0
    assert page.locator("#tool table").count() == 0
    assert page.locator("#memory-summary").count() == 0
    shot(page, "memory_profile_cpu_only")


def test_memory_profile_opens_on_the_largest_peak_keeps_the_device_and_marks_the_peak(page, server):
    expected = {d["device"]: d for d in data(server, "memory_profile", **TPU)["devices"]}
    # The device with the largest peak in the API's JSON (the first of equal ones, in its order).
    largest = max(expected.values(), key=lambda d: d["peak_allocated_bytes"])
    open_tool(page, server, "memory_profile", **TPU)
    summary = page.locator("#memory-summary")
    assert summary.get_attribute("data-device") == largest["device"]
    assert page.locator("#memory-device").input_value() == largest["device"]
    assert int(metric(page, "peak_allocated_bytes")) == largest["peak_allocated_bytes"]
    # XSpace's bytes_reserved: labelled as beside the allocated bytes, with their sum's peak.
    assert int(metric(page, "peak_reserved_bytes")) == largest["peak_reserved_bytes"]
    assert "Peak reserved (beside allocated)" in summary.inner_text()
    assert int(metric(page, "peak_in_use_bytes")) == largest["peak_in_use_bytes"]
    peak = next(d for d in chart(page, "memory_timeline")["datasets"] if d["label"].startswith("Peak "))
    assert peak["data"] == [{"x": largest["peak_time_us"] / 1000, "y": largest["peak_allocated_bytes"]}]
    shot(page, "memory_profile_tpu")

    other = next(name for name in expected if name != largest["device"])
    page.select_option("#memory-device", other)
    page.wait_for_function("name => document.querySelector('#memory-summary').dataset.device === name", arg=other)
    page.wait_for_function("name => new URLSearchParams(location.search).get('memory_device') === name", arg=other)
    assert int(metric(page, "peak_allocated_bytes")) == expected[other]["peak_allocated_bytes"]
    page.reload()
    wait_ready(page, "memory_profile")
    assert page.locator("#memory-summary").get_attribute("data-device") == other
    assert page.locator("#memory-device").input_value() == other
    assert parse_qs(urlparse(page.url).query)["memory_device"] == [other]


def drag_on_chart(page, name: str, start_ms: float, end_ms: float) -> None:
    """A mouse drag across a chart from one x value to another (mid-height)."""
    box = page.evaluate(
        """([name, a, b]) => { const chart = window.__stepscope.charts[name];
                               const rect = chart.canvas.getBoundingClientRect();
                               return {x0: rect.left + chart.scales.x.getPixelForValue(a), x1: rect.left + chart.scales.x.getPixelForValue(b),
                                       y: rect.top + (chart.chartArea.top + chart.chartArea.bottom) / 2}; }""",
        [name, start_ms, end_ms],
    )
    page.mouse.move(box["x0"], box["y"])
    page.mouse.down()
    page.mouse.move((box["x0"] + box["x1"]) / 2, box["y"], steps=4)
    page.mouse.move(box["x1"], box["y"], steps=4)
    page.mouse.up()


def test_memory_profile_drag_selects_a_range_that_filters_the_peak_holders(page, server):
    expected = {d["device"]: d for d in data(server, "memory_profile", **TPU)["devices"]}
    holders = tables(server, "memory_profile", **TPU)["peak_holders"]
    largest = max(expected.values(), key=lambda d: d["peak_allocated_bytes"])
    peak_ms = largest["peak_time_us"] / 1000
    open_tool(page, server, "memory_profile", **TPU)
    rows = page.locator('[data-card="peak_holders"] tbody tr:not(.empty)')
    # The whole profile: the shown device's holders (the tables API's rows of that device).
    mine = [op for name, op in zip(column(holders, "device"), column(holders, "op")) if name == largest["device"]]
    assert len(holders["rows"]) > len(mine) > 0 and rows.count() == len(mine)
    allocation_rows = tables(server, "memory_profile", **TPU)["allocations"]["rows"]
    # 100 per device (MAX_ALLOCATIONS), each device has more allocations than that.
    assert len(allocation_rows) == 100 * len(expected)
    # A range around the peak: the shown device's holders only (from the tables API).
    drag_on_chart(page, "memory_timeline", peak_ms - 1000, peak_ms + 1000)
    page.wait_for_selector("#memory-range[data-start-ms]")
    start, end = (float(page.locator("#memory-range").get_attribute(f"data-{edge}-ms")) for edge in ("start", "end"))
    assert start < peak_ms < end and end - start == pytest.approx(2000, rel=0.05)
    zoomed = page.evaluate("() => { const x = window.__stepscope.charts.memory_timeline.scales.x; return [x.min, x.max]; }")
    assert zoomed == [start, end]
    assert rows.count() == len(mine)
    assert {rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())} == set(mine)
    assert "holds the peak" in page.locator("#memory-range").inner_text()
    # The allocations alive during the range, from the tables API's rows of that device.
    allocations = tables(server, "memory_profile", **TPU)["allocations"]
    alive = [
        (size, end)
        for name, size, begin, end in zip(*(column(allocations, key) for key in ("device", "bytes", "start_us", "end_us")))
        if name == largest["device"] and begin / 1000 <= zoomed[1] and (end is None or end / 1000 >= zoomed[0])
    ]
    shown = page.locator('[data-card="allocations"] tbody tr:not(.empty)')
    assert shown.count() == len(alive) > 0
    live = page.locator('[data-card="allocations"] tbody td', has_text="live at end")
    assert live.count() == sum(1 for _, end in alive if end is None)
    # Reset, then a range after the peak (the last tenth of the timeline): no holders, and why.
    page.click("#memory-reset-zoom")
    page.wait_for_selector("#memory-range:not([data-start-ms])")
    assert rows.count() == len(mine)
    last_ms = largest["timeline"][-1]["time_us"] / 1000
    drag_on_chart(page, "memory_timeline", last_ms * 0.9, last_ms)
    page.wait_for_selector("#memory-range[data-start-ms]")
    assert rows.count() == 0
    assert "does not hold the peak" in page.locator("#memory-range").inner_text()
    shot(page, "memory_profile_tpu_range")


def test_switch_runs_and_hosts_and_deep_links(page, server, logdir):
    open_tool(page, server, "overview_page", **GPU)
    page.select_option("#host-select", "alexnet_small")
    wait_ready(page, "overview_page")
    expected = data(server, "overview_page", run="gpu", host="alexnet_small")
    page.wait_for_function(
        "value => Number(document.querySelector('[data-metric=\"step_time_mean_us\"]').dataset.value) === value",
        arg=expected["step_time_us"]["mean"],
    )
    assert parse_qs(urlparse(page.url).query) == {"run": ["gpu"], "host": ["alexnet_small"], "tool": ["overview_page"]}

    page.select_option("#run-select", TPU["run"])
    wait_ready(page, "overview_page")
    assert parse_qs(urlparse(page.url).query)["host"] == ["tpu_host"]
    page.select_option("#tool-select", "op_profile")
    wait_ready(page, "op_profile")
    page.go_back()
    wait_ready(page, "overview_page")
    assert parse_qs(urlparse(page.url).query)["run"] == [TPU["run"]]


def test_a_bad_deep_link_says_what_was_not_found(page, server, logdir):
    runs = server.get("/api/runs").json()["runs"]
    # The fallback is the first run the API lists (and its first host), whatever it shows.
    first_run = runs[0]["name"]
    page.goto(page_url(server.url, run="nope", tool="overview_page"))
    page.wait_for_selector('#tool[data-state="ready"], #tool[data-state="error"]', timeout=READY_TIMEOUT_MS)
    notice = page.locator("#notice")
    assert notice.get_attribute("role") == "status"
    assert notice.inner_text() == f"No run named 'nope' in this log directory; showing '{first_run}'."
    assert parse_qs(urlparse(page.url).query)["run"] == [first_run]
    # The selectors still send the full names (ids), whatever they show.
    assert page.eval_on_selector_all("#run-select option", "options => options.map(o => o.value)") == [run["name"] for run in runs]
    # The user's next choice clears it.
    page.select_option("#run-select", GPU["run"])
    wait_ready(page, "overview_page")
    assert notice.is_hidden()

    # A host the run lacks and a tool that does not exist: the run's first host and the
    # first tool /api/tools offers are shown, and both misses are said in one line.
    gpu_host = next(run for run in runs if run["name"] == GPU["run"])["hosts"][0]
    first_tool = server.get("/api/tools", run=GPU["run"], host=gpu_host).json()["tools"][0]["name"]
    page.goto(page_url(server.url, run=GPU["run"], host="nope", tool="not_a_tool"))
    wait_ready(page, first_tool)
    assert notice.inner_text() == (
        f"No host named 'nope' in run '{GPU['run']}'; showing '{gpu_host}'. No tool named 'not_a_tool' for this profile; showing '{first_tool}'."
    )
    assert parse_qs(urlparse(page.url).query) == {"run": [GPU["run"]], "host": [gpu_host], "tool": [first_tool]}
    page.select_option("#tool-select", "op_profile")
    wait_ready(page, "op_profile")
    assert notice.is_hidden()


def test_a_corrupt_run_shows_its_error_and_the_rest_works(page, server, logdir):
    page.goto(page_url(server.url, run="broken", host="worker0", tool="overview_page"))
    page.wait_for_selector('#tool[data-state="error"]', timeout=READY_TIMEOUT_MS)
    assert "worker0.pt.trace.json" in page.locator("#error").inner_text()
    shot(page, "error_corrupt_run")
    page.select_option("#run-select", "gpu")
    wait_ready(page, "overview_page")


def test_capture_dialog_captures_a_live_job(page, server, tmp_path):
    job = Job(tmp_path, "browser")
    runs_before = {run["name"] for run in server.get("/api/runs").json()["runs"]}
    polled: list = []  # the page's GET /api/capture/<id> answers, read once the capture is over
    page.on("response", lambda response: polled.append(response) if urlparse(response.url).path.startswith("/api/capture/") else None)
    open_tool(page, server, "overview_page", **GPU)
    page.click("#capture-button")
    dialog = page.locator("#capture-dialog")
    assert dialog.evaluate("d => d.open")
    # The hint names the real API, and nothing offers TPU names (nothing here resolves them).
    hint = dialog.locator(".hint").inner_text()
    assert "stepscope.start_server(port)" in hint and "stepscope.capture.start_server" not in hint
    assert "TPU" not in dialog.inner_html().upper()
    assert "host:port" in dialog.locator("label.wide-field").inner_text()
    # A capture that fails keeps the dialog open on its per-host messages.
    page.fill("#capture-addresses", "127.0.0.1:1")
    page.fill("#capture-duration", "100")
    page.fill("#capture-attempts", "1")
    page.click("#capture-submit")
    page.wait_for_selector('#capture-status[data-state="failed"] li[data-address="127.0.0.1:1"][data-ok="false"]', timeout=60_000)
    assert dialog.evaluate("d => d.open")
    assert parse_qs(urlparse(page.url).query)["run"] == [GPU["run"]]
    page.fill("#capture-attempts", "3")
    page.fill("#capture-addresses", job.address)
    page.fill("#capture-duration", "600")
    page.fill("#capture-host-level", "1")
    shot(page, "capture_dialog")
    page.click("#capture-submit")
    # A successful capture closes the dialog onto the new run.
    try:
        page.wait_for_function("() => !document.getElementById('capture-dialog').open", timeout=120_000)
    except playwright_api.TimeoutError:
        pytest.fail(f"the dialog stayed open: {page.locator('#capture-status').inner_text()}")
    assert "job finished" in job.finish()
    assert page.locator('#capture-status[data-state="done"]').count() == 1
    shot(page, "capture_done")
    # The run the capture API reported, twice over: its last status, and the one new run listed.
    status = polled[-1].json()
    assert status["state"] == "done" and status["run"], status
    host = "127.0.0.1_" + job.address.split(":")[1]
    listed = {run["name"]: run["hosts"] for run in server.get("/api/runs").json()["runs"]}
    assert set(listed) - runs_before == {status["run"]}
    assert listed[status["run"]] == [host]
    # The page selected it as the runs selector does: the selector and the address agree.
    assert page.input_value("#run-select") == status["run"]
    query = parse_qs(urlparse(page.url).query)
    assert query == {"run": [status["run"]], "host": [host], "tool": ["overview_page"]}
    # ... and shows its overview, with the job's steps.
    wait_ready(page, "overview_page")
    assert int(metric(page, "step_count")) >= 10
    page.go_back()
    wait_ready(page, "overview_page")
    assert parse_qs(urlparse(page.url).query)["run"] == [GPU["run"]]


def test_a_profile_being_analysed_shows_progress_then_the_tool(page, server, logdir):
    """The first request for a profile the server has not analysed is answered 202 (queued),
    so the page shows its progress state before the tool."""
    (logdir.root / "fresh").mkdir()
    shutil.copy(shared("kineto/recsys_sampled_rank1_of_128.pt.trace.json.gz"), logdir.root / "fresh")
    where = dict(run="fresh", host="recsys_sampled_rank1_of_128")
    server.wait_for_run("fresh")
    page.goto(page_url(server.url, **where, tool="overview_page"))
    progress = page.wait_for_selector("#progress", timeout=30_000)
    assert "%" in progress.inner_text()
    wait_ready(page, "overview_page")
    assert page.locator("#progress").count() == 0
    expected = data(server, "overview_page", **where)
    assert int(metric(page, "step_count")) == len(expected["steps"])


def test_trace_viewer_draws_selects_and_searches(page, server):
    """A real GPU trace in the trace viewer: tracks drawn, an event found by search is
    selected and its details are the event's, a click on a drawn event selects it."""
    where = dict(run="gpu", host="alexnet_small")
    tracks = server.ready("/api/trace/tracks", **where).json()
    open_tool(page, server, "trace_viewer", **where)
    canvas = page.locator("#trace-canvas")
    page.wait_for_function("() => Number(document.querySelector('#trace-canvas').dataset.drawnEvents) > 0")
    view = page.evaluate("() => window.__stepscope.trace.view()")
    assert view["start_ps"] <= 0 and view["end_ps"] >= tracks["span_ps"]  # opens on the whole profile
    drawn = page.evaluate("() => window.__stepscope.trace.drawn()")
    assert drawn["events"] + drawn["runs"] > 0 and drawn["lanes"] > 0
    shot(page, "trace_viewer_gpu")

    # Search: the first aten::conv2d, as the API finds it; the pane shows its details.
    first = server.get("/api/trace/find", **where, text="aten::conv2d").json()["match"]
    page.fill("#tv-search", "aten::conv2d")
    page.press("#tv-search", "Enter")
    page.wait_for_function("() => document.querySelector('#tv-search-status').textContent.includes('1 of')")
    assert f"1 of {first['total']}" in page.locator("#tv-search-status").inner_text()
    details = page.locator("#tv-details")
    details.locator("text=aten::conv2d").first.wait_for()
    view = page.evaluate("() => window.__stepscope.trace.view()")
    assert view["start_ps"] <= first["start_ps"] <= view["end_ps"]  # the view moved to the match
    page.click("#tv-next")
    page.wait_for_function("() => document.querySelector('#tv-search-status').textContent.includes('2 of')")

    # Click: the event under the mouse is selected and described.
    position = page.evaluate(f"() => window.__stepscope.trace.eventAt({first['id']})")
    assert position is not None
    canvas.click(position={"x": position["x"], "y": position["y"]})
    details.locator("text=aten::conv2d").first.wait_for()
    shot(page, "trace_viewer_selected")


KINETO = dict(run="gpu", host="alexnet_small")


def test_a_kineto_run_draws_no_trace_spans_section(page, server):
    """Kineto's own spans (string pids: the profiler's window, two markers) get no section:
    the headers drawn are the trace's real processes, read from the JSON here."""
    raw = read_json(shared("kineto/alexnet_small.pt.trace.json.gz"))["traceEvents"]
    labels = {e["pid"]: e["args"]["labels"] for e in raw if e.get("ph") == "M" and e.get("name") == "process_labels"}
    with_events = {e["pid"] for e in raw if e.get("ph") in ("X", "i") and isinstance(e["pid"], int)}
    # "GPU N" processes are devices (drawn first), the rest the host.
    want = sorted({f"/device:GPU:{labels[pid].split()[1]}" if labels[pid].startswith("GPU ") else "/host:CPU" for pid in with_events})
    assert want == ["/device:GPU:0", "/host:CPU"]
    assert any(isinstance(e.get("pid"), str) for e in raw if e.get("ph") in ("X", "i"))  # the spans are in the file
    open_tool(page, server, "trace_viewer", **KINETO)
    page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0")
    assert page.evaluate("() => window.__stepscope.trace.drawn().sections") == want


def box(page, selector: str) -> dict:
    return page.locator(selector).bounding_box()


def test_the_range_downloads_as_a_perfetto_trace(page, server, tmp_path):
    """ "as .pftrace" beside "Export this range" downloads the range in view (here the whole
    profile) as Perfetto's protobuf trace: one slice per complete event of the trace JSON
    (Kineto's string-pid spans, which the timeline does not draw, included by the export
    as in the JSON one), read back with Perfetto's own protos."""
    open_tool(page, server, "trace_viewer", **GPU)
    page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0")
    with page.expect_download() as download:
        page.click("#tv-export-pftrace")
    assert download.value.suggested_filename.endswith(".pftrace")
    saved = tmp_path / "range.pftrace"
    download.value.save_as(saved)
    json_link = parse_qs(urlparse(page.locator("#tv-export").get_attribute("href")).query)
    pftrace_link = parse_qs(urlparse(page.locator("#tv-export-pftrace").get_attribute("href")).query)
    assert pftrace_link == {**json_link, "format": ["pftrace"]}
    raw = read_json(shared(GPU_HOSTS[GPU["host"]]))["traceEvents"]
    assert len(read_pftrace(saved).slices) == sum(1 for event in raw if event.get("ph") == "X")


def test_the_toolbar_does_not_move_when_a_measurement_appears(page, server):
    """The timing readout keeps its room in the toolbar: measuring, measuring again and
    clearing (Esc) leave every control where it was. A drag half as long measures half."""
    controls = ["#tv-select", "#tv-timing", "#tv-reset", "#tv-search", "#tv-prev", "#tv-next", "#tv-filter", "#tv-export", "#tv-export-pftrace"]
    open_tool(page, server, "trace_viewer", **GPU)
    page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0")
    before = [box(page, selector) for selector in controls]
    measure = page.locator("#tv-measure")
    assert not measure.is_visible()
    page.click("#tv-timing")
    area = box(page, "#trace-canvas")
    y = area["y"] + area["height"] / 2

    def drag(from_x: float, to_x: float) -> int:
        page.mouse.move(area["x"] + from_x, y)
        page.mouse.down()
        page.mouse.move(area["x"] + (from_x + to_x) / 2, y)
        page.mouse.move(area["x"] + to_x, y)
        page.mouse.up()
        return int(measure.get_attribute("data-value"))

    long = drag(400, 700)
    assert measure.is_visible() and measure.inner_text().startswith("Δ ")
    assert [box(page, selector) for selector in controls] == before
    short = drag(400, 550)
    assert short == pytest.approx(long / 2, abs=1)  # times are linear in x: 150 px is half of 300 px
    assert [box(page, selector) for selector in controls] == before
    page.keyboard.press("Escape")
    assert not measure.is_visible() and measure.get_attribute("data-value") is None
    assert [box(page, selector) for selector in controls] == before


def test_dragging_the_splitter_resizes_the_details_pane_and_the_height_is_kept(page, server):
    """The bar above the details pane: dragged up, the pane grows by the distance and the
    timeline canvas shrinks by it; the height survives a reload; the arrow keys move it
    (16 px a press) and Home gives the timeline its least (200 px). The pane is closed until
    it has something to show: the "?" in the timeline's corner opens it on the keys."""
    open_tool(page, server, "trace_viewer", **GPU)
    page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0")
    page.click("#tv-keys")
    splitter = page.locator("#tv-splitter")
    assert splitter.get_attribute("role") == "separator"
    pane, canvas = box(page, "#tv-details")["height"], box(page, "#trace-canvas")["height"]
    assert pane == 190 and splitter.get_attribute("aria-valuenow") == "190"  # the default
    bar = box(page, "#tv-splitter")
    x, y = bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x, y - 75)
    page.mouse.move(x, y - 150)
    page.mouse.up()
    assert box(page, "#tv-details")["height"] == 190 + 150
    assert splitter.get_attribute("aria-valuenow") == "340"
    # The canvas follows (its ResizeObserver): 150 px shorter, drawn at the new size.
    page.wait_for_function("h => document.querySelector('#trace-canvas').getBoundingClientRect().height === h", arg=canvas - 150)
    assert page.evaluate("() => localStorage.getItem('stepscope.trace.detailsHeight')") == "340"

    page.reload()
    wait_ready(page, "trace_viewer")
    page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0")
    page.click("#tv-keys")
    assert box(page, "#tv-details")["height"] == 340
    assert page.locator("#tv-splitter").get_attribute("aria-valuenow") == "340"
    assert box(page, "#trace-canvas")["height"] == canvas - 150

    splitter = page.locator("#tv-splitter")
    splitter.focus()
    page.keyboard.press("ArrowDown")
    assert box(page, "#tv-details")["height"] == 340 - 16 and splitter.get_attribute("aria-valuenow") == "324"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert splitter.get_attribute("aria-valuenow") == "356"
    page.keyboard.press("Home")
    assert box(page, "#tv-details")["height"] == int(splitter.get_attribute("aria-valuemax"))
    assert box(page, ".tv-canvas-wrap")["height"] == pytest.approx(200, abs=1)  # the timeline's minimum
    page.keyboard.press("End")
    assert box(page, "#tv-details")["height"] == 80 == int(splitter.get_attribute("aria-valuemin"))
    assert page.evaluate("() => localStorage.getItem('stepscope.trace.detailsHeight')") == "80"
