"""``/api/tools`` lists the registry's analyses over several profiles beside its tools, and
dispatches ``tool=`` to them by the registry: a dummy entry registered here (in this
process's server) is listed, and offered by the page's menu, without a line of
``dashboard/app.py`` or of the page."""

from __future__ import annotations

import shutil

import pytest

from stepscope.dashboard.jobs.analysis_cache import AnalysisCache
from tests.support import analyses
from tests.support.dashboard.browser import READY_TIMEOUT_MS, page_url, watched_page
from tests.support.dashboard.inprocess import InProcessServer
from tests.support.traces import shared

WHERE = dict(run="gpu", host="alexnet_small")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("analyses")
    (root / "logs" / "gpu").mkdir(parents=True)
    shutil.copy(shared("kineto/alexnet_small.pt.trace.json.gz"), root / "logs" / "gpu")
    server = InProcessServer(root / "logs", AnalysisCache(root / "cache", workers=1))
    yield server
    server.stop()


def test_the_analyses_are_listed_with_their_inputs(served):
    answer = served.get("/api/tools", **WHERE).json()
    assert [(entry["name"], entry["inputs"], entry["title"]) for entry in answer["analyses"]] == [
        ("diff", "pair", "Compare"),
        ("distributed", "run", "Distributed"),
    ]
    assert not {"diff", "distributed"} & {entry["name"] for entry in answer["tools"]}
    (by,) = answer["analyses"][1]["options"]
    assert (by["name"], by["default"], by["choices"]) == ("by", "auto", ["rank", "device"])


def test_a_registered_entry_is_listed_and_answered_by_the_registry(served):
    with analyses.registered():
        listed = served.get("/api/tools", **WHERE).json()["analyses"]
        # Its place in menu order (order 85), its input kind and its option, as registered.
        assert [entry["name"] for entry in listed] == ["diff", analyses.NAME, "distributed"]
        assert listed[1] == {
            "name": analyses.NAME, "title": "Step count change", "output": "tables", "inputs": "pair",
            "description": "How many more steps the new run has.",
            "options": [{"name": "base_run", "type": "string", "default": "", "help": "the run to compare against",
                         "minimum": None, "choices": [], "choices_from": None, "resets": []}],
        }  # fmt: skip
        # The dashboard has no view that computes it: one line, not another analysis's answer.
        data = served.get("/api/data", **WHERE, tool=analyses.NAME)
        assert data.status == 404
        assert data.json() == {"error": f"{analyses.NAME} is not served by the dashboard"}
    # Taken back: listed no more.
    assert [entry["name"] for entry in served.get("/api/tools", **WHERE).json()["analyses"]] == ["diff", "distributed"]


def test_the_page_menu_is_the_registry_s(served, browser):
    """The tools, then the analyses, each under its title: the dummy too, in its order."""
    with analyses.registered(), watched_page(browser) as page:
        answer = served.get("/api/tools", **WHERE).json()
        page.goto(page_url(served.url, **WHERE, tool="overview_page"))
        page.wait_for_selector('#tool[data-tool="overview_page"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
        shown = page.eval_on_selector_all("#tool-select option", "options => options.map(o => [o.value, o.textContent])")
    expected = [entry["name"] for entry in answer["tools"]] + ["diff", analyses.NAME, "distributed"]
    assert [name for name, _ in shown] == expected
    assert dict(shown)[analyses.NAME] == "Step count change" and dict(shown)["diff"] == "Compare"
