"""The dashboard's worker pool (``stepscope.dashboard.jobs.pools``): a job that kills its worker,
or runs it out of memory, fails alone; the jobs queued behind it and beside it succeed.

Real worker processes run fake jobs (``fake_jobs``: a module of plain functions, sent to the
workers by name), on their own and through the HTTP API with the fake injected as the
analysis function (``AnalysisCache(analyse=...)``) or as the profile jobs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from stepscope.dashboard.jobs import pools
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache
from stepscope.dashboard.jobs.pools import MEMORY_SETTING, TIME_SETTING, WorkerFailed, WorkerPool, default_memory_limit, default_time_limit
from stepscope.dashboard.jobs.profile_jobs import JobFailed, ProfileJobs
from stepscope.errors import StepscopeError
from stepscope.sizes import parse_size, size_text
from tests.support.dashboard import fake_jobs
from tests.support.dashboard.inprocess import InProcessServer
from tests.support.dashboard.server import DashboardServer

KILLED = f"the worker was killed by signal {int(signal.SIGKILL)} (SIGKILL"
WAIT_S = 120  # a job's longest wait: spawning a worker is ~1 s, on a busy CI machine more
# The time limit of the tests that reach it. It also counts a fresh worker's start (spawn,
# imports: 1.5-2.4 s measured with the machine's load at 24), which every job after a
# replacement pays, so it lies far above that; the job it stops never ends by itself.
TIME_LIMIT_S = 20.0


@pytest.fixture
def pool():
    made: list[WorkerPool] = []

    def make(workers: int, memory_limit: int | None = None, warm=None) -> WorkerPool:
        made.append(WorkerPool(workers, memory_limit, warm=warm))
        return made[-1]

    yield make
    for each in made:
        each.close()


def attempts(folder: Path, name: str) -> int:
    return len(list(folder.glob(f"{name}.*")))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_job_that_kills_its_worker_fails_alone(pool, tmp_path, workers):
    jobs = pool(workers)
    culprit = jobs.submit(fake_jobs.kill_worker, str(tmp_path))
    # Queued behind it (one worker), or also running beside it on the other worker (two).
    healthy = [jobs.submit(fake_jobs.healthy, number, str(tmp_path), 0.3) for number in range(5)]
    with pytest.raises(WorkerFailed, match=re.escape(KILLED)):
        culprit.result(WAIT_S)
    assert [future.result(WAIT_S)[0] for future in healthy] == list(range(5))
    # The culprit ran twice (its one retry, on a fresh worker); every other job once: none
    # was interrupted or run again because of it.
    assert attempts(tmp_path, "kill") == 2
    assert all(attempts(tmp_path, f"healthy{number}") == 1 for number in range(5))


def test_a_job_that_kills_every_worker_fails_after_one_retry(pool, tmp_path):
    jobs = pool(1)
    with pytest.raises(WorkerFailed) as failed:
        jobs.submit(fake_jobs.exit_worker, 3, str(tmp_path)).result(WAIT_S)
    assert str(failed.value) == "the worker exited with status 3"
    assert attempts(tmp_path, "exit") == 1 + pools.RETRIES == 2
    assert jobs.submit(fake_jobs.healthy, 7).result(WAIT_S)[0] == 7  # the pool goes on


def test_a_worker_lost_once_is_retried_and_the_job_succeeds(pool, tmp_path):
    jobs = pool(1)
    assert jobs.submit(fake_jobs.kill_first_worker, str(tmp_path)).result(WAIT_S) == "second time lucky"
    assert attempts(tmp_path, "unlucky") == 2


def test_a_job_past_the_memory_cap_gets_a_memory_error_and_the_next_job_works(pool):
    # The cap is set above what a worker holds after its imports (measured, as it depends on
    # the machine: numpy's threads reserve address space per core), so only the job's own
    # allocation crosses it; without a cap the same allocation succeeds.
    baseline = pool(1).submit(fake_jobs.address_space).result(WAIT_S)
    cap = baseline + (512 << 20)
    jobs = pool(1, memory_limit=cap)
    assert jobs.submit(fake_jobs.memory_cap).result(WAIT_S) == cap
    with pytest.raises(WorkerFailed) as failed:
        jobs.submit(fake_jobs.allocate, cap).result(WAIT_S)
    assert str(failed.value).startswith(f"the worker ran out of memory (its limit is {size_text(cap)}; {MEMORY_SETTING}")
    assert jobs.submit(fake_jobs.healthy, 1).result(WAIT_S)[0] == 1
    assert jobs.submit(fake_jobs.allocate, 64 << 20).result(WAIT_S) == 64 << 20


def test_a_job_that_raises_fails_alone_and_its_worker_lives_on(pool):
    jobs = pool(1)
    _, pid = jobs.submit(fake_jobs.healthy, 1).result(WAIT_S)
    with pytest.raises(ValueError, match="boom"):
        jobs.submit(fake_jobs.fail, "boom").result(WAIT_S)
    assert jobs.submit(fake_jobs.healthy, 2).result(WAIT_S) == (2, pid)


def test_close_stops_busy_workers_and_cancels_queued_jobs(pool):
    jobs = pool(1)
    running = jobs.submit(fake_jobs.healthy, 1, None, 3600)
    queued = jobs.submit(fake_jobs.healthy, 2)
    wait_until(running.running)  # taken by the worker's slot; the other stays queued
    started = time.monotonic()
    jobs.close()
    assert time.monotonic() - started < 60  # it stopped the job, which sleeps an hour
    assert queued.cancelled()
    with pytest.raises(WorkerFailed, match="closing"):
        running.result(WAIT_S)


def wait_until(condition: Callable[[], bool], what: str = "the condition") -> None:
    """Until ``condition()`` holds (WAIT_S at most: the bound of a failure, never of a pass)."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"{what} never came"
        time.sleep(0.02)


def wait_for(path: Path) -> dict:
    """The JSON a worker writes at ``path`` (renamed into place: whole once it exists)."""
    wait_until(path.exists, str(path))
    return json.loads(path.read_text())


def test_a_prestarted_worker_warms_up_with_no_job_then_runs_the_first_one(pool, tmp_path, monkeypatch):
    monkeypatch.setenv(fake_jobs.WARM_FOLDER, str(tmp_path))
    jobs = pool(2, warm=fake_jobs.warm)
    jobs.prestart()
    warmed = wait_for(tmp_path / "warm")  # no job was submitted
    pid, started = jobs.submit(fake_jobs.started_at).result(WAIT_S)
    # The first job ran on the warmed worker, after its warm-up (which sleeps 0.3 s).
    assert pid == warmed["pid"] and started >= warmed["at"] + 0.3
    # Prestart starts one worker, not all: a second job beside a busy first gets a fresh one, warmed too.
    first = jobs.submit(fake_jobs.healthy, 1, None, 2.0)
    wait_until(first.running)  # the warmed worker took it
    second_pid = jobs.submit(fake_jobs.started_at).result(WAIT_S)[0]
    assert first.result(WAIT_S) == (1, pid) and second_pid != pid
    assert wait_for(tmp_path / "warm")["pid"] == second_pid


def test_a_failed_warm_up_leaves_the_worker_serving(pool, tmp_path, monkeypatch):
    monkeypatch.setenv(fake_jobs.WARM_FOLDER, str(tmp_path))
    jobs = pool(1, warm=fake_jobs.failing_warm)
    assert jobs.submit(fake_jobs.healthy, 3).result(WAIT_S)[0] == 3
    assert attempts(tmp_path, "warm") == 1


def children_with(parent: int, library: str) -> list[int]:
    """The child processes of ``parent`` that have ``library`` mapped (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent and library in (stat.parent / "maps").read_text():
                found.append(int(stat.parent.name))
    return found


def test_a_server_starts_a_worker_before_any_request(tmp_path):
    # The real `stepscope serve`: its first analysis worker starts (and imports stepscope,
    # whose compiled kernels it maps) with no request made; it warms up as
    # test_a_prestarted_worker_warms_up_with_no_job_then_runs_the_first_one checks.
    (tmp_path / "logs").mkdir()
    server = DashboardServer(tmp_path / "logs", tmp_path / "cache")
    try:
        wait_until(lambda: bool(children_with(server.process.pid, "stepscope/_kernels")), "a worker of the server")
        assert len(children_with(server.process.pid, "stepscope/_kernels")) == 1  # one worker, not one per slot
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("setting", "expected"),
    [("2G", 2 << 30), ("512M", 512 << 20), ("1.5GiB", 3 << 29), ("1048576", 1 << 20), ("none", None), ("0", None)],
)
def test_the_memory_setting(monkeypatch, setting, expected):
    monkeypatch.setenv(MEMORY_SETTING, setting)
    assert default_memory_limit() == expected


def test_the_default_cap_is_half_the_machine(monkeypatch):
    monkeypatch.delenv(MEMORY_SETTING, raising=False)
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    with contextlib.suppress(OSError, ValueError):
        physical = min(physical, int(pools.CGROUP_MEMORY_MAX.read_text()))
    assert default_memory_limit() == physical // 2


def test_a_bad_memory_setting_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(MEMORY_SETTING, "lots")
    with pytest.raises(StepscopeError, match=f"{MEMORY_SETTING}: 'lots' is not a size"):
        default_memory_limit()
    with pytest.raises(ValueError):
        parse_size("5Q")


# Through the HTTP API: four profiles analysed by one worker, the crashing one first.
PROFILES = ["crash", "ok1", "ok2", "hog", "ok3"]


@pytest.fixture
def crashing_server(tmp_path):
    logdir = tmp_path / "logs" / "jobs"
    logdir.mkdir(parents=True)
    for name in PROFILES:
        (logdir / f"{name}.pt.trace.json").write_text("{}")  # never read: the fake analysis does not
    baseline = WorkerPool(1)
    try:
        cap = baseline.submit(fake_jobs.address_space).result(WAIT_S) + (512 << 20)
    finally:
        baseline.close()
    cache = AnalysisCache(tmp_path / "cache", workers=1, memory_limit=cap, analyse=fake_jobs.analyse_or_crash)
    server = InProcessServer(tmp_path / "logs", cache)
    yield server
    server.stop()


def data(server, host: str):
    return server.get("/api/data", run="jobs", host=host, tool="overview_page")


def test_a_profile_that_crashes_its_worker_fails_alone_through_the_api(crashing_server, tmp_path):
    first = [data(crashing_server, name) for name in PROFILES]  # all submitted: queued behind "crash"
    assert [answer.status for answer in first] == [202] * len(PROFILES)
    answers = {name: crashing_server.ready("/api/data", WAIT_S, run="jobs", host=name, tool="overview_page") for name in PROFILES}
    for name in ("ok1", "ok2", "ok3"):
        assert answers[name].status == 200
        assert answers[name].json() == {"fake": f"{name}.pt.trace.json"}
    crash = tmp_path / "logs" / "jobs" / "crash.pt.trace.json"
    assert answers["crash"].status == 422
    assert answers["crash"].json()["error"].startswith(f"analysis of {crash} stopped: {KILLED}")
    assert answers["hog"].status == 422
    assert "stopped: the worker ran out of memory (its limit is" in answers["hog"].json()["error"]
    # Failed for good (until a restart): asked again, the answer is the same, at once.
    assert data(crashing_server, "crash").status == 422
    assert crashing_server.get("/api/runs").status == 200
    assert not list((tmp_path / "cache" / "analysis").glob(".*"))  # no staging folder left


class CrashingJobs(ProfileJobs):
    """Profile jobs whose every job kills its worker, whatever the endpoint asked for."""

    def run(self, what, function, *args):
        return super().run(what, fake_jobs.kill_worker)


def test_a_profile_job_that_kills_its_worker_is_a_422_and_the_server_goes_on(crashing_server, tmp_path):
    assert crashing_server.ready("/api/data", WAIT_S, run="jobs", host="ok1", tool="overview_page").status == 200
    crashing_server.app.state.profile_jobs.close()
    crashing_server.app.state.profile_jobs = CrashingJobs()
    answer = crashing_server.get("/api/trace/event", run="jobs", host="ok1", id="0")
    assert answer.status == 422
    profile = tmp_path / "logs" / "jobs" / "ok1.pt.trace.json"
    assert answer.json()["error"].startswith(f"event 0 of {profile} stopped: {KILLED}")
    assert crashing_server.get("/api/runs").status == 200
    assert data(crashing_server, "ok1").status == 200


def test_profile_jobs_say_what_stopped_and_why_then_go_on():
    jobs = ProfileJobs(memory_limit=0)
    try:
        with pytest.raises(JobFailed, match=r"^export of x stopped: the worker exited with status 3$"):
            jobs.run("export of x", fake_jobs.exit_worker, 3)
        assert jobs.run("healthy", fake_jobs.healthy, 4)[0] == 4
    finally:
        jobs.close()


# ------------------------------------------------------------------ time limit


def test_the_time_limit_counts_from_a_ready_worker_not_from_its_spawn():
    # The worker takes 3 s to start (its warm-up sleeps), the limit is 1 s, the job returns
    # at once: the job is on time. Were the start charged to it, 3 s > 1 s would fail it.
    jobs = WorkerPool(1, warm=fake_jobs.slow_start, time_limit=1.0)
    try:
        assert jobs.submit(fake_jobs.healthy, 7).result(WAIT_S)[0] == 7
    finally:
        jobs.close()


def test_a_job_past_its_time_limit_fails_and_its_worker_is_replaced(tmp_path):
    jobs = WorkerPool(1, time_limit=TIME_LIMIT_S)
    try:
        first_pid = jobs.submit(fake_jobs.healthy, 1).result(WAIT_S)[1]
        started = time.monotonic()
        with pytest.raises(WorkerFailed) as failed:
            jobs.submit(fake_jobs.sleep, 3600).result(WAIT_S)
        assert str(failed.value) == f"the worker ran past its time limit of 20 s and was replaced ({TIME_SETTING} sets the limit)"
        assert TIME_LIMIT_S <= time.monotonic() - started < WAIT_S  # stopped at the limit, not at the hour
        # The next job runs on a fresh process (the old one, still asleep, was stopped).
        value, pid = jobs.submit(fake_jobs.healthy, 2).result(WAIT_S)
        assert value == 2 and pid != first_pid
        with pytest.raises(ProcessLookupError):
            os.kill(first_pid, 0)
    finally:
        jobs.close()


@pytest.fixture
def looping_server(tmp_path):
    logdir = tmp_path / "logs" / "jobs"
    logdir.mkdir(parents=True)
    for name in ("loop", "ok1"):
        (logdir / f"{name}.pt.trace.json").write_text("{}")  # never read: the fake analysis does not
    cache = AnalysisCache(tmp_path / "cache", workers=1, analyse=fake_jobs.analyse_or_crash, time_limit=TIME_LIMIT_S)
    server = InProcessServer(tmp_path / "logs", cache)
    yield server
    server.stop()


def test_a_profile_whose_analysis_never_ends_fails_alone_through_the_api(looping_server, tmp_path):
    """The one worker spins on "loop"; "ok1", queued behind it, is analysed once the limit
    (20 s) replaces that worker, and "loop" fails with one line."""
    assert data(looping_server, "loop").status == 202
    assert data(looping_server, "ok1").status == 202  # queued behind it
    ok = looping_server.ready("/api/data", WAIT_S, run="jobs", host="ok1", tool="overview_page")
    assert ok.status == 200 and ok.json() == {"fake": "ok1.pt.trace.json"}
    answer = looping_server.ready("/api/data", WAIT_S, run="jobs", host="loop", tool="overview_page")
    loop = tmp_path / "logs" / "jobs" / "loop.pt.trace.json"
    assert answer.status == 422
    assert answer.json() == {
        "error": f"analysis of {loop} stopped: the worker ran past its time limit of 20 s and was replaced ({TIME_SETTING} sets the limit)"
    }


@pytest.mark.parametrize(("setting", "expected"), [("", 1800.0), ("90", 90.0), ("2.5s", 2.5), ("30m", 1800.0), ("2H", 7200.0), ("none", None), ("0", None)])
def test_the_time_limit_setting(monkeypatch, setting, expected):
    monkeypatch.setenv(TIME_SETTING, setting)
    assert default_time_limit() == expected


def test_a_time_limit_setting_that_is_no_duration_says_so(monkeypatch):
    monkeypatch.setenv(TIME_SETTING, "soon")
    with pytest.raises(StepscopeError, match=f"^{TIME_SETTING}: 'soon' is not a duration"):
        default_time_limit()
