"""The distributed view over devices in a real Chromium, on a real `stepscope serve`: a run
of one 4-GPU node (read by device: auto) and a run of two such nodes (by rank, and by
device through the options bar's unit select). The expected numbers are those worked out
by hand in ``tests.support.device_runs``."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest

from stepscope.engines import analyse_run
from stepscope.trace.logdir import discover
from tests.support.dashboard.browser import SCREENSHOTS, page_url
from tests.support.dashboard.server import DashboardServer
from tests.support.device_runs import GPUS, NORMAL, SLOW_GPU, SLOW_STEP, SLOWED, STEP_US, STEPS, write_node

READY_TIMEOUT_MS = 240_000
PS_PER_US = 1_000_000
CHART = "distributed-heatmap"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("devices") / "logs"
    (logdir / "node").mkdir(parents=True)
    (logdir / "pair").mkdir()
    write_node(logdir / "node" / "node.pt.trace.json", slow=True)
    write_node(logdir / "pair" / "node0.pt.trace.json", slow=False)
    write_node(logdir / "pair" / "node1.pt.trace.json", slow=True)
    return logdir


@pytest.fixture(scope="module")
def server(logdir, tmp_path_factory):
    running = DashboardServer(logdir, tmp_path_factory.mktemp("cache"))
    yield running
    running.stop()


def wait_ready(page, tool: str) -> None:
    page.wait_for_selector(f'#tool[data-tool="{tool}"][data-state="ready"]', timeout=READY_TIMEOUT_MS)


def cells(page) -> dict[tuple[int, int], float]:
    shown = page.evaluate(f"() => window.__stepscope.charts[{CHART!r}].data.datasets[0].data")
    return {(cell["rank"], cell["step"]): cell["v"] for cell in shown}


def y_labels(page) -> list[str]:
    return page.evaluate(f"() => window.__stepscope.charts[{CHART!r}].options.scales.y.labels")


def test_one_node_is_a_heat_map_of_its_gpus_and_a_cell_opens_the_host_trace(page, server):
    page.goto(page_url(server.url, run="node", host="node", tool="distributed"))
    wait_ready(page, "distributed")
    assert "node: 4 devices of 1 host" in page.locator("#distributed-summary").text_content()
    assert y_labels(page) == [f"{n} GPU:{n}" for n in range(GPUS)]
    # Step time: every device has the host's ProfilerStep windows, 1000 us each.
    assert cells(page) == {(gpu, step): STEP_US for gpu in range(GPUS) for step in STEPS}
    page.select_option("#distributed-metric", "device_compute")
    page.wait_for_selector('[data-metric-shown="device_compute"]')
    expected = {(gpu, step): (SLOWED if (gpu, step) == (SLOW_GPU, SLOW_STEP) else NORMAL)["compute"] for gpu in range(GPUS) for step in STEPS}
    assert cells(page) == pytest.approx(expected)
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "distributed_devices.png"), full_page=True)
    # The straggler: GPU 2 at step 2, its work before the all-reduce 150 us over the others'.
    rows = page.locator('table[data-table="stragglers"] tbody tr')
    assert rows.count() == 1
    assert [rows.first.locator(f'td[data-key="{key}"]').text_content() for key in ("signal", "stage")] == ["work_time", "device_compute"]
    assert int(rows.first.locator('td[data-key="rank"]').get_attribute("data-value")) == SLOW_GPU
    assert float(rows.first.locator('td[data-key="excess_us"]').get_attribute("data-value")) == pytest.approx(150)
    # A click on GPU 2's step 2 opens the node's trace viewer on step 2's window: it starts
    # STEP_US after the earliest event (ProfilerStep#1 and the memcpys at BASE_US).
    point = page.evaluate(
        f"""() => {{ const chart = window.__stepscope.charts[{CHART!r}];
                   const index = chart.data.datasets[0].data.findIndex(c => c.rank === {SLOW_GPU} && c.step === {SLOW_STEP});
                   const cell = chart.getDatasetMeta(0).data[index].getCenterPoint();
                   return {{x: cell.x, y: cell.y}}; }}"""
    )
    page.locator(f'canvas[data-chart="{CHART}"]').click(position=point)
    page.wait_for_url("**tool=trace_viewer**", timeout=30_000)
    wait_ready(page, "trace_viewer")
    start_us = (SLOW_STEP - 1) * STEP_US  # after the profile's time 0 (device_runs.BASE_US)
    query = parse_qs(urlparse(page.url).query)
    assert query["run"] == ["node"] and query["host"] == ["node"]
    assert query["start_ps"] == [str(start_us * PS_PER_US)] and query["end_ps"] == [str((start_us + STEP_US) * PS_PER_US)]


def test_two_nodes_switch_from_ranks_to_host_by_device(page, server):
    page.goto(page_url(server.url, run="pair", host="node0", tool="distributed"))
    wait_ready(page, "distributed")
    assert y_labels(page) == ["0", "1"]  # auto: two files are two ranks
    page.select_option('select[name="option-by"]', "device")
    page.wait_for_url("**by=device**", timeout=30_000)
    wait_ready(page, "distributed")
    page.wait_for_function(f"() => window.__stepscope.charts[{CHART!r}].options.scales.y.labels.length === {2 * GPUS}")
    assert y_labels(page) == [f"{4 * host + gpu} node{host} GPU:{gpu}" for host in (0, 1) for gpu in range(GPUS)]
    assert page.locator("#distributed-ranks-from").text_content() == "Devices from host x device (hosts by host order, devices by ordinal)."
    rows = page.locator('table[data-table="stragglers"] tbody tr')
    assert rows.count() == 1 and int(rows.first.locator('td[data-key="rank"]').get_attribute("data-value")) == 4 + SLOW_GPU


def test_the_api_reads_by_and_answers_the_cli_view(server, logdir):
    auto = server.ready("/api/distributed", run="node")
    assert auto.status == 200
    document = auto.json()
    assert document["unit"] == "device" and len(document["ranks"]) == GPUS
    # The same reduce as the command line's, number for number.
    assert document == json.loads(json.dumps(analyse_run(discover(logdir / "node")[0], workers=1).to_json()))
    by_rank = server.ready("/api/distributed", run="node", by="rank").json()
    assert by_rank["unit"] == "rank" and len(by_rank["ranks"]) == 1
    wrong = server.get("/api/distributed", run="node", by="chip")
    assert wrong.status == 400 and "by='chip'" in wrong.json()["error"]
