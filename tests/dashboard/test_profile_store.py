"""The dashboard's workers share one profile store per profile (``trace.store``, docs/dashboard.md
"Cache"): the analysis worker builds it under ``<cache>/profiles/<release>/``, the profile
worker (an event's details) opens it, and a store found damaged is rebuilt, not trusted.
Expected values come from the raw trace read with the standard library's json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stepscope import __version__
from stepscope.trace.store import FORMAT_VERSION, open_store, source_identity
from tests.support.dashboard.server import DashboardServer
from tests.support.traces import read_json, shared

RAW = "kineto/alexnet_small.pt.trace.json.gz"
WHERE = dict(run="gpu", host="alexnet_small")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("store_logs")
    (root / "gpu").mkdir()
    source = root / "gpu" / Path(RAW).name
    shutil.copyfile(shared(RAW), source)
    cache = tmp_path_factory.mktemp("store_cache")
    running = DashboardServer(root, cache)
    yield running, source, cache
    running.stop()


def test_the_analysis_leaves_a_store_and_a_damaged_one_is_rebuilt_for_an_event(served):
    server, source, cache = served
    assert server.ready("/api/trace/tracks", **WHERE).status == 200
    stores = cache / "profiles" / __version__
    folders = list(stores.iterdir())
    assert len(folders) == 1 and (stores.stat().st_mode & 0o777) == 0o700
    folder = folders[0]
    raw = [event for event in read_json(source)["traceEvents"] if event.get("ph") == "X"]
    assert open_store(folder, source_identity(source)).event_count >= len(raw)  # its own file's store
    # Damaged before the profile worker first needs it: refused and rebuilt, never trusted.
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "version": FORMAT_VERSION + 1}))
    conv = sorted((float(e["ts"]), e) for e in raw if e["name"] == "aten::conv2d")
    found = server.get("/api/trace/find", **WHERE, text="aten::conv2d").json()["match"]
    event = server.get("/api/trace/event", **WHERE, id=str(found["id"])).json()
    assert event["details"]["duration_ps"] == round(float(conv[0][1]["dur"]) * 1_000_000)
    stats = {stat["name"]: stat["value"] for stat in event["details"]["stats"]}
    assert stats["external_id"] == conv[0][1]["args"]["External id"]
    assert json.loads((folder / "manifest.json").read_text())["version"] == FORMAT_VERSION  # rebuilt in place
    assert [path.name for path in stores.iterdir()] == [folder.name]
