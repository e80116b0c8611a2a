"""The distributed view's page in a real Chromium, on a real `stepscope serve` of the real
2-rank recsys run (two Kineto traces of one job, one run of two hosts).

Every number the page shows is checked against the trace JSON read here with the standard
library (``tests.support.distributed_runs``): the heat map's cells are the ProfilerStep#N
durations of each rank's file, its collective-wait cells the matched NCCL kernels'
durations beyond the faster rank's, and a click on a cell opens that rank's trace viewer on
that step's own window (its ProfilerStep#N, from that rank's earliest event).
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.dashboard.browser import SCREENSHOTS, page_url
from tests.support.dashboard.server import DashboardServer
from tests.support.distributed_runs import Stretch, events, host_name, json_calls, step_durations_us, step_windows, synthesize
from tests.support.traces import read_json, shared

RUN = "recsys"
RANK_FILES = {rank: f"kineto/recsys_sampled_rank{rank}_of_128.pt.trace.json.gz" for rank in (0, 1)}
HOSTS = {rank: f"recsys_sampled_rank{rank}_of_128" for rank in RANK_FILES}  # the run's names for the files
READY_TIMEOUT_MS = 240_000
PS_PER_US = 1_000_000
CHART = "distributed-heatmap"
# Four rank-shifted copies of recsys rank 0, rank 3's step 552 made 100 ms slower by one
# longer compute kernel (tests.support.distributed_runs): a straggler the rule names.
SYNTH_RUN = "synth"
SYNTH_RANKS = 4
SYNTH_SHIFT_US = 1_000
STRAGGLER = Stretch(rank=3, step=552, kind="compute", delta_us=100_000)


@pytest.fixture(scope="module")
def documents() -> dict[int, dict]:
    return {rank: read_json(shared(name)) for rank, name in RANK_FILES.items()}


@pytest.fixture(scope="module")
def recsys_server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("distributed") / "logs"
    (logdir / RUN).mkdir(parents=True)
    for name in RANK_FILES.values():
        shutil.copy(shared(name), logdir / RUN)
    synthesize(shared(RANK_FILES[0]), logdir / SYNTH_RUN, SYNTH_RANKS, SYNTH_SHIFT_US, (STRAGGLER,))
    running = DashboardServer(logdir, tmp_path_factory.mktemp("cache"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def server(recsys_server):
    """The shared ``page`` fixture (conftest.py) opens pages on this module's server."""
    return recsys_server


def wait_ready(page, tool: str) -> None:
    page.wait_for_selector(f'#tool[data-tool="{tool}"][data-state="ready"]', timeout=READY_TIMEOUT_MS)


def open_distributed(page, server) -> None:
    page.goto(page_url(server.url, run=RUN, host=HOSTS[0], tool="distributed"))
    wait_ready(page, "distributed")


def cells(page) -> dict[tuple[int, int], float]:
    shown = page.evaluate(f"() => window.__stepscope.charts[{CHART!r}].data.datasets[0].data")
    return {(cell["rank"], cell["step"]): cell["v"] for cell in shown}


def expected_waits_us(documents: dict[int, dict]) -> dict[tuple[int, int], float]:
    """Per rank and step, the NCCL kernels' time beyond the faster rank's, over the calls
    both ranks make (the k-th call of a name in a step, in kernel start order)."""
    durations: dict[tuple[int, str, int], dict[int, float]] = defaultdict(dict)
    for rank, document in documents.items():
        seen: dict[tuple[int, str], int] = defaultdict(int)
        for call in sorted(json_calls(document), key=lambda call: float(call.kernel["ts"])):
            ordinal = seen[(call.step, call.name)]
            seen[(call.step, call.name)] += 1
            durations[(call.step, call.name, ordinal)][rank] = float(call.kernel["dur"])
    waits: dict[tuple[int, int], float] = defaultdict(float)
    for (step, _name, _ordinal), by_rank in durations.items():
        if len(by_rank) == len(documents):
            for rank, duration in by_rank.items():
                waits[(rank, step)] += duration - min(by_rank.values())
    return waits


def test_the_heat_map_is_each_ranks_step_times_and_a_cell_opens_its_trace(page, recsys_server, documents):
    open_distributed(page, recsys_server)
    assert "distributed" in page.locator("#tool-select option").evaluate_all("options => options.map(o => o.value)")
    # Two ranks from distributedInfo; epoch-microsecond timestamps, so the clocks are aligned.
    assert [document["distributedInfo"]["rank"] for document in documents.values()] == [0, 1]
    assert page.locator("#distributed-ranks-from").text_content() == "Ranks from distributedInfo."
    assert "on the UNIX epoch, from epoch timestamps (2 ranks)" in page.locator("#distributed-alignment").text_content()
    # Step time cells: every rank's every ProfilerStep#N duration, and nothing else.
    expected = {(rank, step): duration for rank, document in documents.items() for step, duration in step_durations_us(document).items()}
    assert len(expected) == 4  # steps 551 and 552 on both ranks
    shown = cells(page)
    assert shown.keys() == expected.keys()
    for key, value in expected.items():
        assert shown[key] == pytest.approx(value), key
    labels = page.evaluate(f"() => {{ const s = window.__stepscope.charts[{CHART!r}].options.scales; return [s.x.labels, s.y.labels]; }}")
    assert labels == [[str(step) for step in sorted(step_windows(documents[0]))], ["0", "1"]]
    # The legend's ends are the smallest and the largest step time.
    assert float(page.locator('[data-legend="heatmap"] [data-end="low"]').get_attribute("data-value")) == pytest.approx(min(expected.values()))
    assert float(page.locator('[data-legend="heatmap"] [data-end="high"]').get_attribute("data-value")) == pytest.approx(max(expected.values()))
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "distributed_recsys.png"), full_page=True)

    # The select switches the cells to the wait inside collectives.
    page.select_option("#distributed-metric", "collective_wait")
    page.wait_for_selector('[data-metric-shown="collective_wait"]')
    waits = expected_waits_us(documents)
    assert sum(waits.values()) > 0  # the ranks do wait for each other
    for key, value in cells(page).items():
        assert value == pytest.approx(waits.get(key, 0.0)), key

    # A click on rank 1's step 552 opens rank 1's trace viewer on that step's own window:
    # from ProfilerStep#552's start to its end, in ps after rank 1's earliest event.
    page.select_option("#distributed-metric", "step_time")
    page.wait_for_selector('[data-metric-shown="step_time"]')
    point = page.evaluate(
        f"""() => {{ const chart = window.__stepscope.charts[{CHART!r}];
                   const index = chart.data.datasets[0].data.findIndex(c => c.rank === 1 && c.step === 552);
                   const cell = chart.getDatasetMeta(0).data[index].getCenterPoint();
                   return {{x: cell.x, y: cell.y}}; }}"""
    )
    page.locator(f'canvas[data-chart="{CHART}"]').click(position=point)
    page.wait_for_url("**tool=trace_viewer**", timeout=30_000)
    wait_ready(page, "trace_viewer")
    earliest_us = min(float(event["ts"]) for event in events(documents[1]) if "ts" in event)
    low, high = step_windows(documents[1])[552]
    start_ps, end_ps = round((low - earliest_us) * PS_PER_US), round((high - earliest_us) * PS_PER_US)
    query = parse_qs(urlparse(page.url).query)
    assert query["run"] == [RUN] and query["host"] == [HOSTS[1]] and query["tool"] == ["trace_viewer"]
    assert query["start_ps"] == [str(start_ps)] and query["end_ps"] == [str(end_ps)]
    assert page.locator("#host-select").input_value() == HOSTS[1]
    view = page.evaluate("window.__stepscope.trace.view()")
    assert view["start_ps"] == pytest.approx(start_ps) and view["end_ps"] == pytest.approx(end_ps)


def test_stragglers_and_the_collective_table(page, recsys_server, documents, tmp_path):
    open_distributed(page, recsys_server)
    # Two ranks cannot outvote each other: the page says so instead of an empty table.
    stragglers = page.locator('[data-card="stragglers"]')
    assert stragglers.locator("table").count() == 0
    assert "it takes 3 ranks to name one; this run has 2" in stragglers.text_content()
    # The collective table: one row per collective name of either trace, with its calls.
    calls: dict[str, int] = defaultdict(int)
    for document in documents.values():
        for call in json_calls(document):
            calls[call.name] += 1
    rows = page.locator('table[data-table="collectives"] tbody tr')
    names = rows.locator('td[data-key="name"]').evaluate_all("cells => cells.map(c => c.textContent)")
    assert sorted(names) == sorted(calls)
    for index, name in enumerate(names):
        assert int(rows.nth(index).locator('td[data-key="calls"]').get_attribute("data-value")) == calls[name]
    page.fill('input[data-search="collectives"]', "all_to")
    assert rows.count() == sum(1 for name in calls if "all_to" in name) == 1
    with page.expect_download() as download:
        page.click('[data-export="collectives"]')
    saved = tmp_path / "collectives.csv"
    download.value.save_as(saved)
    assert saved.read_bytes() == recsys_server.get("/api/csv", run=RUN, host=HOSTS[0], tool="distributed", table="collectives").body
    # A step row's rank cell opens that rank's trace viewer at that step.
    link = page.locator('table[data-table="steps"] tbody tr').first.locator('td[data-key="rank"] a')
    query = parse_qs(urlparse(link.get_attribute("href")).query)
    assert query["host"] == [HOSTS[0]] and query["tool"] == ["trace_viewer"]
    earliest_us = min(float(event["ts"]) for event in events(documents[0]) if "ts" in event)
    low, high = step_windows(documents[0])[min(step_windows(documents[0]))]
    assert query["start_ps"] == [str(round((low - earliest_us) * PS_PER_US))] and query["end_ps"] == [str(round((high - earliest_us) * PS_PER_US))]


def test_a_straggler_row_opens_its_ranks_trace_at_its_step(page, recsys_server, documents):
    base = documents[0]
    page.goto(page_url(recsys_server.url, run=SYNTH_RUN, host=host_name(0, SYNTH_RANKS), tool="distributed"))
    wait_ready(page, "distributed")
    # The heat map: every rank's step times are the source's, rank 3's step 552 100 ms longer.
    durations = step_durations_us(base)
    expected = {
        (rank, step): duration + (STRAGGLER.delta_us if (rank, step) == (STRAGGLER.rank, STRAGGLER.step) else 0)
        for rank in range(SYNTH_RANKS)
        for step, duration in durations.items()
    }
    shown = cells(page)
    assert shown.keys() == expected.keys()
    for key, value in expected.items():
        assert shown[key] == pytest.approx(value), key
    # The stragglers: rank 3 at step 552, by its step time and by its work before waiting,
    # 100 ms over the others' (identical) step, all of it device compute.
    rows = page.locator('table[data-table="stragglers"] tbody tr')
    found = {
        (
            int(row.locator('td[data-key="rank"]').get_attribute("data-value")),
            int(row.locator('td[data-key="step"]').get_attribute("data-value")),
            row.locator('td[data-key="signal"]').text_content(),
        ): row
        for row in rows.all()
    }
    assert set(found) == {(3, 552, "step_time"), (3, 552, "work_time")}
    row = found[(3, 552, "step_time")]
    assert float(row.locator('td[data-key="excess_us"]').get_attribute("data-value")) == pytest.approx(STRAGGLER.delta_us)
    assert row.locator('td[data-key="stage"]').text_content() == "device_compute"
    assert float(row.locator('td[data-key="excess_percent"]').get_attribute("data-value")) == pytest.approx(100 * STRAGGLER.delta_us / durations[552])
    # Its rank cell opens rank 3's host (node000: files are named in reverse rank order) at
    # step 552: every event of a copy moved alike, so the step starts where the source's does
    # after its earliest event, and lasts 100 ms longer.
    row.locator('td[data-key="rank"] a').click()
    page.wait_for_url("**tool=trace_viewer**", timeout=30_000)
    wait_ready(page, "trace_viewer")
    earliest_us = min(float(event["ts"]) for event in events(base) if "ts" in event)
    low, high = step_windows(base)[552]
    start_ps = round((low - earliest_us) * PS_PER_US)
    end_ps = start_ps + round((high - low + STRAGGLER.delta_us) * PS_PER_US)
    query = parse_qs(urlparse(page.url).query)
    assert query["run"] == [SYNTH_RUN] and query["host"] == [host_name(STRAGGLER.rank, SYNTH_RANKS)] == ["node000"]
    assert query["start_ps"] == [str(start_ps)] and query["end_ps"] == [str(end_ps)]
    view = page.evaluate("window.__stepscope.trace.view()")
    assert view["start_ps"] == pytest.approx(start_ps) and view["end_ps"] == pytest.approx(end_ps)


def test_the_critical_path_across_ranks(page, recsys_server, documents):
    open_distributed(page, recsys_server)
    # Each step's job step is the slower rank's recorded ProfilerStep (read from the files),
    # and that rank is the slowest.
    recorded = {rank: step_durations_us(document) for rank, document in documents.items()}
    rows = page.locator('table[data-table="job_steps"] tbody tr')
    shown = rows.evaluate_all(
        "rows => rows.map(row => ['step', 'step_us', 'slowest_rank'].map(key => Number(row.querySelector(`td[data-key=\"${key}\"]`).getAttribute('data-value'))))"
    )
    expected = []
    for step in sorted(recorded[0]):
        times = {rank: durations[step] for rank, durations in recorded.items()}
        slowest = max(times, key=times.__getitem__)
        expected.append([step, times[slowest], slowest])
    assert shown == expected
    # One what-if row per rank, each no longer than the other rank's slowest recorded step.
    removed = page.locator('table[data-table="straggle_removed"] tbody tr')
    assert removed.locator('td[data-key="rank"]').evaluate_all("cells => cells.map(c => Number(c.getAttribute('data-value')))") == [0, 1]
    for index in range(2):
        predicted = float(removed.nth(index).locator('td[data-key="predicted_step_us"]').get_attribute("data-value"))
        assert 0 < predicted <= max(recorded[1 - index].values())
    page.locator('[data-card="job_steps"]').screenshot(path=str(SCREENSHOTS / "distributed_job_steps.png"))
