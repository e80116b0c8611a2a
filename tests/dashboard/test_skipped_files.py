"""Nothing in a logdir is dropped silently: the run list (/api/runs) and the page's header
list every file discovery did not take, with its reason, beside the runs it did take (here a
Kineto trace whose large metadata object comes first, TraceLens' H100 samples' shape)."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.dashboard.browser import open_tool, watched_page
from tests.support.dashboard.server import DashboardServer
from tests.support.traces import read_json, shared

KINETO = "kineto/cpu_only_rank34.pt.trace.json.gz"
CONFIG_WHY = "not a trace: a JSON object without traceEvents (keys: lr)"
FIFO_WHY = "is a named pipe (FIFO), not a regular file; profiles are read from regular files only"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("skipped_logdir")
    run = logdir / "h100"
    run.mkdir()
    metadata = {f"kernel_{i}": {"dims": list(range(20))} for i in range(5000)}
    (run / "rank0.json").write_text(json.dumps({"metadata": metadata, **read_json(shared(KINETO))}))
    (run / "config.json").write_text(json.dumps({"lr": 0.1}))
    os.mkfifo(run / "pipe.pt.trace.json")
    running = DashboardServer(logdir, tmp_path_factory.mktemp("skipped_cache"))
    yield running
    running.stop()


def test_the_run_list_names_the_skipped_files_and_why(server):
    answer = server.get("/api/runs").json()
    assert answer["runs"] == [{"name": "h100", "hosts": ["rank0"]}]
    # Paths relative to the logdir (the page shows nothing of the disk beyond it).
    assert answer["skipped"] == [{"path": "h100/config.json", "why": CONFIG_WHY}, {"path": "h100/pipe.pt.trace.json", "why": FIFO_WHY}]


def test_the_page_shows_them_in_its_header(browser, server):
    with watched_page(browser) as page:
        open_tool(page, server, "overview_page", run="h100", host="rank0")
        box = page.locator("#skipped")
        assert box.is_visible()
        assert box.locator("summary").inner_text() == "2 files skipped"
        box.locator("summary").click()
        assert box.locator("li").all_inner_texts() == [f"h100/config.json: {CONFIG_WHY}", f"h100/pipe.pt.trace.json: {FIFO_WHY}"]
