"""roofline_model on the shared TPU profile: sums against the file read with the protobuf
classes (tests/support/xla_ops.py), the roofline arithmetic against the plane's own peaks,
and every op, program and device figure against XProf's roofline_model; and on a real JAX
CPU capture made here, which gives times and no roofline."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.opstats import OpStats
from stepscope.render import render
from tests.support.traces import shared
from tests.support.xla_ops import device_clock_spans, hlo_op_sums, plane_stats, xprof_tables

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
GIB = 2**30


@pytest.fixture(scope="module")
def tpu_path() -> Path:
    return shared(TPU)


@pytest.fixture(scope="module")
def tpu(tpu_path: Path) -> OpStats:
    return OpStats(stepscope.load(tpu_path))


@pytest.fixture(scope="module")
def result(tpu: OpStats):
    return run_tool("roofline_model", tpu).to_json()


def test_devices_and_programs_sum_the_files_ops(result: dict, tpu_path: Path):
    planes = ["/device:TPU:0", "/device:TPU:1", "/device:TPU:2", "/device:TPU:3"]
    assert [row["name"] for row in result["device_rows"]] == [*planes, "all"]
    for row in result["device_rows"]:
        sums = hlo_op_sums(tpu_path, None if row["name"] == "all" else row["name"])
        assert row["occurrences"] == sum(s.occurrences for s in sums.values())
        assert row["time_ps"] == sum(s.time_ps for s in sums.values())
        assert row["flops"] == sum(s.flops or 0 for s in sums.values())
        assert row["bytes_accessed"] == sum(s.bytes_accessed or 0 for s in sums.values())
    programs: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (program_id, _name), sums in hlo_op_sums(tpu_path).items():
        programs[program_id][0] += sums.occurrences
        programs[program_id][1] += sums.time_ps
    ours = {row["name"].rsplit("(", 1)[-1].rstrip(")"): row for row in result["programs"]}
    assert {key: [row["occurrences"], row["time_ps"]] for key, row in ours.items()} == programs


def test_the_roofline_arithmetic(result: dict, tpu_path: Path):
    stats = plane_stats(tpu_path)["/device:TPU:0"]
    peak_flops = stats["peak_teraflops_per_second"] * 1e12
    peak_bytes = stats["peak_hbm_bw_gigabytes_per_second"] * 1e9
    assert result["peak_tflops"] * 1e12 == peak_flops and result["ridge_point"] == pytest.approx(peak_flops / peak_bytes)
    assert [p["source"] for p in result["peaks"]] == ["profile"] * 4
    for row in result["ops"] + result["programs"] + result["device_rows"]:
        seconds = row["time_ps"] / 1e12
        flop_rate, byte_rate = row["flops"] / seconds, row["bytes_accessed"] / seconds
        intensity = row["flops"] / row["bytes_accessed"]
        assert row["gflops_per_second"] == pytest.approx(flop_rate / 1e9, rel=1e-12)
        assert row["memory_bandwidth_gb_per_second"] == pytest.approx(byte_rate / 1e9, rel=1e-12)
        assert row["attainable_gflops_per_second"] == pytest.approx(min(peak_flops, intensity * peak_bytes) / 1e9, rel=1e-12)
        assert row["compute_utilization"] == pytest.approx(flop_rate / peak_flops, rel=1e-12)
        assert row["bound_by"] == "Memory" and intensity < peak_flops / peak_bytes
        if row["category"] in ("copy-start", "copy-done"):
            # An async copy's bytes over its own time (the DMA's issue, or the wait for it)
            # are no share of the bandwidth: copy-start "moves" its 400 x 5 GiB in under
            # 2.5 us of issue time here, over 500,000 x the peak.
            assert row["flops"] == 0 and (row["category"] == "copy-done" or byte_rate / peak_bytes > 500_000)
            assert row["bandwidth_utilization"] is None and row["roofline_fraction"] is None
            continue
        assert row["bandwidth_utilization"] == pytest.approx(byte_rate / peak_bytes, rel=1e-12)
        # Every op here is below the ridge: memory-bound, so its share of the roofline is
        # its share of the bandwidth (and, where it does FLOPs, of the attainable FLOP/s).
        assert row["roofline_fraction"] == pytest.approx(byte_rate / peak_bytes, rel=1e-12)
        if row["flops"] > 0:
            assert row["roofline_fraction"] == pytest.approx(flop_rate / (intensity * peak_bytes), rel=1e-9)
    # A compute-bound reading: peaks of 1 TFLOP/s and 10,000 GB/s put the ridge at 0.1
    # FLOP/byte, under the fusions' 0.125; they are then held to 1 TFLOP/s.
    fast = run_tool("roofline_model", OpStats(stepscope.load(tpu_path)), peak_flops="1", peak_bw="10000").to_json()
    fusion = next(row for row in fast["ops"] if row["name"] == "broadcast_add_fusion.1")
    assert fusion["bound_by"] == "Compute" and fusion["attainable_gflops_per_second"] == 1000.0
    assert fusion["roofline_fraction"] == pytest.approx(fusion["gflops_per_second"] / 1000.0)
    assert [p["source"] for p in fast["peaks"]] == ["options"] * 4


def test_matches_xprofs_roofline_model(tpu: OpStats, result: dict, tpu_path: Path):
    table = xprof_tables(tpu_path, "roofline_model")[0]
    # XProf lists the rows twice, with and without infeed/outfeed ops (this profile has none).
    rows = [row for row in table.rows if row["step"] == "Total" and row["include_infeed_outfeed"]]
    properties = table.properties
    peaks = result["peaks"][0]
    assert float(properties["peak_flop_rate"]) == peaks["peak_tflops"] * 1e3  # GFLOP/s
    # XProf's bandwidths are GiB/s (rounded in these properties); stepscope's GB/s.
    assert float(properties["peak_hbm_bw"]) * GIB == pytest.approx(peaks["peak_gbps"] * 1e9, rel=1e-4)
    assert float(properties["hbm_ridge_point"]) == pytest.approx(result["ridge_point"], rel=1e-5)
    assert properties["device_type"] == peaks["chip"]

    ours = {(row["program"].rsplit("(", 1)[-1].rstrip(")"), row["name"]): row for row in result["ops"]}
    theirs = {(row["hlo_module_id"], row["operation"]): row for row in rows if row["category"] != "Program"}
    assert set(ours) == set(theirs)
    for key, row in theirs.items():
        mine = ours[key]
        assert mine["occurrences"] == row["occurrences"], key
        assert mine["time_us"] == pytest.approx(row["total_time"], rel=1e-12, abs=1e-9), key
        assert mine["gflops_per_second"] == pytest.approx(row["measured_flop_rate"], rel=1e-9), key
        assert mine["memory_bandwidth_gb_per_second"] == pytest.approx(row["measured_memory_bw"] * GIB / 1e9, rel=1e-9), key
        assert mine["operational_intensity"] == pytest.approx(row["operational_intensity"]), key
        # Both are max(FLOP/s / peak FLOP/s, bytes/s / peak bytes/s); XProf's peak bandwidth
        # is the plane's, in GiB/s, so the shares agree to its rounding.
        if row["category"] in ("copy-start", "copy-done"):
            # XProf gives an async copy a share of the roofline (its bytes over its own
            # time); stepscope none (docs/tools/roofline_model.md).
            assert mine["roofline_fraction"] is None and row["roofline_efficiency"] > 0, key
        else:
            assert mine["roofline_fraction"] == pytest.approx(row["roofline_efficiency"], rel=1e-9), key
        assert mine["attainable_gflops_per_second"] == pytest.approx(row["optimal_flop_rate"], rel=1e-9), key
        assert (mine["bound_by"], row["bound_by"]) in {("Memory", "HBM"), ("Compute", "Compute")}, key

    # XProf's "Program" row is every device together over the cores' device-clock spans
    # (idle between ops included); stepscope's "all" device row over the ops' own time.
    (program,) = [row for row in rows if row["category"] == "Program"]
    everything = result["device_rows"][-1]
    span = sum(device_clock_spans(tpu_path).values())
    assert program["total_time"] == pytest.approx(span / 1e6, rel=1e-12)
    assert program["total_time_per_core"] == pytest.approx(span / 1e6 / 4, rel=1e-12)
    # The same FLOPs and bytes, over two different times.
    assert everything["gflops_per_second"] * everything["time_ps"] == pytest.approx(program["measured_flop_rate"] * span, rel=1e-9)
    assert everything["memory_bandwidth_gb_per_second"] * 1e9 * everything["time_ps"] == pytest.approx(program["measured_memory_bw"] * GIB * span, rel=1e-9)
    assert everything["operational_intensity"] == pytest.approx(program["operational_intensity"], rel=1e-9)


def test_one_device_and_the_renderings(tpu: OpStats):
    one = run_tool("roofline_model", tpu, device="/device:TPU:2")
    assert [row["name"] for row in one.device_rows] == ["/device:TPU:2"]
    assert {row["device"] for row in one.ops} == {"/device:TPU:2"}
    assert sum(row["occurrences"] for row in one.ops) == one.device_rows[0]["occurrences"]
    assert one.summary()[0].startswith("/device:TPU:2: 918.0 TFLOP/s, 1,638.0 GB/s (ridge 560.4 FLOP/byte), from the profile's device stats")
    csv = render([one], "csv")
    assert "broadcast_add_fusion.1" in csv and csv.count("\nop,") == len(one.ops)


def test_peaks_from_the_table_when_the_profile_has_none(tpu_path: Path, tmp_path: Path):
    """The plane's peak stats removed (a TPU profiler that writes only the chip's name): the
    known-chips table's TPU v6e row (918 TFLOP/s, 1640 GB/s) is used, and says so."""
    from stepscope.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(tpu_path.read_bytes())
    for plane in space.planes:
        drop = {key for key, meta in plane.stat_metadata.items() if meta.name.startswith("peak_")}
        kept = [stat for stat in plane.stats if stat.metadata_id not in drop]
        del plane.stats[:]
        plane.stats.extend(kept)
    path = tmp_path / "no_peaks.xplane.pb"
    path.write_bytes(space.SerializeToString())
    result = run_tool("roofline_model", stepscope.load(path))
    assert {(p.source, p.chip, p.peak_tflops, p.peak_gbps) for p in result.peaks} == {("table", "TPU v6e", 918.0, 1640.0)}
    assert result.ridge_point == pytest.approx(918e12 / 1640e9)
    assert "from the known-chips table (TPU v6e)" in result.summary()[0]


# On a real JAX CPU capture made here (the session's jax_run): the XLA CPU backend's thunks
# (host events carrying ``hlo_op``), read back with the protobuf classes, and XProf's own
# tool on the same file (which shows no rows for a CPU profile).


@pytest.mark.framework
def test_roofline_on_cpu_gives_times_and_no_roofline(jax_stats: OpStats, jax_path: Path):
    expected = hlo_op_sums(jax_path)
    result = run_tool("roofline_model", jax_stats)
    (device,) = result.device_rows
    assert device["name"] == "/host:CPU"
    assert device["occurrences"] == sum(s.occurrences for s in expected.values())
    assert device["time_ps"] == sum(s.time_ps for s in expected.values())
    (program,) = result.programs
    assert program["name"].startswith("jit_train_step(") and program["time_ps"] == device["time_ps"]
    assert {(row["program"].rsplit("(", 1)[-1].rstrip(")"), row["name"]): row["time_ps"] for row in result.ops} == {
        key: sums.time_ps for key, sums in expected.items()
    }
    # No cost analysis on CPU and no known peaks: every roofline number is null, and the
    # summary says why.
    for row in [device, program, *result.ops]:
        assert row["flops"] is None and row["roofline_fraction"] is None and row["bound_by"] is None
    assert result.peak_tflops is None and result.ridge_point is None
    assert result.summary() == [
        "/host:CPU: peaks unknown (pass --option peak_flops=TFLOP/s --option peak_bw=GB/s)",
        "No FLOP counts in this profile (XLA records none on CPU): times only, no roofline.",
    ]
    # Peaks given by hand: the shares stay null without FLOPs or bytes to rate.
    given = run_tool("roofline_model", jax_stats, peak_flops="2", peak_bw="50")
    assert given.peak_tflops == 2.0 and given.ridge_point == pytest.approx(2e12 / 50e9)
    assert all(row["roofline_fraction"] is None for row in given.ops)


@pytest.mark.framework
def test_xprof_shows_no_roofline_for_a_cpu_profile(jax_path: Path):
    table = xprof_tables(jax_path, "roofline_model")[0]
    assert table.rows == [] and float(table.properties["peak_flop_rate"]) == 0.0
