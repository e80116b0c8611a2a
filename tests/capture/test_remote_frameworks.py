"""``stepscope capture`` of real JAX and TensorFlow jobs that run stepscope's profiler server.

Each job (see ``tests/support/remote_jobs.py``) trains a tiny model with a compiled step
(``jax.jit`` / ``tf.function``), runs ``stepscope.start_server(0)`` on loopback, and steps
either inside ``stepscope.step(n)`` ("annotated") or with no stepscope annotation at all
("plain"). Once it has stepped, ``python -m stepscope.cli capture ADDR --logdir DIR`` records
~CAPTURE_MS of it; the capture runs on the server's gRPC thread, which starts stepscope's
JAX or TensorFlow tracer there. The profile must hold the framework's ops of that step.

What is expected is derived independently of stepscope:

* JAX: the names come from JAX itself: the job writes ``jax.jit(f).lower(...).compile()
  .as_text()``; the module is ``jit_<function name>`` and the ops are the entry
  computation's instructions (each runs once per call on the CPU backend);
* TensorFlow: the names come from TensorFlow itself: the job writes the traced graph's
  operations and the concrete function's name; the ops looked for are the MatMul, Relu and
  ReluGrad ops of that graph (what the job's ``tf.matmul`` / ``tf.nn.relu`` make, and
  Relu's gradient), which TensorFlow's executor traces as ``<op name>:<op type>``;
* when each step ran: the job's own ``time.time_ns()`` record of every step;
* how often each op ran: the file read with TSL's own protobuf class
  (``tests.support.frameworks.read_xspace_independently``).
"""

from __future__ import annotations

import bisect
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from tests.support import remote_jobs
from tests.support.frameworks import find_files, read_xspace_independently
from tests.support.remote_jobs import JAX_FUNCTION, TF_FUNCTION, TF_OP_TYPES, Capture

pytestmark = pytest.mark.framework

CAPTURE_MS = 800
# How far an op event may lie outside the job's own record of its step. The job sleeps
# 2 ms between steps, so an event can lie in one step's window only.
SLACK_NS = 500_000
# ~CAPTURE_MS of steps of well under 50 ms each: at least this many hold every op.
MIN_FULL_STEPS = 10
MODES = ["annotated", "plain"]
STEP_EVENT = "stepscope.step"  # stepscope's step annotation (see stepscope.step)


# --- what the frameworks say the step runs ---------------------------------------------------

# An HLO instruction line: "[ROOT] %name = <shape> opcode(operands), ...".
_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+) = .+? (?P<opcode>[\w\-]+)\(")
# Entry instructions that are no work of their own (no thunk runs for them on the CPU).
_NO_WORK_OPCODES = frozenset({"parameter", "tuple", "get-tuple-element", "constant", "bitcast"})


def hlo_module(hlo_text: str) -> tuple[str, dict[str, str], set[str]]:
    """(module name, {entry instruction that does work: opcode}, every opcode in the module)
    of an HLO module's text, as ``Compiled.as_text()`` prints it."""
    first = hlo_text.splitlines()[0]
    match = re.match(r"HloModule (\S+?),?\s", first + " ")
    assert match, first
    entry: dict[str, str] = {}
    opcodes: set[str] = set()
    in_entry = False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY "):
            in_entry = True
            continue
        if in_entry and line.startswith("}"):
            in_entry = False
        instruction = _HLO_INSTRUCTION.match(line)
        if instruction is None:
            continue
        opcodes.add(instruction["opcode"])
        if in_entry and instruction["opcode"] not in _NO_WORK_OPCODES:
            entry[instruction["name"]] = instruction["opcode"]
    return match.group(1), entry, opcodes


# --- the capture, read with stepscope -----------------------------------------------------------


def captured_file(capture: Capture) -> Path:
    """The one file the capture wrote, ``<logdir>/plugins/profile/<session>/<host>.xplane.pb``
    (the client names the host after the address), after a capture and a job that both
    ended well."""
    assert capture.client.returncode == 0, capture.describe()
    assert f"{capture.address}: ok" in capture.client.stdout, capture.describe()
    assert capture.job_rc == 0, capture.describe()
    files = find_files(capture.logdir, ".xplane.pb")
    host = capture.address.replace(":", "_")
    assert len(files) == 1 and files[0].name == f"{host}.xplane.pb", (files, capture.describe())
    assert files[0].parent.parent == capture.logdir / "plugins" / "profile"
    return files[0]


def rows_named(profile: stepscope.Profile, names: set[str]) -> dict[str, list[tuple[stepscope.Plane, int]]]:
    """Every event whose name is in ``names``: name -> [(plane, row)], in time order."""
    found: dict[str, list[tuple[stepscope.Plane, int]]] = collections.defaultdict(list)
    for plane in profile.planes:
        ids = [index for index, name in enumerate(plane.metadata.names) if name in names]
        for row in np.flatnonzero(np.isin(plane.events.metadata_id, ids)).tolist():
            found[plane.event_name(row)].append((plane, row))
    for rows in found.values():
        rows.sort(key=lambda item: int(item[0].events.start_ps[item[1]]))
    return found


def stats_of(plane: stepscope.Plane, row: int) -> dict:
    return {stat.name: stat.value for stat in plane.event_stats(row)}


def event_window_ns(profile: stepscope.Profile, plane: stepscope.Plane, row: int) -> tuple[int, int]:
    start_ns = profile.start_ns + int(plane.events.start_ps[row]) // 1000
    return start_ns, start_ns + int(plane.events.duration_ps[row]) // 1000


def job_step_of(capture: Capture, start_ns: int, end_ns: int) -> int | None:
    """The number of the job's step whose recorded window holds [start_ns, end_ns]."""
    began = [step[1] for step in capture.steps]
    index = bisect.bisect_right(began, start_ns + SLACK_NS) - 1
    if index < 0:
        return None
    number, step_began, step_ended = capture.steps[index]
    if step_began - SLACK_NS <= start_ns and end_ns <= step_ended + SLACK_NS:
        return number
    return None


def check_ops_per_step(profile: stepscope.Profile, capture: Capture, events: dict[str, list], expected: list[str]) -> None:
    """Each expected op ran once per step of the job: every one of its events lies inside a
    step the job ran (by the job's clock), no step holds one op twice, and the steps that
    hold every op are consecutive and at least MIN_FULL_STEPS. With the job's steps
    annotated, each op also lies inside the ``stepscope.step`` event of the same number."""
    per_step: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    marks = step_marks(profile)
    for name in expected:
        for plane, row in events[name]:
            start_ns, end_ns = event_window_ns(profile, plane, row)
            number = job_step_of(capture, start_ns, end_ns)
            assert number is not None, f"{name} at {start_ns} ns lies in no step the job ran"
            assert capture.request_ns <= start_ns <= capture.answer_ns
            per_step[number][name] += 1
            # A step the capture began inside (its stepscope.step was entered before the host
            # tracer recorded) has framework ops but no mark: only marked steps are checked.
            if marks and min(n for _, _, n in marks) <= number <= max(n for _, _, n in marks):
                # The marks are on stepscope's clock, the ops on the framework's, aligned on
                # UNIX time to within microseconds: an op's middle lies inside its step's mark.
                middle = (start_ns + end_ns) // 2
                mark = next((n for s, e, n in marks if s <= middle <= e), None)
                assert mark == number, (name, number, mark)
    twice = {number: counts for number, counts in per_step.items() if max(counts.values()) > 1}
    assert not twice, twice
    full = sorted(number for number, counts in per_step.items() if set(counts) == set(expected))
    assert len(full) >= MIN_FULL_STEPS, (len(full), len(per_step))
    assert full == list(range(full[0], full[0] + len(full))), full


def step_marks(profile: stepscope.Profile) -> list[tuple[int, int, int]]:
    """(start ns, end ns, step_num) of every stepscope.step event."""
    marks = []
    for plane, row in rows_named(profile, {STEP_EVENT}).get(STEP_EVENT, []):
        start_ns, end_ns = event_window_ns(profile, plane, row)
        marks.append((start_ns, end_ns, int(plane.events.step_num[row])))
    return marks


def check_marks(profile: stepscope.Profile, capture: Capture, mode: str) -> None:
    """Annotated: the stepscope.step events are the job's steps, each where the job ran it.
    Plain: the job has no stepscope annotation, and the profile none either."""
    marks = step_marks(profile)
    if mode == "plain":
        assert marks == []
        return
    assert len(marks) >= MIN_FULL_STEPS
    for start_ns, end_ns, number in marks:
        assert job_step_of(capture, start_ns, end_ns) == number, (number, start_ns, end_ns)


def report_rows(logdir: Path) -> list[dict]:
    """``stepscope report LOGDIR --tool framework_op_stats --format json``: its host rows."""
    done = subprocess.run(
        [sys.executable, "-m", "stepscope.cli", "report", str(logdir), "--tool", "framework_op_stats", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [row for row in json.loads(done.stdout)["framework_op_stats"]["rows"] if row["host_or_device"] == "Host"]


def framework_of(profile: stepscope.Profile) -> str:
    return run_tool("overview_page", profile).to_json()["environment"]["framework"]


# --- JAX ------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=MODES)
def jax_capture(request, tmp_path_factory) -> tuple[str, Capture]:
    tmp = tmp_path_factory.mktemp(f"remote_jax_{request.param}")
    return request.param, remote_jobs.capture_job(tmp, remote_jobs.JAX_JOB, JAX_FUNCTION, request.param, CAPTURE_MS)


def _jax_expected(capture: Capture) -> tuple[str, dict[str, str]]:
    module, entry, opcodes = hlo_module((capture.out / "hlo.txt").read_text())
    assert module == f"jit_{JAX_FUNCTION}"  # jax.jit names the module after the function
    # The job's matmuls and tanh are in the compiled module (fused or not).
    assert {"dot", "tanh"} <= opcodes, sorted(opcodes)
    assert entry, "the entry computation does work"
    return module, entry


def test_jax_capture_holds_the_jitted_ops(jax_capture):
    mode, capture = jax_capture
    module, entry = _jax_expected(capture)
    profile = stepscope.load(captured_file(capture))
    profile.validate()
    events = rows_named(profile, set(entry))
    missing = sorted(set(entry) - set(events))
    held = sorted(plane.name for plane in profile.planes if len(plane.events))
    assert not missing, f"XLA ops of {module} missing from the remote capture: {missing}; planes with events: {held}\n{capture.describe()}"
    for name, rows in events.items():
        for plane, row in rows:
            stats = stats_of(plane, row)
            assert stats.get("hlo_op") == name and stats.get("hlo_module") == module, (name, stats)
    check_ops_per_step(profile, capture, events, sorted(entry))
    check_marks(profile, capture, mode)


def test_jax_framework_op_stats_and_overview(jax_capture):
    _, capture = jax_capture
    module, entry = _jax_expected(capture)
    path = captured_file(capture)
    # How often each op ran, read from the file with TSL's own class.
    ran = collections.Counter(
        event.stats["hlo_op"] for event in read_xspace_independently(path).events if event.stats.get("hlo_module") == module and "hlo_op" in event.stats
    )
    assert set(entry) <= set(ran), sorted(set(entry) - set(ran))
    rows = {row["name"]: row for row in report_rows(capture.logdir)}
    for name in entry:
        assert name in rows, (name, sorted(rows))
        assert rows[name]["occurrences"] == ran[name], name
    assert framework_of(stepscope.load(path)) == "JAX"


# --- TensorFlow ------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=MODES)
def tf_capture(request, tmp_path_factory) -> tuple[str, Capture]:
    tmp = tmp_path_factory.mktemp(f"remote_tf_{request.param}")
    return request.param, remote_jobs.capture_job(tmp, remote_jobs.TF_JOB, TF_FUNCTION, request.param, CAPTURE_MS)


# On CPUs with AVX-512 or AMX, TensorFlow's oneDNN graph pass rewrites some ops before they
# run: MatMul runs as "_MklMatMul" (same op name, the type prefixed with "_Mkl"), so the
# executor's events and XProf's op type carry the rewritten type.
ONEDNN_PREFIX = "_Mkl"


def _tf_expected(capture: Capture) -> tuple[str, list[tuple[str, str]]]:
    """(the concrete function's name, [(op name, op type as it ran)] of the graph's ops of
    TF_OP_TYPES): the graph's type, or its oneDNN rewrite where the capture ran that."""
    graph = json.loads((capture.out / "graph.json").read_text())
    ops = [(name, kind) for name, kind in graph["ops"] if kind in TF_OP_TYPES]
    assert {kind for _, kind in ops} == set(TF_OP_TYPES), graph["ops"]
    assert TF_FUNCTION in graph["function"]  # e.g. __inference_train_step_57
    ran = {event.name for event in read_xspace_independently(captured_file(capture)).events}
    executed = [(name, ONEDNN_PREFIX + kind if f"{name}:{ONEDNN_PREFIX}{kind}" in ran else kind) for name, kind in ops]
    return graph["function"], executed


def test_tf_capture_holds_the_function_ops(tf_capture):
    mode, capture = tf_capture
    function, ops = _tf_expected(capture)
    profile = stepscope.load(captured_file(capture))
    profile.validate()
    # TensorFlow's executor names each op's event "<op name>:<op type>".
    expected = sorted(f"{name}:{kind}" for name, kind in ops)
    events = rows_named(profile, set(expected) | {TF_FUNCTION})
    missing = sorted(set(expected) - set(events))
    assert not missing, f"TensorFlow ops missing from the remote capture: {missing}\n{capture.describe()}"
    # The tf.function call, by its Python name and by its concrete function's name.
    assert TF_FUNCTION in events, "no event of the tf.function call"
    all_names = {name for plane in profile.planes for name in plane.metadata.names}
    assert any(name.endswith(function) for name in all_names), f"no event names {function}"
    check_ops_per_step(profile, capture, events, expected)
    check_marks(profile, capture, mode)


def test_tf_framework_op_stats_and_overview(tf_capture):
    _, capture = tf_capture
    _, ops = _tf_expected(capture)
    path = captured_file(capture)
    ran = collections.Counter(event.name for event in read_xspace_independently(path).events)
    rows = {(row["type"], row["name"]): row for row in report_rows(capture.logdir)}
    for name, kind in ops:
        assert (kind, name) in rows, ((kind, name), sorted(rows))
        assert rows[(kind, name)]["occurrences"] == ran[f"{name}:{kind}"] > 0, name
    assert framework_of(stepscope.load(path)) == "TensorFlow"
