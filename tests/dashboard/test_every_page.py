"""Every tool's page on a GPU, a TPU and a CPU profile, in a real headless Chromium: each
opens without a page error, shows something (a figure, a table, a chart or a one-line
notice that says why there is nothing), never an empty table, and is photographed to
``screenshots/<tool>_<kind>.png`` (whole pages, for a look after a run; docs/images' gallery
is ``tests.support.screenshots``'s).

The tool list comes from the server's ``/api/tools``, so a new tool is covered the day it
registers; the runs are the dashboard fixture's real profiles.
"""

from __future__ import annotations

import pytest

from tests.support.dashboard.browser import CONTENT, SCREENSHOTS, page_url
from tests.support.dashboard.logdir import TPU_SESSION

READY_TIMEOUT_MS = 240_000
KINDS = ("gpu", "tpu", "cpu")


def where(kind: str, logdir) -> dict[str, str]:
    return {
        "gpu": dict(run="gpu", host="v100_resnet_ns_resolution"),
        "tpu": dict(run=f"tpu/{TPU_SESSION}", host="tpu_host"),
        "cpu": dict(run=logdir.cpu_run, host=logdir.cpu_host),
    }[kind]


def tool_names(server, place: dict[str, str]) -> list[str]:
    return [entry["name"] for entry in server.get("/api/tools", **place).json()["tools"]]


@pytest.mark.parametrize("kind", KINDS)
def test_every_page_shows_what_applies(page, server, logdir, kind):
    place = where(kind, logdir)
    names = tool_names(server, place)
    assert {"overview_page", "trace_viewer", "memory_profile"} <= set(names)
    for tool in names:
        page.goto(page_url(server.url, **place, tool=tool))
        page.wait_for_selector(f'#tool[data-tool="{tool}"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
        panel = page.locator("#tool")
        shown = [item for item in panel.locator(CONTENT).all() if item.is_visible()]
        assert shown, f"{tool} on the {kind} profile shows nothing and says nothing"
        empty = [
            table.get_attribute("data-table")
            for table in panel.locator("table[data-table]").all()
            if table.is_visible() and table.locator("tbody tr").count() == 0
        ]
        assert empty == [], f"{tool} on the {kind} profile shows empty tables: {empty}"
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{tool}_{kind}.png"), full_page=True)


def test_the_distributed_page_is_offered_for_several_hosts_and_several_devices(page, server, logdir):
    """The page's own distributed view (not in /api/tools): in the menu of the gpu run (two
    hosts, two ranks), shown like every page, and on a run of one host of several devices."""
    page.goto(page_url(server.url, **where("gpu", logdir), tool="distributed"))
    page.wait_for_selector('#tool[data-tool="distributed"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
    panel = page.locator("#tool")
    assert page.locator('canvas[data-chart="distributed-heatmap"]').is_visible()
    empty = [table.get_attribute("data-table") for table in panel.locator("table[data-table]").all() if table.locator("tbody tr").count() == 0]
    assert empty == []
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "distributed_gpu.png"), full_page=True)
    # A run of one host is offered it too: the TPU host's 4 chips are its units (by device,
    # the default for one profile of several devices).
    page.goto(page_url(server.url, **where("tpu", logdir), tool="overview_page"))
    page.wait_for_selector('#tool[data-tool="overview_page"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
    assert "distributed" in page.locator("#tool-select option").evaluate_all("options => options.map(o => o.value)")
    page.goto(page_url(server.url, **where("tpu", logdir), tool="distributed"))
    page.wait_for_selector('#tool[data-tool="distributed"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
    labels = page.evaluate("() => window.__stepscope.charts['distributed-heatmap'].options.scales.y.labels")
    assert labels == [f"{n} TPU:{n}" for n in range(4)]
