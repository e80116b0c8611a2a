"""The page's navigation at a glance, in Chromium at 1280x800 and 1920x1080: only the tools
that apply (greyed out with their reason on GPU, TPU and CPU runs, the reason in place of a
tool opened anyway), run and host names that tell runs apart, errors that keep the
controls, and an empty log directory's state. What each profile holds is read here from
its file (JSON, XSpace protobuf), not from the server."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepscope.analysis import applicability, spec
from stepscope.protos import xplane_pb2
from tests.support.dashboard.browser import READY_TIMEOUT_MS, page_url, wait_ready, watched_page
from tests.support.dashboard.logdir import GPU_HOSTS, TPU_SESSION
from tests.support.dashboard.server import DashboardServer
from tests.support.traces import read_json, shared

VIEWPORTS = [(1280, 800), (1920, 1080)]
GPU = dict(run="gpu", host="alexnet_small")
TPU = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host")
# Every tool whose registry rule reads the profile, and the page's distributed view.
RULED = ("kernel_stats", "memory_profile", "hlo_stats", "roofline_model", "graph_viewer", "memory_viewer", "distributed")


def xspace(path: Path) -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return space


def xspace_facts(path: Path) -> dict[str, bool]:
    """What an XSpace holds that decides the ruled tools, from its protobuf."""
    space = xspace(path)
    planes = {plane.name: plane for plane in space.planes}
    metadata = planes.get("/host:metadata")
    modules = metadata is not None and any(
        metadata.stat_metadata[stat.metadata_id].name == "Hlo Proto" for meta in metadata.event_metadata.values() for stat in meta.stats
    )
    ops_line = any(line.name == "XLA Ops" and len(line.events) for name, plane in planes.items() if name.startswith("/device:") for line in plane.lines)
    gpu = any(name.startswith("/device:GPU:") and any(line.events for line in plane.lines) for name, plane in planes.items())
    memory = any(meta.name in ("MemoryAllocation", "MemoryDeallocation", "[memory]") for plane in space.planes for meta in plane.event_metadata.values())
    devices = sum(name.startswith("/device:") for name in planes)
    return dict(gpu=gpu, modules=modules, xla_ops=ops_line or modules, memory=memory, devices=devices)


def gpu_facts() -> dict[str, bool]:
    """The GPU run's alexnet_small host: kernels on one GPU, no [memory] and no XLA events."""
    events = read_json(shared(GPU_HOSTS["alexnet_small"]))["traceEvents"]
    kernels = [event for event in events if event.get("cat") == "kernel"]
    memory = any(event.get("name") == "[memory]" for event in events)
    return dict(gpu=bool(kernels), modules=False, xla_ops=False, memory=memory, devices=len({event["pid"] for event in kernels}))


def expected_reasons(facts: dict[str, bool], hosts: int) -> dict[str, str]:
    """The reason of each ruled tool that has nothing to show (none for the others)."""
    reasons = {
        "kernel_stats": "" if facts["gpu"] else applicability.NO_GPU_KERNELS,
        "memory_profile": "" if facts["memory"] else applicability.NO_MEMORY_EVENTS,
        "hlo_stats": "" if facts["xla_ops"] else applicability.NO_XLA_OPS,
        "roofline_model": "" if facts["xla_ops"] or facts["gpu"] else applicability.NO_ROOFLINE_OPS,
        "graph_viewer": "" if facts["modules"] else applicability.NO_XLA_MODULES,
        "memory_viewer": "" if facts["modules"] else applicability.NO_XLA_MODULES,
        "distributed": "" if hosts > 1 or facts["devices"] > 1 else applicability.ONE_RANK,
    }
    return {tool: why for tool, why in reasons.items() if why}


def menu(page) -> dict[str, tuple[bool, str | None, str]]:
    """The tool menu as shown: name -> (disabled, aria-description, title)."""
    rows = page.eval_on_selector_all("#tool-select option", "options => options.map(o => [o.value, o.disabled, o.getAttribute('aria-description'), o.title])")
    return {name: (disabled, description, title) for name, disabled, description, title in rows}


def assert_menu(page, reasons: dict[str, str]) -> None:
    shown = menu(page)
    assert set(RULED) <= set(shown)
    assert {name for name, (disabled, _, _) in shown.items() if disabled} == set(reasons)
    for name, why in reasons.items():
        _, description, title = shown[name]
        assert description == why and title.endswith(why)
    assert all(description is None for name, (disabled, description, _) in shown.items() if not disabled)


def wait_checked(page, tool: str) -> None:
    """Until the menu greys out ``tool`` (the server knows once the profile is analysed)."""
    page.wait_for_selector(f'#tool-select option[value="{tool}"][disabled]', state="attached", timeout=READY_TIMEOUT_MS)


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_only_the_tools_that_apply(browser, server, logdir, viewport):
    cpu = dict(run=logdir.cpu_run, host=logdir.cpu_host)
    gpu_hosts, tpu, cpu_facts = len(GPU_HOSTS), xspace_facts(shared("xplane/tpu_v_inference_4chips.xplane.pb")), xspace_facts(logdir.cpu_path)
    with watched_page(browser, viewport) as page:
        page.goto(page_url(server.url, **GPU, tool="overview_page"))
        wait_ready(page, "overview_page")
        wait_checked(page, "graph_viewer")
        # Two hosts: two ranks to compare, though each has one GPU.
        assert_menu(page, expected_reasons(gpu_facts(), gpu_hosts))
        # Each greyed out here and not in the menu before: the wait sees this run's menu.
        for where, facts, greyed in ((TPU, tpu, "kernel_stats"), (cpu, cpu_facts, "graph_viewer")):
            page.select_option("#run-select", where["run"])
            wait_ready(page, "overview_page")
            wait_checked(page, greyed)
            assert_menu(page, expected_reasons(facts, 1))
        # Opened anyway (by address, back/forward): the reason in one line, no charts or tables.
        for tool in ("kernel_stats", "distributed"):
            page.evaluate("url => { history.pushState(null, '', url); dispatchEvent(new PopStateEvent('popstate')); }", page_url("/", **cpu, tool=tool))
            wait_ready(page, tool)
            title = "Distributed" if tool == "distributed" else spec(tool).title
            line = page.locator("#tool-unavailable")
            assert line.inner_text() == f"{title}: {expected_reasons(cpu_facts, 1)[tool]}."
            assert page.locator("#tool-content canvas, #tool-content table").count() == 0
            # One line: its box is one line of text high.
            box = line.evaluate("node => [node.getBoundingClientRect().height, parseFloat(getComputedStyle(node).lineHeight) || 20]")
            assert box[0] < 3 * box[1]


@pytest.fixture(scope="module")
def named_runs(tmp_path_factory):
    """Two runs whose names differ in a middle folder (as the demo's) and whose host files
    are torch traces in TensorBoard's session layout (hosts named ``rank0.pt``)."""
    root = tmp_path_factory.mktemp("named") / "logs"
    runs = {}
    for run, session in (("1-input-bound", "2026_12_05_04_52_25"), ("2-parallel-input", "2026_12_05_04_52_29")):
        folder = root / "experiments" / run / "plugins/profile" / session
        folder.mkdir(parents=True)
        shutil.copy(shared(GPU_HOSTS["alexnet_small"]), folder / "rank0.pt.trace.json.gz")
        runs[run] = f"experiments/{run}/{session}"
    server = DashboardServer(root, tmp_path_factory.mktemp("named_cache"))
    yield server, runs
    server.stop()


def label_fits(page, selector: str, part: str) -> bool:
    """Whether the shown label of ``selector``'s selected option, up to the end of ``part``,
    fits in the select (its text measured in its own font, less padding and the arrow)."""
    return page.eval_on_selector(
        selector,
        """(select, part) => {
          const label = select.options[select.selectedIndex].textContent;
          const end = label.indexOf(part) + part.length;
          if (end < part.length) return false;
          const style = getComputedStyle(select);
          const context = document.createElement("canvas").getContext("2d");
          context.font = `${style.fontSize} ${style.fontFamily}`;
          const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 16;
          return context.measureText(label.slice(0, end)).width <= room;
        }""",
        part,
    )


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_run_names_tell_runs_apart_and_hosts_lose_the_extension(browser, named_runs, viewport):
    server, runs = named_runs
    with watched_page(browser, viewport) as page:
        page.goto(page_url(server.url, run=runs["1-input-bound"], host="rank0.pt", tool="overview_page"))
        wait_ready(page, "overview_page")
        options = page.eval_on_selector_all("#run-select option", "options => options.map(o => [o.value, o.textContent, o.title])")
        assert {value for value, _, _ in options} == set(runs.values())
        for value, label, title in options:
            folder = value.split("/")[1]  # the component the two names differ in first
            assert folder in label and label != value and title == value
        assert len({label for _, label, _ in options}) == 2
        assert label_fits(page, "#run-select", "1-input-bound")
        # The host is rank0.pt.trace.json.gz less its extensions; the id keeps the server's name.
        host = page.eval_on_selector("#host-select", "select => [select.value, select.options[select.selectedIndex].textContent]")
        assert host == ["rank0.pt", "rank0"]
        page.select_option("#run-select", runs["2-parallel-input"])
        page.wait_for_function("() => new URLSearchParams(location.search).get('run') === '" + runs["2-parallel-input"] + "'")
        wait_ready(page, "overview_page")
        assert label_fits(page, "#run-select", "2-parallel-input")


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_an_error_keeps_the_options_bar(browser, server, viewport):
    minimum = spec("op_profile").option("top_n").minimum
    assert minimum == 1
    with watched_page(browser, viewport) as page:
        page.goto(page_url(server.url, **GPU, tool="op_profile", top_n="0"))
        page.wait_for_selector('#tool[data-tool="op_profile"][data-state="error"]', timeout=READY_TIMEOUT_MS)
        error = page.locator("#tool-content #error")
        assert f"top_n must be at least {minimum}, not 0" in error.inner_text()
        field = page.locator('#tool-options input[name="option-top_n"]')
        assert field.is_visible() and field.input_value() == "0"
        # The bar sits above the error, and the selectors stay usable.
        assert page.locator("#tool-options").bounding_box()["y"] < error.bounding_box()["y"]
        assert all(page.locator(selector).is_enabled() for selector in ("#run-select", "#host-select", "#tool-select"))
        field.fill("5")
        field.dispatch_event("change")
        wait_ready(page, "op_profile")
        assert page.locator("#error").count() == 0
        assert "top_n=5" in page.url


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("empty") / "logs"
    root.mkdir()
    server = DashboardServer(root, tmp_path_factory.mktemp("empty_cache"))
    yield server, root
    server.stop()


@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda size: f"{size[0]}x{size[1]}")
def test_an_empty_logdir_says_how_to_capture(browser, empty_server, viewport):
    server, root = empty_server
    with watched_page(browser, viewport) as page:
        page.goto(server.url)
        page.wait_for_selector('#tool[data-state="empty"]', timeout=READY_TIMEOUT_MS)
        state = page.locator("#empty-state")
        assert state.is_visible() and page.locator("#error").count() == 0
        text = state.inner_text()
        assert "No runs yet" in text and str(root) in text and "stepscope.profile(" in text
        assert page.locator("#empty-state .empty-logdir").inner_text() == str(root)
        # The whole state is on the screen.
        box = state.bounding_box()
        assert box["y"] + box["height"] <= viewport[1] and box["width"] <= viewport[0]
