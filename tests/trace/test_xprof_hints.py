"""What the XSpace writer adds for XProf (trace/formats/xspace/xprof_hints.py), checked with
XProf's own converter on plain-Python captures and hand-made XSpaces.

Expected steps come from the recorded events read with TSL's protobuf classes
(``read_xspace_independently``): a ``stepscope.step`` marker, reaching back to the start
of a ``stepscope.data.wait`` that ends in the gap before it (docs/tools.md, steps). XProf
reports a step time in ms from picoseconds; the windows are whole nanoseconds, so 1 ns
covers its rounding. The framework tests (tests/capture/test_xprof_captures.py) do the
same on the README's torch, JAX and TensorFlow captures.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

import stepscope
import stepscope.data
from stepscope.analysis import run_tool
from stepscope.capture.session import CaptureSession
from stepscope.capture.tracers.host import HostTracer
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.formats.xspace.read import read_xspace
from stepscope.trace.formats.xspace.xprof_hints import parse_op_fullname, xprof_tf_op
from tests.support.reference.xspace import assert_same_profile
from tests.support.xprof import recorded_steps, xprof_framework_ops, xprof_steps
from tests.support.xspaces import without_xprof_hints

NS_IN_MS = 1e-6  # XProf's step time (ms) of a whole-nanosecond window: within 1 ns


def _capture(tmp_path: Path, steps: int, body: str | None = "forward", wait_s: float | None = 0.002) -> Path:
    """A plain-Python loop, each batch waited for outside its step (``for batch in
    instrument(...): with step(n)``; ``wait_s`` None: no batches, a plain range), ``body``
    annotated inside (None: nothing), captured by the host tracer."""

    def batches():
        for item in range(steps):
            time.sleep(wait_s or 0)
            yield item

    session = CaptureSession(tmp_path, stepscope.ProfilerOptions(host_tracer_level=1), tracers=[HostTracer()])
    session.start()
    for number, _ in enumerate(stepscope.data.instrument(batches(), name="train") if wait_s is not None else range(steps)):
        with stepscope.step(number), stepscope.trace(body) if body is not None else contextlib.nullcontext():
            time.sleep(0.003)
    path = session.stop()
    assert path is not None
    return path


def test_xprof_finds_a_captures_steps_with_their_input_wait(tmp_path: Path):
    path = _capture(tmp_path, steps=4)
    windows = recorded_steps(path)
    assert [number for number, _ in windows] == [0, 1, 2, 3]  # the loop's four steps
    # Each window holds its batch's wait (2 ms slept) and its body (3 ms slept).
    assert all(length >= 5 * 10**9 for _, length in windows)
    shown = xprof_steps(path)
    assert [name for name, _ in shown] == [f"{names.STEPSCOPE_STEP} {number}" for number, _ in windows]
    for (_, length), (_, milliseconds) in zip(windows, shown):
        assert milliseconds == pytest.approx(length / 1e9, abs=NS_IN_MS)
    # stepscope's own overview: the same windows.
    overview = run_tool("overview_page", stepscope.load(path)).to_json()
    assert [(s["step"], s["step_time_ps"]) for s in overview["steps"]] == windows


def test_xprof_sets_aside_the_first_and_last_of_more_than_five_steps(tmp_path: Path):
    """XProf drops a step sequence's first and last steps when it has more than five
    (step_events_to_steps_db: incomplete steps); stepscope keeps all and flags outliers."""
    path = _capture(tmp_path, steps=6, wait_s=0.0005)
    windows = recorded_steps(path)
    assert [number for number, _ in windows] == list(range(6))
    shown = xprof_steps(path)
    assert [name for name, _ in shown] == [f"{names.STEPSCOPE_STEP} {number}" for number, _ in windows[1:-1]]
    for (_, length), (_, milliseconds) in zip(windows[1:-1], shown):
        assert milliseconds == pytest.approx(length / 1e9, abs=NS_IN_MS)


@pytest.mark.parametrize("body", ["train_step", "test_batch", None])
def test_xprof_keeps_no_step_whose_only_work_it_takes_for_a_marker(tmp_path: Path, body: str | None):
    """XProf takes a host event named train*/test* (no '/') for a step marker, never for
    work, and keeps a CPU-only step only if host work ran in it; the README's StepHook job
    annotates its work "train_step" and sleeps, so XProf shows no step, nor where a step
    only sleeps (docs/format.md). A wait for the batch inside the step's window is host
    work to XProf."""
    path = _capture(tmp_path, steps=2, body=body, wait_s=None)
    assert len(recorded_steps(path)) == 2
    assert xprof_steps(path) == []
    waited = _capture(tmp_path / "waited", steps=2, body=body)
    assert [name for name, _ in xprof_steps(waited)] == [f"{names.STEPSCOPE_STEP} {number}" for number, _ in recorded_steps(waited)]


def test_the_hints_are_dropped_when_stepscope_reads_the_file(tmp_path: Path):
    path = _capture(tmp_path, steps=3)
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (host,) = [plane for plane in space.planes if plane.name == names.HOST_PLANE]
    (roots,) = [line for line in host.lines if line.name == names.XPROF_STEPS_LINE]
    assert len(roots.events) == 3
    marked = {meta.name for meta in host.stat_metadata.values() if meta.description == names.XPROF_HINT_DESCRIPTION}
    assert marked == {names.CONSUMER_TYPE, names.CONSUMER_ID}  # no framework ops: no tf_op
    stripped = tmp_path / "stripped.xplane.pb"
    stripped.write_bytes(without_xprof_hints(space).SerializeToString())
    # The hinted file reads as the file without its hints, which is what the writer wrote
    # before it added them (tests/trace/test_xspace_write.py).
    assert_same_profile(stepscope.load(path), stepscope.load(stripped))
    # Both decoders drop them (protobuf's messages for small files, the compiled one for big).
    data = path.read_bytes()
    assert_same_profile(read_xspace(path, data, bulk=True), read_xspace(path, data, bulk=False))
    assert_same_profile(read_xspace(path, data, bulk=True), stepscope.load(stripped))
    assert xprof_steps(stripped) == []  # and without them XProf finds no step


def _space_with_tf_ops(values: list[str]) -> xplane_pb2.XSpace:
    """A host plane whose events (one per value, one after another on one line) carry the
    ``tf_op`` values, each inside a ``train`` step root so that XProf has a step."""
    space = xplane_pb2.XSpace(hostnames=["host"])
    plane = space.planes.add(id=1, name=names.HOST_PLANE)
    for key, name in enumerate((names.TF_OP, names.STEP_NUM, names.IS_ROOT), start=1):
        plane.stat_metadata[key].CopyFrom(xplane_pb2.XStatMetadata(id=key, name=name))
    plane.event_metadata[1].CopyFrom(xplane_pb2.XEventMetadata(id=1, name="train"))
    plane.event_metadata[2].CopyFrom(xplane_pb2.XEventMetadata(id=2, name="op"))
    line = plane.lines.add(id=1, name="main", timestamp_ns=1_000)
    step = line.events.add(metadata_id=1, offset_ps=0, duration_ps=10**6 * (len(values) + 1))
    step.stats.add(metadata_id=2, int64_value=0)
    step.stats.add(metadata_id=3, int64_value=1)
    for index, value in enumerate(values):
        event = line.events.add(metadata_id=2, offset_ps=10**6 * index + 1, duration_ps=10**5)
        event.stats.add(metadata_id=1, str_value=value)
    return space


# (op name, op type) as stepscope names ops: PyTorch's, XLA's on the CPU (the name less its
# numeric suffix as type), TensorFlow's; and the type XProf can show with the name, by its
# grammar: none after a name holding ':' (the name ends at the first ':'), JAX's lower-case
# types ([a-z_][a-z0-9_]*) after any name, TensorFlow's CamelCase types after a name that
# starts with a letter, digit or '.'.
OPS = [
    ("aten::linear", "", ""),
    ("aten::addmm", "GEMM", ""),
    ("fusion.3", "fusion", "fusion"),
    ("multiply_subtract_fusion", "multiply_subtract_fusion", "multiply_subtract_fusion"),
    ("copy-start.2", "copy-start", ""),  # '-': no JAX type
    ("model/dense/MatMul", "MatMul", "MatMul"),
    ("_send_Const/_3_0", "_Send", ""),  # '_' first: no TensorFlow name; 'S': no JAX type
    ("sgd/Mul_1", "mul", "mul"),
]


def test_xprof_reads_tf_op_values_as_the_writer_expects(tmp_path: Path):
    """The writer chooses each op's ``tf_op`` by its model of XProf's op-name grammar
    (``parse_op_fullname``); XProf itself reads every value so (values of every shape), and
    each op stepscope names gets a value XProf lists under its name."""
    values = [xprof_tf_op(name, op_type) for name, op_type, _ in OPS]
    assert None not in values  # every name can be said
    shapes = [
        "aten::linear:",
        "copy-start.2:copy-start",
        "scope/op_2:",
        "transpose.7:transpose[permutation=(1,0)]",
        "Iterator::Root::Prefetch",
        "MEMCPYHToD",
        "a:b:C",
    ]
    path = tmp_path / "ops.xplane.pb"
    path.write_bytes(_space_with_tf_ops([*values, *shapes]).SerializeToString())  # type: ignore[list-item]
    shown = xprof_framework_ops(path)
    assert len(shown) == len(OPS) + len(shapes)
    for value in [*values, *shapes]:
        _, name, op_type = parse_op_fullname(value)  # type: ignore[arg-type]
        assert shown[name]["type"] == op_type, value
    for name, _, xprof_type in OPS:
        assert shown[name]["type"] == xprof_type, name


def test_a_file_whose_step_markers_are_roots_gets_no_steps_line(tmp_path: Path):
    """JAX's StepTraceAnnotation and TensorFlow's Trace(_r=1) mark roots XProf groups by
    itself: a file of them, written by stepscope, opens in XProf with the same steps."""
    space = _space_with_tf_ops(["model/dense/MatMul:MatMul"])
    original = tmp_path / "original.xplane.pb"
    original.write_bytes(space.SerializeToString())
    written = tmp_path / "written.xplane.pb"
    stepscope.save(stepscope.load(original), written)
    (host,) = [plane for plane in xplane_pb2.XSpace.FromString(written.read_bytes()).planes if plane.name == names.HOST_PLANE]
    assert [line.name for line in host.lines] == ["main"]
    # The root spans 2 * 10**6 ps (one op slot and one to spare): 0.002 ms.
    assert xprof_steps(written) == xprof_steps(original) == [("train 0", pytest.approx(0.002))]
