"""A diff of runs on different hardware or frameworks says so first (``warnings``), naming
both sides from each run's overview environment; runs that compare get no warning."""

from __future__ import annotations

import gzip
import json

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.diff.compare import diff
from stepscope.analysis.diff.warnings import comparability_warnings
from stepscope.analysis.tools.overview_page import Environment
from stepscope.render import render
from stepscope.render.markdown import escape
from tests.support.traces import shared
from tests.support.xla_ops import plane_stats

A100_TRACE = "kineto/alexnet_small.pt.trace.json.gz"
TPU_SPACE = "xplane/tpu_v_inference_4chips.xplane.pb"


def environment(device_type: str, device_kind: str, framework: str) -> Environment:
    return {
        "host": "h",
        "hosts": 1,
        "device_type": device_type,
        "device_kind": device_kind,
        "device_count": 0 if device_type == "CPU only" else 1,
        "devices": [],
        "framework": framework,
        "versions": {},
        "source_format": "xspace",
    }


A100 = environment("GPU", "NVIDIA A100-SXM4-80GB", "PyTorch")
H100 = environment("GPU", "NVIDIA H100 80GB HBM3", "PyTorch")
TPU = environment("TPU", "TPU v4", "JAX")
CPU_TORCH = environment("CPU only", "", "PyTorch")
CPU_TF = environment("CPU only", "", "TensorFlow")
GPU_UNNAMED = environment("GPU", "", "PyTorch")
UNKNOWN = environment("GPU", "", "")


@pytest.mark.parametrize(
    ("base", "new", "expected"),
    [
        (A100, TPU, ["NVIDIA A100-SXM4-80GB (PyTorch) vs TPU v4 (JAX): step times are not comparable op by op (different hardware and frameworks)"]),
        (A100, H100, ["NVIDIA A100-SXM4-80GB (PyTorch) vs NVIDIA H100 80GB HBM3 (PyTorch): step times are not comparable op by op (different hardware)"]),
        (CPU_TORCH, CPU_TF, ["CPU (PyTorch) vs CPU (TensorFlow): step times are not comparable op by op (different frameworks)"]),
        (CPU_TORCH, A100, ["CPU (PyTorch) vs NVIDIA A100-SXM4-80GB (PyTorch): step times are not comparable op by op (different hardware)"]),
        # Same chip and framework; a GPU whose profile does not name its model is not taken
        # for another GPU; an unknown framework is not another framework.
        (A100, A100, []),
        (CPU_TORCH, CPU_TORCH, []),
        (GPU_UNNAMED, A100, []),
        (UNKNOWN, A100, []),
    ],
)
def test_warnings_name_both_sides_where_hardware_or_framework_differ(base, new, expected):
    assert comparability_warnings(base, new) == expected


def test_an_a100_pytorch_run_against_a_tpu_jax_run_is_said_not_to_compare():
    """The real pair: the chips as each file names them, read here from the files (Kineto's
    deviceProperties, the TPU plane's device_type_string), the frameworks as their op names
    show (aten:: ops; the TPU run's jit_ programs)."""
    with gzip.open(shared(A100_TRACE)) as stream:
        (gpu,) = [device for device in json.load(stream)["deviceProperties"] if device["id"] == 0]  # the trace's kernels run on GPU 0
    tpu_chip = plane_stats(shared(TPU_SPACE))["/device:TPU:0"]["device_type_string"]
    assert (gpu["name"], tpu_chip) == ("NVIDIA A100-PG509-200", "TPU v6 Lite")  # what the files say
    base, new = stepscope.load(shared(A100_TRACE)), stepscope.load(shared(TPU_SPACE))
    assert [run_tool("overview_page", p).to_json()["environment"]["device_kind"] for p in (base, new)] == [gpu["name"], tpu_chip]
    expected = f"{gpu['name']} (PyTorch) vs {tpu_chip} (JAX): step times are not comparable op by op (different hardware and frameworks)"
    result = diff(base, new, "a100", "tpu")
    assert result.to_json()["warnings"] == [expected]
    # Said first in every report: the text summary, Markdown (a PR comment) and GitHub's annotations.
    assert render([result], "text").splitlines()[1] == f"warning: {expected}"
    markdown = render([result], "markdown")
    assert markdown.index(f"Warning: {expected}") < markdown.index(escape(result.verdict))
    assert f"::warning title=stepscope diff%3A runs not comparable::{expected}\n" in render([result], "github")
    # The same run against itself: nothing to warn about.
    assert diff(base, base).warnings == []
