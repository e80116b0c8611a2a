"""A synthetic Kineto (torch.profiler) trace shaped like multi-GPU LLM training, written as
it is generated: never more than one step of one rank in memory.

One file for a host of ``RANKS`` GPUs, as torch.profiler writes a rank's trace but with
every rank's host thread and GPU in it (the scale bench's one profile): each rank's
trainer thread runs steps (``ProfilerStep#N``) of modules and aten ops; most ops launch
one kernel (``cudaLaunchKernel``), every ``GRAPH_EVERY``-th launches a CUDA graph
(``cudaGraphLaunch``, ``GRAPH_KERNELS`` kernels with the launch's correlation id), and
each step ends with NCCL all-reduces on a stream of their own. Each launch and its first
kernel are linked by an ``ac2g`` flow (``s`` at the launch, ``f`` with ``"bp": "e"`` at the
kernel), with Kineto's keys and args ("External id", "correlation", "grid", ...), and
timestamps in microseconds with three decimals, after ``baseTimeNanoseconds``.

    .venv/bin/python bench/kineto_synth.py --events 1000000 --out bench/out/synth.pt.trace.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

RANKS = 8
HOST_PID = 4000  # rank r's trainer: pid HOST_PID + r, tid the same
COMPUTE_STREAM, NCCL_STREAM = 7, 13
GRAPH_EVERY = 8  # every 8th launch is a CUDA graph
GRAPH_KERNELS = 12
OPS_PER_STEP = 400  # aten ops per rank per step (each launches)
NCCL_PER_STEP = 4
BASE_TIME_NS = 1_712_000_000_000_000_000
MODULES = ("nn.Module: Linear", "nn.Module: LayerNorm", "nn.Module: MultiheadAttention", "nn.Module: Embedding")
OPS = ("aten::mm", "aten::addmm", "aten::add_", "aten::mul", "aten::softmax", "aten::layer_norm", "aten::gelu", "aten::copy_")
KERNELS = (
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
    "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t> >",
)
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
# Events one step of one rank makes (counted by ``_step``): the step, modules, per op its op, launch, two flow ends and kernel, a graph's extra kernels, NCCL.
_GRAPHS = OPS_PER_STEP // GRAPH_EVERY
EVENTS_PER_STEP = 1 + OPS_PER_STEP // 10 + OPS_PER_STEP * 5 + _GRAPHS * (GRAPH_KERNELS - 1) + NCCL_PER_STEP * 5


def _x(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, args: str) -> str:
    return f'{{"ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {pid}, "tid": {tid}, "ts": {ts:.3f}, "dur": {dur:.3f}, "args": {{{args}}}}}'


def _flow(phase: str, flow_id: int, pid: int, tid: int, ts: float) -> str:
    bind = ', "bp": "e"' if phase == "f" else ""
    return f'{{"ph": "{phase}", "id": {flow_id}, "pid": {pid}, "tid": {tid}, "ts": {ts:.3f}, "cat": "ac2g", "name": "ac2g"{bind}}}'


def _kernel(name: str, rank: int, stream: int, ts: float, dur: float, external: int, correlation: int) -> str:
    args = (
        f'"External id": {external}, "queued": 0, "device": {rank}, "context": 1, "stream": {stream}, "correlation": {correlation}, '
        f'"registers per thread": 128, "shared memory": 49152, "blocks per SM": 1.185185, "warps per SM": 9.481481, '
        f'"grid": [128, 8, 1], "block": [256, 1, 1], "est. achieved occupancy %": 12'
    )
    return _x("kernel", name, rank, stream, ts, dur, args)


def _step(rank: int, step: int, start: float, counter: list[int]) -> Iterator[str]:
    """One step of one rank (``EVENTS_PER_STEP`` events); ``counter`` holds the next
    correlation id (shared by the ranks, as CUPTI's is per process)."""
    pid = tid = HOST_PID + rank
    op_us, launch_us = 40.0, 6.0
    step_us = OPS_PER_STEP * op_us + NCCL_PER_STEP * 300.0 + 50.0
    yield _x("user_annotation", f"ProfilerStep#{step}", pid, tid, start, step_us, '"External id": 1, "Record function id": 0')
    gpu_free = start + 20.0
    at = start + 10.0
    for op in range(OPS_PER_STEP):
        external = step * 10_000 + op
        if op % 10 == 0:
            yield _x("python_function", MODULES[(op // 10) % len(MODULES)], pid, tid, at, op_us * 10 - 1.0, f'"Python id": {op}, "Python parent id": 0')
        yield _x(
            "cpu_op",
            OPS[op % len(OPS)],
            pid,
            tid,
            at + 1.0,
            op_us - 2.0,
            f'"External id": {external}, "Record function id": 0, "Sequence number": {op}, "Fwd thread id": 0, "Ev Idx": {op}',
        )
        correlation = counter[0]
        counter[0] += 1
        graph = op % GRAPH_EVERY == GRAPH_EVERY - 1
        launch = "cudaGraphLaunch" if graph else "cudaLaunchKernel"
        launched = at + 2.0
        yield _x(
            "cuda_runtime", launch, pid, tid, launched, launch_us, f'"External id": {external}, "cbid": {311 if graph else 211}, "correlation": {correlation}'
        )
        kernel_start = max(gpu_free, launched + 5.0)
        yield _flow("s", correlation, pid, tid, launched)
        yield _flow("f", correlation, rank, COMPUTE_STREAM, kernel_start)
        for k in range(GRAPH_KERNELS if graph else 1):
            dur = 3.0 + (op * 7 + k * 3) % 29
            yield _kernel(KERNELS[(op + k) % len(KERNELS)], rank, COMPUTE_STREAM, kernel_start, dur, external, correlation)
            kernel_start += dur + 0.5
        gpu_free = kernel_start
        at += op_us
    for _ in range(NCCL_PER_STEP):
        correlation = counter[0]
        counter[0] += 1
        yield _x("cpu_op", "c10d::allreduce_", pid, tid, at, 20.0, f'"External id": {correlation}, "Record function id": 0')
        yield _x("cuda_runtime", "cudaLaunchKernel", pid, tid, at + 5.0, launch_us, f'"External id": {correlation}, "cbid": 211, "correlation": {correlation}')
        yield _flow("s", correlation, pid, tid, at + 5.0)
        yield _flow("f", correlation, rank, NCCL_STREAM, at + 12.0)
        yield _kernel(NCCL, rank, NCCL_STREAM, at + 12.0, 280.0, correlation, correlation)
        at += 300.0


def _metadata() -> Iterator[str]:
    for rank in range(RANKS):
        host = HOST_PID + rank
        yield f'{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {host}, "tid": 0, "args": {{"name": "python3"}}}}'
        yield f'{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {host}, "tid": {host}, "args": {{"name": "thread {host} (python3)"}}}}'
        yield f'{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {rank}, "tid": 0, "args": {{"name": "python3"}}}}'
        yield f'{{"name": "process_labels", "ph": "M", "ts": 0.000, "pid": {rank}, "tid": 0, "args": {{"labels": "GPU {rank}"}}}}'
        for stream in (COMPUTE_STREAM, NCCL_STREAM):
            yield f'{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {rank}, "tid": {stream}, "args": {{"name": "stream {stream}"}}}}'


def events(count: int) -> Iterator[str]:
    """About ``count`` events (whole steps of every rank, at least one): the metadata, then
    step by step, rank by rank."""
    yield from _metadata()
    steps = max(1, round(count / (EVENTS_PER_STEP * RANKS)))
    counter = [1]
    step_us = OPS_PER_STEP * 40.0 + NCCL_PER_STEP * 300.0 + 100.0
    for step in range(steps):
        for rank in range(RANKS):
            yield from _step(rank, step, 5_000.0 + step * step_us + rank * 0.25, counter)


def write(out: IO[str], count: int) -> int:
    """Writes the trace; returns the number of events written."""
    out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [')
    out.write(
        ",".join(
            f'{{"id": {r}, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045477376, "computeMajor": 9, "computeMinor": 0, "numSms": 132}}'
            for r in range(RANKS)
        )
    )
    out.write('],\n  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},\n  "record_shapes": 1,\n  "traceEvents": [\n')
    written = 0
    batch: list[str] = []
    for event in events(count):
        batch.append(event)
        if len(batch) == 10_000:
            out.write(("" if not written else ",\n") + ",\n".join(batch))
            written += len(batch)
            batch = []
    if batch:
        out.write(("" if not written else ",\n") + ",\n".join(batch))
        written += len(batch)
    out.write(f'\n  ],\n  "traceName": "synthetic",\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {BASE_TIME_NS}\n}}\n')
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, required=True, help="the trace to write (.gz: gzipped)")
    args = parser.parse_args(argv)
    temp = args.out.with_name(args.out.name + ".tmp")
    opener = gzip.open if args.out.suffix == ".gz" else open
    with opener(temp, "wt", encoding="utf-8") as out:  # type: ignore[operator]
        written = write(out, args.events)
    temp.replace(args.out)
    print(f"{args.out}: {written:,} events, {args.out.stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
