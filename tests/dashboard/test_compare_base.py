"""The compare view never diffs against a run picked for the user, and says when the two
runs do not compare, at 1280x800 and 1920x1080: ``tool=diff`` without a
base asks for one (a link per other run/host, this run's other hosts first); a base the
logdir does not hold is named; the A100 PyTorch run against the TPU JAX run shows the
warning first, naming both sides as the files do."""

from __future__ import annotations

import gzip
import json
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.dashboard.browser import page_url, wait_ready
from tests.support.dashboard.logdir import TPU_SESSION
from tests.support.traces import shared
from tests.support.xla_ops import plane_stats

VIEWPORTS = [(1280, 800), (1920, 1080)]
TPU = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host")
A100 = dict(run="gpu", host="alexnet_small")


def expected_warning() -> str:
    """The chips as the two files name them (Kineto's deviceProperties of GPU 0, where the
    trace's kernels run; the TPU plane's device_type_string), the frameworks as their ops
    show (aten:: ops; jit_ programs)."""
    with gzip.open(shared("kineto/alexnet_small.pt.trace.json.gz")) as stream:
        (gpu,) = [device["name"] for device in json.load(stream)["deviceProperties"] if device["id"] == 0]
    tpu = plane_stats(shared("xplane/tpu_v_inference_4chips.xplane.pb"))["/device:TPU:0"]["device_type_string"]
    return f"{gpu} (PyTorch) vs {tpu} (JAX): step times are not comparable op by op (different hardware and frameworks)"


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
def test_no_base_asks_for_one_and_other_hardware_is_said(page, server, width, height):
    runs = server.get("/api/runs").json()["runs"]
    # Every other run/host of the logdir, in its order (the TPU run has one host, so none comes first).
    candidates = [(run["name"], host) for run in runs for host in run["hosts"] if (run["name"], host) != (TPU["run"], TPU["host"])]
    page.set_viewport_size({"width": width, "height": height})
    page.goto(page_url(server.url, **TPU, tool="diff"))
    wait_ready(page, "diff")
    prompt = page.locator("#compare-pick-base")
    assert prompt.is_visible() and prompt.locator("#compare-pick-text").inner_text().startswith("Compare needs a base: pick the run")
    links = prompt.locator("a[data-base-run]")
    assert [(links.nth(i).get_attribute("data-base-run"), links.nth(i).get_attribute("data-base-host")) for i in range(links.count())] == candidates
    # Nothing was diffed: no verdict, no diff request's figures, and the address names no base.
    assert page.locator("#diff-verdict").count() == 0 and page.locator("#error").count() == 0
    assert "base_run" not in parse_qs(urlparse(page.url).query)
    assert page.locator("#compare-select").input_value() == ""
    # A base the logdir does not hold: named, and still nothing picked instead.
    page.goto(page_url(server.url, **TPU, tool="diff", base_run="nope", base_host="x"))
    wait_ready(page, "diff")
    assert page.locator("#compare-pick-text").inner_text().startswith("There is no run/host nope · x in this log directory.")
    assert page.locator("#diff-verdict").count() == 0
    # Picking the A100 run: the diff, with the warning above its verdict.
    page.click(f'#compare-pick-base a[data-base-run="{A100["run"]}"][data-base-host="{A100["host"]}"]')
    page.wait_for_selector("#diff-verdict", timeout=240_000)
    wait_ready(page, "diff")
    query = parse_qs(urlparse(page.url).query)
    assert (query["base_run"], query["base_host"]) == ([A100["run"]], [A100["host"]])
    warning = page.locator("#diff-summary [data-diff-warning]")
    assert warning.all_inner_texts() == [expected_warning()]
    assert warning.is_visible()
    box, verdict = warning.bounding_box(), page.locator("#diff-verdict").bounding_box()
    assert box is not None and verdict is not None and box["y"] + box["height"] <= verdict["y"]
    assert box["y"] + box["height"] <= height  # on the first screen
