"""The memory_viewer page in a real headless Chromium on the dashboard fixture's TPU
profile: the summary, the memory-over-events chart and its peak marker are the API's
numbers, the tables are there, and the program control switches programs (kept in the
address); a GPU profile says in one line that it has no XLA programs."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from stepscope.analysis import applicability
from tests.support.dashboard.browser import chart, data, open_tool, shot, wait_ready
from tests.support.dashboard.logdir import TPU_SESSION

TPU = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host")
GPU = dict(run="gpu", host="v100_resnet_ns_resolution")
GIB = 2**30


def metric(page, key: str) -> str | None:
    return page.locator(f'#memory-viewer-summary [data-metric="{key}"]').first.get_attribute("data-value")


def test_memory_viewer_shows_the_largest_peak_its_chart_and_buffers(page, server):
    expected = data(server, "memory_viewer", **TPU)
    # The shared TPU profile: jit_f's 4 x 5 GiB temporaries + its 32-byte output tuple.
    assert expected["program"] == "jit_f(12190760917235803885)" and expected["peak_bytes"] == 4 * 5 * GIB + 32
    open_tool(page, server, "memory_viewer", **TPU)
    assert page.locator("#memory-viewer-summary").get_attribute("data-program") == expected["program"]
    assert int(metric(page, "peak_bytes")) == expected["peak_bytes"]
    assert int(metric(page, "peak_step")) == expected["peak_step"] == 3
    series = {d["label"]: d["data"] for d in chart(page, "memory_sequence")["datasets"]}
    assert series["In use"] == [{"x": p["step"], "y": p["bytes"]} for p in expected["points"]]
    assert series["Peak (event 3)"] == [{"x": 3, "y": expected["peak_bytes"]}]
    assert series["Parameters, outputs, constants"] == [{"x": p["step"], "y": 32} for p in expected["points"]]
    rows = page.locator('table[data-table="buffers_at_peak"] tbody tr')
    assert rows.count() == len(expected["buffers"]) == 5
    assert "copy-start{0}" in rows.first.inner_text()
    assert page.locator('table[data-table="programs"] tbody tr').count() == 4
    shot(page, "memory_viewer_tpu")

    program = page.locator('#tool-options select[name="option-program"]')
    offered = program.locator("option").evaluate_all("options => options.map(option => option.value)")
    assert set(expected["program_names"]) <= set(offered)
    psum = "jit__psum(9646411105960254074)"
    program.select_option(psum)
    page.wait_for_function("name => new URLSearchParams(location.search).get('program') === name", arg=psum)
    wait_ready(page, "memory_viewer")
    page.wait_for_function("name => document.querySelector('#memory-viewer-summary')?.dataset.program === name", arg=psum)
    assert parse_qs(urlparse(page.url).query)["program"] == [psum]
    # psum has no heap trace: its 5 GiB parameter and 5 GiB output, one flat level, no marker.
    assert int(metric(page, "peak_bytes")) == 2 * 5 * GIB
    labels = [d["label"] for d in chart(page, "memory_sequence")["datasets"]]
    assert labels == ["In use", "Parameters, outputs, constants"]
    assert chart(page, "memory_sequence")["datasets"][0]["data"] == [{"x": 0, "y": 2 * 5 * GIB}]


def test_memory_viewer_of_a_profile_without_xla_programs_says_why(page, server):
    open_tool(page, server, "memory_viewer", **GPU)
    # A Kineto trace holds no HLO proto: the menu greys the tool out, and its page is the reason.
    assert page.locator("#tool-unavailable").inner_text() == f"Memory viewer: {applicability.NO_XLA_MODULES}."
    assert page.locator('canvas[data-chart="memory_sequence"]').count() == 0
