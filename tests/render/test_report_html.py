"""`stepscope report --format html`: one file that opens from disk in Chromium with every
request but the file itself refused, shows every section, draws its charts, and holds the
numbers the trace itself gives (read here with json, not by stepscope)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from stepscope.errors import StepscopeError
from stepscope.render.html import read_script
from tests.support.cli import assert_one_error_line, run_stepscope
from tests.support.dashboard.browser import SCREENSHOTS
from tests.support.demo_runs import DEMO_STEPS
from tests.support.traces import shared

GPU_TRACE = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")
SECTIONS = ["overview", "verdict", "step-time", "top-ops", "top-kernels", "input-pipeline"]
MAX_BYTES = 400_000  # the script (~175 kB) and the data of a small profile


def kineto_events(path: Path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def profiler_steps_us(events: list[dict]) -> list[float]:
    return [event["dur"] for event in events if str(event.get("name", "")).startswith("ProfilerStep#")]


def open_offline(browser, report: Path):
    """The report opened from file:// with every other request aborted and recorded."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    url = report.resolve().as_uri()
    requested: list[str] = []
    errors: list[str] = []

    def only_the_file(route) -> None:
        requested.append(route.request.url)
        route.continue_() if route.request.url == url else route.abort()

    context.route("**/*", only_the_file)
    page = context.new_page()
    page.on("request", lambda request: requested.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("body[data-state=ready]", timeout=30_000)
    return context, page, url, requested, errors


def painted_pixels(page, name: str) -> int:
    """Pixels of the chart's canvas that are not transparent (0: nothing drawn)."""
    return page.evaluate(
        """name => { const canvas = document.querySelector(`canvas[data-chart="${name}"]`);
                     const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
                     let painted = 0; for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) painted++;
                     return painted; }""",
        name,
    )


def write_report(path: Path, tmp_path: Path) -> Path:
    report = tmp_path / "out" / "report.html"
    result = run_stepscope("report", "--format", "html", "-o", str(report), str(path))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [f"wrote {report}"] and result.stdout == ""
    assert sorted(report.parent.iterdir()) == [report]  # atomic: no temporary file left
    assert report.stat().st_size < MAX_BYTES
    return report


def check_offline_and_drawn(page, url: str, requested: list[str], errors: list[str], sections: list[str]) -> None:
    assert set(requested) == {url}, requested  # nothing but the file itself, not even a favicon
    assert errors == []
    for section in sections:
        assert page.locator(f"section#{section}").is_visible(), section
    assert painted_pixels(page, "step_time") > 1000


def test_gpu_trace_report_offline(browser, tmp_path):
    report = write_report(GPU_TRACE, tmp_path)
    events = kineto_events(GPU_TRACE)
    steps_us = profiler_steps_us(events)  # 3 ProfilerStep#N events
    kernel_us: Counter[str] = Counter()
    for event in events:
        if event.get("cat") == "kernel":
            kernel_us[event["name"]] += event["dur"]
    top_kernel, top_us = kernel_us.most_common(1)[0]

    context, page, url, requested, errors = open_offline(browser, report)
    try:
        check_offline_and_drawn(page, url, requested, errors, [*SECTIONS, "gpu"])
        assert painted_pixels(page, "top_kernels_0") > 1000
        assert page.get_attribute("[data-metric=step_count]", "data-value") == str(len(steps_us)) == "3"
        mean = float(page.get_attribute("[data-metric=step_time_mean_us]", "data-value"))
        assert mean == pytest.approx(sum(steps_us) / len(steps_us), abs=1e-3)
        # The chart's stacked categories add up to each step's length in the trace.
        chart = page.evaluate("() => window.__stepscope.charts.step_time.data.datasets.map(d => d.data)")
        assert [sum(column) for column in zip(*chart)] == pytest.approx(steps_us, abs=1e-3)
        first = page.locator("table[data-table=kernels] tbody tr").first
        assert first.locator("td[data-key=kernel_name]").get_attribute("data-value") == top_kernel
        assert float(first.locator("td[data-key=total_duration_us]").get_attribute("data-value")) == pytest.approx(top_us, abs=1e-3)
        # The verdict is the overview tool's, word for word.
        overview = json.loads(run_stepscope("report", "--format", "json", str(GPU_TRACE)).stdout)["overview_page"]
        assert page.locator("section#verdict p").first.inner_text() == overview["recommendation"]["summary"]
        assert page.locator("ul[data-list='next steps'] li").all_inner_texts() == overview["recommendation"]["next_steps"]
        SCREENSHOTS.mkdir(exist_ok=True)  # its top is docs/images/report_html.png
        page.screenshot(path=str(SCREENSHOTS / "report_html.png"), full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": 1500})
    finally:
        context.close()


def test_cpu_capture_report_offline(browser, tmp_path, demo_run):
    """A profile stepscope captured from a real PyTorch job on the CPU (``stepscope demo``)."""
    assert demo_run.returncode == 0, demo_run.stderr
    capture = sorted(demo_run.logdir.glob("1-*/plugins/profile/*/*.xplane.pb"))[0]
    report = write_report(capture, tmp_path)
    context, page, url, requested, errors = open_offline(browser, report)
    try:
        check_offline_and_drawn(page, url, requested, errors, SECTIONS)
        assert page.locator("section#gpu").count() == 0
        assert page.get_attribute("[data-metric=step_count]", "data-value") == str(DEMO_STEPS)  # the steps the demo profiled
        assert page.locator("section#top-kernels p").inner_text() == "No device kernels in this profile."
        chart = page.evaluate("() => window.__stepscope.charts.step_time.data.labels.length")
        assert chart == DEMO_STEPS
    finally:
        context.close()


def test_bad_input_is_one_line(tmp_path):
    garbage = tmp_path / "garbage.pt.trace.json"
    garbage.write_text("not a trace")
    report = tmp_path / "report.html"
    assert_one_error_line(run_stepscope("report", "--format", "html", "-o", str(report), str(garbage)), str(garbage))
    assert not report.exists()


def test_a_missing_script_is_one_clear_line(tmp_path):
    with pytest.raises(StepscopeError, match=r"missing\.js: the HTML report's chart script is not built \(run `make web`"):
        read_script(tmp_path / "missing.js")
