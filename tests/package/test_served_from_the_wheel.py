"""``stepscope serve`` from the installed wheel (no Node.js, no compiler, no source tree on
``sys.path``) shows every tool of a shared GPU trace and of the shared TPU profile in a real
Chromium: the page is the one the wheel carries, and the figures on it are the profile's.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from tests.support.dashboard.browser import page_url, wait_ready
from tests.support.dashboard.server import DashboardServer
from tests.support.package import Venv
from tests.support.traces import shared

GPU_TRACE = "kineto/v100_resnet_ns_resolution.pt.trace.json.gz"
TPU_SESSION = "2024_05_01_12_00_00"
# What a page shows when it has something to show, and the notice it shows when it has not.
CONTENT = "[data-metric], table[data-table] tbody tr, canvas, .note"


def _logdir(root: Path) -> Path:
    """torch's trace-handler layout for the GPU trace, TensorBoard's for the TPU profile."""
    (root / "gpu").mkdir(parents=True)
    shutil.copy(shared(GPU_TRACE), root / "gpu" / Path(GPU_TRACE).name)
    session = root / "tpu" / "plugins" / "profile" / TPU_SESSION
    session.mkdir(parents=True)
    shutil.copy(shared("xplane/tpu_v_inference_4chips.xplane.pb"), session / "tpu_host.xplane.pb")
    return root


def _kernel_names() -> set[str]:
    """The GPU trace's kernels, from its JSON (category "kernel")."""
    with gzip.open(shared(GPU_TRACE)) as stream:
        return {event["name"] for event in json.load(stream)["traceEvents"] if event.get("cat") == "kernel"}


def test_every_tool_of_a_gpu_and_a_tpu_profile_from_the_wheel(fresh: Venv, page, tmp_path: Path):
    server = DashboardServer(_logdir(tmp_path / "logs"), tmp_path / "cache", python=str(fresh.python), env=fresh.env())
    try:
        runs = {run["name"]: run["hosts"] for run in server.get("/api/runs").json()["runs"]}
        assert runs == {"gpu": ["v100_resnet_ns_resolution"], f"tpu/{TPU_SESSION}": ["tpu_host"]}
        # The kernel stats the wheel's server computes name every kernel of the trace.
        kernels = server.ready("/api/data", run="gpu", host="v100_resnet_ns_resolution", tool="kernel_stats").json()
        assert {row["kernel_name"] for row in kernels["rows"]} == _kernel_names()
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
