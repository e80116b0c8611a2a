"""``stepscope serve`` and TensorBoard's stepscope tab, from the installed wheel (no Node.js,
no compiler, no source tree on ``sys.path``), show every tool of a shared GPU trace and of
the shared TPU profile in a real Chromium: the page is the one the wheel carries, found
by TensorBoard through the wheel's entry point, and the figures on it are the profile's.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from tests.support.dashboard.browser import CONTENT, READY_TIMEOUT_MS, page_url, wait_ready
from tests.support.dashboard.server import DashboardServer
from tests.support.dashboard.tensorboard import TabWatch, TensorBoardServer, choose_tool, go, open_tab, shows_content
from tests.support.package import Venv
from tests.support.traces import shared

GPU_TRACE = "kineto/v100_resnet_ns_resolution.pt.trace.json.gz"
TPU_SESSION = "2024_05_01_12_00_00"
GPU = dict(run="gpu", host="v100_resnet_ns_resolution")


def _logdir(root: Path) -> Path:
    """torch's trace-handler layout for the GPU trace, TensorBoard's for the TPU profile."""
    (root / "gpu").mkdir(parents=True)
    shutil.copy(shared(GPU_TRACE), root / "gpu" / Path(GPU_TRACE).name)
    session = root / "tpu" / "plugins" / "profile" / TPU_SESSION
    session.mkdir(parents=True)
    shutil.copy(shared("xplane/tpu_v_inference_4chips.xplane.pb"), session / "tpu_host.xplane.pb")
    return root


def _kernels() -> list[str]:
    """The GPU trace's kernel launches, from its JSON (category "kernel")."""
    with gzip.open(shared(GPU_TRACE)) as stream:
        return [event["name"] for event in json.load(stream)["traceEvents"] if event.get("cat") == "kernel"]


def test_every_tool_of_a_gpu_and_a_tpu_profile_from_the_wheel(fresh: Venv, page, tmp_path: Path):
    server = DashboardServer(_logdir(tmp_path / "logs"), tmp_path / "cache", python=str(fresh.python), env=fresh.env())
    try:
        runs = {run["name"]: run["hosts"] for run in server.get("/api/runs").json()["runs"]}
        assert runs == {"gpu": ["v100_resnet_ns_resolution"], f"tpu/{TPU_SESSION}": ["tpu_host"]}
        # The kernel stats the wheel's server computes name every kernel of the trace.
        kernels = server.ready("/api/data", **GPU, tool="kernel_stats").json()
        assert {row["kernel_name"] for row in kernels["rows"]} == set(_kernels())
        for run, (host,) in runs.items():
            tools = [entry["name"] for entry in server.get("/api/tools", run=run, host=host).json()["tools"]]
            assert {"overview_page", "trace_viewer", "framework_op_stats"} <= set(tools)
            for tool in tools:
                page.goto(page_url(server.url, run=run, host=host, tool=tool))
                wait_ready(page, tool)
                shown = [item for item in page.locator("#tool").locator(CONTENT).all() if item.is_visible()]
                assert shown, f"{tool} of {run} shows nothing and says nothing"
    finally:
        server.stop()


def test_every_tool_in_tensorboards_tab_from_the_wheel(with_tensorboard: Venv, browser, tmp_path: Path):
    tensorboard = TensorBoardServer(
        _logdir(tmp_path / "logs"), tmp_path / "cache", tmp_path / "tensorboard.log", bin_dir=with_tensorboard.root / "bin", env=with_tensorboard.env()
    )
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        watch = TabWatch(page)
        frame = open_tab(page, tensorboard)
        go(frame, tensorboard, "overview_page", **GPU)
        # The menu greys out what a GPU trace without XLA programs lacks (graph viewer...),
        # each with its reason, once the profile is analysed; the rest is opened.
        frame.wait_for_selector('#tool-select option[value="graph_viewer"][disabled]', state="attached", timeout=READY_TIMEOUT_MS)
        menu = frame.locator("#tool-select option").evaluate_all("options => options.map(o => [o.value, o.disabled, o.getAttribute('aria-description')])")
        assert all(why for _, disabled, why in menu if disabled)
        tools = [tool for tool, disabled, _ in menu if not disabled]
        assert {"overview_page", "kernel_stats", "trace_viewer"} <= set(tools)
        for tool in tools:
            choose_tool(frame, tool)
            shows_content(frame, f"{tool} in TensorBoard")
        # The kernel table's occurrences add up to the trace's kernel launches.
        choose_tool(frame, "kernel_stats")
        cells = frame.locator('table[data-table="kernels"] tbody td[data-key="occurrences"]')
        assert sum(float(value) for value in cells.evaluate_all("cells => cells.map(c => c.dataset.value)")) == len(_kernels())
        watch.check()
    finally:
        context.close()
        tensorboard.stop()
