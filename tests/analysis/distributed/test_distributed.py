"""The distributed view (``stepscope.analysis.distributed``): ranks, clocks, the rank x step
table, stragglers and collective wait, on the real 2-rank recsys run and on runs of 8
rank-shifted copies of it with injected stragglers. Every expected number is read from the
trace JSON with the standard library (``tests.support.distributed_runs``)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from stepscope.analysis import run_tool
from stepscope.analysis.distributed import rank_tables
from stepscope.analysis.distributed.collectives import collective_name, input_bytes, message_bytes
from stepscope.analysis.distributed.reduce import FROM_DISTRIBUTED_INFO, FROM_FILE_NAME, FROM_HOST_ORDER
from stepscope.analysis.distributed.stragglers import Rule, outliers
from stepscope.analysis.distributed.unit_tables import CATEGORIES
from stepscope.engines import analyse_run
from stepscope.trace.kinds import CLOCK_EPOCH, CLOCK_RELATIVE, CLOCK_XSPACE
from stepscope.trace.logdir import discover
from stepscope.trace.readers import load
from stepscope.trace.writers import save
from tests.support.distributed_runs import Stretch, events, host_name, json_calls, pick, shift, step_durations_us, step_windows, synthesize
from tests.support.traces import read_json, shared

A100 = "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"
RECSYS = [f"kineto/recsys_sampled_rank{rank}_of_128.pt.trace.json.gz" for rank in (0, 1)]
PS_PER_US = 1_000_000
RANKS = 8
SHIFT_US = 1_000
COMPUTE_STRAGGLER = Stretch(rank=5, step=552, kind="compute", delta_us=100_000)  # 100 ms in a ~620 ms step
COLLECTIVE_STRAGGLER = Stretch(rank=2, step=551, kind="collective", delta_us=80_000)


@pytest.fixture(scope="module")
def recsys_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("recsys")
    for name in RECSYS:
        shutil.copy(shared(name), folder)
    return folder


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> Path:
    return synthesize(shared(RECSYS[0]), tmp_path_factory.mktemp("ranks") / "run", RANKS, SHIFT_US, (COMPUTE_STRAGGLER, COLLECTIVE_STRAGGLER))


def test_recsys_ranks_steps_and_clocks(recsys_run):
    result = analyse_run(discover(recsys_run)[0], workers=1)
    documents = [read_json(shared(name)) for name in RECSYS]
    assert result.rank_source == FROM_DISTRIBUTED_INFO
    assert [row["rank"] for row in result.ranks] == [doc["distributedInfo"]["rank"] for doc in documents] == [0, 1]
    assert result.world_size == documents[0]["distributedInfo"]["world_size"] == 128
    # No baseTimeNanoseconds in these headers: ts are epoch microseconds.
    assert all("baseTimeNanoseconds" not in doc for doc in documents)
    assert [row["clock"] for row in result.ranks] == [CLOCK_EPOCH, CLOCK_EPOCH]
    # The run's names for the files (what the dashboard's host selector lists).
    assert [row["file_host"] for row in result.ranks] == [Path(name).name.removesuffix(".pt.trace.json.gz") for name in RECSYS]
    # A rank's time 0 is its earliest event; rank 1's offset is the difference of the two.
    earliest = [min(event["ts"] for event in events(doc) if "ts" in event) for doc in documents]
    assert [row["start_offset_ps"] for row in result.ranks] == [0, (earliest[1] - earliest[0]) * PS_PER_US]
    for rank, document in enumerate(documents):
        expected = step_durations_us(document)
        rows = [row for row in result.steps if row["rank"] == rank]
        assert {row["step"]: row["step_time_ps"] for row in rows} == {number: round(dur * PS_PER_US) for number, dur in expected.items()}
        windows = step_windows(document)
        for row in rows:
            assert row["start_offset_ps"] == round((windows[row["step"]][0] - earliest[0]) * PS_PER_US)
            # On the rank's own timeline (its trace viewer's): from its own earliest event.
            assert row["trace_start_ps"] == round((windows[row["step"]][0] - earliest[rank]) * PS_PER_US)
            assert sum(row["breakdown"].values()) == row["step_time_ps"]
            assert row["overlap_ps"] == row["collective_ps"] - row["exposed_collective_ps"] >= 0
    # Collectives by the nccl:<op> annotation around each kernel's launch, with its input's
    # bytes (these kernels carry no size of their own).
    expected_calls: dict[str, list[int]] = {}
    for document in documents:
        for call in json_calls(document):
            counts = expected_calls.setdefault(call.name, [0, 0])
            counts[0] += 1
            counts[1] += call.bytes or 0
    assert {row["name"]: [row["calls"], row["bytes"]] for row in result.collectives} == expected_calls
    assert sum(row["calls"] for row in result.collectives) == 20 and set(expected_calls) == {"all_reduce", "all_to_all", "all_gather"}
    # Two ranks cannot outvote each other: no straggler with fewer than MIN_RANKS.
    assert result.stragglers == []


def test_rank_tables_agree_with_the_overview():
    """compute and exposed collectives are the overview's own breakdown of the same steps."""
    profile = load(shared(RECSYS[1]))
    tables = rank_tables(profile, "rank1")
    overview = run_tool("overview_page", profile).to_json()
    for step, row in zip(tables.steps, overview["steps"], strict=True):
        assert step.number == row["step"]
        assert step.step_time_ps == row["step_time_ps"]
        assert {key: step.breakdown[key] for key in CATEGORIES} == {key: row["breakdown"][f"{key}_ps"] for key in CATEGORIES}


def test_synthesized_run_names_the_stragglers(synthesized):
    result = analyse_run(discover(synthesized)[0], workers=1)
    base = read_json(shared(RECSYS[0]))
    steps = step_durations_us(base)
    assert result.rank_source == FROM_DISTRIBUTED_INFO and result.world_size == RANKS
    assert [row["rank"] for row in result.ranks] == list(range(RANKS))
    assert [row["host"] for row in result.ranks] == [host_name(rank, RANKS) for rank in range(RANKS)]
    assert [row["start_offset_ps"] for row in result.ranks] == [rank * SHIFT_US * PS_PER_US for rank in range(RANKS)]
    stretched = {(change.rank, change.step): change.delta_us for change in (COMPUTE_STRAGGLER, COLLECTIVE_STRAGGLER)}
    for row in result.steps:
        expected_us = steps[row["step"]] + stretched.get((row["rank"], row["step"]), 0)
        assert row["step_time_ps"] == round(expected_us * PS_PER_US)
    # The compute straggler: its step and its work before waiting are 100 ms over the
    # median (the 7 other ranks' identical step), all of it device compute. The collective
    # straggler: its step and its wait are 80 ms over (the 7 others wait 0 in matched
    # calls), all of it exposed collective time; its work time is the others'.
    found = {(row["rank"], row["step"], row["signal"]): row for row in result.stragglers}
    compute_ps = COMPUTE_STRAGGLER.delta_us * PS_PER_US
    collective_ps = COLLECTIVE_STRAGGLER.delta_us * PS_PER_US
    assert set(found) == {(5, 552, "step_time"), (5, 552, "work_time"), (2, 551, "step_time"), (2, 551, "collective_wait")}
    for key, delta, stage in (
        ((5, 552, "step_time"), compute_ps, "device_compute"),
        ((5, 552, "work_time"), compute_ps, "device_compute"),
        ((2, 551, "step_time"), collective_ps, "device_collectives"),
        ((2, 551, "collective_wait"), collective_ps, "device_collectives"),
    ):
        row = found[key]
        assert row["excess_ps"] == delta and row["stage"] == stage and row["stage_excess_ps"] == delta
        assert row["excess_percent"] == pytest.approx(100 * delta / (steps[key[1]] * PS_PER_US))
    assert result.stragglers[0]["rank"] == 5  # 100 ms is the larger share of its step
    # Collective wait: the stretched call is the only one any rank waits beyond the fastest.
    waits = {(row["rank"], row["step"]): row["collective_wait_ps"] for row in result.steps}
    assert waits[(2, 551)] == collective_ps and sum(waits.values()) == collective_ps
    # The stretched call's op (the annotation around its launch) is the one whose wait is
    # skewed: rank 2 waits 80 ms more than the fastest, everyone else 0; other ops even.
    calls = json_calls(base)
    stretched_op = next(call.name for call in calls if call.kernel is pick(base, COLLECTIVE_STRAGGLER.step, "collective"))
    for row in result.collectives:
        per_rank = sum(1 for call in calls if call.name == row["name"])
        assert (row["calls"], row["calls_per_rank_max"], row["matched"]) == (RANKS * per_rank, per_rank, per_rank)
        if row["name"] == stretched_op:
            assert (row["wait_max_rank"], row["wait_max_ps"], row["wait_min_ps"], row["wait_skew_ps"]) == (2, collective_ps, 0, collective_ps)
        else:
            assert row["wait_skew_ps"] == 0 and row["wait_max_ps"] == 0
    assert result.collectives[0]["name"] == stretched_op  # largest skew first


def test_rule_median_and_mad():
    # values 10, 10, 11, 10, 30: median 10, |deviations| 0, 0, 1, 0, 20 -> MAD 0, sigma 0;
    # the floor is 5% of a 100 ps median step = 5 ps: only 30 (20 over) passes.
    (found,) = outliers([10, 10, 11, 10, 30], 100.0, Rule())
    assert (found.position, found.median, found.threshold) == (4, 10.0, 5.0)
    # spread 10, 20, 30, 40, 100: median 30, deviations 20, 10, 0, 10, 70 -> MAD 10,
    # sigma 14.826, 3 sigma 44.478 > floor 1.5: only 100 (70 over) passes.
    (found,) = outliers([10, 20, 30, 40, 100], 30.0, Rule())
    assert found.position == 4 and found.threshold == pytest.approx(3 * 1.4826 * 10)
    assert outliers([10, 100], 10.0, Rule()) == []  # two ranks: never


def test_collective_names_and_bytes():
    assert collective_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(x)", None, "nccl:all_to_all") == "all_to_all"
    assert collective_name("ncclKernel_SendRecv(x)", "allreduce", "nccl:_all_gather_base") == "all_gather"
    assert collective_name("ncclKernel_AllReduce(x)", None, "aten::add") == "AllReduce"  # not a comm annotation
    assert input_bytes("[[19618307]]", '["float"]') == 19618307 * 4
    assert input_bytes("[[2, 3], []]", '["c10::BFloat16", "Scalar"]') == 2 * 3 * 2
    assert input_bytes("[[], []]", '["TensorList", "Scalar"]') is None and input_bytes("[[4]]", '["Scalar"]') is None
    assert collective_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", None) == "AllReduce"
    assert collective_name("ncclDevKernel_SendRecv(ncclDevComm*)", None) == "SendRecv"
    assert collective_name("ncclKernel_Broadcast_RING_LL_Sum_int8_t(x)", "broadcast") == "broadcast"
    assert collective_name("all-reduce.3", None) == "all-reduce"
    assert message_bytes(6637568, "Float") == 6637568 * 4
    assert message_bytes(53, "Long") == 53 * 8
    assert message_bytes(None, "Float") is None and message_bytes(3, "Unknown") is None


def test_a100_collectives_have_bytes():
    """The A100 trace's NCCL kernels carry In msg nelems and dtype: a call's bytes are
    nelems x the dtype's size, summed per op (the annotation around the launch) over the
    kernels launched inside a step."""
    document = read_json(shared(A100))
    tables = rank_tables(load(shared(A100)), "a100")
    sizes = {"Float": 4, "Long": 8}
    expected: dict[str, int] = {}
    for call in json_calls(document):
        args = call.kernel["args"]
        expected[call.name] = expected.get(call.name, 0) + args["In msg nelems"] * sizes[args["dtype"]]
    found: dict[str, int] = {}
    for collective in tables.collectives:
        assert collective.bytes is not None
        found[collective.name] = found.get(collective.name, 0) + collective.bytes
    assert found == expected and set(expected) == {"all_reduce", "broadcast"}


def test_ranks_of_xspace_files_written_from_kineto(tmp_path):
    """The recsys ranks converted to XSpace, each file named after the *other* rank: the
    ranks come from the rank kept in the Task Environment, the hosts from XSpace's host
    names (the Kineto files' names), the clocks from each file's session start; the step
    times are still the ProfilerStep durations of the JSON."""
    for rank, name in enumerate(RECSYS):
        save(load(shared(name)), tmp_path / f"worker_{1 - rank}.xplane.pb")
    result = analyse_run(discover(tmp_path)[0], workers=1)
    assert result.rank_source == FROM_DISTRIBUTED_INFO and result.world_size == 128
    assert [row["host"] for row in result.ranks] == [Path(name).name.split(".")[0] for name in RECSYS]
    # The dashboard's host (and trace viewer address) is the file's name in the run, not XSpace's.
    assert [row["file_host"] for row in result.ranks] == ["worker_1", "worker_0"]
    assert [row["clock"] for row in result.ranks] == [CLOCK_XSPACE, CLOCK_XSPACE]
    for rank, name in enumerate(RECSYS):
        expected = {number: round(dur * PS_PER_US) for number, dur in step_durations_us(read_json(shared(name))).items()}
        assert {row["step"]: row["step_time_ps"] for row in result.steps if row["rank"] == rank} == expected


def _without_distributed_info(source: Path, target: Path) -> None:
    document = read_json(source)
    del document["distributedInfo"]
    with gzip.open(target, "wt", encoding="utf-8") as stream:
        json.dump(document, stream)


def test_ranks_from_file_names_then_host_order(tmp_path):
    # No distributedInfo: "rank7" and "rank2" in the names number them 7 and 2 (rank 2 is
    # the recsys rank 1 file), listed by rank.
    named = tmp_path / "named"
    named.mkdir()
    _without_distributed_info(shared(RECSYS[0]), named / "job_rank7.pt.trace.json.gz")
    _without_distributed_info(shared(RECSYS[1]), named / "job_rank2.pt.trace.json.gz")
    result = analyse_run(discover(named)[0], workers=1)
    assert result.rank_source == FROM_FILE_NAME and result.world_size == 2
    assert [(row["rank"], row["host"]) for row in result.ranks] == [(2, "job_rank2"), (7, "job_rank7")]
    # Neither: ranks by host name order ("alpha" before "beta").
    plain = tmp_path / "plain"
    plain.mkdir()
    _without_distributed_info(shared(RECSYS[0]), plain / "beta.pt.trace.json.gz")
    _without_distributed_info(shared(RECSYS[1]), plain / "alpha.pt.trace.json.gz")
    result = analyse_run(discover(plain)[0], workers=1)
    assert result.rank_source == FROM_HOST_ORDER
    assert [(row["rank"], row["host"]) for row in result.ranks] == [(0, "alpha"), (1, "beta")]


def test_relative_clocks_are_not_aligned(tmp_path):
    """Three copies of rank 0 with their times moved near 0 (rank r starting r x 5 ms after
    0): no UNIX clock, so the run says it is not aligned and every offset is from the rank's
    own time 0, the same on each rank (the copies are the same but for the shift)."""
    document = read_json(shared(RECSYS[0]))
    earliest = min(event["ts"] for event in events(document) if "ts" in event)
    windows = step_windows(document)
    for rank in range(3):
        copy_ = read_json(shared(RECSYS[0]))
        shift(copy_, -earliest + rank * 5_000)
        copy_["distributedInfo"]["rank"] = rank
        with gzip.open(tmp_path / f"r{rank}.pt.trace.json.gz", "wt", encoding="utf-8") as stream:
            json.dump(copy_, stream)
    result = analyse_run(discover(tmp_path)[0], workers=1)
    assert result.alignment.startswith("not aligned: 3 rank(s) have no UNIX clock")
    assert [row["clock"] for row in result.ranks] == [CLOCK_RELATIVE] * 3
    assert [row["start_offset_ps"] for row in result.ranks] == [0, 0, 0]
    for row in result.steps:
        assert row["start_offset_ps"] == round((windows[row["step"]][0] - earliest) * PS_PER_US)
    assert result.stragglers == []
