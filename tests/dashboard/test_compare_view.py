"""The compare view (tool ``diff``) in a real headless Chromium on a real server: the
figures against the API's diff and each run's own overview, the step-time histogram of
both runs on shared bins against counts made here from the runs' overview step times,
and the paired trace view (both runs' trace viewers, stacked, on aligned steps)."""

from __future__ import annotations

import math
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.dashboard.browser import chart, data, open_tool, page_url, shot, wait_ready

MAX_BINS = 40  # web/src/state/histogram.ts


def where(run_host: tuple[str, str]) -> dict[str, str]:
    return dict(run=run_host[0], host=run_host[1])


def compare_url(server, new: dict[str, str], base: dict[str, str], **more: str) -> str:
    return page_url(server.url, **new, tool="diff", base_run=base["run"], base_host=base["host"], **more)


def api_diff(server, base: dict[str, str], new: dict[str, str]) -> dict:
    return server.ready("/api/diff", base_run=base["run"], base_host=base["host"], new_run=new["run"], new_host=new["host"]).json()


def steady_step_times(overview: dict) -> list[float]:
    """The run's steady steps (those its overview does not set aside), in microseconds."""
    return [step["step_time_us"] for step in overview["steps"] if step["set_aside"] is None]


def shared_bins(base: list[float], new: list[float]) -> tuple[int, list[int], list[int]]:
    """The histogram rule the page documents, written again here: ceil(sqrt(n)) bins (at
    most 40) of equal width over both runs' range, left-closed, the last closed on the
    right; one bin when every time is the same. (bins, base counts, new counts)."""
    values = base + new
    low, high = min(values), max(values)
    count = min(MAX_BINS, math.ceil(math.sqrt(len(values)))) if high > low else 1
    width = (high - low) / count

    def tally(times: list[float]) -> list[int]:
        counts = [0] * count
        for time in times:
            counts[min(count - 1, math.floor((time - low) / width)) if width > 0 else 0] += 1
        return counts

    return count, tally(base), tally(new)


def steady_pairs(diff: dict) -> list[int]:
    """Indices of the diff's step pairs where both steps are there and neither is set aside."""
    return [
        index
        for index, pair in enumerate(diff["steps"])
        if pair["base_set_aside"] is None and pair["new_set_aside"] is None and pair["base_step"] is not None and pair["new_step"] is not None
    ]


def test_the_compare_view_charts_both_runs_step_times_on_shared_bins(page, server, logdir):
    """The demo's before (base) and after (new) runs: the histogram holds, per bin, the
    counts binned here from each run's own overview (its steady steps)."""
    base, new = where(logdir.before), where(logdir.after)
    times = {name: steady_step_times(data(server, "overview_page", **at)) for name, at in (("base", base), ("new", new))}
    # Which steps the overview sets aside (warm-up, outliers) is measured, not fixed: the
    # counts and the bins follow from the times read here.
    assert len(times["base"]) >= 2 and len(times["new"]) >= 2
    bins, base_counts, new_counts = shared_bins(times["base"], times["new"])
    assert bins == math.ceil(math.sqrt(len(times["base"]) + len(times["new"])))
    page.goto(compare_url(server, new, base))
    wait_ready(page, "diff")
    shown = chart(page, "diff-step-histogram")
    assert len(shown["labels"]) == bins
    assert [dataset["label"] for dataset in shown["datasets"]] == ["base", "new"]
    assert shown["datasets"][0]["data"] == base_counts and shown["datasets"][1]["data"] == new_counts
    assert sum(base_counts) == len(times["base"]) and sum(new_counts) == len(times["new"])
    # The per-step chart stays beside it: it shows which steps were aligned.
    assert len(chart(page, "diff-step-times")["labels"]) == len(api_diff(server, base, new)["steps"])
    shot(page, "compare_demo")


def views(page) -> dict[str, dict]:
    return page.evaluate("() => ({base: window.__stepscope.traces.base.view(), new: window.__stepscope.traces.new.view()})")


def expect_pair(page, diff: dict, index: int, step_scale: bool = False) -> None:
    """Both viewers show their run's step of pair ``index``, each from its step's start, axes
    counted from there: on one scale both as long as the longer step, else each its own."""
    page.locator(f'#diff-trace[data-pair="{index}"]').wait_for(timeout=60_000)
    wait_ready(page, "diff")
    assert parse_qs(urlparse(page.url).query)["pair"] == [str(index)]
    pair = diff["steps"][index]
    longer = max(pair["base_step_ps"], pair["new_step_ps"])
    shown = views(page)
    for side in ("base", "new"):
        start = pair[f"{side}_start_ps"]
        length = pair[f"{side}_step_ps"] if step_scale else longer
        assert shown[side]["start_ps"] == pytest.approx(start, abs=1) and shown[side]["end_ps"] == pytest.approx(start + length, abs=1)
        assert page.evaluate(f"() => window.__stepscope.traces.{side}.axisOrigin()") == start
        label = page.locator(f'.tv-pair-label[data-side="{side}"]').inner_text()
        assert label.startswith(side) and f"step {pair[f'{side}_step']} " in label
    assert page.locator("#pair-select").input_value() == str(index)
    assert page.locator("#pair-scale").is_checked() != step_scale


def test_the_paired_trace_view_opens_both_runs_on_aligned_steps_and_moves_both(page, server, logdir):
    base, new = where(logdir.before), where(logdir.after)
    diff = api_diff(server, base, new)
    steady = steady_pairs(diff)
    # Both runs number their steps 0..7, so steps pair by number: the steady pairs are the
    # step numbers that neither run's own overview sets aside.
    numbers = [{step["step"] for step in data(server, "overview_page", **at)["steps"] if step["set_aside"] is None} for at in (base, new)]
    assert [diff["steps"][index]["new_step"] for index in steady] == sorted(numbers[0] & numbers[1])
    assert len(steady) >= 2
    page.goto(compare_url(server, new, base))
    wait_ready(page, "diff")
    page.click("#diff-trace-pair")
    page.wait_for_url("**pair=**", timeout=30_000)
    expect_pair(page, diff, steady[0])
    query = parse_qs(urlparse(page.url).query)
    assert (query["run"], query["host"], query["tool"], query["base_run"], query["base_host"]) == (
        [new["run"]],
        [new["host"]],
        ["diff"],
        [base["run"]],
        [base["host"]],
    )
    # Two viewers in one page: every id once, no single viewer's hooks, the select offers the steady pairs.
    duplicates = page.evaluate(
        "() => { const ids = [...document.querySelectorAll('[id]')].map(e => e.id); return ids.filter((id, i) => ids.indexOf(id) !== i); }"
    )
    assert duplicates == []
    assert page.evaluate("() => window.__stepscope.trace === undefined")
    assert page.eval_on_selector_all("#pair-select option", "options => options.map(o => Number(o.value))") == steady
    assert page.locator("#pair-prev").is_disabled()
    shot(page, "compare_trace_pair")

    # Next moves both, as a new history entry; the select jumps; back and forward walk them.
    page.click("#pair-next")
    expect_pair(page, diff, steady[1])
    page.select_option("#pair-select", value=str(steady[-1]))
    expect_pair(page, diff, steady[-1])
    assert page.locator("#pair-next").is_disabled()
    page.go_back()
    expect_pair(page, diff, steady[1])
    page.go_forward()
    expect_pair(page, diff, steady[-1])
    # A shared address opens the same pair.
    page.goto(page.url)
    expect_pair(page, diff, steady[-1])
    # Off "Same time scale": each step fills its viewer; the next pair keeps that.
    page.uncheck("#pair-scale")
    page.wait_for_url("**scale=step**", timeout=30_000)
    expect_pair(page, diff, steady[-1], step_scale=True)
    page.click("#pair-prev")
    expect_pair(page, diff, steady[-2], step_scale=True)

    # Keys go to the viewer holding the focus: "0" (whole profile) on the base resets it alone.
    before = views(page)
    page.focus("#base-trace-canvas")
    page.keyboard.press("0")
    span = server.get("/api/trace/tracks", **base).json()["span_ps"]
    page.wait_for_function("span => window.__stepscope.traces.base.view().end_ps === span", arg=span, timeout=30_000)
    assert views(page) == {"base": {"start_ps": 0, "end_ps": span}, "new": before["new"]}
    # The views are not written into the shared address (two views, one address).
    assert "start_ps" not in parse_qs(urlparse(page.url).query)
    # "← Compare" goes back to the compare view of the same base.
    page.click("#pair-back")
    wait_ready(page, "diff")
    assert "pair" not in parse_qs(urlparse(page.url).query) and page.locator("#diff-histogram").count() == 1


def test_the_compare_view_shows_the_diff_of_two_hosts(page, server, tmp_path):
    """The gpu run's alexnet host compared with its resnet host as the base: picked in
    "Compare with…", kept in the address, and every figure shown read back against the
    API's diff and each run's own overview."""
    base = dict(run="gpu", host="v100_resnet_ns_resolution")
    new = dict(run="gpu", host="alexnet_small")
    expected = server.ready("/api/diff", base_run=base["run"], base_host=base["host"], new_run=new["run"], new_host=new["host"]).json()
    overviews = {name: data(server, "overview_page", **where) for name, where in (("base", base), ("new", new))}
    open_tool(page, server, "overview_page", **new)
    page.select_option("#compare-select", label="gpu · v100_resnet_ns_resolution")
    page.wait_for_url("**tool=diff**", timeout=30_000)
    wait_ready(page, "diff")
    query = parse_qs(urlparse(page.url).query)
    assert (query["run"], query["host"], query["base_run"], query["base_host"]) == ([new["run"]], [new["host"]], [base["run"]], [base["host"]])
    assert page.locator("#diff-verdict").inner_text() == expected["verdict"]
    # Step-time deltas: the mean is each run's own overview mean (its steady steps).
    for statistic in ("mean", "median", "p90"):
        row = page.locator(f'tr[data-statistic="{statistic}"]')
        shown = {key: row.locator(f'td[data-key="{key}"]').get_attribute("data-value") for key in ("base", "new", "change_percent")}
        figure = expected["step_time"][statistic]
        assert float(shown["base"]) == pytest.approx(figure["base"]) and float(shown["new"]) == pytest.approx(figure["new"])
        assert float(shown["change_percent"]) == pytest.approx(figure["change_percent"])
    for name in ("base", "new"):
        shown = float(page.locator(f'tr[data-statistic="mean"] td[data-key="{name}"]').get_attribute("data-value"))
        assert shown == pytest.approx(overviews[name]["step_time_us"]["mean"])
    # The chart: one dataset per run, each holding every step time of that run's overview.
    shown = chart(page, "diff-step-times")
    assert [dataset["label"] for dataset in shown["datasets"]] == ["base", "new"]
    for dataset, name in zip(shown["datasets"], ("base", "new")):
        values = [value for value in dataset["data"] if value is not None]
        assert sorted(values) == pytest.approx(sorted(step["step_time_us"] for step in overviews[name]["steps"]))
    assert len(shown["labels"]) == len(expected["steps"])
    # The kernels diff table: every row, largest change per step first, searchable, CSV.
    rows = page.locator('table[data-table="kernels"] tbody tr')
    assert rows.count() == min(len(expected["kernels"]), 500)
    first = expected["kernels"][0]
    assert rows.first.locator('td[data-key="name"]').get_attribute("data-value") == first["name"]
    assert float(rows.first.locator('td[data-key="change_per_step_us"]').get_attribute("data-value")) == pytest.approx(first["change_per_step_us"])
    word = first["name"].split("_")[0].lower()
    page.fill('input[data-search="kernels"]', word)
    assert rows.count() == sum(1 for row in expected["kernels"] if word in row["name"].lower())
    with page.expect_download() as download:
        page.click('[data-export="kernels"]')
    saved = tmp_path / "kernels.csv"
    download.value.save_as(saved)
    assert saved.read_bytes() == server.get("/api/csv", **new, tool="diff", base_run=base["run"], base_host=base["host"], table="kernels").body
    # Each run's trace viewer, opened on the first aligned pair of steady steps.
    pair = next(p for p in expected["steps"] if p["base_set_aside"] is None and p["new_set_aside"] is None and None not in (p["base_step"], p["new_step"]))
    link = parse_qs(urlparse(page.locator('#diff-trace-links a[data-trace="base"]').get_attribute("href")).query)
    assert link["host"] == [base["host"]] and link["start_ps"] == [str(pair["base_start_ps"])]
    assert link["end_ps"] == [str(pair["base_start_ps"] + pair["base_step_ps"])]
    # ...and both together: the paired trace view on that pair (its index in the diff's steps).
    both = parse_qs(urlparse(page.locator("#diff-trace-pair").get_attribute("href")).query)
    assert both == {
        "run": [new["run"]],
        "host": [new["host"]],
        "tool": ["diff"],
        "base_run": [base["run"]],
        "base_host": [base["host"]],
        "pair": [str(expected["steps"].index(pair))],
    }
    # Neither Kineto trace records memory: one line says so and no empty memory table is shown.
    assert expected["memory"] == [] and expected["memory_peak"]["base_bytes"] is None
    assert page.locator('[data-card="memory"]').count() == 0
    shot(page, "compare_gpu")
    # "—" leaves the comparison for the current profile's overview.
    page.select_option("#compare-select", value="")
    wait_ready(page, "overview_page")
    assert "base_run" not in parse_qs(urlparse(page.url).query)
