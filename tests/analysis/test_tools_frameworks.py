"""The tools on real TensorFlow and JAX CPU profiles, side by side with XProf's converter.

XProf computes framework_op_stats from the same XSpace; where it reports a figure we also
report, the two must agree. Differences that are by design are asserted and explained.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from tests.support.framework_loops import JAX_BODY, JAX_IMPORTS, STEPS, TF_BODY, TF_IMPORTS
from tests.support.framework_loops import edited as _edited
from tests.support.frameworks import read_xspace_independently, run_framework_script

pytestmark = pytest.mark.framework


def _profile_path(run: dict) -> Path:
    (run_folder,) = stepscope.discover(run["logdir"])
    (host,) = run_folder.hosts
    return host.path


def _xprof_rows(path: Path, tool: str) -> list[dict]:
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], tool, {"use_saved_result": False})
    document = json.loads(data)
    table = document[0] if isinstance(document, list) else document
    columns = [column["id"] for column in table["cols"]]
    return [dict(zip(columns, (cell.get("v") for cell in row["c"]))) for row in table["rows"]]


# The TensorFlow loop of the trace tests, taking each batch from a tf.data iterator just
# before its step marker, as hand-written loops do: the IteratorGetNext wait lies between
# two steps.
TF_DATA_BODY = _edited(
    TF_BODY,
    (
        "train_step(x)  # trace and compile",
        "batches = iter(tf.data.Dataset.from_tensors(x).repeat().map(lambda v: tf.tanh(v) + 1.0))\ntrain_step(next(batches))  # trace and compile",
    ),
    ("    with tf.profiler.experimental.Trace(", "    batch = next(batches)\n    with tf.profiler.experimental.Trace("),
    ("_r=1):\n        train_step(x)", "_r=1):\n        train_step(batch)"),
)


@pytest.fixture(scope="module")
def tf_profile(tmp_path_factory) -> Path:
    return _profile_path(run_framework_script(tmp_path_factory.mktemp("tf_tools"), "tensorflow", TF_IMPORTS, TF_DATA_BODY))


# The JAX loop of the trace tests, profiled from its first call (step 0 compiles
# train_step: a warm-up step), over eight steps.
JAX_COLD_BODY = _edited(
    JAX_BODY,
    ("w, _ = train_step(w, x)  # compile outside the profile\nw.block_until_ready()\n", ""),
    (f"STEPS = {STEPS!r}", "STEPS = list(range(8))"),
)


@pytest.fixture(scope="module")
def jax_profile(tmp_path_factory) -> Path:
    return _profile_path(run_framework_script(tmp_path_factory.mktemp("jax_tools"), "jax", JAX_IMPORTS, JAX_COLD_BODY))


def test_tf_framework_ops_match_xprof(tf_profile: Path):
    ours = {
        (row["type"], row["name"]): row
        for row in run_tool("framework_op_stats", stepscope.load(tf_profile)).to_json()["rows"]
        if row["host_or_device"] == "Host"
    }
    theirs = {(row["type"], row["operation"]): row for row in _xprof_rows(tf_profile, "framework_op_stats") if row["type"] != "IDLE"}
    assert theirs, "XProf lists the TensorFlow ops of a CPU profile"
    # XProf shows only the ops of its step groups; every op it lists we list too, with the
    # same count and self time (XProf rounds to the nanosecond in microseconds).
    for key, row in theirs.items():
        assert key in ours, key
        assert ours[key]["occurrences"] == row["occurrences"], key
        assert ours[key]["total_self_time_us"] == pytest.approx(row["total_self_time"], abs=1e-3), key
        assert ours[key]["total_time_us"] == pytest.approx(row["total_time"], abs=1e-3), key


def test_tf_overview_steps_are_the_train_annotations(tf_profile: Path):
    summary = read_xspace_independently(tf_profile)
    train = summary.named("train")
    # The batches' IteratorGetNext waits lie before the markers, outside them: the steps
    # are the markers as they are (stepscope used to reach back over them, 6-10% longer).
    waits = [e for e in summary.events if e.name.startswith("IteratorGetNext")]
    assert any(t.start_ps - 10**9 < w.start_ps + w.duration_ps <= t.start_ps for w in waits for t in train), "a wait ends within 1 ms before a step"
    overview = run_tool("overview_page", stepscope.load(tf_profile)).to_json()
    assert overview["step_source"] == "step_num"
    assert [s["step_time_ps"] for s in overview["steps"]] == [e.duration_ps for e in train]
    # XProf finds the same steps with the same durations (its stepTimeMs column). Its
    # breakdown differs by design: it counts the TF ops' self time as host compute and the
    # rest of the step as "all others", while stepscope assigns the whole window by what
    # ran (any host activity, input, launches...) and calls the rest idle.
    theirs = _xprof_step_rows(tf_profile)
    assert [row["stepnum"] for row in theirs] == [f"train {step}" for step in (s["step"] for s in overview["steps"])]
    for row, step in zip(theirs, overview["steps"]):
        assert step["step_time_us"] == pytest.approx(row["stepTimeMs"] * 1000, abs=1e-3)


def _xprof_step_rows(path: Path) -> list[dict]:
    from xprof.convert import raw_to_tool_data

    data, _ = raw_to_tool_data.xspace_to_tool_data([str(path)], "overview_page", {"use_saved_result": False})
    for table in json.loads(data):
        columns = [column["id"] for column in table.get("cols") or []]
        if columns and columns[0] == "stepnum":
            return [dict(zip(columns, (cell.get("v") for cell in row["c"]))) for row in table["rows"]]
    return []


def test_jax_cpu_ops_are_shown_where_xprof_shows_none(jax_profile: Path):
    theirs = [row for row in _xprof_rows(jax_profile, "framework_op_stats") if row["type"] != "IDLE"]
    assert theirs == []  # XProf's op tools come back empty on JAX CPU profiles
    summary = read_xspace_independently(jax_profile)
    ours = run_tool("framework_op_stats", stepscope.load(jax_profile)).to_json()["rows"]
    # The XLA ops the CPU backend ran carry an hlo_op stat; each is a row, counted exactly.
    expected = {}
    for event in summary.events:
        if "hlo_op" in event.stats:
            expected[event.stats["hlo_op"]] = expected.get(event.stats["hlo_op"], 0) + 1
    assert expected, "the JAX profile ran XLA ops"
    assert {row["name"]: row["occurrences"] for row in ours if row["host_or_device"] == "Host"} == expected


def test_jax_compile_step_is_set_aside(jax_profile: Path):
    """Step 0 compiles train_step: flagged, and out of the step-time statistics."""
    train = sorted(read_xspace_independently(jax_profile).named("train"), key=lambda event: event.start_ps)
    overview = run_tool("overview_page", stepscope.load(jax_profile)).to_json()
    assert [s["step_time_ps"] for s in overview["steps"]] == [e.duration_ps for e in train]
    first, *others = overview["set_aside"]
    assert (first["step"], first["reason"]) == (0, "compile") and first["compile_us"] > 0
    # Tiny CPU steps on a shared machine can have a one-off pause: any other step set aside
    # is an outlier, more than 3x the median of the other steps.
    durations = [e.duration_ps for e in train]
    for row in others:
        rest = durations[: row["step"]] + durations[row["step"] + 1 :]
        assert row["reason"] == "outlier" and durations[row["step"]] > 3 * statistics.median(rest)
    aside = {row["step"] for row in overview["set_aside"]}
    steady = [d / 1e6 for step, d in enumerate(durations) if step not in aside]
    assert overview["step_time_us"]["mean"] == pytest.approx(sum(steady) / len(steady))
    assert overview["step_time_us_all"]["mean"] == pytest.approx(sum(durations) / 1e6 / len(durations))
    assert f"Set aside from the statistics: step 0 compiled for {first['compile_us'] / 1000:,.1f} ms" in overview["recommendation"]["summary"]


def test_the_framework_is_named_from_the_events(tf_profile: Path, jax_profile: Path, tmp_path: Path):
    """Each profile names the framework that made it: TensorFlow's and JAX's captures (both
    XSpace), a plain-Python stepscope capture, a Kineto trace."""
    from tests.support.traces import shared

    def framework(path: Path) -> str:
        return run_tool("overview_page", stepscope.load(path)).to_json()["environment"]["framework"]

    assert framework(tf_profile) == "TensorFlow"
    assert framework(jax_profile) == "JAX"
    assert framework(shared("kineto/alexnet_small.pt.trace.json.gz")) == "PyTorch"
    with stepscope.profile(tmp_path) as session, stepscope.step(0):
        pass
    assert framework(session.path) == "Python"
