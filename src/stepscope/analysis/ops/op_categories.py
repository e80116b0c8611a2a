"""What kind of work a PyTorch op or a GPU kernel does, from its name: GEMM, convolution...

Kineto records an op's name (``aten::addmm``) and nothing about its kind, so without this
framework_op_stats' "Type" repeated the name and its pie chart by type had as many slices
as ops. TensorFlow and XLA ops have a type of their own (TensorFlow's op type, XLA's
``hlo_category``) and keep it; these categories are for Kineto ops and the device work
they launched.

The categories follow TraceLens (AMD's PyTorch trace analyser), which groups ops into GEMM,
convolution, attention (SDPA), normalization, elementwise, reduction and other, and HTA,
which splits kernels into computation, communication and memory (copies and sets). The
rules are an ordered table, first match wins, evaluated once per distinct name. Op names
are those of PyTorch's ``native_functions.yaml`` (``aten::_to_copy``), the autograd nodes
of their backward pass (``AddmmBackward0``, also as ``autograd::engine::evaluate_function:
AddmmBackward0``) and the ``c10d::`` collectives; kernel names are those of cuBLAS /
hipBLASLt / Tensile (``volta_sgemm_64x64_nt``, ``Cijk_...``), CUTLASS, cuDNN, NCCL / RCCL,
flash attention and ATen's own CUDA kernels, as recorded in the shared traces.

Choices where sources differ:
- softmax is a normalization: like layer_norm it reads a row, reduces it (max, sum) and
  rescales it, and its kernels cost the same way. TraceLens keeps it apart; "reduction"
  here keeps only ops whose output is smaller than their input (sum, mean, max, norms,
  pooling, losses).
- Losses (``mse_loss``, ``nll_loss``, ``cross_entropy``) are reductions: a per-sample term,
  then a mean or sum to one number.
- ``copy_``, ``to``, ``_to_copy``, ``clone``, ``contiguous``, ``cat`` and ``stack`` are
  memory copies: they move data without computing on it, across devices or on one (the
  name does not say which).
- Memsets count as memory copies (HTA's "memory" kernels hold both).
"""

from __future__ import annotations

import re

import numpy as np

from stepscope.analysis.steps.classify import COLLECTIVE

GEMM = "GEMM"
CONVOLUTION = "convolution"
ATTENTION = "attention"
NORMALIZATION = "normalization"
REDUCTION = "reduction"
ELEMENTWISE = "elementwise"
COMMUNICATION = "communication"
MEMORY_COPY = "memory copy"
OTHER = "other"

# A device event that moved data or communicated is that, whichever op asked for it.
DEVICE_OWN_CATEGORIES = (MEMORY_COPY, COMMUNICATION)


def _ops(*words: str) -> re.Pattern[str]:
    """Op names made of one of ``words``: ``aten::add_``, ``aten::_to_copy``, autograd nodes
    ``AddBackward0`` (alone or after ``evaluate_function: ``), ``aten::tanh_backward``."""
    return re.compile(r"(?:^|::|: )_?(?:" + "|".join(words) + r")(?:_?backward\d*|_)?$", re.IGNORECASE)


def _any(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# Ordered: communication first (an all_reduce is not a reduction), attention before GEMM
# (SDPA runs GEMMs), convolution before GEMM (cuDNN's implicit_gemm kernels).
RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (COLLECTIVE, COMMUNICATION),  # nccl / rccl kernels, all_reduce..., as the step breakdown sees them
    (_any(r"^c10d::|record_param_comms|all2all"), COMMUNICATION),  # PyTorch's host-side collectives
    (_any(r"attention|flash_(?:fwd|bwd)|fmha|sdpa"), ATTENTION),
    (_any(r"(?:layer|batch|group|instance|rms)_?norm|softmax|bn_(?:fw|bw)|GammaBeta|RowwiseMoments"), NORMALIZATION),
    (
        _any(
            r"convolution|(?:^|::|: |_)conv(?:_|\d|$)|scudnn|winograd|implicit_convolve|fprop|dgrad|wgrad|"
            r"cask_cudnn|cutlass_cudnn|cudnn::ops::|fft2d_|igemm_(?:fwd|bwd|wrw)"
        ),
        CONVOLUTION,
    ),
    (
        _ops(
            "mm",
            "addmm",
            "addmm_activation",
            "bmm",
            "baddbmm",
            "addbmm",
            "matmul",
            "linear",
            "scaled_mm",
            "int_mm",
            "addmv",
            "mv",
            "dot",
            "vdot",
            "einsum",
            "tensordot",
        ),
        GEMM,
    ),
    (_any(r"(?<!fb)gemm|gemv|cublas|hipblas|Cijk_|nvjet|splitKreduce"), GEMM),  # BLAS kernels (not fbgemm's ops)
    (
        _ops(
            "sum",
            "nansum",
            "mean",
            "nanmean",
            "max",
            "min",
            "amax",
            "amin",
            "aminmax",
            "argmax",
            "argmin",
            "prod",
            "norm",
            "linalg_norm",
            "linalg_vector_norm",
            "var",
            "std",
            "var_mean",
            "std_mean",
            "logsumexp",
            "cumsum",
            "cumprod",
            "all",
            "any",
            "count_nonzero",
            "topk",
            "sort",
            "argsort",
            "median",
        ),
        REDUCTION,
    ),
    (_any(r"(?:max|avg|average|lp)_?pool|loss|nll|cross_?entropy|reduce_kernel|Device(?:Segmented)?Reduce"), REDUCTION),
    (_any(r"^Mem(?:cpy|set)\b|CatArrayBatchedCopy"), MEMORY_COPY),
    (_ops("copy", "copy_from", "to", "to_copy", "clone", "contiguous", "cat", "stack"), MEMORY_COPY),
    (
        _ops(
            "add",
            "sub",
            "rsub",
            "mul",
            "div",
            "true_divide",
            "floor_divide",
            "remainder",
            "fmod",
            "neg",
            "abs",
            "sign",
            "reciprocal",
            "sqrt",
            "rsqrt",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "pow",
            "square",
            "sin",
            "cos",
            "tanh",
            "sigmoid",
            "logit",
            "erf",
            "erfinv",
            "floor",
            "ceil",
            "round",
            "trunc",
            "clamp",
            "clamp_min",
            "clamp_max",
            "clip",
            "minimum",
            "maximum",
            "relu",
            "relu6",
            "gelu",
            "silu",
            "mish",
            "elu",
            "selu",
            "leaky_relu",
            "hardtanh",
            "hardswish",
            "hardsigmoid",
            "softplus",
            "threshold",
            "where",
            "masked_fill",
            "fill",
            "zero",
            "lerp",
            "addcmul",
            "addcdiv",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            r"logical_(?:and|or|not|xor)",
            r"bitwise_(?:and|or|not|xor)",
            "isnan",
            "isinf",
            "nan_to_num",
            r"(?:native_|feature_)?dropout",
            "bernoulli",
            "uniform",
            "normal",
            "rand",
            "randn",
            r"(?:ones|zeros|full)(?:_like)?",
            r"foreach_\w+",
        ),
        ELEMENTWISE,
    ),
    (_any(r"elementwise|multi_tensor_apply|fused_dropout"), ELEMENTWISE),  # ATen's CUDA kernels
)


def category_of(name: str) -> str:
    """The category of one op or kernel name (the first rule that matches; else other)."""
    return next((category for pattern, category in RULES if pattern.search(name)), OTHER)


def categories(names: np.ndarray) -> np.ndarray:
    """``category_of`` for every name (object array), evaluated once per distinct name."""
    codes: dict[str, int] = {}
    inverse = np.fromiter((codes.setdefault(name, len(codes)) for name in names.tolist()), dtype=np.int64, count=len(names))
    return np.asarray([category_of(name) for name in codes], dtype=object)[inverse]
