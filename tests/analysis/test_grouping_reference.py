"""The vectorised group-bys (kernel_stats, the overview's top kernels, framework_op_stats'
rows) against straightforward references written here: a plain Python dict over the
events read from the profile's planes, one event at a time.

On real shared traces (an A100 DDP job, an MI250 ROCm job, a V100 trace in the legacy
Kineto schema), read as Kineto JSON and, for the A100 one, written as XSpace and read back
(the XSpace store answers ``kernel_details`` by column, JSON sources per event). The
references share with the tools only what is not under test: which events are kernels
(``classify.event_activities``), the ops found (``OpStats.ops``) and the parsing of one
``kernel_details`` string.
"""

from __future__ import annotations

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.grouping import Groups
from stepscope.analysis.ops.kernels import parse_kernel_details
from stepscope.analysis.ops.ops import Side
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.steps.classify import Activity, event_activities
from stepscope.analysis.steps.gpu_metrics import top_kernels
from stepscope.trace import names
from stepscope.trace.model import Profile
from tests.support.traces import shared

TRACES = (
    "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz",
    "kineto/mi250_rocm_toy_train.pt.trace.json.gz",
    "kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz",
)
KERNEL_ACTIVITIES = (Activity.DEVICE_COMPUTE, Activity.DEVICE_COLLECTIVES)


@pytest.fixture(scope="module", params=[*TRACES, "xspace:" + TRACES[0]])
def profile(request, tmp_path_factory) -> Profile:
    name: str = request.param
    if name.startswith("xspace:"):
        path = tmp_path_factory.mktemp("xspace") / "a100.xplane.pb"
        stepscope.save(stepscope.load(shared(name.removeprefix("xspace:"))), path)
        return stepscope.load(path)
    return stepscope.load(shared(name))


def _kernel_events(profile: Profile):
    """(plane index, device, row, name, kernel_details text, duration ps) per kernel, one
    event at a time: the stat on the event, else on its metadata, else ""."""
    for plane_index, plane in enumerate(profile.planes):
        if not plane.name.startswith(names.GPU_PLANE_PREFIX):
            continue
        activity = event_activities(plane)
        meta = plane.metadata
        for row in range(len(plane.events)):
            if activity[row] not in KERNEL_ACTIVITIES:
                continue
            kind = int(plane.events.metadata_id[row])
            details = plane.stats.value(row, names.KERNEL_DETAILS, meta.names[kind], meta.categories[kind])
            if details is None:
                details = next((s.value for s in meta.stats[kind] if s.name == names.KERNEL_DETAILS), "")
            yield plane_index, plane.name, row, meta.names[kind], str(details), int(plane.events.duration_ps[row])


def test_kernel_stats_matches_a_per_event_dict(profile: Profile):
    stats = OpStats(profile)
    ops = stats.ops
    op_at = {
        (int(p), int(r)): str(n)
        for p, r, n, s in zip(ops.plane.tolist(), ops.row.tolist(), ops.name_codes.at(slice(None)).tolist(), ops.side.tolist())
        if s == 1
    }
    expected: dict[tuple, list[int]] = {}
    for plane_index, _, row, name, details, duration in _kernel_events(profile):
        op = op_at.get((plane_index, row), "")
        config = parse_kernel_details(details)
        key = (name, "" if op == name else op, config.registers_per_thread, config.shared_memory_bytes, config.block_dim, config.grid_dim, config.occupancy_pct)
        expected.setdefault(key, []).append(duration)
    assert expected, "the trace has kernels"

    result = run_tool("kernel_stats", stats).to_json()
    got = {
        (r["kernel_name"], r["op_name"], r["registers_per_thread"], r["shared_memory_bytes"], r["block_dim"], r["grid_dim"], r["occupancy_pct"]): (
            r["occurrences"],
            r["total_duration_ps"],
            r["min_duration_us"],
            r["max_duration_us"],
        )
        for r in result["rows"]
    }
    assert len(got) == len(result["rows"]), "one row per (kernel, op, launch config)"
    assert got == {key: (len(d), sum(d), min(d) / 1e6, max(d) / 1e6) for key, d in expected.items()}
    assert result["total_kernel_time_ps"] == sum(sum(d) for d in expected.values())
    # Rows by total time, most first, ties by kernel name.
    order = [(-r["total_duration_ps"], r["kernel_name"]) for r in result["rows"]]
    assert order == sorted(order)


def test_top_kernels_match_a_per_event_dict(profile: Profile):
    by_device: dict[str, dict[str, int]] = {}
    for _, device, _, name, _, duration in _kernel_events(profile):
        totals = by_device.setdefault(device, {})
        totals[name] = totals.get(name, 0) + duration
    kernels = OpStats(profile).kernels
    assert [k.device for k in kernels] == list(by_device)
    for device_kernels in kernels:
        totals = by_device[device_kernels.device]
        ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))
        slices = top_kernels(device_kernels, limit=3)
        expected = [(name, False, total) for name, total in ranked[:3]]
        if len(ranked) > 3:
            expected.append(("other", True, sum(total for _, total in ranked[3:])))
        assert [(s["kernel_name"], s["other"], s["total_duration_ps"]) for s in slices] == expected


def test_op_table_rows_match_a_per_op_dict(profile: Profile):
    stats = OpStats(profile)
    ops = stats.ops
    for side in Side:
        groups: dict[tuple[str, str], list[int]] = {}  # (type, name) -> [count, total, self]
        for s, op_type, name, duration, self_ps in zip(
            ops.side.tolist(), ops.type_codes.at(slice(None)).tolist(), ops.name_codes.at(slice(None)).tolist(), ops.duration_ps.tolist(), ops.self_ps.tolist()
        ):
            if s == side:
                entry = groups.setdefault((op_type, name), [0, 0, 0])
                entry[0] += 1
                entry[1] += duration
                entry[2] += self_ps
        # Ranked by self time, most first; first seen first among equals (dicts keep order).
        ranked = sorted(groups.items(), key=lambda item: -item[1][2])
        rows = stats.op_rows(side)
        assert [(r["type"], r["name"], r["occurrences"], r["total_time_ps"], r["total_self_time_ps"]) for r in rows] == [
            (t, n, count, total, self_total) for (t, n), (count, total, self_total) in ranked
        ]


@pytest.mark.parametrize("name", [TRACES[0], TRACES[2]])
def test_the_comparisons_are_not_vacuous(name: str):
    """The NVIDIA traces have kernels of many launch shapes, under framework ops."""
    rows = run_tool("kernel_stats", stepscope.load(shared(name))).to_json()["rows"]
    assert len({(r["block_dim"], r["grid_dim"], r["registers_per_thread"]) for r in rows}) > 100
    assert all(r["op_name"] for r in rows)


@pytest.mark.parametrize("spread", [5, 1 << 40])
def test_groups_match_a_dict(spread: int):
    """``Groups`` (both paths: few possible keys, and keys too far apart for a table) against
    a dict in insertion order: numbering, first members, sizes, exact sums and extremes."""
    rng = np.random.default_rng(7)
    first_key = rng.integers(0, spread, 5000)
    second_key = rng.integers(0, 3, 5000)
    values = rng.integers(-(10**15), 10**15, 5000)
    members: dict[tuple[int, int], list[int]] = {}
    for index, key in enumerate(zip(first_key.tolist(), second_key.tolist())):
        members.setdefault(key, []).append(index)
    groups = Groups.of(first_key, second_key)
    assert groups.first.tolist() == [m[0] for m in members.values()]
    assert groups.size.tolist() == [len(m) for m in members.values()]
    number = {key: n for n, key in enumerate(members)}
    assert groups.group.tolist() == [number[key] for key in zip(first_key.tolist(), second_key.tolist())]
    chosen = [[int(values[i]) for i in m] for m in members.values()]
    assert groups.sum(values).tolist() == [sum(v) for v in chosen]
    assert groups.min(values).tolist() == [min(v) for v in chosen]
    assert groups.max(values).tolist() == [max(v) for v in chosen]
