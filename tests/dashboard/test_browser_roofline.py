"""The roofline page in a real headless Chromium on the real TPU profile: the chart's points
are the tool JSON's op rows (intensity, GFLOP/s), and its two roofs meet at the JSON's peaks."""

from __future__ import annotations

import pytest

from tests.support.dashboard.browser import chart, data, open_tool, shot
from tests.support.dashboard.logdir import TPU_SESSION

TPU = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host")


def test_roofline_chart_plots_the_tools_ops(page, server):
    expected = data(server, "roofline_model", **TPU)
    open_tool(page, server, "roofline_model", **TPU)
    shown = chart(page, "roofline")
    points, memory, compute = (dataset["data"] for dataset in shown["datasets"])
    # one point per op row with a positive intensity and rate (log axes), in the JSON's order
    plotted = [
        (row["operational_intensity"], row["gflops_per_second"])
        for row in expected["ops"]
        if (row["operational_intensity"] or 0) > 0 and (row["gflops_per_second"] or 0) > 0
    ]
    assert plotted and len(points) == len(plotted)
    assert [(p["x"], p["y"]) for p in points] == plotted
    assert int(page.locator('[data-metric="roofline_points"]').first.get_attribute("data-value")) == len(plotted)
    # the roofs: memory y = x * GB/s up to the ridge, compute flat at the peak from it
    peak = expected["peak_tflops"] * 1e3
    ridge = peak / expected["peak_gbps"]
    assert memory[1] == {"x": pytest.approx(ridge), "y": pytest.approx(peak)}
    assert memory[0]["y"] == pytest.approx(memory[0]["x"] * expected["peak_gbps"])
    assert [point["y"] for point in compute] == [pytest.approx(peak)] * 2
    assert expected["ridge_point"] == pytest.approx(ridge)
    shot(page, "roofline_model_tpu")


def test_overview_shows_the_mfu(page, server):
    expected = data(server, "overview_page", **TPU)["throughput"]
    open_tool(page, server, "overview_page", **TPU)
    assert expected["mfu_percent"] is not None
    shown = page.locator('[data-metric="mfu_percent"]').first.get_attribute("data-value")
    assert float(shown) == pytest.approx(expected["mfu_percent"])
