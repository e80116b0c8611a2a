"""The local engine (``stepscope.engines``): the same distributed view in process and on a
process pool, and a rank whose file cannot be read reported, not fatal."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepscope.engines import ENGINES, LOCAL, analyse_run, engine, register_engine
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import discover
from tests.support.distributed_runs import Stretch, synthesize
from tests.support.traces import shared

RECSYS = [f"kineto/recsys_sampled_rank{rank}_of_128.pt.trace.json.gz" for rank in (0, 1)]


@pytest.fixture(scope="module")
def recsys_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("recsys")
    for name in RECSYS:
        shutil.copy(shared(name), folder)
    return folder


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> Path:
    straggler = Stretch(rank=4, step=551, kind="compute", delta_us=70_000)
    return synthesize(shared(RECSYS[0]), tmp_path_factory.mktemp("ranks") / "run", 6, 250, (straggler,))


def test_local_engine_one_and_two_workers_agree(synthesized):
    run = discover(synthesized)[0]
    alone, pooled = analyse_run(run, workers=1), analyse_run(run, workers=2)
    assert alone.to_json() == pooled.to_json()
    # Not two empty answers: 6 ranks, 2 steps each, and the injected straggler (rank 4, step 551).
    assert len(pooled.steps) == 12 and {(row["rank"], row["step"]) for row in pooled.stragglers} == {(4, 551)}


def test_a_rank_that_cannot_be_read_is_a_warning(tmp_path, recsys_run):
    for path in recsys_run.iterdir():
        shutil.copy(path, tmp_path)
    (tmp_path / "broken.pt.trace.json.gz").write_bytes(b"not gzip")
    for workers in (1, 2):  # the failure crosses the process boundary intact
        result = analyse_run(discover(tmp_path)[0], workers=workers)
        assert [row["rank"] for row in result.ranks] == [0, 1]
        assert len(result.warnings) == 1 and result.warnings[0].startswith(f"{tmp_path / 'broken.pt.trace.json.gz'}: ")


def test_the_registry_names_its_engines():
    assert engine(LOCAL) is ENGINES[LOCAL]
    with pytest.raises(StepscopeError, match="unknown engine 'spark' \\(engines: local, ray\\)"):
        engine("spark")
    with pytest.raises(ValueError, match="registered twice"):
        register_engine(LOCAL, ENGINES[LOCAL])
