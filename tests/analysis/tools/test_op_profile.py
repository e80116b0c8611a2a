"""op_profile: a hand-built XSpace with every number derived by hand, and real profiles
(the TPU XSpace, Kineto traces) checked against sums computed here from the files."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis.ops.op_categories import COMMUNICATION, MEMORY_COPY, OTHER, category_of
from stepscope.analysis.tools.op_profile import PROGRAM, OpProfileNode, OpProfileResult, op_profile
from stepscope.errors import StepscopeError
from stepscope.protos import xplane_pb2
from stepscope.render.formats import render
from tests.support.traces import ALL_SHARED_TRACES, KINETO_TRACES, read_json, shared

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
NODE_KEYS = {
    "name", "kind", "time_ps", "time_us", "time_percent", "time_percent_with_idle", "occurrences", "flops",
    "bytes_accessed", "gflops_per_second", "flops_utilization", "memory_bandwidth_gb_per_second", "color_hint",
    "expression", "shape", "folded", "children",
}  # fmt: skip
KINETO_DEVICE_CATEGORIES = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}


# --- a hand-built TPU profile ------------------------------------------------------------------
#
# Plane /device:TPU:0, peak 2 TFLOP/s (= 2 FLOP/ps). Times in ps from time 0 (both lines have
# timestamp 1_000 ns, the earliest start, so offsets are the times).
#
# XLA Modules:  jit_train(1) [0, 10_000)     jit_eval(2) [12_000, 20_000)
# XLA Ops (name, category, flops, bytes):
#   fusion.1       loop fusion    2_000  4_000   [0, 2_000)          self 2_000
#   while.1        control flow   -      -       [2_000, 5_000)      self 3_000 - 1_000 = 2_000
#     fusion.2     loop fusion    500    1_000   [3_000, 4_000)      self 1_000 (child of while.1)
#   conv.1         convolution    12_000 2_000   [6_000, 10_000)     self 4_000
#   custom-call.1  custom-call    -      -       [10_500, 11_000)    self 500, in no module
#   copy.1         data formatting 0     3_000   [12_000, 13_000) and [13_000, 14_000): 2 x 1_000
#   all-reduce.1   all-reduce     100    800     [15_000, 15_500)    self 500, its event says
#                                                                    hlo_module jit_allreduce(3)
# Programs: jit_train(1) = 2_000 + 2_000 + 1_000 + 4_000 = 9_000; jit_eval(2) = 2_000;
#   jit_allreduce(3) = 500 (the hlo_module stat beats the enclosing jit_eval(2));
#   "synthetic" (the file's name: custom-call.1 is outside every module) = 500.
# Root = 12_000. Busy = union of op intervals = 2_000 + 3_000 + 4_000 + 500 + 2_000 + 500
#   = 12_000 (fusion.2 lies inside while.1). Idle is the device's active span less that:
#   first op start 0 to last op end 15_500 (all-reduce.1; jit_eval(2) runs on to 20_000 with
#   no op, and that tail is no idle, as in XProf's IDLE row), so idle = 15_500 - 12_000 =
#   3_500 and the root's time % with idle is 12_000 / 15_500 = 77.42%.
PEAK_TFLOPS = 2.0


def _synthetic_space() -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace(hostnames=["tpu-host"])
    plane = space.planes.add(id=1, name="/device:TPU:0")
    stat_ids = {}
    for index, name in enumerate(
        ["hlo_category", "flops", "bytes_accessed", "peak_teraflops_per_second", "long_name", "shape_with_layout", "hlo_module"],
        start=1,
    ):
        plane.stat_metadata[index].CopyFrom(xplane_pb2.XStatMetadata(id=index, name=name))
        stat_ids[name] = index
    plane.stats.add(metadata_id=stat_ids["peak_teraflops_per_second"], double_value=PEAK_TFLOPS)

    def metadata(meta_id: int, name: str, display: str = "", category: str | None = None, flops=None, accessed=None, **strings):
        meta = plane.event_metadata[meta_id]
        meta.id, meta.name, meta.display_name = meta_id, name, display
        if category is not None:
            meta.stats.add(metadata_id=stat_ids["hlo_category"], str_value=category)
        if flops is not None:
            meta.stats.add(metadata_id=stat_ids["flops"], int64_value=flops)
        if accessed is not None:
            meta.stats.add(metadata_id=stat_ids["bytes_accessed"], int64_value=accessed)
        for key, value in strings.items():
            meta.stats.add(metadata_id=stat_ids[key], str_value=value)

    metadata(1, "jit_train(1)")
    metadata(2, "jit_eval(2)")
    metadata(10, "%fusion.1 = f32[4] fusion(f32[4] %p), kind=kLoop", "fusion.1", "loop fusion", 2_000, 4_000)
    metadata(11, "while.1", category="control flow")
    metadata(12, "fusion.2", category="loop fusion", flops=500, accessed=1_000)
    metadata(13, "conv.1", category="convolution", flops=12_000, accessed=2_000,
             long_name="%conv.1 = f32[8,8] convolution(f32[8,8] %a, f32[3,3] %b)", shape_with_layout="f32[8,8]{1,0}")  # fmt: skip
    metadata(14, "custom-call.1", category="custom-call")
    metadata(15, "copy.1", category="data formatting", flops=0, accessed=3_000)
    metadata(16, "all-reduce.1", category="all-reduce", flops=100, accessed=800)

    modules = plane.lines.add(id=1, name="XLA Modules", timestamp_ns=1_000)
    modules.events.add(metadata_id=1, offset_ps=0, duration_ps=10_000)
    modules.events.add(metadata_id=2, offset_ps=12_000, duration_ps=8_000)
    ops = plane.lines.add(id=2, name="XLA Ops", timestamp_ns=1_000)
    for meta_id, start, end in [
        (10, 0, 2_000), (11, 2_000, 5_000), (12, 3_000, 4_000), (13, 6_000, 10_000), (14, 10_500, 11_000),
        (15, 12_000, 13_000), (15, 13_000, 14_000), (16, 15_000, 15_500),
    ]:  # fmt: skip
        event = ops.events.add(metadata_id=meta_id, offset_ps=start, duration_ps=end - start)
        if meta_id == 16:
            event.stats.add(metadata_id=stat_ids["hlo_module"], str_value="jit_allreduce(3)")
    return space


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> stepscope.Profile:
    path = tmp_path_factory.mktemp("op_profile") / "synthetic.xplane.pb"
    path.write_bytes(_synthetic_space().SerializeToString())
    profile = stepscope.load(path)
    profile.validate()
    return profile


def _child(node: OpProfileNode, name: str) -> OpProfileNode:
    matches = [child for child in node.children if child.name == name]
    assert len(matches) == 1, (name, [c.name for c in node.children])
    return matches[0]


def _check_tree(result: OpProfileResult) -> None:
    """Children add up to their parent exactly, every percentage is in [0, 100], and the
    JSON form has the documented keys and is strict JSON."""
    for node in result.root.walk():
        assert 0 <= node.time_percent <= 100 and 0 <= node.time_percent_with_idle <= 100, node.name
        assert node.time_percent_with_idle <= node.time_percent + 1e-9
        if node.children:
            assert sum(c.time_ps for c in node.children) == node.time_ps, node.name
            assert sum(c.occurrences for c in node.children) == node.occurrences, node.name
            assert len(node.children) <= result.top_n + 1
            assert all(c.folded == 0 for c in node.children[:-1])
        if node.color_hint is not None:
            assert 0 <= node.color_hint <= 1
    document = result.to_json()
    json.dumps(document, allow_nan=False)

    def keys(node: dict) -> None:
        assert set(node) == NODE_KEYS
        for child in node["children"]:
            keys(child)

    keys(document["root"])


def test_synthetic_tree_times_and_percentages(synthetic):
    result = op_profile(synthetic)
    _check_tree(result)
    assert result.device == "/device:TPU:0" and result.devices == ["/device:TPU:0"] and result.side == "Device"
    root = result.root
    assert (root.kind, root.name, root.time_ps, root.occurrences) == ("root", "/device:TPU:0", 12_000, 8)
    assert result.idle_time_ps == 3_500
    assert root.time_percent == 100.0
    assert root.time_percent_with_idle == pytest.approx(100 * 12_000 / 15_500)
    # Programs by time, ties by name: jit_allreduce(3) (500) before synthetic (500).
    assert [(c.name, c.kind, c.time_ps) for c in root.children] == [
        ("jit_train(1)", "program", 9_000),
        ("jit_eval(2)", "program", 2_000),
        ("jit_allreduce(3)", "program", 500),
        ("synthetic", "program", 500),
    ]
    train = _child(root, "jit_train(1)")
    assert train.time_percent == pytest.approx(75.0)  # 9_000 / 12_000
    assert train.time_percent_with_idle == pytest.approx(100 * 9_000 / 15_500)
    assert [(c.name, c.kind, c.time_ps, c.occurrences) for c in train.children] == [
        ("convolution", "category", 4_000, 1),
        ("loop fusion", "category", 3_000, 2),  # fusion.1 2_000 + fusion.2 1_000
        ("control flow", "category", 2_000, 1),  # while.1's self time: 3_000 - 1_000
    ]
    fusion = _child(train, "loop fusion")
    assert [(c.name, c.kind, c.time_ps) for c in fusion.children] == [("fusion.1", "op", 2_000), ("fusion.2", "op", 1_000)]
    assert fusion.time_percent == pytest.approx(25.0)  # 3_000 / 12_000
    assert fusion.time_percent_with_idle == pytest.approx(100 * 3_000 / 15_500)
    copy = _child(_child(_child(root, "jit_eval(2)"), "data formatting"), "copy.1")
    assert (copy.time_ps, copy.occurrences) == (2_000, 2)
    assert copy.time_percent == pytest.approx(100 * 2_000 / 12_000)  # 16.667%
    assert copy.time_percent_with_idle == pytest.approx(100 * 2_000 / 15_500)
    assert [c.name for c in _child(root, "jit_allreduce(3)").children] == ["all-reduce"]
    assert [c.name for c in _child(_child(root, "synthetic"), "custom-call").children] == ["custom-call.1"]


def test_synthetic_flop_rates_utilisation_and_bandwidth(synthetic):
    result = op_profile(synthetic)
    root = result.root
    assert result.peak_teraflops_per_second == PEAK_TFLOPS
    train = _child(root, "jit_train(1)")
    fusion = _child(train, "loop fusion")
    # FLOP/ps * 1_000 = GFLOP/s; utilisation = GFLOP/s / 2_000; bytes/ps * 1_000 = GB/s.
    expected = {
        # fusion.1: 2_000 FLOP / 2_000 ps; 4_000 B / 2_000 ps.
        "fusion.1": (_child(fusion, "fusion.1"), 1_000.0, 0.5, 2_000.0),
        # fusion.2: 500 / 1_000; 1_000 / 1_000.
        "fusion.2": (_child(fusion, "fusion.2"), 500.0, 0.25, 1_000.0),
        # loop fusion: 2_500 / 3_000; 5_000 / 3_000.
        "loop fusion": (fusion, 2_500 / 3, 2_500 / 3 / 2_000, 5_000 / 3),
        # conv.1: 12_000 / 4_000 = 3 FLOP/ps, beyond the peak; 2_000 / 4_000.
        "conv.1": (_child(_child(train, "convolution"), "conv.1"), 3_000.0, 1.5, 500.0),
        # jit_train: (2_000 + 500 + 12_000) / 9_000; (4_000 + 1_000 + 2_000) / 9_000.
        "jit_train": (train, 14_500 / 9, 14_500 / 9 / 2_000, 7_000 / 9),
        # copy.1: 0 FLOP; 6_000 B / 2_000 ps.
        "copy.1": (_child(_child(_child(root, "jit_eval(2)"), "data formatting"), "copy.1"), 0.0, 0.0, 3_000.0),
        # all-reduce.1: 100 / 500; 800 / 500.
        "all-reduce": (_child(root, "jit_allreduce(3)"), 200.0, 0.1, 1_600.0),
        # root: (14_500 + 0 + 100) / 12_000; (7_000 + 6_000 + 800) / 12_000.
        "root": (root, 14_600 / 12, 14_600 / 12 / 2_000, 13_800 / 12),
    }
    for label, (node, gflops, utilisation, bandwidth) in expected.items():
        assert node.gflops_per_second == pytest.approx(gflops), label
        assert node.flops_utilization == pytest.approx(utilisation), label
        assert node.memory_bandwidth_gb_per_second == pytest.approx(bandwidth), label
    conv = expected["conv.1"][0]
    assert conv.color_hint == 1.0  # utilisation 1.5, clamped for the colour scale
    assert fusion.color_hint == pytest.approx(2_500 / 3 / 2_000)
    # No flops / bytes recorded: no rate, no made-up number.
    control = _child(train, "control flow")
    rates = (control.gflops_per_second, control.flops_utilization, control.memory_bandwidth_gb_per_second, control.color_hint)
    assert rates == (None, None, None, None)
    custom = _child(root, "synthetic")
    assert (custom.flops, custom.gflops_per_second, custom.memory_bandwidth_gb_per_second) == (None, None, None)


def test_synthetic_expressions_are_read_for_shown_ops(synthetic):
    root = op_profile(synthetic).root
    train = _child(root, "jit_train(1)")
    conv = _child(_child(train, "convolution"), "conv.1")
    assert conv.expression == "%conv.1 = f32[8,8] convolution(f32[8,8] %a, f32[3,3] %b)"  # long_name
    assert conv.shape == "f32[8,8]{1,0}"
    # XLA's own layout: the HLO text as the event name, the op's name as its display name.
    fusion_1 = _child(_child(train, "loop fusion"), "fusion.1")
    assert fusion_1.expression == "%fusion.1 = f32[4] fusion(f32[4] %p), kind=kLoop" and fusion_1.shape is None
    while_1 = _child(_child(train, "control flow"), "while.1")
    assert (while_1.expression, while_1.shape) == (None, None)
    for node in root.walk():
        if node.kind != "op":
            assert node.expression is None


def test_synthetic_top_n_folds_the_rest(synthetic):
    result = op_profile(synthetic, top_n=2)
    _check_tree(result)
    root = result.root
    # Programs: jit_train(1) 9_000, jit_eval(2) 2_000 kept; jit_allreduce(3) and synthetic
    # folded: 500 + 500 = 1_000 ps, 2 runs, flops 100 (custom-call.1 has none) over 1_000 ps,
    # bytes 800 over 1_000 ps.
    assert [(c.name, c.kind, c.time_ps, c.occurrences, c.folded) for c in root.children] == [
        ("jit_train(1)", "program", 9_000, 4, 0),  # fusion.1, while.1, fusion.2, conv.1
        ("jit_eval(2)", "program", 2_000, 2, 0),
        ("(2 more)", "program", 1_000, 2, 2),
    ]
    folded = root.children[-1]
    assert folded.children == [] and folded.expression is None
    assert folded.time_percent == pytest.approx(100 * 1_000 / 12_000)  # 8.333%
    assert folded.time_percent_with_idle == pytest.approx(100 * 1_000 / 15_500)
    assert folded.flops == 100 and folded.gflops_per_second == pytest.approx(100.0)  # 100 FLOP / 1_000 ps
    assert folded.flops_utilization == pytest.approx(0.05)  # 100 GFLOP/s / 2_000
    assert folded.memory_bandwidth_gb_per_second == pytest.approx(800.0)  # 800 B / 1_000 ps
    # jit_train(1): convolution 4_000 and loop fusion 3_000 kept; control flow (2_000) folded.
    train = root.children[0]
    assert [(c.name, c.time_ps, c.folded) for c in train.children] == [
        ("convolution", 4_000, 0),
        ("loop fusion", 3_000, 0),
        ("(1 more)", 2_000, 1),
    ]
    assert train.children[-1].gflops_per_second is None  # while.1 records no flops
    # The flat table still has every op, folded or not, most time first.
    table = result.tables()[0]
    records = table.records()
    assert [(r["program"], r["category"], r["name"], r["time_ps"]) for r in records] == [
        ("jit_train(1)", "convolution", "conv.1", 4_000),
        ("jit_eval(2)", "data formatting", "copy.1", 2_000),
        ("jit_train(1)", "control flow", "while.1", 2_000),
        ("jit_train(1)", "loop fusion", "fusion.1", 2_000),
        ("jit_train(1)", "loop fusion", "fusion.2", 1_000),
        ("jit_allreduce(3)", "all-reduce", "all-reduce.1", 500),
        ("synthetic", "custom-call", "custom-call.1", 500),
    ]
    assert records[1]["occurrences"] == 2 and records[0]["time_percent"] == pytest.approx(100 * 4_000 / 12_000)


def test_synthetic_renders_and_summarises(synthetic):
    result = op_profile(synthetic)
    assert "/device:TPU:0" in result.summary()[0]
    assert any("FLOPS utilization" in line for line in result.summary())
    document = json.loads(render([result], "json"))["op_profile"]
    assert document["device"] == "/device:TPU:0" and document["idle_time_ps"] == 3_500
    assert document["root"]["time_ps"] == 12_000 and document["exclude_idle"] is True
    assert "conv.1" in render([result], "text") and "conv.1" in render([result], "csv")


def test_device_choice_and_bad_arguments(synthetic):
    assert op_profile(synthetic, device="all").root.time_ps == 12_000
    assert op_profile(synthetic, device="/device:TPU:0").root.time_ps == 12_000
    with pytest.raises(StepscopeError, match="no ops on device"):
        op_profile(synthetic, device="/device:TPU:7")
    with pytest.raises(StepscopeError, match="top_n"):
        op_profile(synthetic, top_n=0)


def test_profile_without_ops_is_well_formed(tmp_path: Path):
    # Its one event is a step marker, never an op (any other host event would be one: in a
    # profile without framework ops the user's spans are the ops, ops.ANNOTATION_TYPE).
    space = xplane_pb2.XSpace(hostnames=["idle"])
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.event_metadata[1].CopyFrom(xplane_pb2.XEventMetadata(id=1, name="ProfilerStep#1"))
    plane.lines.add(id=1, name="main", timestamp_ns=5).events.add(metadata_id=1, offset_ps=0, duration_ps=1_000)
    path = tmp_path / "idle.xplane.pb"
    path.write_bytes(space.SerializeToString())
    result = op_profile(stepscope.load(path))
    _check_tree(result)
    root = result.root
    assert (root.time_ps, root.occurrences, root.children, root.time_percent, root.time_percent_with_idle) == (0, 0, [], 0.0, 0.0)
    assert result.tables()[0].rows == [] and result.summary() == ["No ops in this profile."]
    assert render([result], "text") and render([result], "csv")


# --- the real TPU profile ---------------------------------------------------------------------


def _device_clock_times(plane: xplane_pb2.XPlane, line: xplane_pb2.XLine) -> list[int]:
    """Each event's ``device_duration_ps`` stat (every TPU XLA op carries one): its time by
    the device's clock, which op_profile, hlo_stats and XProf all show; no op is nested in
    another by that clock, so it is the op's self time too."""
    stat = next(k for k, m in plane.stat_metadata.items() if m.name == "device_duration_ps")
    times = [next(s.int64_value or s.uint64_value for s in e.stats if s.metadata_id == stat) for e in line.events]
    assert len(times) == len(line.events) and all(t >= 0 for t in times)
    return times


def test_tpu_root_is_the_xla_ops_self_time_of_the_chosen_device():
    path = shared(TPU)
    result = op_profile(stepscope.load(path))
    _check_tree(result)
    assert result.device == "/device:TPU:0" and result.side == "Device"
    assert result.devices == ["/device:TPU:0", "/device:TPU:1", "/device:TPU:2", "/device:TPU:3"]
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    plane = next(p for p in space.planes if p.name == result.device)
    line = next(line for line in plane.lines if line.name == "XLA Ops")
    assert result.root.time_ps == sum(_device_clock_times(plane, line))
    assert result.root.occurrences == len(line.events)
    # Every category node sums to its program and the programs to the root (exactly).
    categories = [c for p in result.root.children for c in p.children]
    assert sum(c.time_ps for c in categories) == result.root.time_ps
    # Programs are the modules on the XLA Modules line.
    modules = next(line for line in plane.lines if line.name == "XLA Modules")
    assert {p.name for p in result.root.children} <= {plane.event_metadata[e.metadata_id].name for e in modules.events}
    # Categories are the ops' hlo_category metadata stats.
    category_stat = next(k for k, m in plane.stat_metadata.items() if m.name == "hlo_category")
    hlo_categories = {s.str_value for m in plane.event_metadata.values() for s in m.stats if s.metadata_id == category_stat}
    assert {c.name for c in categories} <= hlo_categories
    peak_stat = next(k for k, m in plane.stat_metadata.items() if m.name == "peak_teraflops_per_second")
    assert result.peak_teraflops_per_second == next(s.double_value for s in plane.stats if s.metadata_id == peak_stat)


def test_tpu_every_device_and_all_devices():
    path = shared(TPU)
    profile = stepscope.load(path)
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    total = 0
    for plane in space.planes:
        if not plane.name.startswith("/device:"):
            continue
        line = next(line for line in plane.lines if line.name == "XLA Ops")
        expected = sum(_device_clock_times(plane, line))
        result = op_profile(profile, device=plane.name)
        _check_tree(result)
        assert result.root.time_ps == expected, plane.name
        total += expected
    combined = op_profile(profile, device="all")
    _check_tree(combined)
    assert combined.root.time_ps == total and combined.device == "all devices"


# --- Kineto traces -------------------------------------------------------------------------------


def _kineto_device_ps(path: Path) -> tuple[int, int]:
    """(summed duration in ps, count) of the kernels, copies and memsets in the JSON."""
    events = [
        e for e in read_json(path)["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in KINETO_DEVICE_CATEGORIES
    ]  # fmt: skip
    return sum(int(Decimal(str(e["dur"])) * 1_000_000) for e in events), len(events)


@pytest.mark.parametrize("path", [p for p in KINETO_TRACES if "cpu_only" not in p.name], ids=lambda p: p.name)
def test_kineto_root_is_the_device_work_of_the_file(path: Path):
    result = op_profile(stepscope.load(path))
    _check_tree(result)
    assert result.side == "Device" and len(result.devices) == 1
    expected_ps, count = _kineto_device_ps(path)
    # Kernels, copies and memsets have no child ops: their self time is their duration.
    assert result.root.time_ps == expected_ps
    assert result.root.occurrences == count
    programs = result.root.children
    assert [p.name for p in programs] == [path.name.removesuffix(".pt.trace.json.gz")]
    assert sum(c.time_ps for c in programs[0].children) == result.root.time_ps


def test_kineto_a100_categories_are_the_launching_ops_categories():
    path = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")
    result = op_profile(stepscope.load(path))
    events = read_json(path)["traceEvents"]
    cpu_ops = [e for e in events if e.get("cat") == "cpu_op" and "External id" in e.get("args", {})]
    ops_by_id = {e["args"]["External id"]: e["name"] for e in cpu_ops}
    # A kernel's category is that of the op with its External id (op_categories' table,
    # tested on its own), except that copies, memsets and collectives keep their own, as does
    # work whose op is "other" or that no op launched; summed here per category.
    expected: dict[str, int] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in KINETO_DEVICE_CATEGORIES:
            own = category_of(e["name"])
            op = ops_by_id.get(e["args"].get("External id"))
            launched = category_of(op) if op else own
            category = own if own in (MEMORY_COPY, COMMUNICATION) or launched == OTHER else launched
            expected[category] = expected.get(category, 0) + int(Decimal(str(e["dur"])) * 1_000_000)
    assert len(expected) <= result.top_n  # so no category is folded
    program = result.root.children[0]
    assert {c.name: c.time_ps for c in program.children} == expected


def test_kineto_expression_is_the_launching_ops_input_dims():
    path = shared("kineto/mi250_rocm_toy_train.pt.trace.json.gz")
    result = op_profile(stepscope.load(path))
    events = read_json(path)["traceEvents"]
    cpu_ops = [e for e in events if e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {})]
    dims_by_id = {e["args"]["External id"]: e["args"]["Input Dims"] for e in cpu_ops}
    kernels = {e["name"]: e["args"].get("External id") for e in events if e.get("cat") == "kernel"}
    checked = 0
    for node in result.root.walk():
        if node.kind == "op" and not node.folded and node.name in kernels and node.occurrences == 1:
            expected = dims_by_id.get(kernels[node.name])
            if expected is None:
                assert node.expression is None
                continue
            assert node.expression.startswith("Input Dims: ")
            assert json.loads(node.expression.removeprefix("Input Dims: ")) == expected
            checked += 1
    assert checked > 0


def test_kineto_cpu_only_shows_the_host_side():
    path = shared("kineto/cpu_only_rank34.pt.trace.json.gz")
    result = op_profile(stepscope.load(path))
    _check_tree(result)
    assert (result.device, result.side, result.devices) == ("/host:CPU", "Host", [])
    cpu_ops = [e for e in read_json(path)["traceEvents"] if e.get("cat") == "cpu_op"]
    assert result.root.occurrences == len(cpu_ops)
    assert result.peak_teraflops_per_second is None and result.root.flops_utilization is None


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_every_shared_trace_gives_a_well_formed_tree(path: Path):
    result = op_profile(stepscope.load(path))
    _check_tree(result)
    assert result.root.occurrences > 0
    assert sum(row[-1] for row in result.tables()[0].rows) == result.root.time_ps
    render([result], "text")


# --- against XProf's op_profile ----------------------------------------------------------------


XPROF_DUPLICATES = " and its duplicate(s)"


def _xprof_tree(node: dict, depth: int = 3) -> dict[str, tuple[int, int, dict]]:
    """name -> (time ps, occurrences, children the same way) below an XProf op profile node,
    ``depth`` levels (program, category, op).
    XProf puts ops with the same HLO text under one node "<first> and its duplicate(s)"
    (here: three broadcast_add_fusions); stepscope lists them side by side, so that node is
    replaced by its children (the ops) here, after checking it is their sum. Below an op,
    XProf lists a fusion's HLO instructions (from the HLO module the file carries) at time
    0; stepscope stops at the op, so they are checked to be 0 and left out."""
    out: dict[str, tuple[int, int, dict]] = {}
    for child in node.get("children", []):
        duplicates = child["name"].endswith(XPROF_DUPLICATES)
        if depth == 0:
            assert int(child["metrics"].get("rawTime", 0)) == 0 and all(int(c["metrics"].get("rawTime", 0)) == 0 for c in child.get("children", []))
            continue
        below = _xprof_tree(child, depth if duplicates else depth - 1)
        entry = (int(child["metrics"].get("rawTime", 0)), int(child["metrics"].get("occurrences", 0)), below)
        if duplicates:
            assert entry[0] == sum(t for t, _, _ in entry[2].values()) and entry[1] == sum(n for _, n, _ in entry[2].values())
            out.update(entry[2])
        else:
            out[child["name"]] = entry
    return out


def _our_tree(node: OpProfileNode) -> dict[str, tuple[int, int, dict]]:
    """The same of our node; programs have no occurrences in XProf's form (it counts them on
    categories and ops), so they are left 0 here too."""
    return {child.name: (child.time_ps, 0 if child.kind == PROGRAM else child.occurrences, _our_tree(child)) for child in node.children}


@pytest.mark.parametrize("device", ["/device:TPU:0", "/device:TPU:1", "/device:TPU:2", "/device:TPU:3", "all"])
def test_tpu_matches_xprofs_op_profile(device: str):
    """The whole tree, program -> category -> op, the same as XProf's ("exclude idle": its
    ``byProgramExcludeIdle``), time and occurrences exactly: both take TPU op times from the
    device's clock. XProf adds up every device of a file; its answer for one chip is that of
    a copy of the file holding only that chip's plane."""
    from tests.support.xla_ops import xprof_op_profile

    path = shared(TPU)
    xprof = xprof_op_profile(path, None if device == "all" else device)["byProgramExcludeIdle"]
    ours = op_profile(stepscope.load(path), device=device, top_n=10_000)
    assert ours.root.time_ps == int(xprof["metrics"]["rawTime"])
    assert _our_tree(ours.root) == _xprof_tree(xprof)
    # The top ops (most time first) are XProf's, in its order.
    xprof_ops = sorted(
        ((time, name) for program in _xprof_tree(xprof).values() for category in program[2].values() for name, (time, _, _) in category[2].items()),
        reverse=True,
    )
    assert [(node.time_ps, node.name) for node in ours.ops[:5]] == xprof_ops[:5]


@pytest.mark.parametrize("device", ["/device:TPU:0", "/device:TPU:3", "all"])
def test_tpu_op_profile_and_hlo_stats_agree_exactly(device: str):
    """Both read TPU op times from the shared XLA op table: the root is hlo_stats' total
    self time, and each category its rows' summed self time."""
    from stepscope.analysis.opstats import OpStats
    from stepscope.analysis.tools.hlo_stats import hlo_stats

    stats = OpStats(stepscope.load(shared(TPU)))
    tree, table = op_profile(stats, device=device, top_n=10_000), hlo_stats(stats, device=device)
    assert tree.root.time_ps == table.total_self_time_ps
    by_category: dict[tuple[str, str], int] = {}
    for row in table.rows:
        key = (row["program"], row["category"])
        by_category[key] = by_category.get(key, 0) + row["total_self_time_ps"]
    assert {(p.name, c.name): c.time_ps for p in tree.root.children for c in p.children} == by_category
