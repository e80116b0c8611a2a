"""The flame_graph page in a real headless Chromium, on a server of its own over the
hand-derived stacks trace (tests/support/flame.py) and the A100 Kineto trace: the icicle
draws, the root spans the canvas and stands for the whole window, hovering a frame shows
the self and total times derived by hand, clicking zooms into the frame and back out,
and the options bar's step select redraws the step. Its screenshot
(``screenshots/flame_graph.png``) is the picture of docs/tools/flame_graph.md."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.dashboard.browser import SCREENSHOTS, open_tool, wait_ready, watched_page
from tests.support.dashboard.server import DashboardServer
from tests.support.flame import A100 as A100_TRACE
from tests.support.flame import MAIN, US, write_stacks_trace
from tests.support.traces import read_json, shared

STACKS = dict(run="stacks", host="stacks")
A100_PLACE = dict(run="a100", host="a100_ddp_cnn_rank0_of_2")


@pytest.fixture(scope="module")
def flame_server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("flame") / "logs"
    (logdir / "stacks").mkdir(parents=True)
    write_stacks_trace(logdir / "stacks")
    (logdir / "a100").mkdir()
    shutil.copy(shared(A100_TRACE), logdir / "a100")
    running = DashboardServer(logdir, tmp_path_factory.mktemp("cache"))
    yield running
    running.stop()


@pytest.fixture
def flame_page(browser, flame_server):
    with watched_page(browser) as opened:
        yield opened


def hooks(page) -> dict:
    return page.evaluate("() => window.__stepscope.flame")


def frame(page, path: list[str]) -> dict:
    (found,) = [rect for rect in hooks(page)["rects"] if rect["path"] == path]
    return found


def point(page, rect: dict, row_px: int) -> tuple[float, float]:
    box = page.locator('canvas[data-chart="flame_graph"]').bounding_box()
    return box["x"] + rect["x"] + rect["width"] / 2, box["y"] + rect["depth"] * row_px + row_px / 2


def hover(page, path: list[str]) -> dict:
    rect = frame(page, path)
    page.mouse.move(*point(page, rect, hooks(page)["rowHeight"]))
    shown = page.locator("#flame-hover [data-frame]")
    page.wait_for_function("p => document.querySelector('#flame-hover [data-frame]')?.dataset.frame === p", arg=";".join(path))
    return {"text": shown.text_content(), "total_ps": int(shown.get_attribute("data-total-ps")), "self_ps": int(shown.get_attribute("data-self-ps"))}


def painted(page) -> int:
    """How many of the canvas's pixels are not transparent."""
    return page.evaluate(
        """() => { const c = document.querySelector('canvas[data-chart="flame_graph"]');
                   const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                   let n = 0; for (let i = 3; i < d.length; i += 4) n += d[i] > 0; return n; }"""
    )


def test_icicle_hover_zoom_and_step(flame_page, flame_server):
    page = flame_page
    open_tool(page, flame_server, "flame_graph", **STACKS, thread=MAIN)
    canvas = page.locator('canvas[data-chart="flame_graph"]')
    assert painted(page) > 0
    shape = hooks(page)
    width = canvas.bounding_box()["width"]
    # The root (the thread) is the canvas's width and the whole window, 0..200 us.
    root = frame(page, [MAIN])
    assert (root["x"], root["depth"]) == (0, 0) and root["width"] == pytest.approx(width)
    assert root["total_ps"] == 200 * US
    assert hover(page, [MAIN])["total_ps"] == 200 * US
    # A is 100 of the 200 us: half the width; its numbers as tests/support/flame.py derives them.
    a = frame(page, [MAIN, "A"])
    assert a["width"] == pytest.approx(width / 2)
    shown = hover(page, [MAIN, "A"])
    assert (shown["total_ps"], shown["self_ps"]) == (100 * US, 30 * US)  # 100 - B 30 - C 40
    assert shown["text"] == f"A: total 100.00 us (50.0% of {MAIN}), self 30.00 us"
    shown = hover(page, [MAIN, "A", "B"])
    assert (shown["total_ps"], shown["self_ps"]) == (30 * US, 20 * US)  # 30 - D 10
    assert hover(page, [MAIN, "F"])["text"] == f"F: total 30.00 us (15.0% of {MAIN}), self 30.00 us"  # E/F overlap is F's
    assert frame(page, [MAIN, "F"])["x"] == pytest.approx(width / 2)  # left heavy: A, F (30), E (20)

    # Click B: it becomes the full width, D (10 of its 30 us) a third of it.
    page.mouse.click(*point(page, frame(page, [MAIN, "A", "B"]), shape["rowHeight"]))
    page.wait_for_function("() => window.__stepscope.flame.focus.length === 3")
    assert frame(page, [MAIN, "A", "B"])["width"] == pytest.approx(width)
    assert frame(page, [MAIN, "A", "B", "D"])["width"] == pytest.approx(width / 3)
    assert not [rect for rect in hooks(page)["rects"] if rect["path"][-1] in ("C", "E", "F")]
    # Clicking the root above it zooms back out.
    page.mouse.click(*point(page, frame(page, [MAIN]), shape["rowHeight"]))
    page.wait_for_function("() => window.__stepscope.flame.focus.length === 1")
    assert frame(page, [MAIN, "A"])["width"] == pytest.approx(width / 2)

    # The step selector (options bar): step 2 is [110, 200) us, where main ran E 20 and F 30.
    page.locator('#tool-options select[name="option-step"]').select_option("2")
    wait_ready(page, "flame_graph")
    page.wait_for_function("() => window.__stepscope.flame.rects.length === 3")
    assert frame(page, [MAIN])["total_ps"] == 90 * US
    assert frame(page, [MAIN, "F"])["width"] == pytest.approx(width * 30 / 90)
    assert hover(page, [MAIN, "E"])["self_ps"] == 20 * US


def test_real_trace_step_and_docs_picture(flame_page, flame_server):
    page = flame_page
    open_tool(page, flame_server, "flame_graph", **A100_PLACE, step="5", thread="thread 2910249 (pt_main_thread)")
    assert painted(page) > 0
    # The root is step 5's window: the ProfilerStep#5 event's duration in the JSON (whole ns).
    (marker,) = [e for e in read_json(shared(A100_TRACE))["traceEvents"] if e.get("name") == "ProfilerStep#5"]
    assert hooks(page)["rects"][0]["total_ps"] == round(marker["dur"] * 1000) * 1000
    SCREENSHOTS.mkdir(exist_ok=True)
    page.locator("#tool").screenshot(path=str(SCREENSHOTS / "flame_graph.png"))


def test_the_window_downloads_as_collapsed_stacks_and_speedscope(flame_page, flame_server, tmp_path):
    """The summary's links download the window shown (step 2 of main, [110, 200) us) in
    ``stepscope flame``'s formats. By hand (tests/support/flame.py): main ran E 20 us
    (its overlap with F is F's) and F 30 us there, so the collapsed lines are E 20,000 ns
    and F 30,000 ns under the thread; speedscope's one profile spans the window in ns."""
    page = flame_page
    open_tool(page, flame_server, "flame_graph", **STACKS, thread=MAIN, step="2")
    with page.expect_download() as download:
        page.click("#flame-download-collapsed")
    assert download.value.suggested_filename.endswith(".folded")
    download.value.save_as(tmp_path / "stacks.folded")
    assert sorted((tmp_path / "stacks.folded").read_text().splitlines()) == [f"{MAIN};E 20000", f"{MAIN};F 30000"]
    with page.expect_download() as download:
        page.click("#flame-download-speedscope")
    assert download.value.suggested_filename.endswith(".speedscope.json")
    download.value.save_as(tmp_path / "stacks.speedscope.json")
    document = json.loads((tmp_path / "stacks.speedscope.json").read_text())
    (profile,) = document["profiles"]
    assert (profile["unit"], profile["startValue"], profile["endValue"]) == ("nanoseconds", 110_000, 200_000)
    assert sorted(frame["name"] for frame in document["shared"]["frames"]) == ["E", "F"]
    # A bad option or format is a 400 naming it, and the server goes on.
    for params, named in ((dict(thread=MAIN, step="9"), "no step '9'"), (dict(thread=MAIN, format="svg"), "format must be one of collapsed, speedscope")):
        answer = flame_server.get("/api/flame", **STACKS, **params)
        assert answer.status == 400 and named in answer.json()["error"]
    assert flame_server.get("/api/runs").status == 200
