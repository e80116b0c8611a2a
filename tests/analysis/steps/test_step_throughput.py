"""The overview's throughput: tokens/s and samples/s from a real capture that passes them to
stepscope.step, and MFU on the shared TPU profile (FLOPs and peaks from the XSpace read
with the protobuf classes) and on the V100 ResNet trace (FLOPs from its recorded shapes)."""

from __future__ import annotations

import time

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.protos import xplane_pb2
from tests.support.traces import shared
from tests.support.xla_ops import hlo_op_sums, plane_stats

TOKENS = [512, 1024, None, 2048]
SAMPLES = [4, 8, 16, None]


def _marker_durations(path) -> dict[int, int]:
    """step_num -> duration (ps) of the stepscope.step events, read from the .xplane.pb."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    durations = {}
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                if plane.event_metadata[event.metadata_id].name != "stepscope.step":
                    continue
                stats = {stat_names[s.metadata_id]: s.int64_value for s in event.stats}
                durations[stats["step_num"]] = event.duration_ps
    return durations


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    with stepscope.profile(tmp_path_factory.mktemp("throughput")) as session:
        for number, (tokens, samples) in enumerate(zip(TOKENS, SAMPLES)):
            with stepscope.step(number, tokens=tokens, samples=samples):
                time.sleep(0.01)
    return session.path, run_tool("overview_page", stepscope.load(session.path)).to_json()


def test_tokens_and_samples_per_second_of_each_step(capture):
    path, overview = capture
    durations = _marker_durations(path)
    rows = overview["throughput"]["steps"]
    assert [row["step"] for row in rows] == [0, 1, 2, 3]
    for row, tokens, samples in zip(rows, TOKENS, SAMPLES):
        seconds = durations[row["step"]] / 1e12
        assert row["step_time_ps"] == durations[row["step"]]
        assert row["tokens"] == tokens and row["samples"] == samples
        assert row["tokens_per_second"] == (pytest.approx(tokens / seconds) if tokens is not None else None)
        assert row["samples_per_second"] == (pytest.approx(samples / seconds) if samples is not None else None)
    # over the kept steps (those not set aside) that carry a count: counts over their time
    kept = {step["step"] for step in overview["steps"] if step["set_aside"] is None}
    with_tokens = [(t, durations[n]) for n, t in enumerate(TOKENS) if t is not None and n in kept]
    assert overview["throughput"]["tokens_per_second"] == pytest.approx(sum(t for t, _ in with_tokens) / (sum(d for _, d in with_tokens) / 1e12))
    # a CPU-only capture has no FLOP counts: no MFU
    assert overview["throughput"]["mfu_percent"] is None and overview["throughput"]["flops_source"] == ""


def test_mfu_on_the_tpu_profile():
    path = shared("xplane/tpu_v_inference_4chips.xplane.pb")
    overview = run_tool("overview_page", stepscope.load(path)).to_json()
    through = overview["throughput"]
    flops = sum(s.flops or 0 for s in hlo_op_sums(path).values())
    peaks = {name: stats["peak_teraflops_per_second"] for name, stats in plane_stats(path).items() if "peak_teraflops_per_second" in stats}
    assert sorted(through["devices"]) == sorted(peaks)
    assert through["peak_tflops_per_second"] == pytest.approx(sum(peaks.values()))
    (step,) = through["steps"]  # no step markers: the profiled window is the one step
    seconds = step["step_time_ps"] / 1e12
    assert step["flops"] == pytest.approx(flops)
    assert step["mfu_percent"] == pytest.approx(flops / seconds / (sum(peaks.values()) * 1e12) * 100)
    assert through["flops_source"] == "xla"


def test_mfu_from_pytorch_shape_estimates():
    profile = stepscope.load(shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz"))
    overview = run_tool("overview_page", profile).to_json()
    roofline = run_tool("roofline_model", profile).to_json()
    through = overview["throughput"]
    assert through["flops_source"] == "shapes" and through["peak_tflops_per_second"] == 125.0  # one V100
    rows = through["steps"]
    # every estimated op lies in some ProfilerStep window: the steps' FLOPs are the roofline's
    assert sum(row["flops"] or 0 for row in rows) == pytest.approx(roofline["device_rows"][0]["flops"])
    for row in rows:
        if row["flops"] is not None:
            assert row["mfu_percent"] == pytest.approx(row["flops"] / (row["step_time_ps"] / 1e12) / 125e12 * 100)
