"""The ray engine (``stepscope.engines.ray_engine``) against the local one: identical
distributed views of the real 2-rank recsys run and of a synthesised 8-rank run with
injected stragglers, a run read through a ``file://`` URL (fsspec) on Ray workers and
through ``memory://`` in process, the CLI's ``--engine ray``, and the one-line error where
Ray is not installed.

One local Ray session for the whole module (``ray.init(num_cpus=2)``, seconds to start),
in ``tests.support.ray_driver`` run inside a private network namespace (``unshare -n``,
loopback only): Ray's servers listen on every interface and Ray offers no option to bind
loopback alone. The local engine's results are computed here, in the test process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import fsspec
import pytest

from stepscope.engines import LOCAL, analyse_run
from stepscope.trace.logdir import discover
from stepscope.trace.remote import discover_url
from tests.support.cli import assert_one_error_line
from tests.support.distributed_runs import Stretch, synthesize
from tests.support.namespaces import NAMESPACE_PROBLEM, in_namespace
from tests.support.traces import ROOT, shared

RECSYS = [f"kineto/recsys_sampled_rank{rank}_of_128.pt.trace.json.gz" for rank in (0, 1)]
RANKS = 8
STRAGGLERS = (Stretch(rank=6, step=552, kind="compute", delta_us=100_000), Stretch(rank=1, step=551, kind="collective", delta_us=80_000))


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    recsys = tmp_path_factory.mktemp("recsys") / "job"
    recsys.mkdir()
    for name in RECSYS:
        shutil.copy(shared(name), recsys)
    broken = tmp_path_factory.mktemp("broken") / "job"
    shutil.copytree(recsys, broken)
    (broken / "broken.pt.trace.json.gz").write_bytes(b"not gzip")
    ranks = synthesize(shared(RECSYS[0]), tmp_path_factory.mktemp("ranks") / "run", RANKS, 1_000, STRAGGLERS)
    return {"recsys": recsys, "broken": broken, "ranks": ranks}


@pytest.fixture(scope="module")
def on_ray(folders, tmp_path_factory) -> dict[str, dict]:
    """Every case's ray-engine result, from one Ray session."""
    if NAMESPACE_PROBLEM is not None:
        pytest.skip(f"Ray listens on every interface; these tests run it only in a private network namespace: {NAMESPACE_PROBLEM}")
    out = tmp_path_factory.mktemp("ray") / "results.json"
    cases = [f"{name}={folder}" for name, folder in folders.items()]
    cases += [f"url={folders['recsys'].as_uri()}", "--cli", f"cli={folders['ranks'].as_uri()}"]
    done = in_namespace([sys.executable, "-m", "tests.support.ray_driver", str(out), *cases], cwd=ROOT, timeout=400)
    assert done.returncode == 0, f"the Ray driver failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(out.read_text())


def local(folder: Path, workers: int = 1) -> dict:
    return analyse_run(discover(folder)[0], LOCAL, workers).to_json()


def test_recsys_run_is_the_same_on_both_engines(folders, on_ray):
    expected = local(folders["recsys"])
    assert on_ray["recsys"]["result"] == expected
    assert on_ray["recsys"]["progress"] == 2  # one tick per finished rank
    assert on_ray["recsys"]["resources"] == 2  # the session the driver started: num_cpus=2
    assert [row["rank"] for row in expected["ranks"]] == [0, 1] and len(expected["steps"]) == 4


def test_eight_ranks_are_the_same_on_both_engines(folders, on_ray):
    expected = local(folders["ranks"], workers=2)
    assert on_ray["ranks"]["result"] == expected and on_ray["ranks"]["progress"] == RANKS
    # Not two equal empty answers: the injected stragglers are named (rank, step).
    assert {(row["rank"], row["step"]) for row in expected["stragglers"]} == {(change.rank, change.step) for change in STRAGGLERS}


def test_a_rank_that_cannot_be_read_is_reported_as_locally(folders, on_ray):
    expected = local(folders["broken"])
    got = on_ray["broken"]["result"]
    assert got == expected and on_ray["broken"]["progress"] == 3
    assert [row["rank"] for row in got["ranks"]] == [0, 1]
    assert got["warnings"] == expected["warnings"] and got["warnings"][0].startswith(f"{folders['broken'] / 'broken.pt.trace.json.gz'}: ")


def test_a_file_url_is_read_by_the_ray_workers(folders, on_ray):
    """The same run, named by file:// URLs: every number the same, each rank's source its URL."""
    expected = local(folders["recsys"])
    got = on_ray["url"]["result"]
    assert [row["source"] for row in got["ranks"]] == [(folders["recsys"] / Path(name).name).as_uri() for name in RECSYS]
    for row in got["ranks"] + expected["ranks"]:
        row.pop("source")
    assert got == expected


def test_the_cli_runs_on_ray(folders, on_ray):
    assert on_ray["cli"]["exit"] == 0
    expected = local(folders["ranks"])
    got = on_ray["cli"]["result"]
    for row in got["ranks"] + expected["ranks"]:
        row.pop("source")
    assert got == expected


def test_a_memory_url_run_in_process(folders):
    """fsspec's in-memory filesystem (this process's own, so the in-process engine): the
    layout's rules apply to what it lists, and the numbers are the local files'."""
    fs = fsspec.filesystem("memory")
    for name in RECSYS:
        fs.pipe(f"/logdir/job/{Path(name).name}", shared(name).read_bytes())
    fs.pipe("/logdir/job/config.json", b'{"lr": 0.1}')  # no trace by content: not a rank
    try:
        runs = discover_url("memory://logdir")
        assert [(run.name, [host.name for host in run.hosts]) for run in runs] == [("job", [Path(name).name.split(".")[0] for name in RECSYS])]
        got = analyse_run(runs[0], LOCAL, 1).to_json()
    finally:
        fs.rm("/logdir", recursive=True)
    expected = local(folders["recsys"])
    assert [row["source"] for row in got["ranks"]] == [f"memory:///logdir/job/{Path(name).name}" for name in RECSYS]
    for row in got["ranks"] + expected["ranks"]:
        row.pop("source")
    assert got == expected


def test_without_ray_the_engine_is_one_line(folders):
    """``import ray`` failing (as where it is not installed): exit 2, how to install it."""
    code = "import sys; sys.modules['ray'] = None; from stepscope.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", code, "distributed", str(folders["recsys"]), "--engine", "ray"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_ADDRESS": ""},
    )
    assert_one_error_line(done, "the ray engine needs Ray: pip install stepscope[ray]")


def test_an_address_where_no_ray_answers_is_one_line(folders):
    """At once, not after Ray's minutes of retries: nothing listens on port 1 of loopback."""
    done = subprocess.run(
        [sys.executable, "-m", "stepscope.cli", "distributed", str(folders["recsys"]), "--engine", "ray", "--ray-address", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert_one_error_line(done, "127.0.0.1:1: cannot attach to Ray (nothing answers at 127.0.0.1:1")


def test_without_an_address_no_local_ray_is_started_unasked(folders):
    """Ray's servers listen on every interface, so ``--engine ray`` with no cluster named
    (no --ray-address, no $RAY_ADDRESS) is a one-line error, not a local Ray started
    silently; ``--ray-address local`` is how a user asks for one."""
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    done = subprocess.run(
        [sys.executable, "-m", "stepscope.cli", "distributed", str(folders["recsys"]), "--engine", "ray"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert_one_error_line(done, "--engine ray: no Ray cluster given: pass --ray-address ADDR (or set $RAY_ADDRESS), or --ray-address local")
