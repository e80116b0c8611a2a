"""The diff of two captures of one JAX loop, at batch 8 and at batch 8192: what it says is
each capture's own tool results, subtracted (each run analysed separately here)."""

from __future__ import annotations

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.diff.compare import BY_NUMBER, diff
from tests.support.framework_loops import JAX_BODY, JAX_IMPORTS, STEPS, edited
from tests.support.frameworks import run_framework_script

pytestmark = pytest.mark.framework

STEPS_HERE = list(range(10, 20))


def _capture(tmp_path_factory, batch: int):
    body = edited(JAX_BODY, ("jnp.ones((8, 32))", f"jnp.ones(({batch}, 32))"), (f"STEPS = {STEPS!r}", f"STEPS = {STEPS_HERE!r}"))
    run = run_framework_script(tmp_path_factory.mktemp(f"jax_batch_{batch}"), "jax", JAX_IMPORTS, body)
    (folder,) = stepscope.discover(run["logdir"])
    (host,) = folder.hosts
    return stepscope.load(host.path)


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    return _capture(tmp_path_factory, 8), _capture(tmp_path_factory, 8192)


def test_two_batch_sizes_of_one_jax_loop(captures):
    small, large = captures
    result = diff(small, large)
    overviews = [run_tool("overview_page", profile).to_json() for profile in captures]
    # Both loops number their steps 10..19: side by side by number.
    assert result.aligned_by == BY_NUMBER
    assert [(pair["base_step"], pair["new_step"]) for pair in result.steps] == [(n, n) for n in STEPS_HERE]
    # The step time's change is the two overviews' means (over their kept steps), subtracted.
    means = [overview["step_time_us"]["mean"] for overview in overviews]
    assert result.step_time["mean"]["base"] == pytest.approx(means[0])
    assert result.step_time["mean"]["change"] == pytest.approx(means[1] - means[0])
    assert result.step_time["steps_base"] == len(STEPS_HERE) - len(overviews[0]["set_aside"])
    for pair, before, after in zip(result.steps, overviews[0]["steps"], overviews[1]["steps"]):
        assert pair["change_us"] == pytest.approx(after["step_time_us"] - before["step_time_us"])
    # The XLA ops: each run's framework_op_stats rows, subtracted, matched by (side, type, name).
    rows = [{(r["host_or_device"], r["type"], r["name"]): r for r in run_tool("framework_op_stats", p).to_json()["rows"]} for p in captures]
    assert {(r["host_or_device"], r["type"], r["name"]) for r in result.ops} == set(rows[0]) | set(rows[1])
    for row in result.ops:
        key = (row["host_or_device"], row["type"], row["name"])
        before, after = rows[0].get(key), rows[1].get(key)
        assert row["change_ps"] == (after["total_time_ps"] if after else 0) - (before["total_time_ps"] if before else 0)
        assert row["new_occurrences"] == (after["occurrences"] if after else 0)
    # The same program at another batch size: the jitted step's ops are there in both runs.
    assert any(row["status"] in ("changed", "unchanged") and row["host_or_device"] == "Host" for row in result.ops)
