"""Makes the trace viewer benchmark's big profile: a synthetic XSpace shaped like a real one.

A multi-GPU PyTorch-like training job on one host, ``--events`` events in all (default
10,000,000), built as numpy columns (no per-event Python work) and written with
``stepscope.save`` as ``.xplane.pb``, so XProf opens the same file:

- ``/host:CPU``: 8 trainer threads, one per GPU, each running ``--steps`` steps
  (``ProfilerStep#N``, what ``find_steps`` looks for) of nested ops: modules (depth 1),
  aten ops (depth 2), some with sub-ops (depth 3, 4), leaves launching kernels with
  ``cudaLaunchKernel`` (depth 3 to 5); plus ~2000 helper threads (data loader workers,
  pin memory, thread pools) with heavy-tailed event counts (a few busy, most nearly idle),
  nested one or two deep;
- ``/device:GPU:0..7``, 4 streams each (compute, two NCCL, memcpy): one kernel per
  launch, queued in launch order (a kernel starts when launched and when its stream is
  free), carrying the launch's ``correlation_id``; the profile's flow table links each
  launch to its kernel (XSpace ``flow`` stats once written).

Shares: kernels ~30%, launches ~30%, trainer ops ~25%, helper threads ~15%.

    .venv/bin/python bench/make_big_profile.py [--events N] [--out PATH] [--force]

Cached: a sidecar ``<out>.meta.json`` records the file, its size and the arguments; a
later run with a matching sidecar does nothing. 10M events take a few minutes (the
XSpace writer is per-event Python) and a few GiB of memory.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from stepscope.trace.builder import RawPlane, earliest_start, finish_plane
from stepscope.trace.model import NO_ID, EventMetadata, FlowTable, Line, Profile
from stepscope.trace.stats import EmptyStats
from stepscope.trace.writers import save

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
DEFAULT_EVENTS = 10_000_000
GPUS = 8
HELPER_THREADS = 2000
STREAMS = ["stream 7 (compute)", "stream 13 (nccl)", "stream 14 (nccl)", "stream 21 (memcpy)"]
STREAM_SHARE = np.asarray([0.78, 0.08, 0.04, 0.10])
START_NS = 1_700_000_000_000_000_000
STEP_PS = 200_000_000_000  # 200 ms
MS = 1_000_000_000

MODULES = [f"nn.Module: {n}" for n in ("Linear", "Conv2d", "BatchNorm2d", "ReLU", "MultiheadAttention", "LayerNorm", "Embedding", "Dropout")]
MODULES += [
    "Optimizer.step#AdamW.step",
    "Optimizer.zero_grad#AdamW.zero_grad",
    "DistributedDataParallel.forward",
    "autograd::engine::evaluate_function: AddmmBackward0",
]
ATEN = [
    f"aten::{n}"
    for n in (
        "conv2d",
        "convolution",
        "_convolution",
        "cudnn_convolution",
        "addmm",
        "mm",
        "bmm",
        "matmul",
        "linear",
        "relu",
        "relu_",
        "add",
        "add_",
        "mul",
        "mul_",
        "div",
        "sum",
        "mean",
        "copy_",
        "to",
        "_to_copy",
        "empty",
        "zeros",
        "fill_",
        "cat",
        "stack",
        "view",
        "reshape",
        "transpose",
        "permute",
        "contiguous",
        "softmax",
        "_softmax",
        "layer_norm",
        "native_layer_norm",
        "batch_norm",
        "native_batch_norm",
        "dropout",
        "embedding",
        "index_select",
        "gelu",
        "tanh",
        "sigmoid",
        "t",
        "expand",
        "clone",
        "_foreach_add_",
        "_foreach_mul_",
        "addcdiv_",
        "sqrt",
    )
]
KERNELS = [
    f"{prefix}_{shape}_kernel"
    for prefix in (
        "ampere_sgemm",
        "volta_h884gemm",
        "cutlass_tensorop",
        "elementwise",
        "vectorized_elementwise",
        "reduce",
        "softmax_warp_forward",
        "layer_norm",
        "batch_norm_collect_statistics",
        "cudnn_conv",
    )
    for shape in ("32x32", "64x64", "128x64", "128x128", "256x128", "nn", "nt", "tn")
]
NCCL = ["ncclKernel_AllReduce_RING_LL_Sum_float", "ncclKernel_AllGather_RING_LL", "ncclKernel_ReduceScatter_RING_LL_Sum_float"]
MEMCPY = ["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pageable)", "Memcpy DtoD (Device -> Device)"]
HELPER = [
    "DataLoader.__next__",
    "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
    "pin_memory",
    "collate_fn",
    "Dataset.__getitem__",
    "decode_jpeg",
    "RandomResizedCrop",
    "Normalize",
    "ToTensor",
    "gloo:all_reduce",
    "c10d::allreduce_",
    "record_param_comms",
    "cudaStreamSynchronize",
    "cudaMemcpyAsync",
    "ThreadPool::run",
    "at::parallel_for",
    "torch::autograd::AccumulateGrad",
    "Logging.flush",
    "checkpoint.save",
    "tensorboard.add_scalar",
]


def meta_path(out: Path) -> Path:
    return out.with_name(out.name + ".meta.json")


def children(
    rng: np.random.Generator, start: np.ndarray, duration: np.ndarray, fanout: np.ndarray, fill: tuple[float, float] = (0.55, 0.95)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``fanout[i]`` non-overlapping children inside each parent ``i``: the parent is cut in
    equal slots and each child covers a random part of its slot. Returns (parent, start, duration)."""
    fanout = np.asarray(fanout, dtype=np.int64)
    total = int(fanout.sum())
    parent = np.repeat(np.arange(len(fanout)), fanout)
    slot_index = np.arange(total) - np.repeat(np.cumsum(fanout) - fanout, fanout)
    slot = duration[parent] / np.maximum(fanout[parent], 1)
    cover = rng.uniform(*fill, total)
    lead = rng.uniform(0.0, 1.0, total) * (1.0 - cover)
    child_start = start[parent] + np.floor((slot_index + lead) * slot).astype(np.int64)
    child_duration = np.maximum(np.floor(cover * slot).astype(np.int64), 1)
    return parent, child_start, child_duration


class Columns:
    """A plane's events as they are generated: appended in blocks, joined once."""

    def __init__(self) -> None:
        self.blocks: dict[str, list[np.ndarray]] = {k: [] for k in ("start", "duration", "name", "line", "correlation")}

    def add(self, start, duration, name, line, correlation=None) -> tuple[int, int]:
        first = sum(len(b) for b in self.blocks["start"])
        count = len(start)
        self.blocks["start"].append(np.asarray(start, dtype=np.int64))
        self.blocks["duration"].append(np.asarray(duration, dtype=np.int64))
        self.blocks["name"].append(np.broadcast_to(np.asarray(name, dtype=np.int32), (count,)).copy())
        self.blocks["line"].append(np.broadcast_to(np.asarray(line, dtype=np.int32), (count,)).copy())
        corr = np.full(count, NO_ID, dtype=np.int64) if correlation is None else np.asarray(correlation, dtype=np.int64)
        self.blocks["correlation"].append(corr)
        return first, first + count

    def joined(self) -> dict[str, np.ndarray]:
        return {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in self.blocks.items()}


def trainer_ops(rng: np.random.Generator, events: int, steps: int, host: Columns, names: dict[str, int]):
    """The trainer threads' op trees; returns the launches (host rows, thread, start, end)."""
    per_l2 = 5.9  # ops + launches + kernels per aten op, from the fanouts below (measured)
    l1_fanout = 8
    roots = GPUS * steps
    l2_mean = max(1.0, 0.85 * events / per_l2 / (roots * (l1_fanout + 1)))
    thread = np.repeat(np.arange(GPUS), steps)
    step_no = np.tile(np.arange(steps), GPUS)
    jitter = rng.integers(0, STEP_PS // 50, roots)
    root_start = step_no * STEP_PS + jitter
    root_dur = np.full(roots, STEP_PS - STEP_PS // 25, dtype=np.int64)
    step_names = np.asarray([names.setdefault(f"ProfilerStep#{n}", len(names)) for n in range(steps)], dtype=np.int32)
    host.add(root_start, root_dur, step_names[step_no], thread)

    module_ids = np.asarray([names.setdefault(n, len(names)) for n in MODULES], dtype=np.int32)
    aten_ids = np.asarray([names.setdefault(n, len(names)) for n in ATEN], dtype=np.int32)
    launch_id = names.setdefault("cudaLaunchKernel", len(names))

    p, s1, d1 = children(rng, root_start, root_dur, rng.poisson(l1_fanout - 1, roots) + 1)
    t1 = thread[p]
    host.add(s1, d1, module_ids[rng.integers(0, len(module_ids), len(s1))], t1)
    p, s2, d2 = children(rng, s1, d1, rng.poisson(l2_mean - 1, len(s1)) + 1)
    t2 = t1[p]
    host.add(s2, d2, aten_ids[rng.integers(0, len(aten_ids), len(s2))], t2)
    # Level 3: 40% of aten ops call sub-ops, the others launch.
    inner2 = rng.random(len(s2)) < 0.4
    p, s3, d3 = children(rng, s2[inner2], d2[inner2], rng.integers(1, 4, int(inner2.sum())))
    t3 = t2[inner2][p]
    host.add(s3, d3, aten_ids[rng.integers(0, len(aten_ids), len(s3))], t3)
    inner3 = rng.random(len(s3)) < 0.3
    p, s4, d4 = children(rng, s3[inner3], d3[inner3], rng.integers(1, 3, int(inner3.sum())))
    t4 = t3[inner3][p]
    host.add(s4, d4, aten_ids[rng.integers(0, len(aten_ids), len(s4))], t4)
    # Leaves launch 1-2 kernels each.
    leaf_start = np.concatenate((s2[~inner2], s3[~inner3], s4))
    leaf_dur = np.concatenate((d2[~inner2], d3[~inner3], d4))
    leaf_thread = np.concatenate((t2[~inner2], t3[~inner3], t4))
    p, ls, ld = children(rng, leaf_start, leaf_dur, rng.integers(1, 3, len(leaf_start)), fill=(0.2, 0.5))
    lt = leaf_thread[p]
    lo, hi = host.add(ls, ld, launch_id, lt, correlation=np.arange(len(ls)) + 1)
    return np.arange(lo, hi), lt, ls, ls + ld


def gpu_kernels(rng: np.random.Generator, launch_thread, launch_start, launch_end, names: dict[str, int]) -> list[Columns]:
    """One kernel per launch on the launching thread's GPU, queued per stream."""
    count = len(launch_start)
    stream = rng.choice(len(STREAMS), count, p=STREAM_SHARE)
    kernel_names = np.asarray([names.setdefault(n, len(names)) for n in KERNELS], dtype=np.int32)
    nccl_names = np.asarray([names.setdefault(n, len(names)) for n in NCCL], dtype=np.int32)
    memcpy_names = np.asarray([names.setdefault(n, len(names)) for n in MEMCPY], dtype=np.int32)
    name = np.where(
        stream == 0,
        kernel_names[rng.integers(0, len(kernel_names), count)],
        np.where(stream == 3, memcpy_names[rng.integers(0, len(memcpy_names), count)], nccl_names[rng.integers(0, len(nccl_names), count)]),
    )
    planes = []
    for gpu in range(GPUS):
        columns = Columns()
        for index in range(len(STREAMS)):
            rows = np.flatnonzero((launch_thread == gpu) & (stream == index))
            rows = rows[np.argsort(launch_start[rows], kind="stable")]
            if not len(rows):
                continue
            ready = launch_end[rows] + 2_000_000  # 2 us launch latency
            spacing = max(1, int((ready[-1] - ready[0]) // max(len(rows), 1)))
            duration = np.maximum(1000, (spacing * rng.lognormal(-1.2, 0.6, len(rows))).astype(np.int64))
            # start_k = max(ready_k, end_{k-1}): a running max over ready_k - durations before k.
            before = np.concatenate(([0], np.cumsum(duration)[:-1]))
            start = np.maximum.accumulate(ready - before) + before
            columns.add(start, duration, name[rows], index, correlation=rows + 1)
        planes.append(columns)
    return planes


def helper_threads(rng: np.random.Generator, events: int, span: int, host: Columns, names: dict[str, int]) -> None:
    """Heavy-tailed helper threads: Zipf-like counts, top-level events with a child or two."""
    weight = 1.0 / np.arange(1, HELPER_THREADS + 1) ** 1.1
    # Top-level events; each has 0.5 children on average, so 1.5x this in all.
    counts = np.maximum(rng.multinomial(int(events / 1.5), weight / weight.sum()), 1)
    thread = np.repeat(np.arange(HELPER_THREADS), counts) + GPUS
    gaps = rng.exponential(1.0, len(thread))
    first = np.cumsum(counts) - counts
    cumulative = np.cumsum(gaps)
    base = np.repeat(cumulative[first] - gaps[first], counts)
    totals = np.repeat(np.add.reduceat(gaps, first), counts)
    position = (cumulative - base) / (totals + 1.0)  # in (0, 1), increasing per thread
    start = (position * span).astype(np.int64)
    local_gap = (gaps / (totals + 1.0) * span).astype(np.int64)
    duration = np.maximum((local_gap * rng.uniform(0.1, 0.6, len(thread))).astype(np.int64), 1)
    # The next event starts one gap later; keep the duration inside it.
    next_start = np.concatenate((start[1:], [span]))
    same = np.concatenate((thread[1:] == thread[:-1], [False]))
    duration = np.where(same, np.minimum(duration, np.maximum(next_start - start - 1, 1)), duration)
    helper_ids = np.asarray([names.setdefault(n, len(names)) for n in HELPER], dtype=np.int32)
    host.add(start, duration, helper_ids[rng.integers(0, len(helper_ids), len(start))], thread)
    p, cs, cd = children(rng, start, duration, rng.poisson(0.5, len(start)))
    host.add(cs, cd, helper_ids[rng.integers(0, len(helper_ids), len(cs))], thread[p])


def metadata(names: dict[str, int]) -> EventMetadata:
    texts = list(names)
    categories = [
        "kernel" if ("kernel" in t.lower() or t.startswith(("nccl", "Memcpy"))) else "cuda_runtime" if t.startswith("cuda") else "cpu_op" for t in texts
    ]
    return EventMetadata(texts, [""] * len(texts), categories, [[] for _ in texts], [b""] * len(texts))


def raw_plane(plane_id: int, name: str, lines: list[Line], columns: Columns, meta: EventMetadata) -> RawPlane:
    data = columns.joined()
    ids = {"correlation_id": data["correlation"]} if np.any(data["correlation"] != NO_ID) else {}
    return RawPlane(plane_id, name, lines, meta, data["start"], data["duration"], data["name"], data["line"], EmptyStats(len(data["start"])), ids)


def make_profile(events: int = DEFAULT_EVENTS, steps: int = 50, seed: int = 0) -> Profile:
    """The synthetic profile, in memory (see the module docstring)."""
    rng = np.random.default_rng(seed)
    names: dict[str, int] = {}
    host = Columns()
    launch_rows, launch_thread, launch_start, launch_end = trainer_ops(rng, events, steps, host, names)
    gpus = gpu_kernels(rng, launch_thread, launch_start, launch_end, names)
    span = steps * STEP_PS
    helper_threads(rng, int(events * 0.15), span, host, names)
    meta = metadata(names)
    host_lines = [Line(i, f"trainer {i}", f"pt_main_thread {i}") for i in range(GPUS)]
    host_lines += [Line(GPUS + i, f"thread {10_000 + i}", _helper_label(i)) for i in range(HELPER_THREADS)]
    raws = [raw_plane(1, "/host:CPU", host_lines, host, meta)]
    for gpu, columns in enumerate(gpus):
        lines = [Line(index, name) for index, name in enumerate(STREAMS)]
        raws.append(raw_plane(2 + gpu, f"/device:GPU:{gpu}", lines, columns, meta))
    zero = earliest_start(raws) or 0
    finished = [finish_plane(raw, zero) for raw in raws]
    planes = [plane for plane, _ in finished]
    # Flows: launch (host row) -> kernel (GPU row), mapped through each plane's sort.
    position = [np.empty_like(order) for _, order in finished]
    for (_, order), where in zip(finished, position):
        where[order] = np.arange(len(order))
    host_events = planes[0].events
    launches = position[0][launch_rows]
    flow_src, flow_dst, flow_plane, flow_id = [], [], [], []
    for gpu in range(GPUS):
        kernel_corr = planes[1 + gpu].events.correlation_id
        order = np.argsort(kernel_corr)
        src_corr = host_events.correlation_id[launches]
        mine = np.isin(src_corr, kernel_corr)
        hit = launches[mine]
        flow_src.append(hit)
        flow_dst.append(order[np.searchsorted(kernel_corr, src_corr[mine], sorter=order)])
        flow_plane.append(np.full(len(hit), 1 + gpu, dtype=np.int32))
        flow_id.append(src_corr[mine])
    src = np.concatenate(flow_src)
    flows = FlowTable(
        flow_id=np.concatenate(flow_id),
        category=np.zeros(len(src), dtype=np.int32),
        src_plane=np.zeros(len(src), dtype=np.int32),
        src_event=src,
        dst_plane=np.concatenate(flow_plane),
        dst_event=np.concatenate(flow_dst),
        categories=["ac2g"],
    )
    return Profile(planes, START_NS + zero // 1000, "bighost", "synthetic", "xspace", flows)


def _helper_label(i: int) -> str:
    kinds = ("pt_data_worker", "pin_memory", "pt_thread_pool", "gloo", "python")
    return f"{kinds[i % len(kinds)]} {i}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="default: bench/out/big_<events>.xplane.pb")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    out = args.out or OUT / f"big_{args.events}.xplane.pb"
    wanted = {"events": args.events, "steps": args.steps, "seed": args.seed}
    try:
        meta = json.loads(meta_path(out).read_text())
        if not args.force and meta.get("args") == wanted and meta.get("size") == out.stat().st_size:
            print(f"{out}: up to date ({meta['event_count']:,} events)")
            return 0
    except (OSError, ValueError):
        pass
    t0 = time.perf_counter()
    profile = make_profile(args.events, args.steps, args.seed)
    t1 = time.perf_counter()
    profile.validate()
    print(
        f"built {profile.event_count:,} events, {len(profile.flows):,} flows, {sum(len(p.lines) for p in profile.planes):,} lines in {t1 - t0:.1f} s",
        flush=True,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    save(profile, out)
    t2 = time.perf_counter()
    print(f"wrote {out} ({out.stat().st_size / 2**20:.0f} MiB) in {t2 - t1:.1f} s")
    meta_path(out).write_text(json.dumps({"args": wanted, "size": out.stat().st_size, "event_count": profile.event_count, "flows": len(profile.flows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
