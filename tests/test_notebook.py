"""docs/notebook.ipynb run in a real Jupyter kernel (nbclient), and stepscope.notebook.show.

The notebook captures a tiny PyTorch loop (5 ``stepscope.step``s) into its own logdir; the
expected numbers come from the XSpace file it wrote, read here with protobuf's own parser
(not stepscope's reader): every event of every line, their names and durations. While the
kernel lives, the iframe's URL answers and Chromium shows the dashboard's overview inside
the iframe, as a notebook page would; once the kernel has exited (atexit), the server is gone.
"""

from __future__ import annotations

import functools
import html
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import stepscope
import stepscope.notebook
from stepscope.errors import StepscopeError
from stepscope.protos import xplane_pb2
from tests.support.dashboard.browser import SCREENSHOTS, chromium
from tests.support.traces import ROOT, shared

NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
STEPS = 5  # the notebook's loop: range(5), each in stepscope.step
# The line stepscope's writer adds for XProf (one root event per step) and its reader drops
# (docs/format.md): not events of the profile.
XPROF_STEPS_LINE = "Steps (stepscope)"
IFRAME_SRC = re.compile(r'<iframe[^>]*src="(http://127\.0\.0\.1:\d+/)"')


def xspace_events(path: Path) -> tuple[int, Counter[str], Counter[str], set[int]]:
    """(events, count per name, ps per name, the step numbers of the stepscope.step
    markers) of an XSpace file, by protobuf's parser."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    counts: Counter[str] = Counter()
    durations: Counter[str] = Counter()
    steps = set()
    for plane in space.planes:
        for line in plane.lines:
            if line.name == XPROF_STEPS_LINE:
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                counts[name] += 1
                durations[name] += event.duration_ps
                if name == "stepscope.step":
                    steps |= {stat.int64_value for stat in event.stats if plane.stat_metadata[stat.metadata_id].name == "step_num"}
    return sum(counts.values()), counts, durations, steps


def outputs(cell) -> dict[str, str]:
    """A code cell's display data and results, by MIME type (the last of each)."""
    found = {}
    for output in cell.outputs:
        assert output.output_type != "error", "\n".join(output.traceback)
        found.update(output.get("data", {}))
    return found


def code_cell(notebook, starts: str):
    return next(cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.startswith(starts))


@pytest.mark.framework  # the notebook trains a tiny torch model
def test_the_notebook_in_a_real_kernel(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            client.execute_cell(cell, index)
        (written,) = (tmp_path / "stepscope-notebook-logs").glob("plugins/profile/*/*.xplane.pb")
        check_the_outputs(notebook, written)
        url = check_the_dashboard(notebook, written, tmp_path)
    # The kernel has exited: its atexit stopped the server.
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)


def check_the_outputs(notebook, written: Path) -> None:
    events, counts, durations, steps = xspace_events(written)
    assert steps == set(range(STEPS))
    shown = outputs(code_cell(notebook, "profile = stepscope.load"))
    assert f"{events:,} events" in shown["text/plain"] and f"{STEPS} steps" in shown["text/plain"]
    assert len(shown["text/plain"]) < 400  # one line, not the dataclass's 35,000 characters
    assert f"{events:,} events" in shown["text/html"] and "Verdict:" in shown["text/html"]

    result = outputs(code_cell(notebook, "ops = run_tool"))
    assert "framework_op_stats" in result["text/plain"] and "framework_ops (" in result["text/plain"]
    assert "<table" in result["text/html"]

    grouped = outputs(code_cell(notebook, "events = profile.to_pandas()"))["text/html"]
    first, second = durations.most_common(2)  # the groupby's first two rows: sorted by summed duration
    for name, total in (first, second):
        assert f"<th>{html.escape(name)}</th>" in grouped
        assert f"<td>{counts[name]}</td>" in grouped and f"<td>{total}</td>" in grouped
    assert grouped.index(html.escape(first[0])) < grouped.index(html.escape(second[0]))


@contextmanager
def notebook_server(folder: Path) -> Iterator[str]:
    """``folder`` served on 127.0.0.1 and a port of its own, as Jupyter serves a notebook
    page: another origin than the dashboard's, which must let it frame the dashboard."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def check_the_dashboard(notebook, written: Path, folder: Path) -> str:
    """The iframe's URL answers, and Chromium shows the overview inside the iframe of a page
    made of the profile's and show()'s cells, served as a notebook is. Returns the URL."""
    frame = outputs(code_cell(notebook, "stepscope.notebook.show"))["text/html"]
    url = IFRAME_SRC.search(frame).group(1)
    assert 'height="600"' in frame
    with urllib.request.urlopen(url, timeout=60) as answer:
        assert answer.status == 200 and "<title>stepscope" in answer.read().decode()
    with urllib.request.urlopen(url + "api/runs", timeout=60) as answer:
        assert written.name.removesuffix(".xplane.pb") in answer.read().decode()

    shown = [outputs(code_cell(notebook, starts))["text/html"] for starts in ("profile = stepscope.load", "stepscope.notebook.show")]
    (folder / "notebook-page.html").write_text('<body style="font-family: sans-serif; font-size: 13px">' + "".join(shown) + "</body>")
    with notebook_server(folder) as notebook_url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 780})
        page.goto(notebook_url + "notebook-page.html")
        step_count = page.frame_locator("iframe").locator('[data-metric="step_count"]').first
        step_count.wait_for(timeout=60_000)
        assert step_count.get_attribute("data-value") == str(STEPS)
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "notebook.png"))  # docs/images/notebook.png is one
    return url


def test_show_of_a_profile_object_and_stop(tmp_path):
    profile = stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz"))
    frame = stepscope.notebook.show(profile, height=300)
    server = stepscope.notebook.start(profile)  # the same one: show reuses it
    assert frame.src == server.url and frame.height == 300
    assert server.url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(server.url + "api/runs", timeout=60) as answer:
        body = answer.read().decode()
    assert '"notebook"' in body and '"alexnet_small"' in body  # the temporary logdir's run and host
    assert server.logdir.is_dir() and server.logdir.name.startswith("stepscope-notebook-")  # the temporary logdir
    stepscope.notebook.stop()
    assert server.process.poll() is not None and not server.logdir.exists()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(server.url, timeout=5)


def test_show_refuses_what_is_not_a_logdir(tmp_path):
    with pytest.raises(StepscopeError, match=r"missing: not a directory \(give a log directory"):
        stepscope.notebook.show(tmp_path / "missing")


def test_importing_it_imports_no_ipython_nor_the_dashboard():
    probe = "import sys, stepscope\nstepscope.notebook.stop\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'uvicorn', 'pandas')))"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
