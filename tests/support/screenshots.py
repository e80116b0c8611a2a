"""The gallery of docs/images/: every page that applies to a GPU, a TPU and a CPU run, as a
user sees it at 1280x800 (the window, not the whole page), one PNG per (run, tool) named
``<run>_<tool>.png``; and the README's pictures, taken from the same pages.

    .venv/bin/python -m tests.support.screenshots [--out docs/images]

The runs: the shared V100 ResNet trace (gpu), the shared 4-chip TPU XSpace (tpu) and
``stepscope demo``'s first run, a real torch CPU capture made here (cpu; its compare page
against the demo's second run is ``cpu_diff.png``). A real ``stepscope serve`` serves them
and Debian's Chromium draws them. The tools are those the page's own menu offers (greyed-out
ones have nothing to show), so a new tool is photographed the day it registers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from stepscope.demo import RUN_AFTER, RUN_BEFORE
from tests.support.dashboard.browser import chromium, offered, page_url, wait_ready
from tests.support.dashboard.logdir import TPU_SESSION
from tests.support.dashboard.server import DashboardServer
from tests.support.demo_runs import run_demo
from tests.support.traces import ROOT, shared

VIEWPORT = {"width": 1280, "height": 800}
GPU_TRACE = "kineto/v100_resnet_ns_resolution.pt.trace.json.gz"
TPU_XSPACE = "xplane/tpu_v_inference_4chips.xplane.pb"
COMPARE = "diff"
# The README's pictures (docs/images/<file>): the gallery's page each one is.
README_PICTURES = {
    "overview_page.png": "gpu_overview_page.png",
    "framework_op_stats.png": "gpu_framework_op_stats.png",
    "kernel_stats.png": "gpu_kernel_stats.png",
    "op_profile.png": "tpu_op_profile.png",
    "memory_profile.png": "tpu_memory_profile.png",
    "trace_viewer.png": "tpu_trace_viewer.png",
}


@dataclass(frozen=True)
class Place:
    """A run/host of the gallery's logdir, by the name its pictures start with."""

    kind: str
    run: str
    host: str


def make_logdir(root: Path) -> tuple[list[Place], Place]:
    """Lays out the three runs under ``root``; returns them and the demo's second run (the
    CPU run's "after" on its compare page)."""
    (root / "gpu").mkdir(parents=True)
    shutil.copy(shared(GPU_TRACE), root / "gpu")
    tpu = root / "tpu/plugins/profile" / TPU_SESSION
    tpu.mkdir(parents=True)
    shutil.copy(shared(TPU_XSPACE), tpu / "tpu_host.xplane.pb")
    demo = root / "demo"
    ran = run_demo(demo)
    if ran.returncode != 0:
        raise SystemExit(f"stepscope demo failed: {ran.stderr[-2000:]}")
    shutil.rmtree(demo / "reports")
    found = []
    for name in (RUN_BEFORE, RUN_AFTER):
        (path,) = (demo / name).glob("plugins/profile/*/*.xplane.pb")
        found.append(Place("cpu", f"demo/{name}/{path.parent.name}", path.name.removesuffix(".xplane.pb")))
    gpu = Place("gpu", "gpu", Path(GPU_TRACE).name.removesuffix(".pt.trace.json.gz"))
    return [gpu, Place("tpu", f"tpu/{TPU_SESSION}", "tpu_host"), found[0]], found[1]


def settle(page, tool: str) -> None:
    """What the page still draws once ready: the trace viewer's first frame, charts' animations."""
    if tool == "trace_viewer":
        page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0", timeout=60_000)
    page.wait_for_timeout(1000)


def save(page, path: Path) -> None:
    """The window (not the whole page) written atomically."""
    temporary = path.with_suffix(".tmp.png")
    page.screenshot(path=str(temporary))
    os.replace(temporary, path)


def photograph(out: Path, work: Path) -> list[Path]:
    places, after = make_logdir(work / "logs")
    server = DashboardServer(work / "logs", work / "cache")
    written = []
    try:
        with chromium() as browser:
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            for place in places:
                for tool in offered(page, server, place.run, place.host):
                    where = dict(run=place.run, host=place.host, tool=tool)
                    if tool == COMPARE:
                        # The demo's pair only: the GPU and TPU runs have no second profile of their kind here.
                        if place.kind != "cpu":
                            continue
                        where = dict(run=after.run, host=after.host, tool=tool, base_run=place.run, base_host=place.host)
                    page.goto(page_url(server.url, **where))
                    wait_ready(page, tool)
                    settle(page, tool)
                    written.append(out / f"{place.kind}_{tool}.png")
                    save(page, written[-1])
            context.close()
    finally:
        server.stop()
    for readme, source in README_PICTURES.items():
        shutil.copyfile(out / source, out / readme)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stepscope-gallery-") as work:
        written = photograph(args.out, Path(work))
    print(f"{len(written)} pages in {args.out}")


if __name__ == "__main__":
    main()
