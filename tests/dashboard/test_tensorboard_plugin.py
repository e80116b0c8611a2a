"""stepscope's tab in a real ``tensorboard --logdir`` (the plugin TensorBoard finds through
the installed package's entry point), over plain HTTP and in a real headless Chromium.

The log directory is TensorBoard's layout: a real A100 Kineto trace converted by
``stepscope convert`` into ``<logdir>/gpu/plugins/profile/<session>/<host>.xplane.pb``, and a
capture stepscope made here of a plain Python loop of ``STEPS`` steps
(``<logdir>/plugins/profile/<session>/<host>.xplane.pb``). Expected numbers come from those
inputs: the trace's kernels and ``ProfilerStep#N`` events counted in its JSON with the
standard library, the capture's steps from the loop that made it.
"""

from __future__ import annotations

import functools
import gzip
import json
import shutil
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import playwright.sync_api as playwright_api
import pytest

from stepscope.dashboard.tensorboard_plugin import StepscopePlugin
from tests.support.dashboard.browser import READY_TIMEOUT_MS, SCREENSHOTS
from tests.support.dashboard.tensorboard import PAGE, PREFIX, TabWatch, TensorBoardServer, choose_tool, dashboard_frame, go, open_tab, shows_content
from tests.support.service_job import Job
from tests.support.traces import read_json, shared

GPU_TRACE = "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"
GPU_HOST = "a100_rank0"
SESSION = "2024_01_01_00_00_00"
STEPS = 8

CAPTURE_JOB = textwrap.dedent(
    """
    import sys
    import stepscope

    with stepscope.profile(sys.argv[1]):
        for number in range(int(sys.argv[2])):
            with stepscope.step(number):
                with stepscope.trace("compute"):
                    sum(range(200_000))
    """
)


@dataclass(frozen=True)
class TensorBoardLogdir:
    root: Path
    gpu: dict[str, str]  # run and host, as the dashboard names them
    capture: dict[str, str]
    kernels: int  # kernel events in the GPU trace's JSON
    gpu_steps: list[int]  # its ProfilerStep numbers


def make_logdir(root: Path) -> TensorBoardLogdir:
    gpu_file = root / "gpu" / "plugins" / "profile" / SESSION / f"{GPU_HOST}.xplane.pb"
    gpu_file.parent.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "stepscope.cli", "convert", str(shared(GPU_TRACE)), str(gpu_file)], check=True, capture_output=True)
    script = root.parent / "capture_job.py"
    script.write_text(CAPTURE_JOB)
    subprocess.run([sys.executable, str(script), str(root), str(STEPS)], check=True, capture_output=True)
    [captured] = (root / "plugins" / "profile").glob("*/*.xplane.pb")
    events = read_json(shared(GPU_TRACE))["traceEvents"]
    return TensorBoardLogdir(
        root=root,
        gpu={"run": f"gpu/{SESSION}", "host": GPU_HOST},
        capture={"run": captured.parent.name, "host": captured.name.removesuffix(".xplane.pb")},
        kernels=sum(1 for event in events if event.get("cat") == "kernel"),
        gpu_steps=sorted({int(event["name"].split("#")[1]) for event in events if str(event.get("name", "")).startswith("ProfilerStep#")}),
    )


@pytest.fixture(scope="module")
def tb_logdir(tmp_path_factory) -> TensorBoardLogdir:
    return make_logdir(tmp_path_factory.mktemp("tensorboard") / "logs")


@pytest.fixture(scope="module")
def tensorboard(tb_logdir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tensorboard-process")
    running = TensorBoardServer(tb_logdir.root, folder / "cache", folder / "tensorboard.log")
    yield running
    running.stop()
    assert running.process.returncode is not None


# ---------------------------------------------------------------- plain HTTP


def test_tensorboard_lists_the_tab_and_serves_the_page_under_its_prefix(tensorboard, tb_logdir):
    listing = tensorboard.get("/data/plugins_listing").json()
    assert listing["stepscope"]["enabled"] is True
    assert listing["stepscope"]["tab_name"] == "stepscope"
    assert listing["stepscope"]["loading_mechanism"] == {"type": "IFRAME", "module_path": f"{PREFIX}/tensorboard_entry.js"}
    entry = tensorboard.get(f"{PREFIX}/tensorboard_entry.js")
    assert entry.status == 200 and entry.headers["content-type"].startswith("text/javascript")
    assert "export function render()" in entry.body.decode()
    page = tensorboard.get(PAGE)
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    html = page.body.decode()
    assert 'id="tool-select"' in html
    # Every address in the page is relative to it (an absolute one would leave the prefix).
    assert 'src="/' not in html and 'href="/' not in html
    runs = {run["name"]: run["hosts"] for run in tensorboard.get("/api/runs").json()["runs"]}
    assert runs[tb_logdir.gpu["run"]] == [tb_logdir.gpu["host"]]
    assert runs[tb_logdir.capture["run"]] == [tb_logdir.capture["host"]]
    # Outside the plugin's prefix the dashboard's API is not there (TensorBoard's own 404).
    assert tensorboard.request("GET", "/data/plugin/stepscope").status == 404


def test_progress_then_data_gzip_and_a_streamed_export_through_tensorboard(tensorboard, tb_logdir):
    """A run added while TensorBoard runs is listed, answered 202 with its progress while
    it is analysed, then 200; answers are gzipped for clients that ask; the trace export
    streams a gzip attachment."""
    fresh = tb_logdir.root / "fresh" / "plugins" / "profile" / SESSION / "a100_copy.xplane.pb"
    fresh.parent.mkdir(parents=True)
    shutil.copy(tb_logdir.root / "gpu" / "plugins" / "profile" / SESSION / f"{GPU_HOST}.xplane.pb", fresh)
    where = {"run": f"fresh/{SESSION}", "host": "a100_copy"}
    tensorboard.wait_for_run(where["run"])
    first = tensorboard.get("/api/data", **where, tool="kernel_stats")
    assert first.status == 202 and 0 <= first.json()["progress"] <= 1
    done = tensorboard.ready("/api/data", **where, tool="kernel_stats")
    assert done.status == 200
    assert sum(row["occurrences"] for row in done.json()["rows"]) == tb_logdir.kernels
    query = "&".join(f"{key}={value}" for key, value in {**where, "tool": "kernel_stats"}.items())
    zipped = tensorboard.request("GET", f"/api/data?{query}", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers.get("content-encoding") == "gzip"
    assert json.loads(gzip.decompress(zipped.body)) == done.json()
    info = tensorboard.ready("/api/trace/tracks", **where).json()
    export = tensorboard.get("/api/trace/export", **where, start_ps="0", end_ps=str(info["span_ps"] + 1))
    assert export.status == 200 and "attachment" in export.headers["content-disposition"]
    exported = json.loads(gzip.decompress(export.body))
    assert sum(1 for event in exported["traceEvents"] if event.get("ph") == "X") > tb_logdir.kernels


def test_who_may_ask_inside_tensorboard(tensorboard, tb_logdir):
    """TensorBoard on 127.0.0.1: its loopback names are answered, others refused (DNS
    rebinding); other sites' API requests and captures are refused; the page may be framed
    (by TensorBoard's page, and a notebook's above it), the other headers hold."""
    assert tensorboard.request("GET", "/api/runs", headers={"Host": f"localhost:{tensorboard.port}"}).status == 200
    refused = tensorboard.request("GET", "/api/runs", headers={"Host": "evil.example"})
    assert refused.status == 400 and "--stepscope_allow_host" in refused.json()["error"]
    assert tensorboard.request("GET", "/api/runs", headers={"Sec-Fetch-Site": "cross-site"}).status == 403
    body = json.dumps({"addresses": ["127.0.0.1:1"], "duration_ms": 100, "attempts": 1}).encode()
    foreign = {"Content-Type": "application/json", "Origin": "http://evil.example"}
    assert tensorboard.request("POST", "/api/capture", body, foreign).status == 403
    own = {"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{tensorboard.port}"}
    assert tensorboard.request("POST", "/api/capture", body, own).status == 202
    page = tensorboard.get(PAGE)
    assert "x-frame-options" not in page.headers
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors" not in policy and "script-src 'self'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize(
    "path",
    [
        "/assets/..%2f..%2f..%2f..%2f..%2fpyproject.toml",
        "/../../../../../../etc/passwd",
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
        "//etc/passwd",
    ],
)
def test_no_address_under_the_prefix_reaches_outside(tensorboard, path):
    """The prefix moved out of the path leaves the rest to the dashboard's own routing,
    which serves only its page, its assets and the API."""
    answer = tensorboard.request("GET", PREFIX + path)
    assert answer.status in (400, 404), (path, answer.status)
    assert b"root:" not in answer.body and b"[project]" not in answer.body


def test_the_tab_is_active_only_where_there_is_a_profile(tmp_path, tb_logdir):
    from tensorboard.plugins import base_plugin

    def active(logdir: str | None) -> bool:
        return StepscopePlugin(base_plugin.TBContext(logdir=logdir, flags=None)).is_active()

    (tmp_path / "events").mkdir()
    (tmp_path / "events" / "events.out.tfevents.1.host").write_bytes(b"")
    assert not active(str(tmp_path))
    assert not active(None)
    assert not active(str(tmp_path / "missing"))
    assert active(str(tb_logdir.root))


# ---------------------------------------------------------------- in Chromium


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def column_values(frame, table: str, key: str) -> list[float]:
    cells = frame.locator(f'table[data-table="{table}"] tbody td[data-key="{key}"]')
    return [float(value) for value in cells.evaluate_all("cells => cells.map(c => c.dataset.value)")]


@pytest.fixture
def tab(browser, tensorboard):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watch = TabWatch(page)
    yield page, watch
    context.close()


def test_every_tool_in_the_tensorboard_tab(tab, tensorboard, tb_logdir):
    page, watch = tab
    frame = open_tab(page, tensorboard)
    # The dashboard fills the tab: the frame spans the window's width and the rest of its height.
    box = page.locator("iframe").first.bounding_box()
    assert box is not None and box["width"] >= 1270 and box["y"] + box["height"] >= 890
    gpu, capture = tb_logdir.gpu, tb_logdir.capture
    go(frame, tensorboard, "overview_page", **gpu)
    frame.wait_for_selector('#tool-select option[value="graph_viewer"][disabled]', state="attached", timeout=READY_TIMEOUT_MS)
    menu = frame.locator("#tool-select option").evaluate_all("options => options.map(o => [o.value, o.disabled, o.getAttribute('aria-description')])")
    assert {"overview_page", "kernel_stats", "trace_viewer", "memory_profile", "distributed"} <= {tool for tool, _, _ in menu}
    # The tools with nothing to show for this profile are greyed out, each with its reason.
    assert all(why for _, disabled, why in menu if disabled)
    tools = [tool for tool, disabled, _ in menu if not disabled]
    assert {"overview_page", "kernel_stats", "trace_viewer"} <= set(tools)
    for tool in tools:
        choose_tool(frame, tool)
        shows_content(frame, f"{tool} of {gpu['run']}")
        if tool == "overview_page":
            assert sorted(int(step) for step in column_values(frame, "steps", "step")) == tb_logdir.gpu_steps
        elif tool == "kernel_stats":
            assert sum(column_values(frame, "kernels", "occurrences")) == tb_logdir.kernels
        elif tool == "trace_viewer":
            frame.wait_for_function("() => Number(document.querySelector('#trace-canvas').dataset.drawnEvents) > 0", timeout=READY_TIMEOUT_MS)
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"tensorboard_{tool}.png"))
    # The address inside the frame is the page's deep link, under the prefix.
    assert urlparse(frame.url).path == PAGE and parse_qs(urlparse(frame.url).query)["run"] == [gpu["run"]]
    # The capture: its overview counts the loop's steps.
    go(frame, tensorboard, "overview_page", **capture)
    assert sorted(int(step) for step in column_values(frame, "steps", "step")) == list(range(STEPS))
    watch.check()


NOTEBOOK = """<!doctype html>
<title>a notebook</title>
<link rel="icon" href="data:," />
<p>%tensorboard --logdir logs</p>
<iframe id="tensorboard" src="{url}#stepscope" width="1240" height="820"></iframe>
"""


def test_the_tab_inside_a_notebook(tab, tensorboard, tb_logdir, tmp_path):
    """``%tensorboard`` shows TensorBoard in a frame of the notebook's page, on another
    origin (the notebook's port): the tab's page, a frame inside that frame, must load
    there too (frame-ancestors or X-Frame-Options 'self' would blank it)."""
    page, watch = tab
    (tmp_path / "notebook.html").write_text(NOTEBOOK.format(url=tensorboard.root))
    handler = functools.partial(QuietFiles, directory=str(tmp_path))
    notebook = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=notebook.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{notebook.server_port}/notebook.html")
        frame = dashboard_frame(page)
        frame.wait_for_selector('#tool[data-state="ready"]', timeout=READY_TIMEOUT_MS)
        assert frame.parent_frame is not None and frame.parent_frame.parent_frame == page.main_frame
        go(frame, tensorboard, "overview_page", **tb_logdir.capture)
        assert sorted(int(step) for step in column_values(frame, "steps", "step")) == list(range(STEPS))
    finally:
        notebook.shutdown()
        notebook.server_close()
    watch.check()


def test_the_capture_dialog_in_the_tensorboard_tab(tab, tensorboard, tmp_path):
    """Capture profile, from the tab: the dialog opens, captures a live job through
    TensorBoard and closes onto the new run."""
    page, watch = tab
    frame = open_tab(page, tensorboard)
    # Started once the tab is up (TensorBoard's page may take a while on a busy machine);
    # it steps until the capture is over (finish).
    job = Job(tmp_path, "tensorboard")
    before = {run["name"] for run in tensorboard.get("/api/runs").json()["runs"]}
    frame.click("#capture-button")
    assert frame.locator("#capture-dialog").evaluate("dialog => dialog.open")
    frame.fill("#capture-addresses", job.address)
    frame.fill("#capture-duration", "600")
    frame.fill("#capture-host-level", "1")
    frame.click("#capture-submit")
    try:
        frame.wait_for_function("() => !document.getElementById('capture-dialog').open", timeout=120_000)
    except playwright_api.TimeoutError:
        pytest.fail(f"the dialog stayed open: {frame.locator('#capture-status').inner_text()}")
    assert "job finished" in job.finish()
    after = {run["name"] for run in tensorboard.get("/api/runs").json()["runs"]}
    [new] = after - before
    assert frame.input_value("#run-select") == new
    frame.wait_for_selector('#tool[data-tool="overview_page"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
    assert int(frame.locator('[data-metric="step_count"]').first.get_attribute("data-value")) >= 10
    watch.check()
