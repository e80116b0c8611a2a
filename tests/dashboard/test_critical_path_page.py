"""The critical_path page and the trace viewer's critical path overlay in a real headless
Chromium, on a server of its own over the shared A100 DDP trace (three ProfilerStep
markers): at 1280x800 and 1920x1080 the stacked bar per step holds each kind of the
tool's JSON and the what-if table its rows with the gain against the mean step (both
derived here from the JSON the API answers), both on screen without scrolling; the step
picker and a click on a bar show that step's ops; the timeline's "Critical path" toggle
draws exactly the JSON's segments of the step in view. Its screenshot
(``screenshots/critical_path.png``) is the picture of docs/tools/critical_path.md."""

from __future__ import annotations

import shutil

import pytest

from tests.support.dashboard.browser import SCREENSHOTS, chart, data, open_tool, page_url, wait_ready, watched_page
from tests.support.dashboard.server import DashboardServer
from tests.support.flame import A100 as A100_TRACE
from tests.support.traces import read_json, shared

PLACE = dict(run="a100", host="a100_ddp_cnn_rank0_of_2")
TOOL = "critical_path"


@pytest.fixture(scope="module")
def path_server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("critical") / "logs"
    (logdir / "a100").mkdir(parents=True)
    shutil.copy(shared(A100_TRACE), logdir / "a100")
    running = DashboardServer(logdir, tmp_path_factory.mktemp("cache"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def path_json(path_server) -> dict:
    return data(path_server, TOOL, **PLACE)


@pytest.fixture
def path_page(browser, path_server):
    with watched_page(browser) as opened:
        yield opened


def cells(row) -> dict[str, str]:
    return {cell.get_attribute("data-key"): cell.get_attribute("data-value") for cell in row.locator("td").all()}


def on_screen(page, selector: str, height: int) -> bool:
    box = page.locator(selector).bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_bars_and_what_if_equal_the_json(path_page, path_server, path_json, size):
    page = path_page
    page.set_viewport_size({"width": size[0], "height": size[1]})
    open_tool(page, path_server, TOOL, **PLACE)
    steps = path_json["steps"]
    # The trace's three ProfilerStep markers; each bar adds up to its marker's duration
    # (Kineto's us with ns decimals, whole ns).
    markers = {int(e["name"].split("#")[1]): e["dur"] for e in read_json(shared(A100_TRACE))["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}
    assert [step["step"] for step in steps] == sorted(markers)
    shown = chart(page, "critical_path_kinds")
    assert shown["labels"] == [f"{step['step']:,}" for step in steps]
    # One dataset per kind of the JSON, in its order, each step's ps in us.
    assert [dataset["label"].lower().replace(" ", "_") for dataset in shown["datasets"]] == path_json["kinds"]
    for dataset, kind in zip(shown["datasets"], path_json["kinds"]):
        assert dataset["data"] == pytest.approx([step["by_kind_ps"][kind] / 1e6 for step in steps])
    for index, step in enumerate(steps):
        total_us = sum(dataset["data"][index] for dataset in shown["datasets"])
        assert total_us == pytest.approx(round(markers[step["step"]] * 1000) / 1000, abs=1e-6)

    # The what-if rows: the JSON's changes in order, each predicted step and its gain
    # (mean - predicted) / mean.
    rows = page.locator('#critical-path-what-if table[data-table="what_if"] tbody tr').all()
    mean = path_json["mean_step_ps"]
    assert mean == round(sum(step["duration_ps"] for step in steps) / len(steps))
    assert [cells(row)["change"] for row in rows] == [change["change"] for change in path_json["what_if"]]
    for row, change in zip(rows, path_json["what_if"]):
        found = cells(row)
        assert int(found["predicted_step_ps"]) == change["predicted_step_ps"]
        assert float(found["gain_percent"]) == pytest.approx(100 * (mean - change["predicted_step_ps"]) / mean)
        assert found["description"] == change["description"]
    # Input free buys nothing on this trace (no input wait on its path), launches halved something.
    gains = {cells(row)["change"]: float(cells(row)["gain_percent"]) for row in rows}
    assert gains["input_free"] == 0 and gains["launch_halved"] > 0

    # The main figures are readable without scrolling.
    assert page.evaluate("() => window.scrollY") == 0
    for selector in ('canvas[data-chart="critical_path_kinds"]', '#critical-path-what-if table[data-table="what_if"]', "#critical-path-step"):
        assert on_screen(page, selector, size[1]), f"{selector} is not on screen at {size}"
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"critical_path_{size[0]}x{size[1]}.png"))
    if size == (1280, 800):
        page.screenshot(path=str(SCREENSHOTS / "critical_path.png"))


def top_rows(page) -> list[tuple[str, str, int]]:
    rows = page.locator('#critical-path-top table[data-table="top"] tbody tr').all()
    return [(found["name"], found["kind"], int(found["time_ps"])) for found in map(cells, rows)]


def test_step_picker_and_bar_click(path_page, path_server, path_json):
    page = path_page
    open_tool(page, path_server, TOOL, **PLACE)
    steps = path_json["steps"]
    expected = [[(op["name"], op["kind"], op["ps"]) for op in step["top"]] for step in steps]
    assert page.locator("#critical-path-top").get_attribute("data-step") == str(steps[0]["step"])
    assert top_rows(page) == expected[0]
    page.locator("#critical-path-step").select_option("2")
    assert page.locator("#critical-path-top").get_attribute("data-step") == str(steps[2]["step"])
    assert top_rows(page) == expected[2]
    # A click on the centre of the middle bar's tallest segment picks step index 1. Chart.js
    # handles a click in the next animation frame, so the test waits for the picker.
    point = page.evaluate(
        """() => { const c = window.__stepscope.charts.critical_path_kinds;
                   const heights = c.data.datasets.map(d => d.data[1]);
                   const bar = c.getDatasetMeta(heights.indexOf(Math.max(...heights))).data[1].getCenterPoint();
                   return {x: bar.x, y: bar.y}; }"""
    )
    page.locator('canvas[data-chart="critical_path_kinds"]').click(position=point)
    page.wait_for_function("() => document.querySelector('#critical-path-step').value === '1'")
    assert top_rows(page) == expected[1]
    # "Show on the timeline" opens the trace viewer on that step with the overlay on.
    link = page.locator("#critical-path-timeline").get_attribute("href")
    step = steps[1]
    assert f"start_ps={step['start_ps']}" in link and f"end_ps={step['start_ps'] + step['duration_ps']}" in link and "critical_path=1" in link


def overlay(page):
    return page.evaluate("() => window.__stepscope.trace.criticalPath()")


def test_trace_viewer_overlay_draws_the_steps_segments(path_page, path_server, path_json):
    page = path_page
    steps = path_json["steps"]
    step = steps[1]
    page.goto(page_url(path_server.url, **PLACE, tool="trace_viewer", start_ps=str(step["start_ps"]), end_ps=str(step["start_ps"] + step["duration_ps"])))
    wait_ready(page, "trace_viewer")
    button = page.locator("#tv-critical-path")
    assert button.get_attribute("aria-pressed") == "false" and overlay(page) is None
    button.click()
    page.wait_for_function("() => window.__stepscope.trace.criticalPath() !== null && window.__stepscope.trace.criticalPath().drawn > 0")
    shown = overlay(page)
    # The step in view, every one of its segments, each on one of the viewer's tracks.
    assert shown["step"] == step["step"]
    assert shown["segments"] == shown["placed"] == len(step["segments"]["start_ps"])
    assert 0 < shown["drawn"] <= len(step["segments"]["start_ps"])
    # Moving the view to another step moves the overlay to that step's path.
    other = steps[2]
    page.evaluate("([a, b]) => window.__stepscope.trace.setView(a, b)", [other["start_ps"], other["start_ps"] + other["duration_ps"]])
    page.wait_for_function(f"() => window.__stepscope.trace.criticalPath().step === {other['step']}")
    assert overlay(page)["segments"] == len(other["segments"]["start_ps"])
    button.click()
    assert button.get_attribute("aria-pressed") == "false"
    page.wait_for_function("() => window.__stepscope.trace.criticalPath() === null")
    # The address the critical_path page links to opens with the overlay on.
    page.goto(
        page_url(
            path_server.url, **PLACE, tool="trace_viewer", start_ps=str(step["start_ps"]), end_ps=str(step["start_ps"] + step["duration_ps"]), critical_path="1"
        )
    )
    wait_ready(page, "trace_viewer")
    page.wait_for_function("() => window.__stepscope.trace.criticalPath()?.segments > 0")
    assert overlay(page)["segments"] == len(step["segments"]["start_ps"])


def test_overview_shows_each_findings_predicted_gain(path_page, path_server, path_json):
    """The overview's findings carry the critical path's what-if: on this trace host-bound,
    so host compute 2x faster; the page shows the JSON's text and links to this tool."""
    page = path_page
    open_tool(page, path_server, "overview_page", **PLACE)
    evidence = data(path_server, "overview_page", **PLACE)["recommendation"]["evidence"]
    predicted = [item for item in evidence if item["predicted"]]
    assert predicted, evidence
    for item in predicted:
        shown = page.locator(f'#recommendation li[data-finding="{item["finding"]}"] .predicted-gain')
        assert shown.text_content() == f"What if {item['predicted']['text']}"
        assert shown.get_attribute("data-change") == item["predicted"]["change"]
        assert "tool=critical_path" in shown.locator("a").get_attribute("href")
        # The measured step is the overview's kept steps' mean; every step is kept here, so it
        # is the critical path's mean step, and the gain is its (mean - predicted) / mean.
        gain = item["predicted"]
        assert gain["step_ps"] == path_json["mean_step_ps"]
        assert gain["gain_percent"] == pytest.approx(100 * (gain["step_ps"] - gain["predicted_step_ps"]) / gain["step_ps"])
