"""The critical_path tool on hand-made Kineto traces whose paths are derived by hand; on a
real PyTorch CPU job whose "input free" and "op 2x faster" predictions are checked against
re-runs of the job without its input wait or with the op halved; and on every shared trace.

Times in the traces are whole microseconds (Kineto's unit); a microsecond is 10**6 ps.
Each trace is one step (``ProfilerStep#1``, [0, 100) us) on host thread 1; GPU 0 is pid 0,
its streams are tids. In each comment, a path is read from the step's end backwards.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.paths.dependency_graph import build_graph
from stepscope.analysis.paths.schedule import binding, schedule
from stepscope.analysis.registry import OptionError
from stepscope.analysis.steps.steps import find_steps
from tests.support.critical_paths import STEP, US, critical, device, host, kinds, predicted, runtime, segment_rows
from tests.support.traces import ALL_SHARED_TRACES

torch = pytest.importorskip("torch")

LOADER_SLEEP_S = 0.05  # per batch: tens of ms, far above a CPU's scheduling noise
MODEL_S = 0.08  # per step, the "model" after the fetch
STEPS = 10
SLOW_OP_S = 0.06  # per step, one op of the model made 2x faster in the re-run

# The job and its re-run take turns, step by step, in one profile: the even steps are the job
# (with the loader's sleep, or the op at full length), the odd ones the re-run (without it,
# or with the op halved). A re-run in a process of its own met another moment's load on a
# shared CPU (80 ms sleeps took 86 ms in one run, 116 ms in the other); neighbours share it.


def job_steps(values: list[float]) -> list[float]:
    return values[0::2]


def rerun_steps(values: list[float]) -> list[float]:
    return values[1::2]


class SlowDataset(torch.utils.data.Dataset):
    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def __len__(self) -> int:
        return STEPS + 2

    def __getitem__(self, index: int):
        time.sleep(self.sleep_s if index % 2 == 0 else 0.0)  # batch i is fetched for step i
        return torch.ones(8, 8)


def profiled_job(tmp_path, name: str, sleep_s: float, slow_op_s: float = 0.0) -> stepscope.Profile:
    """A training-like loop under torch.profiler (a small matmul and ``MODEL_S`` of host time
    a step, then an op "slow_op" of ``slow_op_s``, halved in odd steps), fed by a DataLoader
    that sleeps ``sleep_s`` for even steps' batches; its Kineto trace, loaded."""
    weight = torch.randn(8, 8)
    loader = torch.utils.data.DataLoader(SlowDataset(sleep_s), batch_size=None, num_workers=0)
    path = tmp_path / f"{name}.pt.trace.json"
    batches = iter(loader)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for number in range(STEPS):
            # The step marker as torch.profiler's own schedule writes it, around the fetch too.
            with torch.profiler.record_function(f"ProfilerStep#{number}"):
                out = next(batches)
                with torch.profiler.record_function("model"):
                    out = torch.tanh(out @ weight)
                    time.sleep(MODEL_S)  # the model's time, as steady as a sleep on a shared CPU
                    if slow_op_s:
                        with torch.profiler.record_function("slow_op"):
                            time.sleep(slow_op_s if number % 2 == 0 else slow_op_s / 2)
    prof.export_chrome_trace(str(path))
    return stepscope.load(path)


def predicted_and_measured(profile: stepscope.Profile, change: str, **options) -> tuple[float, float, float]:
    """The job's median step, as predicted by the what-if ``change``; the re-run's median
    step, measured (its step markers); the job's median step, as it ran."""
    result = run_tool("critical_path", profile, **options).to_json()
    durations = [float(duration) for duration in find_steps(profile).duration_ps.tolist()]
    predicted = next(what_if["predicted_steps_ps"] for what_if in result["what_if"] if what_if["change"] == change)
    assert len(predicted) == len(durations) == STEPS
    return float(np.median(job_steps(predicted))), float(np.median(rerun_steps(durations))), float(np.median(job_steps(durations)))


def test_host_bound_step(tmp_path):
    # [60, 100) aten::add: host compute 40; [55, 60) aten::mm after its launch: host 5;
    # [50, 55) the launch: 5; [10, 50) aten::mm: host 40; [0, 10) the step marker only:
    # host compute 10 (the step's own thread runs untraced code between ops). The kernel
    # [56, 60) waits for nobody and nobody waits for it.
    events = [
        STEP,
        host("aten::mm", 10, 50),
        runtime("cudaLaunchKernel", 50, 5, correlation=1),
        device("gemm", 56, 4, 1),
        host("aten::add", 60, 40),
    ]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert step["duration_ps"] == 100 * US
    assert kinds(step) == {"host_compute": 95 * US, "launch": 5 * US}
    assert step["top"][0] == {"name": "aten::mm", "kind": "host_compute", "ps": 45 * US}
    # Launch halved: the host chain is 2.5 us shorter; kernels 2x faster: no one waits for them.
    assert predicted(result) == {"input_free": 100 * US, "launch_halved": 97_500_000, "faster": 100 * US, "collectives_overlapped": 100 * US}


def test_kernel_bound_step_with_a_device_synchronize(tmp_path):
    # Launch A [0, 5) -> kernel A [6, 50); launch B [5, 10) -> kernel B [50, 90) (stream
    # order: after A); cudaDeviceSynchronize [10, 95) waits for B; then [95, 100) host.
    # Path: host 5 <- sync's return after B [90, 95): 5 <- kernel B 40 <- kernel A 44 <-
    # A's queueing after its launch [5, 6): launch 1 <- launch A 5.
    events = [
        STEP,
        runtime("cudaLaunchKernel", 0, 5, correlation=1),
        runtime("cudaLaunchKernel", 5, 5, correlation=2),
        runtime("cudaDeviceSynchronize", 10, 85),
        device("kernel_a", 6, 44, 1),
        device("kernel_b", 50, 40, 2),
    ]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert kinds(step) == {"host_compute": 5 * US, "sync": 5 * US, "kernel": 84 * US, "launch": 6 * US}
    assert [(op["name"], op["ps"]) for op in step["top"][:2]] == [("kernel_a", 44 * US), ("kernel_b", 40 * US)]
    # Kernels 2x faster: A [6, 28), B [28, 48), the return 5 and the host 5: 58 us.
    # Launches halved: A's launch [0, 2.5), A [3.5, 47.5), B [47.5, 87.5), +5 +5: 97.5 us.
    assert predicted(result) == {"input_free": 100 * US, "launch_halved": 97_500_000, "faster": 58 * US, "collectives_overlapped": 100 * US}


def test_input_wait(tmp_path):
    # [0, 60) waiting for the DataLoader, [60, 100) the model: input 60, host 40; input
    # free leaves the model's 40.
    events = [STEP, host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 60, "user_annotation"), host("aten::mm", 60, 40)]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert kinds(step) == {"input": 60 * US, "host_compute": 40 * US}
    assert predicted(result)["input_free"] == 40 * US


def test_async_copy_overlapping_compute(tmp_path):
    # cudaMemcpyAsync [0, 5) -> a copy [6, 80) on stream 8; launch [5, 10) -> kernel [11, 40)
    # on stream 7; cudaStreamSynchronize [10, 45) waits for the kernel (the copy ends after
    # the call returns: not awaited); aten::add [45, 100).
    # Path: host 55 <- sync [40, 45) 5 <- kernel 29 <- queueing [10, 11) launch 1 <- launch
    # 5 <- the copy's call 5 (launch): host 55, sync 5, kernel 29, launch 11. The copy
    # overlaps: a faster copy buys nothing; 2x faster kernels: 100 - 14.5 = 85.5 us.
    events = [
        STEP,
        runtime("cudaMemcpyAsync", 0, 5, correlation=1),
        runtime("cudaLaunchKernel", 5, 5, correlation=2),
        runtime("cudaStreamSynchronize", 10, 35),
        host("aten::add", 45, 55),
        device("Memcpy HtoD (Pinned -> Device)", 6, 74, 1, stream=8, cat="gpu_memcpy"),
        device("relu", 11, 29, 2),
    ]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert kinds(step) == {"host_compute": 55 * US, "sync": 5 * US, "kernel": 29 * US, "launch": 11 * US}
    assert predicted(result)["faster"] == 85_500_000
    assert predicted(critical(tmp_path, events, faster="copy", factor=4))["faster"] == 100 * US
    # By name: "relu" 2x faster is the same change as every kernel 2x faster here.
    assert predicted(critical(tmp_path, events, faster="^rel"))["faster"] == 85_500_000


def test_a_launch_blocked_on_a_full_queue_waits_for_the_kernel_that_freed_a_slot(tmp_path):
    # Launches [0, 2), [2, 4), [4, 6) -> kernels [3, 50), [50, 90), [90, 95) on stream 7; the
    # fourth launch [6, 51) takes 45 us against the median call's 2 (> 10x: blocked) and
    # returns 1 us after the first kernel ends (within two median calls): it waited for that
    # kernel. Then aten::add [51, 100).
    # Path: aten::add 49 (host) <- the launch's return [50, 51): sync 1 <- kernel 1, 47 <-
    # its queueing [2, 3): launch 1 <- its launch 2. Host 49, sync 1, kernel 47, launch 3.
    events = [
        STEP,
        runtime("cudaLaunchKernel", 0, 2, correlation=1),
        runtime("cudaLaunchKernel", 2, 2, correlation=2),
        runtime("cudaLaunchKernel", 4, 2, correlation=3),
        runtime("cudaLaunchKernel", 6, 45, correlation=4),
        host("aten::add", 51, 49),
        device("k1", 3, 47, 1),
        device("k2", 50, 40, 2),
        device("k3", 90, 5, 3),
        device("k4", 95, 2, 4),
    ]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert kinds(step) == {"host_compute": 49 * US, "sync": 1 * US, "kernel": 47 * US, "launch": 3 * US}
    # Kernels 2x faster: k1 [3, 26.5), the launch returns at 27.5, the add ends at 76.5.
    # Launches halved (the blocked one keeps the median 2, halved to 1): the first launch
    # [0, 1), k1 [2, 49) (its 1 us queueing kept), the return at 50, the add to 99.
    assert predicted(result) == {"input_free": 100 * US, "launch_halved": 99 * US, "faster": 76_500_000, "collectives_overlapped": 100 * US}


def test_kernels_inside_a_streams_annotation_are_nodes(tmp_path):
    # Kineto's gpu_user_annotation "## forward ##" spans [6, 80) on stream 7 and holds its
    # two kernels: launch [0, 5) -> k1 [6, 40), launch [5, 10) -> k2 [40, 80);
    # cudaDeviceSynchronize [10, 85) waits for k2; aten::add [85, 100).
    # Path: add 15 <- the sync's return [80, 85): 5 <- k2 40 <- k1 34 <- k1's queueing [5,
    # 6): launch 1 <- its launch 5. Kernels 2x faster: k1 [6, 23), k2 [23, 43), 48, 63.
    events = [
        STEP,
        runtime("cudaLaunchKernel", 0, 5, correlation=1),
        runtime("cudaLaunchKernel", 5, 5, correlation=2),
        runtime("cudaDeviceSynchronize", 10, 75),
        host("aten::add", 85, 15),
        {"ph": "X", "name": "## forward ##", "cat": "gpu_user_annotation", "pid": 0, "tid": 7, "ts": 6, "dur": 74, "args": {"device": 0, "stream": 7}},
        device("k1", 6, 34, 1),
        device("k2", 40, 40, 2),
    ]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert kinds(step) == {"host_compute": 15 * US, "sync": 5 * US, "kernel": 74 * US, "launch": 6 * US}
    assert predicted(result)["faster"] == 63 * US


def test_segments_tile_the_step(tmp_path):
    events = [STEP, runtime("cudaLaunchKernel", 0, 5, correlation=1), runtime("cudaDeviceSynchronize", 5, 90), device("k", 7, 80, 1), host("aten::add", 95, 5)]
    (step,) = critical(tmp_path, events)["steps"]
    segments = sorted((segment["start_ps"], segment["end_ps"]) for segment in segment_rows(step["segments"]))
    assert segments[0][0] == 0 and segments[-1][1] == 100 * US
    assert all(previous[1] == current[0] for previous, current in itertools.pairwise(segments))


def test_a_bad_pattern_is_an_option_error(tmp_path):
    with pytest.raises(OptionError, match="option faster"):
        critical(tmp_path, [STEP], faster="(")


def test_input_free_predicts_the_rerun_without_the_sleep(tmp_path):
    # Medians, not means: on a shared CPU one step in six can lose its core for 100 ms.
    predicted, measured, job_median = predicted_and_measured(profiled_job(tmp_path, "input", LOADER_SLEEP_S), "input_free")
    assert job_median > measured + LOADER_SLEEP_S * 1e12 / 2  # the sleep is in the job's steps
    assert abs(predicted - measured) <= 0.15 * measured, (predicted, measured, job_median)


def test_an_op_2x_faster_predicts_the_rerun_with_the_op_halved(tmp_path):
    """The what-if "slow_op 2x faster" on steps holding a 60 ms op, against the re-run's steps,
    whose op takes 30 ms."""
    profile = profiled_job(tmp_path, "slow-op", 0.0, SLOW_OP_S)
    predicted, measured, job_median = predicted_and_measured(profile, "faster", faster="^slow_op$", factor=2)
    assert job_median > measured + SLOW_OP_S * 1e12 / 4  # the op's other half is in the job's steps
    assert abs(predicted - measured) <= 0.15 * measured, (predicted, measured, job_median)


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda path: path.name.split(".")[0])
def test_every_shared_trace(path):
    profile = stepscope.load(path)
    result = run_tool("critical_path", profile).to_json()
    steps = find_steps(profile)
    assert [step["step"] for step in result["steps"]] == steps.number.tolist()
    for step, start, duration in zip(result["steps"], steps.start_ps.tolist(), steps.duration_ps.tolist()):
        assert step["duration_ps"] == duration
        assert sum(step["by_kind_ps"].values()) == duration
        assert all(start <= segment["start_ps"] < segment["end_ps"] <= start + duration for segment in segment_rows(step["segments"]))
        assert sum(segment["end_ps"] - segment["start_ps"] for segment in segment_rows(step["segments"])) == duration
    # Re-scheduled with the recorded durations, the graph gives back the recorded starts,
    # and so each what-if's baseline is the recorded step time.
    graph = build_graph(profile, steps)
    bind = binding(graph)
    assert (bind.residual_ps >= 0).all()
    assert np.array_equal(schedule(graph, bind.residual_ps, graph.fixed_ps), graph.start_ps)
    for change in result["what_if"]:
        assert 0 < change["predicted_step_ps"] <= result["mean_step_ps"]
