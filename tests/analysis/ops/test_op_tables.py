"""Op tables as users expect them: step markers and allocator events are not ops, PyTorch
ops have a category for a type, and the overview's top operations follow one rule.

Kineto trace below, in both schemas (today's categories and the 2021 ones, where
ProfilerStep#N is an ``Operator`` like the ops). Times in us; every expected number is
derived in the comments.

Host thread (pid 100, tid 1):
  ProfilerStep#5 [0,100)
    aten::conv2d [0,40)                          ext 1   self 40 - 36 = 4
      aten::convolution [2,38)                   ext 2   self 36 - 32 = 4
        aten::cudnn_convolution [4,36)           ext 3   self 32 (runtime calls are not ops)
          cudaMemsetAsync [6,8), cudaLaunchKernel [10,14)
    aten::add [40,50)                            ext 4   self 10
    aten::mm [50,80)                             ext 5   self 30
  ProfilerStep#6 [100,200)
    aten::layer_norm [100,130)                   ext 6   self 30 - 21 = 9
      aten::native_layer_norm [105,126)          ext 7   self 21
    aten::mm [130,150)                           ext 8   self 20
  ProfilerStep#7 [200,260)
    aten::add [200,210)                          ext 9   self 10
    aten::copy_ [210,232)                        ext 10  self 22
GPU 0 (pid 0, stream 7), each attributed by External id to the deepest op that has it:
  Memset (Device) [16,18)                        ext 3  -> aten::cudnn_convolution, memory copy
  sm80_xmma_fprop_implicit_gemm... [20,60)       ext 3  -> aten::cudnn_convolution, convolution
  vectorized_elementwise_kernel<add> [60,64)     ext 4  -> aten::add, elementwise
  volta_sgemm_64x64_nt [64,94)                   ext 5  -> aten::mm, GEMM
  vectorized_layer_norm_kernel [112,122)         ext 7  -> aten::native_layer_norm, normalization
  volta_sgemm_64x64_nt [137,157)                 ext 8  -> aten::mm, GEMM
  vectorized_elementwise_kernel<add> [204,206)   ext 9  -> aten::add, elementwise
  Memcpy HtoD (Pageable -> Device) [216,228)     ext 10 -> aten::copy_, memory copy
  ncclKernel_AllReduce... [230,250)              no op  -> itself, communication
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.ops.op_categories import (
    ATTENTION,
    COMMUNICATION,
    CONVOLUTION,
    ELEMENTWISE,
    GEMM,
    MEMORY_COPY,
    NORMALIZATION,
    OTHER,
    REDUCTION,
    category_of,
)
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.tools.overview_page import top_operations
from stepscope.protos import xplane_pb2
from tests.support.traces import KINETO_TRACES, XPLANE_TRACES

US = 1_000_000
CONV_KERNEL = "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5_warpsize2x2x1_g1_tensor16x8x8"
ADD_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >"
    "(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
)
LAYER_NORM_KERNEL = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
    "(int, float, float const*, float const*, float const*, float*, float*, float*)"
)
NCCL_KERNEL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"

# Kineto's categories, today and in the 2021 schema (where steps are Operators too).
SCHEMAS = {
    "today": {"op": "cpu_op", "step": "user_annotation", "runtime": "cuda_runtime", "kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"},
    "2021": {"op": "Operator", "step": "Operator", "runtime": "Runtime", "kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset"},
}


def _x(name, cat, pid, tid, ts, dur, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kineto_events(schema: str, device: bool = True) -> list[dict]:
    c = SCHEMAS[schema]

    def op(name, ts, dur, ext):
        return _x(name, c["op"], 100, 1, ts, dur, **{"External id": ext})

    def gpu(name, cat, ts, dur, ext=None, correlation=0):
        ids = {"External id": ext} if ext is not None else {}
        return _x(name, c[cat], 0, 7, ts, dur, device=0, stream=7, correlation=correlation, **ids)

    host = [
        _x("ProfilerStep#5", c["step"], 100, 1, 0, 100, **{"External id": 100}),
        op("aten::conv2d", 0, 40, 1),
        op("aten::convolution", 2, 36, 2),
        op("aten::cudnn_convolution", 4, 32, 3),
        _x("cudaMemsetAsync", c["runtime"], 100, 1, 6, 2, correlation=1, **{"External id": 3}),
        _x("cudaLaunchKernel", c["runtime"], 100, 1, 10, 4, correlation=2, **{"External id": 3}),
        op("aten::add", 40, 10, 4),
        op("aten::mm", 50, 30, 5),
        _x("ProfilerStep#6", c["step"], 100, 1, 100, 100, **{"External id": 101}),
        op("aten::layer_norm", 100, 30, 6),
        op("aten::native_layer_norm", 105, 21, 7),
        op("aten::mm", 130, 20, 8),
        _x("ProfilerStep#7", c["step"], 100, 1, 200, 60, **{"External id": 102}),
        op("aten::add", 200, 10, 9),
        op("aten::copy_", 210, 22, 10),
    ]
    devices = [
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        gpu("Memset (Device)", "memset", 16, 2, 3, 1),
        gpu(CONV_KERNEL, "kernel", 20, 40, 3, 2),
        gpu(ADD_KERNEL, "kernel", 60, 4, 4),
        gpu("volta_sgemm_64x64_nt", "kernel", 64, 30, 5),
        gpu(LAYER_NORM_KERNEL, "kernel", 112, 10, 7),
        gpu("volta_sgemm_64x64_nt", "kernel", 137, 20, 8),
        gpu(ADD_KERNEL, "kernel", 204, 2, 9),
        gpu("Memcpy HtoD (Pageable -> Device)", "memcpy", 216, 12, 10),
        gpu(NCCL_KERNEL, "kernel", 230, 20),
    ]
    return host + (devices if device else [])


def _load(tmp_path: Path, events: list[dict]) -> stepscope.Profile:
    path = tmp_path / "ops.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    profile = stepscope.load(path)
    profile.validate()
    return profile


@pytest.fixture(params=list(SCHEMAS))
def profile(request, tmp_path) -> stepscope.Profile:
    return _load(tmp_path, kineto_events(request.param))


def _rows(profile: stepscope.Profile, side: str) -> dict[tuple[str, str], tuple[int, float]]:
    rows = run_tool("framework_op_stats", profile).to_json()["rows"]
    return {(r["type"], r["name"]): (r["occurrences"], r["total_self_time_us"]) for r in rows if r["host_or_device"] == side}


def test_host_rows_are_the_ops_with_categories_and_no_step_markers(profile):
    # Self times from the module docstring: 8 rows, no ProfilerStep#N (in the 2021 schema
    # they are Operators, and were 3 rows more).
    assert _rows(profile, "Host") == {
        (CONVOLUTION, "aten::conv2d"): (1, 4.0),
        (CONVOLUTION, "aten::convolution"): (1, 4.0),
        (CONVOLUTION, "aten::cudnn_convolution"): (1, 32.0),
        (ELEMENTWISE, "aten::add"): (2, 20.0),  # 10 + 10
        (GEMM, "aten::mm"): (2, 50.0),  # 30 + 20
        (NORMALIZATION, "aten::layer_norm"): (1, 9.0),
        (NORMALIZATION, "aten::native_layer_norm"): (1, 21.0),
        (MEMORY_COPY, "aten::copy_"): (1, 22.0),
    }


def test_device_rows_take_the_launching_ops_category(profile):
    # The Memset launched by aten::cudnn_convolution is a memory copy whatever its op; the
    # all-reduce has no op and keeps its own name and category.
    assert _rows(profile, "Device") == {
        (MEMORY_COPY, "aten::cudnn_convolution"): (1, 2.0),
        (CONVOLUTION, "aten::cudnn_convolution"): (1, 40.0),
        (ELEMENTWISE, "aten::add"): (2, 6.0),  # 4 + 2
        (GEMM, "aten::mm"): (2, 50.0),  # 30 + 20
        (NORMALIZATION, "aten::native_layer_norm"): (1, 10.0),
        (MEMORY_COPY, "aten::copy_"): (1, 12.0),
        (COMMUNICATION, NCCL_KERNEL): (1, 20.0),
    }


def test_top_operations_are_the_device_side_by_self_time(profile):
    top = top_operations(OpStats(profile), limit=3)
    # Device self time 2 + 40 + 6 + 50 + 10 + 12 + 20 = 140 us. Ranked: aten::mm 50
    # (35.7%), aten::cudnn_convolution 40 (cumulative 90 -> 64.3%), the all-reduce 20
    # (cumulative 110 -> 78.6%). No source records flops: NaN.
    assert [(r["type"], r["name"], r["self_time_us"]) for r in top] == [
        (GEMM, "aten::mm", 50.0),
        (CONVOLUTION, "aten::cudnn_convolution", 40.0),
        (COMMUNICATION, NCCL_KERNEL, 20.0),
    ]
    assert [r["self_time_percent"] for r in top] == pytest.approx([100 * 50 / 140, 100 * 40 / 140, 100 * 20 / 140])
    assert [r["cumulative_self_time_percent"] for r in top] == pytest.approx([100 * 50 / 140, 100 * 90 / 140, 100 * 110 / 140])
    assert all(r["gflops_per_second"] != r["gflops_per_second"] for r in top)
    assert set(top[0]) == {"self_time_percent", "cumulative_self_time_percent", "type", "name", "gflops_per_second", "self_time_us", "full_name"}
    assert [r["full_name"] for r in top] == ["", "", ""]  # Kineto's names are the events' own
    # All seven device rows fit under the default limit of 10; the last one closes at 100%.
    everything = top_operations(OpStats(profile))
    assert len(everything) == 7 and everything[-1]["cumulative_self_time_percent"] == pytest.approx(100.0)


def test_top_operations_without_device_ops_are_the_host_side(tmp_path):
    top = top_operations(OpStats(_load(tmp_path, kineto_events("today", device=False))), limit=3)
    # Host self time 4 + 4 + 32 + 20 + 50 + 9 + 21 + 22 = 162 us. Ranked: aten::mm 50,
    # aten::cudnn_convolution 32, aten::copy_ 22.
    assert [(r["type"], r["name"], r["self_time_us"]) for r in top] == [
        (GEMM, "aten::mm", 50.0),
        (CONVOLUTION, "aten::cudnn_convolution", 32.0),
        (MEMORY_COPY, "aten::copy_", 22.0),
    ]
    assert [r["cumulative_self_time_percent"] for r in top] == pytest.approx([100 * 50 / 162, 100 * 82 / 162, 100 * 104 / 162])


# --- TensorFlow-shaped XSpace: allocator events and step markers ------------------------------


def tf_space() -> xplane_pb2.XSpace:
    """One TensorFlow executor thread, times in us from the line's start.

    step 0 [0,50), step 1 [50,100): step markers (step_num) named like executor ops
    model/dense/MatMul:MatMul [10,20) and [60,70); model/dense/Relu:Relu [20,25)
    MemoryAllocation at 12 and 62, MemoryDeallocation at 18 (tf_op MatMul's), MemoryAllocation
    at 22 (tf_op Relu's): zero-duration allocator records naming the op they serve.
    """
    space = xplane_pb2.XSpace(hostnames=["host-1"])
    plane = space.planes.add(id=1, name="/host:CPU")
    stat_ids = {"step_num": 1, "tf_op": 2, "allocation_bytes": 3}
    for name, key in stat_ids.items():
        plane.stat_metadata[key].CopyFrom(xplane_pb2.XStatMetadata(id=key, name=name))
    event_ids = {"train:Train": 1, "model/dense/MatMul:MatMul": 2, "model/dense/Relu:Relu": 3, "MemoryAllocation": 4, "MemoryDeallocation": 5}
    for name, key in event_ids.items():
        plane.event_metadata[key].CopyFrom(xplane_pb2.XEventMetadata(id=key, name=name))
    line = plane.lines.add(id=11, name="tf_executor", timestamp_ns=1000)

    def event(name: str, start_us: int, duration_us: int = 0, **stats) -> None:
        added = line.events.add(metadata_id=event_ids[name], offset_ps=start_us * US, duration_ps=duration_us * US)
        for key, value in stats.items():
            if isinstance(value, str):
                added.stats.add(metadata_id=stat_ids[key], str_value=value)
            else:
                added.stats.add(metadata_id=stat_ids[key], int64_value=value)

    event("train:Train", 0, 50, step_num=0)
    event("model/dense/MatMul:MatMul", 10, 10)
    event("MemoryAllocation", 12, tf_op="model/dense/MatMul:MatMul", allocation_bytes=4096)
    event("MemoryDeallocation", 18, tf_op="model/dense/MatMul:MatMul", allocation_bytes=4096)
    event("model/dense/Relu:Relu", 20, 5)
    event("MemoryAllocation", 22, tf_op="model/dense/Relu:Relu", allocation_bytes=1024)
    event("train:Train", 50, 50, step_num=1)
    event("model/dense/MatMul:MatMul", 60, 10)
    event("MemoryAllocation", 62, tf_op="model/dense/MatMul:MatMul", allocation_bytes=4096)
    return space


def test_allocator_events_and_step_markers_are_not_ops(tmp_path):
    path = tmp_path / "host-1.xplane.pb"
    path.write_bytes(tf_space().SerializeToString())
    profile = stepscope.load(path)
    profile.validate()
    rows = run_tool("framework_op_stats", profile).to_json()["rows"]
    # MatMul ran twice (10 + 10 us), Relu once (5 us); counting the allocator events that
    # name them would make MatMul 2 + 3 = 5 occurrences and Relu 2. The steps carry
    # step_num, so their executor-like name does not make them ops. Types stay TensorFlow's.
    assert {(r["type"], r["name"]): (r["occurrences"], r["total_time_us"], r["total_self_time_us"]) for r in rows} == {
        ("MatMul", "model/dense/MatMul"): (2, 20.0, 20.0),
        ("Relu", "model/dense/Relu"): (1, 5.0, 5.0),
    }


@pytest.mark.parametrize("path", XPLANE_TRACES, ids=lambda p: p.name)
def test_real_xspace_host_ops_leave_out_allocator_events(path: Path):
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    (host,) = [plane for plane in space.planes if plane.name == "/host:CPU"]
    op_stats = {key for key, meta in host.stat_metadata.items() if meta.name in ("tf_op", "hlo_op")}
    allocator = {key for key, meta in host.event_metadata.items() if meta.name in ("MemoryAllocation", "MemoryDeallocation")}
    with_op_stat = [e for line in host.lines for e in line.events if any(s.metadata_id in op_stats for s in e.stats)]
    expected = sum(1 for e in with_op_stat if e.metadata_id not in allocator)
    # The TPU sample's only host events with a tf_op are 14 MemoryAllocations (tf_op
    # "dummy"): once a "dummy" host op of 14 occurrences, now none.
    assert len(with_op_stat) > expected
    rows = run_tool("framework_op_stats", stepscope.load(path)).to_json()["rows"]
    assert sum(r["occurrences"] for r in rows if r["host_or_device"] == "Host") == expected


# --- the category table on real names ---------------------------------------------------------

# (name as recorded in ../shared/traces/kineto, its category), written by hand.
REAL_NAMES = [
    # host ops
    ("aten::mm", GEMM),
    ("aten::addmm", GEMM),
    ("aten::bmm", GEMM),
    ("aten::matmul", GEMM),
    ("aten::linear", GEMM),
    ("AddmmBackward0", GEMM),
    ("autograd::engine::evaluate_function: MmBackward0", GEMM),
    ("aten::conv2d", CONVOLUTION),
    ("aten::_convolution", CONVOLUTION),
    ("aten::cudnn_convolution_backward_weight", CONVOLUTION),
    ("CudnnConvolutionBackward", CONVOLUTION),
    ("aten::native_layer_norm", NORMALIZATION),
    ("aten::cudnn_batch_norm", NORMALIZATION),
    ("fb::rms_norm", NORMALIZATION),
    ("aten::_log_softmax", NORMALIZATION),
    ("SoftmaxBackward0", NORMALIZATION),
    ("aten::sum", REDUCTION),
    ("aten::mean", REDUCTION),
    ("aten::max", REDUCTION),
    ("aten::linalg_vector_norm", REDUCTION),
    ("aten::max_pool2d_with_indices", REDUCTION),
    ("aten::nll_loss_forward", REDUCTION),
    ("MseLossBackward0", REDUCTION),
    ("aten::add_", ELEMENTWISE),
    ("aten::relu_", ELEMENTWISE),
    ("aten::threshold_backward", ELEMENTWISE),
    ("aten::fill_", ELEMENTWISE),
    ("aten::_foreach_add_", ELEMENTWISE),
    ("aten::native_dropout", ELEMENTWISE),
    ("aten::normal_", ELEMENTWISE),
    ("ReluBackward0", ELEMENTWISE),
    ("aten::copy_", MEMORY_COPY),
    ("aten::to", MEMORY_COPY),
    ("aten::_to_copy", MEMORY_COPY),
    ("aten::cat", MEMORY_COPY),
    ("c10d::allreduce_", COMMUNICATION),
    ("record_param_comms", COMMUNICATION),
    ("All2All_Pooled_Req", COMMUNICATION),
    ("aten::view", OTHER),
    ("aten::empty", OTHER),
    ("aten::index_select", OTHER),
    ("fb::convex_sum", OTHER),  # not a convolution
    ("fbgemm::permute_pooled_embs_auto_grad", OTHER),  # neither a GEMM nor a pooling
    ("torch::autograd::AccumulateGrad", OTHER),
    ("Optimizer.step#SGD.step", OTHER),
    # device kernels, copies and memsets
    ("volta_sgemm_64x64_nt", GEMM),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4::Params)", GEMM),
    (
        "void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*)",
        GEMM,
    ),
    (
        "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize256x64x32_stage3_warpsize4x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer",
        CONVOLUTION,
    ),
    ("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", CONVOLUTION),
    (
        "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, true, true>(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
        CONVOLUTION,
    ),
    (
        "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnnKernelDataType_t)2>(cudnn::ops::nchw2nhwc_params_t<float>, float const*, float*)",
        CONVOLUTION,
    ),
    ("void cudnn::bn_fw_tr_1C11_singleread<float, 512, true, 1, 2, 0>(cudnn::bn_fw_tr_1C11_args<float>)", NORMALIZATION),
    (LAYER_NORM_KERNEL, NORMALIZATION),
    (
        "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, int, int, int, bool const*, int, bool)",
        NORMALIZATION,
    ),
    (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
        REDUCTION,
    ),
    (
        "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*, long, long, long, int, int, int, int, int, int, int, int, int, int, float*, long*)",
        REDUCTION,
    ),
    ("void cunn_ClassNLLCriterion_updateOutput_kernel<float, float>(float*, float*, float*, long*, float*, int, int, int, int, long)", REDUCTION),
    (ADD_KERNEL, ELEMENTWISE),
    ("Memcpy DtoD (Device -> Device)", MEMORY_COPY),
    ("Memset (Device)", MEMORY_COPY),
    (NCCL_KERNEL, COMMUNICATION),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", COMMUNICATION),
    (
        "void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int, int, int const*, decltype(nullptr) const*, int const*, int const*, int const*, int*, decltype(nullptr)*)",
        OTHER,
    ),
]
# Names no shared trace has, from PyTorch's native_functions.yaml and common kernels.
OTHER_NAMES = [
    ("aten::scaled_dot_product_attention", ATTENTION),
    ("aten::_scaled_dot_product_flash_attention", ATTENTION),
    ("aten::_efficient_attention_backward", ATTENTION),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>>", ATTENTION),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80", ATTENTION),
    ("aten::_scaled_mm", GEMM),
    ("aten::baddbmm", GEMM),
    ("aten::group_norm", NORMALIZATION),
    ("aten::gelu", ELEMENTWISE),
    ("aten::minimum", ELEMENTWISE),  # elementwise, unlike aten::min
]


@pytest.mark.parametrize(("name", "category"), REAL_NAMES + OTHER_NAMES, ids=lambda v: v[:48])
def test_category_table(name: str, category: str):
    assert category_of(name) == category


def test_the_real_names_are_in_the_shared_traces():
    recorded = set()
    for path in KINETO_TRACES:
        with gzip.open(path, "rt") as stream:
            recorded |= {event.get("name") for event in json.load(stream)["traceEvents"]}
    assert [name for name, _ in REAL_NAMES if name not in recorded] == []
