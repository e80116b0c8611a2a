"""What the dashboard's server process keeps in memory is bounded by bytes or by count and
age, whatever clients ask for: tool runs with options, and the table of
finished captures. (Capture request bodies: test_security.py, 413 before parsing.)"""

from __future__ import annotations

import time

from stepscope.dashboard.jobs import captures as captures_module
from stepscope.dashboard.jobs import tool_runs
from stepscope.dashboard.jobs.captures import FAILED, CaptureJob, CaptureRequest, Captures
from stepscope.dashboard.jobs.tool_runs import ToolRuns

MIB = 1 << 20


class FakeJobs:
    """The profile worker's seam: each run answers ``size`` bytes of JSON and is counted."""

    def __init__(self, size: int) -> None:
        self.size, self.runs = size, 0

    def run(self, what, function, profile_path, tool, options):
        self.runs += 1
        return b"x" * self.size, b"{}"


def test_tool_runs_keep_at_most_their_byte_budget():
    """Six 30 MiB answers (graph_viewer of a big module): the budget (64 MiB) keeps the last
    two (2 x (30 MiB + 2 bytes) <= 64 MiB < 3 x), not all six as a count of 32 did."""
    jobs = FakeJobs(30 * MIB)
    runs = ToolRuns(jobs)
    for number in range(6):
        runs.documents("p", "key", "graph_viewer", {"node": number})
    assert runs.kept_bytes == 2 * (30 * MIB + 2) <= tool_runs.KEPT_BYTES
    runs.documents("p", "key", "graph_viewer", {"node": 5})  # kept: not run again
    runs.documents("p", "key", "graph_viewer", {"node": 4})
    assert jobs.runs == 6
    runs.documents("p", "key", "graph_viewer", {"node": 0})  # evicted long ago: run again
    assert jobs.runs == 7


def test_a_tool_run_larger_than_the_budget_is_answered_not_kept():
    jobs = FakeJobs(tool_runs.KEPT_BYTES + 1)
    runs = ToolRuns(jobs)
    document, _ = runs.documents("p", "key", "graph_viewer", {})
    assert len(document) == tool_runs.KEPT_BYTES + 1
    assert runs.kept_bytes == 0
    runs.documents("p", "key", "graph_viewer", {})
    assert jobs.runs == 2


def _finished(job_id: str, finished: float) -> CaptureJob:
    request = CaptureRequest.from_json({"addresses": ["127.0.0.1:1"]})
    return CaptureJob(job_id, request, started=finished, state=FAILED, finished=finished)


def _prune_at_start(captures: Captures, jobs: list[CaptureJob]) -> set[str]:
    """The capture ids left once a new capture starts (which prunes), the new one aside."""
    captures._jobs = {job.id: job for job in jobs}
    new = captures.start(CaptureRequest.from_json({"addresses": ["127.0.0.1:1"], "attempts": 1, "duration_ms": 100}))
    return set(captures._jobs) - {new.id}


def test_finished_captures_are_pruned_by_count(tmp_path):
    """3,000 failed captures (the issue's) and a running one: the newest KEPT_FINISHED
    finished ones stay (old2900 to old2999 for 100), and the running one."""
    now = time.monotonic()
    jobs = [_finished(f"old{n}", now - 3000 + n * 0.5) for n in range(3000)]
    running = CaptureJob("running", jobs[0].request)
    kept = captures_module.KEPT_FINISHED
    assert _prune_at_start(Captures(tmp_path), [*jobs, running]) == {"running"} | {f"old{n}" for n in range(3000 - kept, 3000)}


def test_finished_captures_are_pruned_by_age(tmp_path):
    """Ten finished captures, three of them finished more than KEPT_FINISHED_S ago."""
    now = time.monotonic()
    old = now - captures_module.KEPT_FINISHED_S - 60
    jobs = [_finished(f"c{n}", old if n < 3 else now - n) for n in range(10)]
    assert _prune_at_start(Captures(tmp_path), jobs) == {f"c{n}" for n in range(3, 10)}
