"""Causal attention's FLOPs: the is_causal flag read from the SDPA ops' ``Concrete Inputs``
(a hand-built Kineto trace with expected FLOPs and MFU derived here, and a real torch CPU
trace read with the json module), the full count flagged where the flag is not recorded,
and the flag's positions checked against the installed torch's ATen schemas."""

from __future__ import annotations

import json

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.ops.shape_costs import (
    ATTENTION_BACKWARD_MASKS,
    ATTENTION_MASKS,
    FULL_ATTENTION_ASSUMED,
    call_of,
    estimate,
    kept_pairs,
)
from tests.support.frameworks import run_framework_script
from tests.support.kineto_events import complete, cpu_op

US_PS = 1_000_000
A100_80GB_TFLOPS = 312.0  # ops/chips.py's table, NVIDIA's datasheet (dense BF16)
BF16 = "c10::BFloat16"
QKV = [[2, 8, 1024, 64]] * 3  # B=2, H=8, L=S=1024, E=Ev=64

# aten::scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, *, scale, enable_gqa)
SDPA_TYPES = [BF16] * 3 + ["", "Scalar", "Scalar", "", "Scalar"]
SDPA_CAUSAL = ["", "", "", "", "0.", "True", "", "False"]
# aten::_scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)
FLASH_TYPES = [BF16] * 3 + ["Scalar", "Scalar", "Scalar", ""]
FLASH_CAUSAL = ["", "", "", "0.", "True", "False", ""]

# By hand: the causal SDPA keeps 1024 * 1025 / 2 = 524,800 query-key pairs per head;
# 2 FLOPs per multiply-add x (E + Ev) = 128 per pair, over B x H = 16 heads.
CAUSAL_FLOPS = 2 * 16 * 524_800 * 128  # 2,149,580,800
FULL_FLOPS = 2 * 16 * 1024 * 1024 * 128  # 4,294,967,296: PyTorch's flop_counter's count
MM_FLOPS = 2 * 4096**3  # 137,438,953,472
STEP_S = 1e-3  # ProfilerStep#1 lasts 1,000 us


def _kernel(name, ts, dur, ext):
    return complete(name, "kernel", ts, dur, tid=7, pid=0, device=0, stream=7, correlation=ext, **{"External id": ext})


def _trace(recorded: bool) -> list[dict]:
    """One 1 ms step: a causal SDPA (its flash op launches a 200 us kernel) and a 4096^3 mm
    (400 us); ``recorded``: whether the ops record their Concrete Inputs."""
    return [
        complete("ProfilerStep#1", "user_annotation", 0, 1000),
        cpu_op("aten::scaled_dot_product_attention", 10, 100, 1, QKV + [[]] * 5, SDPA_TYPES, SDPA_CAUSAL if recorded else None),
        cpu_op("aten::_scaled_dot_product_flash_attention", 20, 80, 2, QKV + [[]] * 4, FLASH_TYPES, FLASH_CAUSAL if recorded else None),
        _kernel("pytorch_flash::flash_fwd_kernel", 30, 200, 2),
        cpu_op("aten::mm", 300, 50, 3, [[4096, 4096], [4096, 4096]], [BF16, BF16]),
        _kernel("ampere_bf16_gemm", 310, 400, 3),
    ]


def _tools(tmp_path, recorded: bool) -> tuple[dict, dict]:
    path = tmp_path / f"sdpa_{recorded}.pt.trace.json"
    properties = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": properties, "traceEvents": _trace(recorded)}))
    profile = stepscope.load(path)
    profile.validate()
    return run_tool("roofline_model", profile).to_json(), run_tool("overview_page", profile).to_json()


def _attention_row(roofline: dict) -> dict:
    (row,) = [row for row in roofline["ops"] if row["program"] == "aten::scaled_dot_product_attention"]
    return row


def test_a_recorded_causal_flag_halves_the_attention_flops_and_the_mfu_follows(tmp_path):
    roofline, overview = _tools(tmp_path, recorded=True)
    attention = _attention_row(roofline)
    assert attention["flops"] == CAUSAL_FLOPS and attention["time_ps"] == 200 * US_PS
    assert roofline["assumptions"] == [] and roofline["assumed_ops"] == 0
    through = overview["throughput"]
    (step,) = through["steps"]
    assert step["step_time_ps"] == 1000 * US_PS and step["flops"] == CAUSAL_FLOPS + MM_FLOPS
    # (2,149,580,800 + 137,438,953,472) / 1e-3 s / 312e12 FLOP/s = 44.740%
    assert through["mfu_percent"] == pytest.approx((CAUSAL_FLOPS + MM_FLOPS) / STEP_S / (A100_80GB_TFLOPS * 1e12) * 100)
    assert through["mfu_percent"] == pytest.approx(44.7399, abs=1e-4)
    assert through["flop_assumptions"] == []


def test_an_unrecorded_flag_keeps_the_full_count_and_says_so(tmp_path):
    roofline, overview = _tools(tmp_path, recorded=False)
    assert _attention_row(roofline)["flops"] == FULL_FLOPS
    assert roofline["assumptions"] == [{"assumption": FULL_ATTENTION_ASSUMED, "ops": 1}] and roofline["assumed_ops"] == 1
    summary = run_tool("roofline_model", stepscope.load(tmp_path / "sdpa_False.pt.trace.json")).summary()
    assert "  1 op(s): is_causal not recorded: counted as full attention" in summary
    # (4,294,967,296 + 137,438,953,472) / 1e-3 s / 312e12 FLOP/s = 45.427%
    assert overview["throughput"]["mfu_percent"] == pytest.approx(45.4275, abs=1e-4)
    assert overview["throughput"]["flop_assumptions"] == [{"assumption": FULL_ATTENTION_ASSUMED, "ops": 1}]
    overview_lines = run_tool("overview_page", stepscope.load(tmp_path / "sdpa_False.pt.trace.json")).summary()
    assert "  MFU assumes, for 1 op(s): is_causal not recorded: counted as full attention" in overview_lines


def _cost(name, dims, types, concrete):
    call = call_of(dims, types, concrete)
    assert call is not None
    return estimate(name, call)


@pytest.mark.parametrize(
    ("queries", "keys", "mask", "expected"),
    [
        (8, 8, "top-left", 36),  # 8 * 9 / 2
        (3, 8, "top-left", 6),  # rows keep 1, 2, 3
        (3, 8, "bottom-right", 21),  # rows keep 6, 7, 8
        (8, 3, "top-left", 21),  # 1, 2, 3, then five rows of 3
        (8, 3, "bottom-right", 6),  # five rows see nothing, then 1, 2, 3
        (1, 5, "bottom-right", 5),  # one query after the keys: sees them all
        (4, 6, "", 24),  # no mask: all pairs
    ],
)
def test_kept_pairs_by_hand(queries, keys, mask, expected):
    assert kept_pairs(queries, keys, mask) == expected


def test_the_efficient_kernels_custom_mask_type_and_the_flash_kernels_bottom_right_mask():
    q, kv = [1, 2, 3, 16], [1, 2, 8, 16]
    # _efficient_attention_forward(query, key, value, bias, cu_seqlens_q, cu_seqlens_k,
    #   max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, ...): 2 heads x 2 x 32 per pair
    dims = [q, kv, kv, [], [], [], [], [], [], [], [], [], [], []]
    types = [BF16] * 3 + [""] * 5 + ["Scalar", "Scalar", "Scalar", "", "", ""]
    for mask_type, pairs in (("0", 24), ("1", 6), ("2", 21)):
        concrete = ["", "", "", "", "", "", "", "", "0.", mask_type, "False", "", "", ""]
        cost = _cost("aten::_efficient_attention_forward", dims, types, concrete)
        assert (cost.flops, cost.assumed) == (2 * 2 * pairs * 32, "")
    # _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k,
    #   dropout_p, is_causal, ...): FlashAttention 2 aligns a causal mask at the bottom right
    dims = [q, kv, kv] + [[]] * 14
    concrete = ["", "", "", "", "", "3", "8", "0.", "True", "False"] + [""] * 7
    assert _cost("aten::_flash_attention_forward", dims, [BF16] * 3 + [""] * 14, concrete).flops == 2 * 2 * 21 * 32
    # the backward of a causal flash SDPA: 2.5 forwards of 36 pairs (L = S = 8) per head
    dims = [[1, 2, 8, 16]] * 5 + [[1, 2, 8]] + [[]] * 9
    concrete = [""] * 10 + ["0.", "True"] + [""] * 3
    backward = _cost("aten::_scaled_dot_product_flash_attention_backward", dims, [BF16] * 6 + [""] * 9, concrete)
    assert backward.flops == 2.5 * (2 * 2 * 36 * 32)


def test_a_value_that_is_not_a_bool_where_the_flag_should_be_counts_as_unrecorded():
    # The quantized overload of _scaled_dot_product_flash_attention has the same name, three
    # descale tensors more, and dropout_p ("0.") at position 4: no flag read, full count.
    cost = _cost(
        "aten::_scaled_dot_product_flash_attention", [[1, 2, 8, 16]] * 3 + [[]] * 7, [BF16] * 3 + [""] * 7, [""] * 3 + ["", "", "", "0.", "True", "False", ""]
    )
    assert (cost.flops, cost.assumed) == (2 * 2 * 64 * 32, FULL_ATTENTION_ASSUMED)


@pytest.mark.framework
def test_the_flag_positions_are_the_aten_schemas(tmp_path):
    """Every table entry names an ATen op of the installed torch whose schema has is_causal
    (or custom_mask_type) at the position the table reads, counting keyword-only arguments
    as Kineto records them. Read in a child, where torch is imported on its own."""
    names = [*ATTENTION_MASKS, *ATTENTION_BACKWARD_MASKS]
    body = f"""
found = {{}}
for name in {names!r}:
    schema = getattr(torch.ops.aten, name).default._schema
    found[name] = {{argument.name: index for index, argument in enumerate(schema.arguments)}}
(OUT / "manifest.json").write_text(json.dumps(found))
"""
    found = run_framework_script(tmp_path, "torch", "import torch", body, timeout=120)
    for name, table in (*ATTENTION_MASKS.items(), *ATTENTION_BACKWARD_MASKS.items()):
        positions = found[name]
        flag = "custom_mask_type" if "custom_mask_type" in positions else "is_causal"
        value = {"custom_mask_type": "2", "is_causal": "True"}[flag]
        concrete = [""] * len(positions)
        concrete[positions[flag]] = value
        assert table(call_of([[]] * len(positions), [""] * len(positions), concrete)) in ("top-left", "bottom-right"), name


CPU_TRACE_BODY = """
from torch.profiler import ProfilerActivity, profile
from torch.nn.functional import scaled_dot_product_attention as sdpa
from torch.utils.flop_counter import sdpa_flop_count

q = torch.randn(2, 3, 8, 4, requires_grad=True)
k = torch.randn(2, 3, 8, 4, requires_grad=True)
v = torch.randn(2, 3, 8, 4, requires_grad=True)
calls = [  # (query length, key length, is_causal), in the order they run
    (8, 8, True),  # forward, then its backward
    (8, 8, False),
    (3, 8, True),  # a causal mask over fewer queries than keys: top-left
]
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    sdpa(q, k, v, is_causal=True).sum().backward()
    with torch.no_grad():
        sdpa(q, k, v)
        sdpa(q[:, :, :3], k, v, is_causal=True)
prof.export_chrome_trace(str(OUT / "trace.json"))
manifest = {
    "calls": calls,
    # PyTorch's own masks: torch.ones(L, S).tril() is the causal mask SDPA documents
    "kept": [int(torch.ones(n, s).tril().sum()) if causal else n * s for n, s, causal in calls],
    "flop_counter": [sdpa_flop_count((2, 3, n, 4), (2, 3, s, 4), (2, 3, s, 4)) for n, s, _ in calls],
}
(OUT / "manifest.json").write_text(json.dumps(manifest))
"""


@pytest.mark.framework
def test_a_real_torch_cpu_trace_records_the_flag_where_the_schemas_say(tmp_path):
    manifest = run_framework_script(tmp_path, "torch", "import torch", CPU_TRACE_BODY, timeout=180)
    events = json.loads((tmp_path / "torch_out" / "trace.json").read_text())["traceEvents"]
    attention = [e for e in events if e.get("cat") == "cpu_op" and e["name"] in ESTIMATED]
    by_name: dict[str, list[dict]] = {}
    for event in sorted(attention, key=lambda e: e["ts"]):
        by_name.setdefault(event["name"], []).append(event)
    # On the CPU, SDPA dispatches to the flash kernel for the CPU, and one backward runs.
    assert [len(by_name[name]) for name in SDPA_NAMES] == [3, 3]
    (backward,) = by_name["aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    for name in SDPA_NAMES:
        for event, kept, counter in zip(by_name[name], manifest["kept"], manifest["flop_counter"]):
            args = event["args"]
            cost = estimate(name, call_of(args["Input Dims"], args["Input type"], args["Concrete Inputs"]))
            # 2 x 3 heads, 2 FLOPs per multiply-add, E + Ev = 8 per pair
            assert (cost.flops, cost.assumed) == (2 * 6 * kept * 8, ""), name
            # PyTorch's flop_counter counts every pair: equal where nothing is masked
            assert cost.flops <= counter and (cost.flops == counter) == (kept == args["Input Dims"][0][2] * 8)
    args = backward["args"]
    cost = estimate(backward["name"], call_of(args["Input Dims"], args["Input type"], args["Concrete Inputs"]))
    assert (cost.flops, cost.assumed) == (2.5 * 2 * 6 * manifest["kept"][0] * 8, "")


SDPA_NAMES = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention_for_cpu")
ESTIMATED = {*SDPA_NAMES, "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}
