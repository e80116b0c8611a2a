"""The trace export cache (``trace_api.Exports``): one folder under a size budget, least
recently used files evicted first, never a file being sent; through the HTTP API on a real
profile, with a budget set for the test."""

from __future__ import annotations

import gc
import os
import shutil
import time

import pytest

from stepscope.dashboard.api.trace_api import DEFAULT_EXPORT_BUDGET, EXPORT_BUDGET_SETTING, STALE_TEMPORARY_S, Exports
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache
from tests.support.dashboard.inprocess import InProcessServer
from tests.support.traces import shared

WHERE = dict(run="gpu", host="alexnet_small")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    (root / "logs" / "gpu").mkdir(parents=True)
    shutil.copy(shared("kineto/alexnet_small.pt.trace.json.gz"), root / "logs" / "gpu")
    server = InProcessServer(root / "logs", AnalysisCache(root / "cache", workers=1))
    tracks = server.ready("/api/trace/tracks", **WHERE)
    assert tracks.status == 200
    yield server, tracks.json()["span_ps"]
    server.stop()


def test_exports_past_the_budget_evict_the_least_recently_used(served, tmp_path):
    server, span = served
    ranges = {"a": (0, span // 4), "b": (span // 4, span // 2), "c": (span // 2, span + 1)}

    def export(name: str) -> bytes:
        time.sleep(0.05)  # distinct use times
        start, end = ranges[name]
        answer = server.get("/api/trace/export", **WHERE, start_ps=str(start), end_ps=str(end))
        assert answer.status == 200
        return answer.body

    def kept() -> set[str]:
        names = {path.name for path in exports.root.iterdir()}
        return {name for name, (start, end) in ranges.items() if any(f".{start}_{end}.json.gz" in n for n in names)}

    server.app.state.exports = exports = Exports(tmp_path / "measure", budget=0)
    sizes = {name: len(export(name)) for name in ranges}
    # Any two files fit, all three do not.
    server.app.state.exports = exports = Exports(tmp_path / "exports", budget=sum(sizes.values()) - 1)
    export("a"), export("b"), export("a")  # a used last: b is the least recently used
    assert kept() == {"a", "b"}
    export("c")
    assert kept() == {"a", "c"}
    assert len(export("b")) == sizes["b"]  # made again, and a (older than c) goes
    assert kept() == {"b", "c"}
    assert sum(path.stat().st_size for path in exports.root.iterdir()) <= exports.budget
    assert server.get("/api/runs").status == 200


def test_a_file_being_sent_is_never_evicted(tmp_path):
    exports = Exports(tmp_path / "exports", budget=1)
    paths = [exports.path("k", start, start + 1) for start in range(3)]
    for path in paths:
        path.write_bytes(b"x" * 100_000)
    opened = exports.open(paths[1])
    exports.evict()
    assert [path.exists() for path in paths] == [False, True, False]  # over budget, but in use
    assert b"".join(opened) == b"x" * 100_000  # sent whole; closed at the end
    exports.evict()
    assert not paths[1].exists()

    paths[0].write_bytes(b"over the budget")
    unsent = exports.open(paths[0])  # an answer dropped before it was sent
    exports.evict()
    assert paths[0].exists()
    del unsent
    gc.collect()
    exports.evict()
    assert not paths[0].exists()


def test_stale_temporary_files_are_removed_and_fresh_ones_kept(tmp_path):
    exports = Exports(tmp_path / "exports", budget=1 << 20)
    stale, fresh = exports.root / ".k.0_1.json.gz.abc.tmp", exports.root / ".k.0_2.json.gz.def.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    old = time.time() - STALE_TEMPORARY_S - 60
    os.utime(stale, (old, old))
    exports.evict()
    assert not stale.exists() and fresh.exists()


def test_the_old_per_profile_export_folders_are_removed(tmp_path):
    legacy = tmp_path / "cache" / "analysis" / "0123abcd.exports"
    legacy.mkdir(parents=True)
    (legacy / "0_99999999999.json.gz").write_bytes(b"old")
    analysis = tmp_path / "cache" / "analysis" / "0123abcd"
    analysis.mkdir()
    Exports(tmp_path / "cache" / "exports")
    assert not legacy.exists() and analysis.exists()


@pytest.mark.parametrize(("setting", "budget"), [(None, DEFAULT_EXPORT_BUDGET), ("10M", 10 << 20), ("none", None), ("0", None)])
def test_the_budget_setting(monkeypatch, tmp_path, setting, budget):
    if setting is None:
        monkeypatch.delenv(EXPORT_BUDGET_SETTING, raising=False)
    else:
        monkeypatch.setenv(EXPORT_BUDGET_SETTING, setting)
    assert Exports(tmp_path / "exports").budget == budget
    assert Exports(tmp_path / "exports", budget=123).budget == 123


def test_a_cache_of_an_older_analysis_format_is_not_read(monkeypatch, tmp_path):
    """The key holds ``ANALYSIS_FORMAT``: a folder cached before a change of what the analysis
    writes (same version number, same file) is another key, so it is analysed again rather
    than read as current."""
    from stepscope.dashboard.jobs import analysis_cache

    profile = tmp_path / "host.pt.trace.json"
    profile.write_text('{"traceEvents": []}')
    cache = AnalysisCache(tmp_path / "cache", workers=1)
    current = cache.key(profile)
    (cache.root / current).mkdir()  # as a finished analysis leaves it
    monkeypatch.setattr(analysis_cache, "ANALYSIS_FORMAT", analysis_cache.ANALYSIS_FORMAT - 1)
    older = cache.key(profile)
    assert older != current and not (cache.root / older).exists()
