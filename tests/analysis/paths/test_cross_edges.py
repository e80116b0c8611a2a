"""critical_path across lines: a thread blocked in ``backward()`` joined to the autograd
thread's work (Kineto's fwdbwd flows), and a stream waiting for another stream's event
(Kineto's ``cuda_sync`` ``Wait Event``), on hand-made Kineto traces whose paths and
what-ifs are derived by hand (times in us; the conventions of tools/test_critical_path.py)."""

from __future__ import annotations

from tests.support.critical_paths import STEP, US, critical, device, host, kinds, predicted, runtime, segment_rows


def on_thread(event: dict, tid: int) -> dict:
    return {**event, "tid": tid}


def flow(phase: str, ident: int, ts: int, tid: int) -> dict:
    point = {"ph": phase, "id": ident, "pid": 100, "tid": tid, "ts": ts, "cat": "fwdbwd", "name": "fwdbwd"}
    return point | ({"bp": "e"} if phase == "f" else {})


def test_the_thread_blocked_in_backward_joins_the_autograd_threads_work(tmp_path):
    # Thread 1 runs the step: aten::linear [0, 10) (its fwdbwd flow starts at 5), then
    # blocks in backward() [10, 90) (nothing recorded but a marker), then aten::add [90, 100).
    # Thread 2, the autograd thread: LinearBackward [15, 40) (the flow ends at 15) launching
    # [20, 25) a kernel that runs [26, 70) on stream 7; cudaStreamSynchronize [40, 72) waits
    # for it; AccumulateGrad [72, 85).
    # Path from the step's end: aten::add 10 (host) <- thread 1's return after thread 2's
    # last op [85, 90): sync 5 <- AccumulateGrad 13 (host) <- the synchronisation's return
    # [70, 72): sync 2 <- the kernel 44 <- its queueing [25, 26): launch 1 <- the launch 5
    # <- LinearBackward [15, 20): host 5 <- the fork, thread 2 starting after thread 1
    # blocked [10, 15): host 5 <- aten::linear 10 (host). Host 43, sync 7, kernel 44, launch 6.
    events = [
        STEP,
        host("aten::linear", 0, 10),
        flow("s", 1, 5, 1),
        host("## backward ##", 10, 80, "user_annotation"),
        host("aten::add", 90, 10),
        on_thread(host("autograd::engine::evaluate_function: LinearBackward", 15, 25), 2),
        flow("f", 1, 15, 2),
        on_thread(runtime("cudaLaunchKernel", 20, 5, correlation=1), 2),
        on_thread(runtime("cudaStreamSynchronize", 40, 32), 2),
        on_thread(host("autograd::engine::evaluate_function: AccumulateGrad", 72, 13), 2),
        device("gemm_backward", 26, 44, 1),
    ]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert kinds(step) == {"host_compute": 43 * US, "sync": 7 * US, "kernel": 44 * US, "launch": 6 * US}
    assert step["top"][0] == {"name": "gemm_backward", "kind": "kernel", "ps": 44 * US}
    # Kernels 2x faster: the kernel [26, 48), the sync returns at 50, AccumulateGrad to 63,
    # thread 1 resumes at 68 and ends at 78. Launches halved: the launch [20, 22.5), the
    # kernel [23.5, 67.5), 69.5, 82.5, 87.5 -> 97.5. (Without the join, thread 1's blocked
    # span was fixed host time and neither change moved the step's end.)
    assert predicted(result) == {"input_free": 100 * US, "launch_halved": 97_500_000, "faster": 78 * US, "collectives_overlapped": 100 * US}


def wait_event(ts: int, correlation: int, stream: int, on_stream: int, record_correlation: int) -> dict:
    args = {"device": 0, "stream": stream, "correlation": correlation, "wait_on_stream": on_stream, "wait_on_cuda_event_record_corr_id": record_correlation}
    return {"ph": "X", "name": "Wait Event", "cat": "cuda_sync", "pid": 0, "tid": stream, "ts": ts, "dur": 0, "args": args}


def test_a_stream_waits_for_the_event_recorded_on_another(tmp_path):
    # Launch [0, 5) -> producer [6, 60) on stream 7; cudaEventRecord [5, 8) records stream 7
    # (after the producer); cudaStreamWaitEvent [8, 10) makes stream 8 wait for it; launch
    # [10, 15) -> consumer [60, 80) on stream 8; cudaDeviceSynchronize [15, 85) waits for the
    # consumer; aten::add [85, 100).
    # Path: aten::add 15 (host) <- the sync's return [80, 85): 5 <- consumer 20 <- (the wait:
    # no gap) producer 54 <- its queueing [5, 6): launch 1 <- its launch 5. Host 15, sync 5,
    # kernel 74, launch 6. Without the wait edge the consumer's start would be queueing
    # after its launch (launch 45 of it).
    events = [
        STEP,
        runtime("cudaLaunchKernel", 0, 5, correlation=1),
        runtime("cudaEventRecord", 5, 3, correlation=2),
        runtime("cudaStreamWaitEvent", 8, 2, correlation=3),
        runtime("cudaLaunchKernel", 10, 5, correlation=4),
        runtime("cudaDeviceSynchronize", 15, 70),
        host("aten::add", 85, 15),
        device("producer", 6, 54, 1, stream=7),
        wait_event(16, 3, stream=8, on_stream=7, record_correlation=2),
        device("consumer", 60, 20, 4, stream=8),
    ]
    result = critical(tmp_path, events)
    (step,) = result["steps"]
    assert kinds(step) == {"host_compute": 15 * US, "sync": 5 * US, "kernel": 74 * US, "launch": 6 * US}
    assert [(segment["name"], segment["end_ps"] - segment["start_ps"]) for segment in segment_rows(step["segments"])[2:4]] == [
        ("consumer", 20 * US),
        ("producer", 54 * US),
    ]
    # Kernels 2x faster: producer [6, 33), consumer [33, 43), the sync returns at 48, the
    # add ends at 63. Launches halved: producer [3.5, 57.5), consumer [57.5, 77.5), 82.5,
    # 97.5. (Without the edge: the consumer at 60 either way, 70 and 100.)
    assert predicted(result) == {"input_free": 100 * US, "launch_halved": 97_500_000, "faster": 63 * US, "collectives_overlapped": 100 * US}
