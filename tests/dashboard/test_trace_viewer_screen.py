"""The trace viewer gives the timeline the screen, and XLA ops their short names, in Chromium at 1280x800 and 1920x1080, on the shared
TPU XSpace served by a real ``stepscope serve``:

- nothing selected, the details pane and its splitter are closed: the timeline reaches the
  bottom of the page (fitHeight leaves 12 px below it), and the first Tab goes from the
  timeline to the toolbar's first control, not to the splitter;
- a selection opens the pane (search, then a click on the event), Esc and the close button
  close it; the "?" opens the keys;
- the details show the short name, the HLO text in full, and program_id with all its digits
  (12190760917235803885, past 2^53, where a JavaScript number keeps 12190760917235804000);
- a dragged range's summary and the overview's top ops name ops by their instruction, with
  the whole HLO text on hover.

Expected names and ids are read from the raw XSpace with protobuf and a regex.
"""

from __future__ import annotations

import re
import shutil
from functools import cache

import pytest

from stepscope.protos import xplane_pb2
from tests.support.dashboard.browser import open_tool, watched_page
from tests.support.dashboard.server import DashboardServer
from tests.support.traces import shared

TPU_FILE = "xplane/tpu_v_inference_4chips.xplane.pb"
SESSION = "2024_05_01_12_00_00"
WHERE = dict(run=f"tpu/{SESSION}", host="tpu_host")
HLO_TEXT = re.compile(r"^%(\S+) = ")
VIEWPORTS = [(1280, 800), (1920, 1080)]
BOTTOM_GAP_PX = 12  # panels.ts fitHeight: the viewer ends 12 px above the window's bottom


@cache
def raw_facts() -> tuple[set[str], dict[str, set[str]], set[int]]:
    """(every device event's label: the display name, else the instruction's name where the
    name is HLO text, else the name; the instruction names of HLO text, each with the HLO
    texts it names; the program_id values of the %copy-done events) from the raw XSpace."""
    space = xplane_pb2.XSpace.FromString(shared(TPU_FILE).read_bytes())
    labels: set[str] = set()
    instructions: dict[str, set[str]] = {}
    copy_done_programs: set[int] = set()
    for plane in space.planes:
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                found = HLO_TEXT.match(meta.name)
                if found:
                    instructions.setdefault(meta.display_name or found.group(1), set()).add(meta.name)
                labels.add(meta.display_name or (found.group(1) if found else meta.name))
                if meta.name.startswith("%copy-done"):
                    copy_done_programs |= {stat.uint64_value for stat in [*event.stats, *meta.stats] if stat_names.get(stat.metadata_id) == "program_id"}
    return labels, instructions, copy_done_programs


@pytest.fixture(scope="module")
def tpu_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("tpu_screen")
    session = root / "logs" / "tpu" / "plugins" / "profile" / SESSION
    session.mkdir(parents=True)
    shutil.copy(shared(TPU_FILE), session / "tpu_host.xplane.pb")
    running = DashboardServer(root / "logs", root / "cache")
    yield running
    running.stop()


def box(page, selector: str) -> dict | None:
    return page.locator(selector).bounding_box()


def pane_state(page) -> str:
    return page.locator(".tv-root").get_attribute("data-details")


def assert_timeline_has_the_screen(page, height: int) -> None:
    assert pane_state(page) == "closed"
    assert not page.locator("#tv-details").is_visible() and not page.locator("#tv-splitter").is_visible()
    wrap = box(page, ".tv-canvas-wrap")
    # From below the toolbar to the window's bottom less fitHeight's gap: nothing reserved.
    assert wrap["y"] + wrap["height"] == pytest.approx(height - BOTTOM_GAP_PX, abs=2)
    assert wrap["y"] >= box(page, ".tv-toolbar")["y"] + box(page, ".tv-toolbar")["height"]


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
def test_the_timeline_gets_the_screen_and_xla_ops_have_short_names(browser, tpu_server, width, height):
    labels, instructions, programs = raw_facts()
    assert len(programs) == 1 and next(iter(programs)) > 2**53  # a uint64 a JS number cannot hold
    program_id = str(next(iter(programs)))
    with watched_page(browser) as page:
        page.set_viewport_size({"width": width, "height": height})
        open_tool(page, tpu_server, "trace_viewer", **WHERE)
        page.wait_for_function("() => window.__stepscope.trace.drawn().lanes > 0")
        assert_timeline_has_the_screen(page, height)
        # The canvas has the focus; the first Tab goes to the toolbar's first control.
        assert page.evaluate("() => document.activeElement.id") == "trace-canvas"
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.id") == "tv-select"

        # The keys: "?" opens the pane on them, Esc closes it.
        page.click("#tv-keys")
        assert pane_state(page) == "open" and page.locator("#tv-details").get_attribute("data-kind") == "keys"
        assert page.locator("#tv-keys").get_attribute("aria-expanded") == "true"
        page.focus("#trace-canvas")
        page.keyboard.press("Escape")
        assert_timeline_has_the_screen(page, height)

        # Search selects the first copy-done: the pane opens on its details.
        first = tpu_server.ready("/api/trace/find", **WHERE, text="copy-done").json()["match"]
        page.fill("#tv-search", "copy-done")
        page.press("#tv-search", "Enter")
        page.wait_for_function("id => document.querySelector('#tv-details').dataset.id === String(id)", arg=first["id"])
        assert pane_state(page) == "open"
        name = page.locator('#tv-details [data-field="name"]').get_attribute("data-value")
        full = page.locator('#tv-details [data-field="full_name"]').get_attribute("data-value")
        assert name in instructions and name.startswith("copy-done")
        assert HLO_TEXT.match(full).group(1) == name  # the whole HLO text is in the details
        program = page.locator('table[data-table="tv-args"] tr:has(td[data-key="name"]:text-is("program_id")) td[data-key="value"]')
        program.wait_for()
        assert program.get_attribute("data-value") == program.inner_text() == program_id
        canvas_box = box(page, ".tv-canvas-wrap")
        assert canvas_box["y"] + canvas_box["height"] < height - BOTTOM_GAP_PX - 50  # the pane took its room
        page.focus("#trace-canvas")
        page.keyboard.press("Escape")
        assert_timeline_has_the_screen(page, height)

        # A click on the event opens the pane; its close button closes it.
        page.wait_for_function(f"() => window.__stepscope.trace.eventAt({first['id']}) !== null")
        at = page.evaluate(f"() => window.__stepscope.trace.eventAt({first['id']})")
        page.locator("#trace-canvas").click(position={"x": at["x"], "y": at["y"]})
        page.wait_for_function("id => document.querySelector('#tv-details').dataset.id === String(id)", arg=first["id"])
        assert pane_state(page) == "open"
        page.click("#tv-details-close")
        assert_timeline_has_the_screen(page, height)

        # A range dragged across the copy-done's track: its summary names ops by their instruction.
        page.mouse.move(canvas_box["x"] + at["x"] - 150, canvas_box["y"] + at["y"])
        page.mouse.down()
        page.mouse.move(canvas_box["x"] + at["x"] + 150, canvas_box["y"] + at["y"] + 4, steps=5)
        page.mouse.up()
        rows = page.locator('table[data-table="tv-summary"] td[data-key="name"]')
        rows.first.wait_for()
        hovered = dict(rows.evaluate_all("cells => cells.map((cell) => [cell.dataset.value, cell.title])"))
        assert name in hovered and set(hovered) <= labels
        assert not any(HLO_TEXT.match(text) for text in hovered)
        # On hover, an instruction's whole HLO text (one of its programs'); another name itself.
        assert hovered[name] in instructions[name] and hovered[name].startswith(f"%{name} = ")
        assert all(title in instructions[short] if short in instructions else title == short for short, title in hovered.items())

        open_tool(page, tpu_server, "overview_page", **WHERE)
        cells = page.locator('table[data-table="top_ops"] td[data-key="name"]')
        top = dict(cells.evaluate_all("cells => cells.map((cell) => [cell.textContent, cell.title])"))
        assert top and set(top) <= set(instructions)
        assert all(title in instructions[short] for short, title in top.items())
