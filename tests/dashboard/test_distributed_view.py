"""The server's side of the distributed view, without HTTP: a host's cached rank tables
(or, for a cache folder written before they were kept, the profile worker's), and the one
progress a run of many hosts reports while they are analysed."""

from __future__ import annotations

import dataclasses

from stepscope.analysis.distributed import rank_tables
from stepscope.analysis.opstats import OpStats
from stepscope.dashboard.api.distributed_view import load_rank_tables, pending_progress
from stepscope.dashboard.jobs.analysis_cache import Failed, Pending, Ready
from stepscope.dashboard.jobs.profile_jobs import ProfileJobs
from stepscope.dashboard.jobs.worker import RANK_FILE, Progress, write_checksums, write_rank_tables
from stepscope.trace.readers import load
from tests.support.traces import shared

ALEXNET = shared("kineto/alexnet_small.pt.trace.json.gz")


def test_cached_and_recomputed_rank_tables_are_the_engines(tmp_path):
    profile = load(ALEXNET)
    expected = rank_tables(profile, "alexnet_small")
    cached, old = tmp_path / "cached", tmp_path / "old"
    cached.mkdir()
    old.mkdir()
    write_rank_tables(OpStats(profile), cached)
    write_checksums(cached)
    jobs = ProfileJobs()
    try:
        # As the analysis worker left them, named by the run's name for the file.
        assert load_rank_tables(Ready(cached), "alexnet_small", ALEXNET, jobs) == expected
        # A folder without them (an older analysis): the profile worker computes them.
        assert not (old / RANK_FILE).exists()
        assert load_rank_tables(Ready(old), "alexnet_small", ALEXNET, jobs) == expected
    finally:
        jobs.close()
    # Tables that failed are the rank's one-line error.
    (old / RANK_FILE).write_bytes(b'{"error": "x.json: the distributed view\'s tables failed (ValueError: bad)"}')
    write_checksums(old)
    assert load_rank_tables(Ready(old), "h", ALEXNET, ProfileJobs()) == "x.json: the distributed view's tables failed (ValueError: bad)"
    assert dataclasses.is_dataclass(expected) and expected.file_host == "alexnet_small"


def test_a_runs_progress_is_the_mean_of_its_hosts():
    statuses = [
        Ready(ALEXNET.parent),
        Pending(Progress("analysing", 0.5, "overview_page (1/7, 3 s)")),
        Failed("bad.json: truncated"),
        Pending(Progress("queued", 0.0, "waiting for a worker for b.json")),
    ]
    # Done: the ready and the failed host (1 each); running: 0.5 and 0.0 -> (2 + 0.5) / 4.
    progress = pending_progress(statuses)
    assert progress == Progress("analysing", 0.625, "2 of 4 ranks analysed; overview_page (1/7, 3 s)")
    queued = pending_progress([Pending(Progress("queued", 0.0, "waiting for a worker for a.json"))])
    assert queued == Progress("queued", 0.0, "0 of 1 ranks analysed; waiting for a worker for a.json")
