"""XLA's data movement on the real 4-chip TPU profile: the async copies (copy-start /
copy-done, 96.5% of its op time, 0 FLOPs) are host transfers in the breakdown, the
distributed view and the device busy time, never device compute; and with no step marker
the overview gives no bound, as XProf's overview does.

The expected split is read from the XSpace here with the generated protobuf classes: each
XLA op's class from its ``hlo_category`` stat, a copy's direction from where ``S(5)``
(XLA's host memory space) sits in its HLO text (on the other side of the opcode from the
one stepscope's classifier reads for copy-done and copy-start: the copy-done's result, the
copy-start's operand).
"""

from __future__ import annotations

from collections import defaultdict

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.distributed import rank_tables, reduce_ranks
from stepscope.analysis.distributed.reduce import BY_DEVICE
from stepscope.protos import xplane_pb2
from tests.support.intervals import union_length
from tests.support.traces import shared
from tests.support.xprof import xprof_tool

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
COMPUTE, COLLECTIVES, H2D, D2H = "device_compute", "device_collectives", "host_to_device", "device_to_host"


def _class_of(text: str, category: str) -> str:
    if category == "all-reduce":
        return COLLECTIVES
    if category == "copy-done":
        result = text.split(" copy-done(")[0]
        return D2H if "S(5)" in result else H2D
    if category == "copy-start":
        operand = text.split(" copy-start(")[1]
        return H2D if "S(5)" in operand else D2H
    return COMPUTE


def xla_op_intervals() -> dict[str, dict[str, list[tuple[int, int]]]]:
    """Per chip, per class: the [start, end) ps of its XLA Ops line's events."""
    space = xplane_pb2.XSpace.FromString(shared(TPU).read_bytes())
    chips: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for plane in space.planes:
        if not plane.name.startswith("/device:TPU:"):
            continue
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        by_class: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for line in plane.lines:
            if line.name != "XLA Ops":
                continue
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                category = next(s.str_value for s in meta.stats if stat_names[s.metadata_id] == "hlo_category")
                start = line.timestamp_ns * 1000 + event.offset_ps
                by_class[_class_of(meta.name, category)].append((start, start + event.duration_ps))
        chips[plane.name] = by_class
    return chips


def _claims(by_class: dict[str, list[tuple[int, int]]]) -> dict[str, int]:
    """The breakdown's priority claims: each class takes what the classes before it do not
    cover (compute, then collectives, then host-to-device, then device-to-host)."""
    claimed, covered, parts = [], 0, {}
    for kind in (COMPUTE, COLLECTIVES, H2D, D2H):
        claimed += by_class.get(kind, [])
        now = union_length(claimed)
        parts[kind], covered = now - covered, now
    return parts


def test_async_copies_are_host_transfers_in_the_breakdown():
    chips = xla_op_intervals()
    together: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for by_class in chips.values():
        for kind, intervals in by_class.items():
            together[kind] += intervals
    expected = _claims(together)
    # The copies dominate: more than 70% of the device time, against a few % of compute.
    assert expected[H2D] + expected[D2H] > 10 * expected[COMPUTE] > 0
    overview = run_tool("overview_page", stepscope.load(shared(TPU))).to_json()
    (step,) = overview["steps"]
    breakdown = step["breakdown"]
    assert {kind: breakdown[f"{kind}_ps"] for kind in expected} == expected
    assert breakdown["device_to_device_ps"] == 0
    # Every picosecond of the step in exactly one category.
    assert sum(value for key, value in breakdown.items() if key.endswith("_ps")) == step["step_time_ps"]
    # A chip is busy whatever it does: its busy time is still the union of all its ops.
    busy = {device["device"]: device["busy_time_ps"] for device in overview["devices"]}
    assert busy == {chip: union_length([i for intervals in by_class.values() for i in intervals]) for chip, by_class in chips.items()}


def test_each_chip_moves_data_rather_than_computes():
    """``stepscope distributed --by device``: each chip's compute and memcpy time."""
    chips = xla_op_intervals()
    result = reduce_ranks("tpu", [rank_tables(stepscope.load(shared(TPU)), "tpu")], by=BY_DEVICE)
    assert len(result.steps) == len(chips) == 4
    for row in result.steps:
        expected = _claims(chips[result.ranks[row["rank"]]["device"]])
        assert row["compute_ps"] == expected[COMPUTE]
        assert row["memcpy_ps"] == expected[H2D] + expected[D2H]
        assert row["memcpy_ps"] > 10 * row["compute_ps"]


def test_no_bound_without_steps_as_xprof():
    recommendation = run_tool("overview_page", stepscope.load(shared(TPU))).to_json()["recommendation"]
    assert recommendation["verdict"] == "unknown"
    assert "cannot tell what bounds a step" in recommendation["summary"]
    assert [finding["finding"] for finding in recommendation["evidence"]] == ["unknown"]
    # XProf's overview on the same file: its bottleneck analysis says "unknown".
    analysis = next(table["p"] for table in xprof_tool(shared(TPU), "overview_page") if table.get("p") and "bottleneck" in table["p"])
    assert analysis["bottleneck"] == "unknown"
    assert analysis["statement"].startswith("No step time measured")
