"""The hlo_stats page in a real headless Chromium on the dashboard fixture's TPU profile:
the category pie's totals are the sums of the tool JSON's rows (computed here), the summary
metrics are the shown rows' totals, the category and program selects narrow the table to
exactly the rows of that category / program (kept in the address), and the options bar's
device select offers each chip and all of them."""

from __future__ import annotations

from collections import defaultdict
from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.dashboard.browser import chart, data, open_tool, shot, wait_ready
from tests.support.dashboard.logdir import TPU_SESSION

TPU = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host")
TABLE = 'table[data-table="hlo_ops"]'


def category_totals_us(rows: list[dict]) -> dict[str, float]:
    """Self time per category in microseconds, from the JSON rows' picoseconds."""
    totals: dict[str, int] = defaultdict(int)
    for row in rows:
        totals[row["category"]] += row["total_self_time_ps"]
    return {category: ps / 1e6 for category, ps in totals.items()}


def shown_names(page) -> list[str]:
    return page.locator(f'{TABLE} td[data-key="name"]').evaluate_all("cells => cells.map(c => c.textContent)")


def metric(page, key: str) -> float:
    return float(page.locator(f'#hlo-summary [data-metric="{key}"]').first.get_attribute("data-value"))


def test_category_totals_filters_and_devices(page, server):
    expected = data(server, "hlo_stats", **TPU)
    rows = expected["rows"]
    assert expected["device"] == "all" and len(rows) > 1
    open_tool(page, server, "hlo_stats", **TPU)

    # The pie: one slice per category, its value the category's summed self time.
    shown = chart(page, "hlo_categories")
    totals = category_totals_us(rows)
    assert dict(zip(shown["labels"], shown["datasets"][0]["data"])) == pytest.approx(totals, rel=1e-12)
    assert shown["labels"] == sorted(totals, key=lambda c: -totals[c])
    assert metric(page, "shown_self_time_us") == pytest.approx(sum(r["total_self_time_ps"] for r in rows) / 1e6, rel=1e-12)
    assert metric(page, "shown_ops") == len(rows)
    # Memory- plus compute-bound plus unknown shares cover the time; the TPU has peaks.
    bound = defaultdict(int)
    for row in rows:
        bound[row["bound_by"]] += row["total_self_time_ps"]
    total = sum(bound.values())
    assert metric(page, "memory_bound_percent") == pytest.approx(100 * bound["Memory"] / total, rel=1e-12)
    assert metric(page, "compute_bound_percent") == pytest.approx(100 * bound["Compute"] / total, rel=1e-12)
    assert [r["name"] for r in rows] == shown_names(page)

    # The category select: exactly that category's rows, in the tool's order.
    category = max(totals, key=lambda c: (sum(r["category"] == c for r in rows), c))
    page.locator("select#hlo-category").select_option(category)
    page.wait_for_function("c => new URLSearchParams(location.search).get('hlo_category') === c", arg=category)
    wanted = [r for r in rows if r["category"] == category]
    assert 0 < len(wanted) < len(rows)
    assert shown_names(page) == [r["name"] for r in wanted]
    assert metric(page, "shown_self_time_us") == pytest.approx(totals[category], rel=1e-12)
    assert chart(page, "hlo_categories")["labels"] == [category]
    # And the program select on top of it (a program of that category), then back to all.
    program = wanted[-1]["program"]
    page.locator("select#hlo-program").select_option(program)
    assert shown_names(page) == [r["name"] for r in wanted if r["program"] == program]
    shot(page, "hlo_stats_filtered")
    page.reload()
    wait_ready(page, "hlo_stats")
    assert page.locator("select#hlo-category").input_value() == category
    assert shown_names(page) == [r["name"] for r in wanted if r["program"] == program]
    page.locator("select#hlo-category").select_option("")
    page.locator("select#hlo-program").select_option("")
    assert "hlo_category" not in parse_qs(urlparse(page.url).query)
    assert len(shown_names(page)) == len(rows)

    # The device select offers each chip and "all"; one chip shows that chip's rows.
    device = page.locator('#tool-options select[name="option-device"]')
    offered = device.locator("option").evaluate_all("options => options.map(option => option.value)")
    assert offered == ["all", *expected["devices"]]
    chip = expected["devices"][1]
    device.select_option(chip)
    page.wait_for_function("d => new URLSearchParams(location.search).get('device') === d", arg=chip)
    wait_ready(page, "hlo_stats")
    one = data(server, "hlo_stats", **TPU, device=chip)
    assert one["device"] == chip
    assert dict(zip(*(lambda c: (c["labels"], c["datasets"][0]["data"]))(chart(page, "hlo_categories")))) == pytest.approx(
        category_totals_us(one["rows"]), rel=1e-12
    )
    assert metric(page, "shown_self_time_us") == pytest.approx(one["total_self_time_ps"] / 1e6, rel=1e-12)
    shot(page, "hlo_stats_chip")
