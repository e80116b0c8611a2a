"""The job's critical path across ranks (``distributed.job_paths``) and its place in
``stepscope distributed``: two hand-made ranks whose straggle is derived by hand
(tests/support/critical_paths.py's two-rank fixture), and the shared recsys ranks 0 and 1,
whose job steps are the slower rank's recorded ``ProfilerStep`` (read from the files)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from stepscope.analysis.distributed.job_paths import MAX_JOINED_RANKS, job_paths
from tests.support.critical_paths import US, two_rank_files, two_ranks
from tests.support.distributed_runs import step_durations_us
from tests.support.traces import read_json, shared

RECSYS = [f"kineto/recsys_sampled_rank{rank}_of_128.pt.trace.json.gz" for rank in (0, 1)]


def distributed_json(folder) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "stepscope.cli", "distributed", str(folder), "--format", "json", "--workers", "1"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    document: dict = json.loads(done.stdout)["distributed"]
    return document


def test_two_hand_made_ranks(tmp_path):
    steps, removed = job_paths(two_ranks(tmp_path), [0, 1])
    # Both ranks' step 1 lasts 100 us; the slowest is the first at a tie, rank 0. Its path
    # (tests/analysis/paths/test_rank_paths.py): add 5 (host) <- the sync's return 5 <- its
    # all-reduce's transfer [80, 90): 10, all on rank 0 (20 us); <- rank 1's compute [6, 80):
    # 74 <- its queueing 1 and launch 5 (80 us on rank 1). So rank 1 sets the step, kernel
    # time the most of it.
    assert steps == [
        {
            "step": 1,
            "step_ps": 100 * US,
            "slowest_rank": 0,
            "setting_rank": 1,
            "kind": "kernel",
            "by_rank_ps": {"0": 20 * US, "1": 80 * US},
            "by_kind_ps": {"host_compute": 5 * US, "launch": 6 * US, "kernel": 74 * US, "collective": 10 * US, "sync": 5 * US},
        }
    ]
    # Without rank 1's straggle rank 0's all-reduce runs [35, 45) after its own launch, the
    # sync returns at 50, the add ends at 55; rank 1 never waited for rank 0: 100 us.
    assert [(row["rank"], row["predicted_steps_ps"]) for row in removed] == [(0, [100 * US]), (1, [55 * US])]
    # The numbers given are the ranks' names: the same job numbered 4 and 9.
    renamed, _ = job_paths(two_ranks(tmp_path), [4, 9])
    assert (renamed[0]["slowest_rank"], renamed[0]["setting_rank"], renamed[0]["by_rank_ps"]) == (4, 9, {"4": 20 * US, "9": 80 * US})


def test_the_cli_on_the_hand_made_ranks(tmp_path):
    folder = tmp_path / "logdir" / "job"
    folder.mkdir(parents=True)
    for path in two_rank_files(tmp_path, base_ns=1_700_000_000 * 10**9):  # both on the UNIX clock
        shutil.move(path, folder / path.name)
    document = distributed_json(tmp_path / "logdir")
    assert [(step["step"], step["setting_rank"], step["kind"]) for step in document["job_steps"]] == [(1, 1, "kernel")]
    assert {row["rank"]: row["predicted_step_ps"] for row in document["straggle_removed"]} == {0: 100 * US, 1: 55 * US}
    assert document["job_paths_note"] == ""


def test_the_shared_recsys_ranks(tmp_path):
    folder = tmp_path / "logdir" / "job"
    folder.mkdir(parents=True)
    for name in RECSYS:
        shutil.copy(shared(name), folder)
    # Each step's recorded duration on each rank, from the files' ProfilerStep#N events.
    recorded = [step_durations_us(read_json(shared(name))) for name in RECSYS]
    assert sorted(recorded[0]) == sorted(recorded[1]) == [551, 552]
    document = distributed_json(tmp_path / "logdir")
    for step in document["job_steps"]:
        # The joined graph, re-scheduled as recorded, gives back each rank's steps: the
        # job's is the slower rank's.
        times = [round(durations[step["step"]] * US) for durations in recorded]
        assert step["step_ps"] == max(times) and step["slowest_rank"] == times.index(max(times))
        assert sum(step["by_kind_ps"].values()) == sum(step["by_rank_ps"].values()) == step["step_ps"]
        assert str(step["setting_rank"]) in step["by_rank_ps"] and step["kind"] in step["by_kind_ps"]
    assert [step["step"] for step in document["job_steps"]] == [551, 552]
    # Without a rank's straggle the job's step is the other rank's, re-scheduled without
    # waiting for it: never longer than that rank's recorded step.
    for row in document["straggle_removed"]:
        other = recorded[1 - row["rank"]]
        assert all(predicted <= round(other[number] * US) for predicted, number in zip(row["predicted_steps_ps"], (551, 552), strict=True))
        assert row["predicted_step_ps"] == round(sum(row["predicted_steps_ps"]) / 2)


def test_why_not_made(tmp_path):
    # One rank: nothing to join.
    folder = tmp_path / "one" / "job"
    folder.mkdir(parents=True)
    shutil.copy(shared(RECSYS[0]), folder)
    document = distributed_json(tmp_path / "one")
    assert document["job_steps"] == [] and document["straggle_removed"] == []
    assert document["job_paths_note"] == f"made for 2 to {MAX_JOINED_RANKS} ranks (each rank's whole graph is joined in one process), not 1"
    # Two ranks whose times are relative: their clocks say nothing of each other.
    relative = tmp_path / "relative" / "job"
    relative.mkdir(parents=True)
    for path in two_rank_files(tmp_path):
        shutil.move(path, relative / path.name)
    document = distributed_json(tmp_path / "relative")
    assert document["job_steps"] == [] and document["job_paths_note"] == "the ranks' clocks are not aligned (a profile's times are relative)"
