"""roofline_model on PyTorch GPU profiles: FLOPs and bytes estimated from the ops' recorded
input shapes, checked on a hand-built trace of known shapes and on the shared Kineto traces
that record shapes, with the formulas written out here from the JSON args."""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.ops.shape_costs import call_of, estimate
from stepscope.trace.writers import save
from tests.support.kineto_events import complete, cpu_op
from tests.support.traces import shared

US_PS = 1_000_000
A100_80GB_TFLOPS, A100_80GB_GBPS = 312.0, 2039.0  # ops/chips.py's table, NVIDIA's datasheet


def _kernel(ts, dur, ext, correlation):
    return complete(f"kernel_{ext}", "kernel", ts, dur, tid=7, pid=0, device=0, stream=7, correlation=correlation, **{"External id": ext})


def tiny_events() -> list[dict]:
    bf16 = "c10::BFloat16"
    return [
        complete("ProfilerStep#1", "user_annotation", 0, 1000),
        # linear -> addmm: the linear's estimate counts the addmm's kernel (10 us).
        cpu_op("aten::linear", 0, 50, 1, [[64, 512], [256, 512], [256]], [bf16, bf16, bf16]),
        cpu_op("aten::addmm", 5, 40, 2, [[256], [64, 512], [512, 256], [], []], [bf16, bf16, bf16, "Scalar", "Scalar"]),
        # convolution with stride 2, padding 1 recorded: 20 us of kernel.
        cpu_op(
            "aten::convolution",
            100,
            50,
            3,
            [[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], [], [], []],
            ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
            ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"],
        ),
        # the same convolution without Concrete Inputs: stride 1, padding 0 assumed; 20 us.
        cpu_op("aten::convolution", 200, 50, 4, [[8, 3, 32, 32], [16, 3, 3, 3], [], [], [], []], ["float", "float", "", "", "", ""]),
        cpu_op("aten::scaled_dot_product_attention", 300, 50, 5, [[2, 8, 128, 64]] * 3, [bf16] * 3),
        cpu_op("aten::add", 400, 20, 6, [[4, 1024], [1024], []], ["float", "float", "Scalar"]),
        cpu_op("aten::native_layer_norm", 500, 20, 7, [[4, 1024], [], [1024], [1024], []], ["float", "ScalarList", "float", "float", "Scalar"]),
        _kernel(10, 10, 2, 1),
        _kernel(110, 20, 3, 2),
        _kernel(210, 20, 4, 3),
        _kernel(310, 5, 5, 4),
        _kernel(410, 2, 6, 5),
        _kernel(510, 4, 7, 6),
    ]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("shapes") / "tiny.pt.trace.json"
    properties = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": properties, "traceEvents": tiny_events()}))
    profile = stepscope.load(path)
    profile.validate()
    return run_tool("roofline_model", profile).to_json()


def _by_name(rows: list[dict]) -> dict[str, dict]:
    return {row["name"]: row for row in rows}


def test_tiny_trace_estimates_from_the_shapes(tiny: dict):
    ops = _by_name(tiny["ops"])
    linear = ops["aten::linear(64x512, 256x512, 256) c10::BFloat16"]
    # x[64,512] W[256,512] b[256]: 2*64*256*512 + 64*256; bytes (x + W + b + out) * 2.
    assert linear["flops"] == 2 * 64 * 256 * 512 + 64 * 256
    assert linear["bytes_accessed"] == (64 * 512 + 256 * 512 + 256 + 64 * 256) * 2
    assert linear["time_ps"] == 10 * US_PS
    # achieved FLOP/s against the A100 80GB's 312 TFLOP/s
    assert linear["gflops_per_second"] == pytest.approx(linear["flops"] / 10e-6 / 1e9)
    assert linear["compute_utilization"] == pytest.approx(linear["flops"] / 10e-6 / (A100_80GB_TFLOPS * 1e12))

    # out = (32 + 2*1 - 1*(3-1) - 1) // 2 + 1 = 16
    strided = ops["aten::convolution(8x3x32x32, 16x3x3x3, 16) float"]
    assert strided["flops"] == 2 * 8 * 16 * 16 * 16 * 3 * 3 * 3 + 8 * 16 * 16 * 16
    assert strided["bytes_accessed"] == (8 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 16 + 8 * 16 * 16 * 16) * 4
    # stride 1, padding 0 assumed: out = 32 - 3 + 1 = 30, no bias
    assumed = ops["aten::convolution(8x3x32x32, 16x3x3x3) float"]
    assert assumed["flops"] == 2 * 8 * 16 * 30 * 30 * 3 * 3 * 3
    # and the attention below, whose is_causal is not recorded (no Concrete Inputs)
    assert tiny["assumed_ops"] == 2

    attention = ops["aten::scaled_dot_product_attention(2x8x128x64, 2x8x128x64, 2x8x128x64) c10::BFloat16"]
    # QK^T and PV: 2*B*H*L*S*E each, the full count (no is_causal recorded); q, k, v and
    # out of 2*8*128*64 bf16
    assert attention["flops"] == 2 * (2 * 2 * 8 * 128 * 128 * 64)
    assert attention["bytes_accessed"] == 4 * 2 * 8 * 128 * 64 * 2

    add = ops["aten::add(4x1024, 1024) float"]
    assert add["flops"] == 4 * 1024 and add["bytes_accessed"] == (4 * 1024 + 1024 + 4 * 1024) * 4
    assert add["bound_by"] == "Memory"

    # the layer norm has no estimator: counted, with its kernel's time
    assert tiny["unestimated_ops"] == 1 and tiny["unestimated_time_ps"] == 4 * US_PS
    assert [row["name"] for row in tiny["unestimated"]] == ["aten::native_layer_norm(4x1024, 1024, 1024) float"]
    assert tiny["source"] == "shapes"
    assert [(p["chip"], p["peak_tflops"], p["peak_gbps"]) for p in tiny["peaks"]] == [("NVIDIA A100 80GB", A100_80GB_TFLOPS, A100_80GB_GBPS)]
    # the device row is every op's kernel time: 10 + 20 + 20 + 5 + 2 + 4 us
    device = tiny["device_rows"][0]
    assert device["time_ps"] == 61 * US_PS
    assert device["flops"] == sum(row["flops"] for row in tiny["ops"] if row["flops"] is not None)


def _events(relative: str) -> list[dict]:
    with gzip.open(shared(relative)) as handle:
        return json.load(handle)["traceEvents"]


def _kernel_time_by_external_id(events: list[dict], device_categories: set[str]) -> dict[int, int]:
    """Kernel us (as ps) per External id ('external id' in the 2021 schema)."""
    times: dict[int, int] = defaultdict(int)
    for event in events:
        if event.get("cat") in device_categories:
            args = event.get("args", {})
            ext = args.get("External id", args.get("external id"))
            if ext is not None:
                times[ext] += round(event["dur"] * US_PS)
    return times


def _ops_named(events: list[dict], name: str, op_categories: set[str]) -> list[dict]:
    return [e for e in events if e.get("name") == name and e.get("cat") in op_categories and "Input Dims" in e.get("args", {})]


V100 = "kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz"
MI250 = "kineto/mi250_rocm_toy_train.pt.trace.json.gz"


@pytest.fixture(scope="module")
def v100() -> dict:
    return run_tool("roofline_model", stepscope.load(shared(V100))).to_json()


def test_v100_resnet_mm_and_convolution_backward_from_the_json(v100: dict):
    events = _events(V100)
    kernels = _kernel_time_by_external_id(events, {"Kernel", "Memcpy", "Memset"})
    programs = _by_name(v100["programs"])
    # aten::mm [[M, K], [K, N]] float: 2MNK, bytes 4 (MK + KN + MN); its own kernels
    mms = _ops_named(events, "aten::mm", {"Operator"})
    flops = sum(2 * a[0] * b[1] * a[1] for a, b in (e["args"]["Input Dims"] for e in mms))
    accessed = sum(4 * (a[0] * a[1] + b[0] * b[1] + a[0] * b[1]) for a, b in (e["args"]["Input Dims"] for e in mms))
    assert len(mms) == 12 and programs["aten::mm"]["flops"] == flops and programs["aten::mm"]["bytes_accessed"] == accessed
    assert programs["aten::mm"]["time_ps"] == sum(kernels[e["args"]["External id"]] for e in mms)
    # aten::cudnn_convolution_backward(input, grad_out, weight): 2 x 2 N Cout Hout Wout Cin k k,
    # counting the kernels of its _input and _weight halves (the ops inside it)
    backward = _ops_named(events, "aten::cudnn_convolution_backward", {"Operator"})
    expected = 0
    for event in backward:
        _x_dims, grad, w = event["args"]["Input Dims"][:3]
        expected += 2 * 2 * grad[0] * w[0] * grad[2] * grad[3] * w[1] * w[2] * w[3]
    assert programs["aten::cudnn_convolution_backward"]["flops"] == expected
    assert programs["aten::cudnn_convolution_backward"]["occurrences"] == len(backward) == 318
    # aten::conv2d(x, w) records no stride or padding (2021 schema): its output's size is
    # its autograd node's (CudnnConvolutionBackward, same Sequence number) gradient's dims
    grads = {e["args"]["Sequence number"]: e["args"]["Input Dims"][0] for e in _ops_named(events, "CudnnConvolutionBackward", {"Operator"})}
    forward = 0
    for event in _ops_named(events, "aten::conv2d", {"Operator"}):
        x, w = event["args"]["Input Dims"][:2]
        out = grads[event["args"]["Sequence number"]]
        forward += 2 * x[0] * w[0] * out[2] * out[3] * w[1] * w[2] * w[3]
    assert programs["aten::conv2d"]["flops"] == forward and v100["assumed_ops"] == 0
    # V100 from deviceProperties' "Tesla V100-DGXS-32GB"
    assert {(p["chip"], p["source"]) for p in v100["peaks"]} == {("NVIDIA V100", "table")}
    # the batch norms have no estimator; the longest unestimated rows are theirs
    assert v100["unestimated_ops"] > 0 and v100["unestimated"][0]["name"].startswith("aten::cudnn_batch_norm_backward")


def test_mi250_gemms_from_the_json():
    events = _events(MI250)
    result = run_tool("roofline_model", stepscope.load(shared(MI250))).to_json()
    programs = _by_name(result["programs"])
    # aten::linear x[M, K] W[N, K] b[N] float: 2MNK + MN per call (its addmm's kernels)
    linears = _ops_named(events, "aten::linear", {"cpu_op"})
    assert linears
    flops = 0
    for event in linears:
        x, w, b = event["args"]["Input Dims"]
        flops += 2 * math.prod(x[:-1]) * w[0] * x[-1] + (math.prod(x[:-1]) * w[0] if b else 0)
    assert programs["aten::linear"]["flops"] == flops
    mms = _ops_named(events, "aten::mm", {"cpu_op"})
    assert programs["aten::mm"]["flops"] == sum(2 * a[0] * b[1] * a[1] for a, b in (e["args"]["Input Dims"] for e in mms))


# The estimators one by one, on calls written as Kineto records them.


def _cost(name, dims, types, concrete=None):
    call = call_of(dims, types, concrete)
    assert call is not None
    return estimate(name, call)


def test_bmm_and_broadcast_matmul():
    # [B, M, K] x [B, K, N]: 2BMNK; bytes (BMK + BKN + BMN) x 2
    cost = _cost("aten::bmm", [[4, 8, 16], [4, 16, 32]], ["c10::Half"] * 2)
    assert cost.flops == 2 * 4 * 8 * 32 * 16 and cost.bytes_accessed == (4 * 8 * 16 + 4 * 16 * 32 + 4 * 8 * 32) * 2
    # [3, 1, M, K] x [5, K, N] broadcasts to a batch of 3 x 5
    cost = _cost("aten::matmul", [[3, 1, 8, 16], [5, 16, 32]], ["float"] * 2)
    assert cost.flops == 2 * 15 * 8 * 32 * 16
    # a vector on the right: [M, K] x [K] is M x K x 1
    assert _cost("aten::matmul", [[8, 16], [16]], ["float"] * 2).flops == 2 * 8 * 1 * 16


def test_attention_backward_and_convolution_backward_weight():
    fwd = 2 * (2 * 2 * 4 * 64 * 64 * 32)  # 2 B H L S E, twice (QK^T and PV)
    assert _cost("aten::_scaled_dot_product_flash_attention", [[2, 4, 64, 32]] * 3, ["c10::BFloat16"] * 3).flops == fwd
    # the backward's five products: 2.5 forwards
    backward = _cost("aten::_scaled_dot_product_flash_attention_backward", [[2, 4, 64, 32]] * 5, ["c10::BFloat16"] * 5)
    assert backward.flops == 2.5 * fwd
    # weight gradient of w[16, 3, 3, 3] over x[8, 3, 32, 32] -> grad_out[8, 16, 30, 30]: one forward
    cost = _cost(
        "aten::cudnn_convolution_backward_weight",
        [[], [8, 16, 30, 30], [8, 3, 32, 32]],
        ["ScalarList", "float", "float"],
        ["[16, 3, 3, 3]", "", ""],
    )
    assert cost.flops == 2 * 8 * 16 * 30 * 30 * 3 * 3 * 3
    # without the weight's shape recorded there is nothing to count
    assert _cost("aten::cudnn_convolution_backward_weight", [[], [8, 16, 30, 30], [8, 3, 32, 32]], ["ScalarList", "float", "float"]) is None


def test_unknown_ops_and_malformed_args_have_no_estimate():
    assert _cost("aten::native_layer_norm", [[4, 8]], ["float"]) is None
    assert _cost("aten::mm", [[4, 8]], ["float"]) is None  # one operand
    assert call_of("not json", ["float"]) is None


def test_the_estimates_survive_conversion_to_xspace(tmp_path):
    """Kineto args become XSpace stats (containers as JSON text): the same rows either way."""
    kineto = stepscope.load(shared(MI250))
    save(kineto, tmp_path / "mi250.xplane.pb")
    ours = run_tool("roofline_model", kineto).to_json()
    converted = run_tool("roofline_model", stepscope.load(tmp_path / "mi250.xplane.pb")).to_json()
    keys = ("name", "occurrences", "time_ps", "flops", "bytes_accessed")
    assert [[row[k] for k in keys] for row in converted["ops"]] == [[row[k] for k in keys] for row in ours["ops"]]
    assert converted["unestimated_ops"] == ours["unestimated_ops"] > 0
