"""FLOPs and bytes of a PyTorch op from the input shapes and dtypes it was called with
(``record_shapes=True``), for the roofline of PyTorch GPU profiles.

Kineto records, per framework op, ``Input Dims`` (one list of dims per argument, ``[]``
for a non-tensor, a list of lists for a TensorList), ``Input type`` (``float``,
``c10::BFloat16``, ``Scalar``...) and, in newer versions, ``Concrete Inputs`` (the values
of scalar and list arguments as text: a convolution's ``"[2, 2]"`` stride). One registry,
``ESTIMATORS``, maps an op name to the function that turns those into a ``Cost``; an op
without an entry (or whose arguments do not have the shapes its entry needs) has no
estimate, and the roofline says so.

The formulas (multiply-adds count 2 FLOPs; bytes are each tensor read once and the result
written once, the least traffic the op can have, so the intensity is an upper bound):

  GEMM      ``mm`` A[M,K] B[K,N]: 2MNK FLOPs; bytes (MK + KN + MN) x element size.
            ``addmm``/``baddbmm`` add the bias: + MN FLOPs (one add per output) and its
            bytes. ``bmm`` [B,M,K] [B,K,N]: 2BMNK. ``matmul`` broadcasts the batch dims (a
            1-D operand is a vector). ``linear`` x[..., K] W[N, K] (bias[N]): 2MNK with M the
            product of x's leading dims, + MN with a bias.
  conv      x[N, C, *spatial], w[Cout, C/groups, *kernel]: 2 x N x Cout x prod(out spatial)
            x C/groups x prod(kernel) (+ N x Cout x prod(out) with a bias); out = (in + 2p
            - d(k - 1) - 1) // s + 1 with stride, padding and dilation from ``Concrete
            Inputs`` (arguments 3, 4, 5 of aten::convolution and its cudnn/miopen forms)
            where recorded, else the output's size from its gradient where the op's
            autograd node records it (a training step), else PyTorch's defaults (stride 1,
            padding 0, dilation 1), and the estimate is marked ``assumed``. The backward ops record the output's
            gradient, so need no stride: ``convolution_backward`` / ``cudnn_convolution_
            backward`` (grad_out, x, w) cost two forwards (the input's and the weight's
            gradient), ``_input`` and ``_weight`` one each.
  attention ``scaled_dot_product_attention`` and its flash / efficient / cudnn / CPU forms,
            q[B,H,L,E] k[B,H,S,E] v[B,H,S,Ev]: QK^T and PV cost 2 x (E + Ev) FLOPs per
            query-key pair the mask keeps: all L x S without a mask, 2BHLS(E + Ev). A causal
            mask keeps the lower triangle, counted exactly (``kept_pairs``): query i sees
            keys 0..i aligned at the top left (``is_causal`` of the SDPA ops, custom mask
            type 1), keys 0..i + S - L at the bottom right (``is_causal`` of
            ``_flash_attention_*``, FlashAttention 2's convention; custom mask type 2), so
            S(S + 1)/2 of S x S pairs for square attention, not the 1/2 others approximate
            with. The flag is read from ``Concrete Inputs`` at its schema position
            (``ATTENTION_MASKS``); where it is not recorded (no ``Concrete Inputs``) the full
            count stands and the estimate says so (``Cost.assumed``). An attention mask
            tensor (``attn_mask``) is not read: counted as full. Bytes q, k, v and the output
            [B,H,L,Ev]. A backward runs five such products (S recomputed, dV, dP, dQ, dK):
            2.5 x the forward, under the same mask.
  elementwise  unary, binary and in-place ops (add, mul, relu, gelu, copy_...): one FLOP per
            output element, the output the broadcast of the tensor inputs; bytes the inputs
            and the output (an in-place op's output is its first input, written back).
            ``copy_``/``fill_``/``zero_`` move data and count 0 FLOPs. Reductions (``sum``,
            ``mean``) one FLOP per input element, bytes the input.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Bytes per element of the dtypes Kineto names in ``Input type``.
DTYPE_BYTES: dict[str, int] = {
    "double": 8,
    "float": 4,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "half": 2,
    "bfloat16": 2,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "short": 2,
    "long": 8,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
}


@dataclass(frozen=True)
class Tensor:
    dims: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.dims)

    @property
    def itemsize(self) -> int | None:
        return DTYPE_BYTES.get(self.dtype)

    @property
    def nbytes(self) -> float:
        size = self.itemsize
        return float(self.numel * size) if size is not None else math.nan


@dataclass(frozen=True)
class Call:
    """One op call's recorded arguments: per position its tensor (None where the argument
    is not a tensor) and its concrete value's text ("" where none is recorded)."""

    tensors: tuple[Tensor | None, ...]
    concrete: tuple[str, ...]
    # The output's dims where the profile says them elsewhere: a forward op's autograd
    # node records the gradient of its output (``torch_costs``); None where unknown.
    output: tuple[int, ...] | None = None

    def tensor(self, index: int) -> Tensor | None:
        return self.tensors[index] if index < len(self.tensors) else None

    def text(self, index: int) -> str:
        """An argument's recorded value as text ("True", "0."), "" where none is."""
        return self.concrete[index] if index < len(self.concrete) else ""

    def ints(self, index: int) -> tuple[int, ...] | None:
        """A list argument's value ("[2, 2]"), or None where not recorded."""
        text = self.text(index)
        try:
            value = json.loads(text) if text else None
        except ValueError:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return (value,)
        if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return tuple(value)
        return None


@dataclass(frozen=True)
class Cost:
    flops: float
    bytes_accessed: float
    # What was taken for an argument the profile did not record ("" where nothing was):
    # ``STRIDE_ASSUMED``, ``FULL_ATTENTION_ASSUMED``.
    assumed: str = ""


STRIDE_ASSUMED = "stride, padding or dilation not recorded: PyTorch's defaults taken"
FULL_ATTENTION_ASSUMED = "is_causal not recorded: counted as full attention"
INPUT_SIZE_ASSUMED = "input size not recorded: taken from the gradient and the weight"


def call_of(dims: Any, types: Any, concrete: Any = None) -> Call | None:
    """The Call of recorded ``Input Dims`` / ``Input type`` / ``Concrete Inputs`` (JSON text
    or decoded), or None where they are missing or malformed."""
    dims, types, concrete = _decoded(dims), _decoded(types), _decoded(concrete)
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    tensors: list[Tensor | None] = []
    for index, shape in enumerate(dims):
        dtype = types[index] if index < len(types) and isinstance(types[index], str) else ""
        is_shape = isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in shape)
        # A 0-dim tensor records [] too: a tensor of one element where its type is a dtype.
        if is_shape and (shape or dtype in DTYPE_BYTES):
            tensors.append(Tensor(tuple(shape), dtype))
        else:
            tensors.append(None)
    texts = tuple(str(v) if isinstance(v, str) else "" for v in concrete) if isinstance(concrete, list) else ()
    return Call(tuple(tensors), texts)


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


Estimator = Callable[[Call], Cost | None]


def _bytes(*tensors: Tensor | None) -> float:
    return sum(t.nbytes for t in tensors if t is not None)


def _gemm(a: Tensor, b: Tensor, bias: Tensor | None, batch: int, m: int, n: int, k: int) -> Cost:
    out = batch * m * n
    flops = 2.0 * batch * m * n * k + (out if bias is not None else 0)
    size = a.itemsize or b.itemsize or 0
    return Cost(flops, _bytes(a, b, bias) + out * size if size else math.nan)


def mm(call: Call) -> Cost | None:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or len(a.dims) != 2 or len(b.dims) != 2:
        return None
    return _gemm(a, b, None, 1, a.dims[0], b.dims[1], a.dims[1])


def addmm(call: Call) -> Cost | None:
    bias, a, b = call.tensor(0), call.tensor(1), call.tensor(2)
    if a is None or b is None or len(a.dims) != 2 or len(b.dims) != 2:
        return None
    return _gemm(a, b, bias, 1, a.dims[0], b.dims[1], a.dims[1])


def bmm(call: Call) -> Cost | None:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or len(a.dims) != 3 or len(b.dims) != 3:
        return None
    return _gemm(a, b, None, a.dims[0], a.dims[1], b.dims[2], a.dims[2])


def baddbmm(call: Call) -> Cost | None:
    bias, a, b = call.tensor(0), call.tensor(1), call.tensor(2)
    if a is None or b is None or len(a.dims) != 3 or len(b.dims) != 3:
        return None
    return _gemm(a, b, bias, a.dims[0], a.dims[1], b.dims[2], a.dims[2])


def matmul(call: Call) -> Cost | None:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or not a.dims or not b.dims:
        return None
    a_dims = (1, *a.dims) if len(a.dims) == 1 else a.dims
    b_dims = (*b.dims, 1) if len(b.dims) == 1 else b.dims
    batch_a, batch_b = a_dims[:-2], b_dims[:-2]
    width = max(len(batch_a), len(batch_b))
    padded_a = (1,) * (width - len(batch_a)) + tuple(batch_a)
    padded_b = (1,) * (width - len(batch_b)) + tuple(batch_b)
    batch = math.prod(max(x, y) for x, y in zip(padded_a, padded_b))
    return _gemm(a, b, None, batch, a_dims[-2], b_dims[-1], a_dims[-1])


def linear(call: Call) -> Cost | None:
    x, w, bias = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None or w is None or not x.dims or len(w.dims) != 2:
        return None
    return _gemm(x, w, bias, 1, math.prod(x.dims[:-1]), w.dims[0], x.dims[-1])


def _conv_flops(x: Tensor, w: Tensor, out_spatial: tuple[int, ...]) -> float:
    batch, cout = x.dims[0], w.dims[0]
    return 2.0 * batch * cout * math.prod(out_spatial) * w.dims[1] * math.prod(w.dims[2:])


def convolution(call: Call) -> Cost | None:
    """aten::convolution(input, weight, bias, stride, padding, dilation, ...) and the
    cudnn/miopen forms, whose first six arguments are the same."""
    x, w, bias = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None or w is None or len(x.dims) < 3 or len(w.dims) != len(x.dims):
        return None
    spatial, kernel = x.dims[2:], w.dims[2:]
    rank = len(spatial)
    recorded = [call.ints(i) for i in (3, 4, 5)]
    assumed = any(value is None for value in recorded)
    stride, padding, dilation = (_per_dim(value, rank, default) for value, default in zip(recorded, (1, 0, 1)))
    out = tuple((size + 2 * p - d * (k - 1) - 1) // s + 1 for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))
    known = call.output
    if assumed and known is not None and len(known) == len(x.dims) and known[1] == w.dims[0]:
        out, assumed = known[2:], False  # the output's size from its gradient: nothing assumed
    if any(o <= 0 for o in out):
        return None
    output = Tensor((x.dims[0], w.dims[0], *out), x.dtype)
    flops = _conv_flops(x, w, out) + (output.numel if bias is not None else 0)
    return Cost(flops, _bytes(x, w, bias, output), STRIDE_ASSUMED if assumed else "")


def _per_dim(value: tuple[int, ...] | None, rank: int, default: int) -> tuple[int, ...]:
    if value is None:
        return (default,) * rank
    return value * rank if len(value) == 1 else value


def _conv_backward_flops(grad_out: Tensor | None, w: Tensor | None) -> float | None:
    """One forward's FLOPs, from the output's gradient (its spatial dims are the output's)
    and the weight: the same products, run backwards."""
    if grad_out is None or w is None or len(grad_out.dims) < 3 or len(w.dims) != len(grad_out.dims):
        return None
    return 2.0 * grad_out.dims[0] * w.dims[0] * math.prod(grad_out.dims[2:]) * w.dims[1] * math.prod(w.dims[2:])


def _convolution_backward(grad_index: int, input_index: int) -> Estimator:
    """Both gradients, two forwards' FLOPs: aten::convolution_backward(grad_out, input,
    weight, ...) and aten::cudnn_convolution_backward(input, grad_out, weight, ...)."""

    def estimator(call: Call) -> Cost | None:
        grad_out, x, w = call.tensor(grad_index), call.tensor(input_index), call.tensor(2)
        flops = _conv_backward_flops(grad_out, w)
        if flops is None:
            return None
        # Reads grad_out, x and w; writes grad_x and grad_w.
        return Cost(2 * flops, _bytes(grad_out, x, w) + _bytes(x, w))

    return estimator


def conv_backward_input(call: Call) -> Cost | None:
    """aten::cudnn_convolution_backward_input(input_size, grad_out, weight, ...): reads
    grad_out and w, writes grad_in, whose shape is the list argument (taken as grad_out's
    batch, w's input channels and grad_out's spatial dims where not recorded: ``assumed``)."""
    grad_out, w = call.tensor(1), call.tensor(2)
    flops = _conv_backward_flops(grad_out, w)
    if flops is None or grad_out is None or w is None:
        return None
    size = call.ints(0)
    grad_in = Tensor(size if size is not None else (grad_out.dims[0], w.dims[1], *grad_out.dims[2:]), grad_out.dtype)
    return Cost(flops, _bytes(grad_out, w, grad_in), "" if size is not None else INPUT_SIZE_ASSUMED)


def conv_backward_weight(call: Call) -> Cost | None:
    """aten::cudnn_convolution_backward_weight(weight_size, grad_out, input, ...): the
    weight's shape is the list argument, recorded as text where ``Concrete Inputs`` is."""
    grad_out, x = call.tensor(1), call.tensor(2)
    size = call.ints(0)
    if grad_out is None or x is None or size is None or len(size) != len(x.dims):
        return None
    w = Tensor(size, x.dtype)
    return Cost(_conv_flops(x, w, grad_out.dims[2:]), _bytes(grad_out, x, w))


# How a causal mask lines up when queries and keys differ in number (L != S).
NO_MASK, TOP_LEFT, BOTTOM_RIGHT = "", "top-left", "bottom-right"
# custom_mask_type of the memory-efficient kernels (ATen's CustomMaskType enum).
CUSTOM_MASK_TYPES = {"0": NO_MASK, "1": TOP_LEFT, "2": BOTTOM_RIGHT}
_FLAGS = {"False": False, "True": True}

MaskReader = Callable[[Call], str | None]


def _is_causal(position: int, alignment: str) -> MaskReader:
    """A bool ``is_causal`` argument at ``position``: the mask, None where not recorded
    (or where the value there is not a bool: another overload of the same name)."""

    def read(call: Call) -> str | None:
        flag = _FLAGS.get(call.text(position))
        return None if flag is None else alignment if flag else NO_MASK

    return read


def _custom_mask_type(position: int) -> MaskReader:
    def read(call: Call) -> str | None:
        return CUSTOM_MASK_TYPES.get(call.text(position))

    return read


def kept_pairs(queries: int, keys: int, mask: str) -> int:
    """Query-key pairs a mask keeps. Causal: query i (from 0) sees keys 0..i + offset,
    offset 0 at the top left and S - L at the bottom right, so row i keeps
    clamp(i + offset + 1, 0, S) pairs, summed here in closed form."""
    if mask == NO_MASK:
        return queries * keys
    offset = keys - queries if mask == BOTTOM_RIGHT else 0
    first, last = offset + 1, offset + queries  # the first and last rows' unclamped counts
    low, high = max(first, 1), min(last, keys)
    partial = (low + high) * (high - low + 1) // 2 if low <= high else 0
    return partial + max(0, last - max(first, keys + 1) + 1) * keys


def _attention_cost(q: Tensor | None, k: Tensor | None, v: Tensor | None, mask: str | None) -> Cost | None:
    if q is None or k is None or v is None or len(q.dims) < 3 or len(k.dims) != len(q.dims) or len(v.dims) != len(q.dims):
        return None
    lead, length, e = math.prod(q.dims[:-2]), q.dims[-2], q.dims[-1]
    source, ev = k.dims[-2], v.dims[-1]
    flops = 2.0 * lead * kept_pairs(length, source, mask or NO_MASK) * (e + ev)
    out = Tensor((*q.dims[:-1], ev), q.dtype)
    return Cost(flops, _bytes(q, k, v, out), FULL_ATTENTION_ASSUMED if mask is None else "")


def attention(mask: MaskReader) -> Estimator:
    """A forward op (q, k, v, ...) whose mask ``mask`` reads."""

    def estimator(call: Call) -> Cost | None:
        return _attention_cost(call.tensor(0), call.tensor(1), call.tensor(2), mask(call))

    return estimator


def attention_backward(mask: MaskReader) -> Estimator:
    """A backward op (grad_out, q, k, v, out, ...)."""

    def estimator(call: Call) -> Cost | None:
        grad_out, q, k, v = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3)
        forward = _attention_cost(q, k, v, mask(call))
        if forward is None:
            return None
        # Reads grad_out, q, k, v, out; writes dq, dk, dv.
        return Cost(2.5 * forward.flops, _bytes(grad_out, q, k, v) * 2, forward.assumed)

    return estimator


# Each attention op and where its schema puts the mask, positions counted as Kineto records
# the arguments (keyword-only ones included; checked on a torch 2.13 CPU trace).
ATTENTION_MASKS: dict[str, MaskReader] = {
    "scaled_dot_product_attention": _is_causal(5, TOP_LEFT),
    "_scaled_dot_product_attention_math": _is_causal(5, TOP_LEFT),
    "_scaled_dot_product_flash_attention": _is_causal(4, TOP_LEFT),
    "_scaled_dot_product_flash_attention_for_cpu": _is_causal(4, TOP_LEFT),
    "_scaled_dot_product_efficient_attention": _is_causal(6, TOP_LEFT),
    "_scaled_dot_product_cudnn_attention": _is_causal(6, TOP_LEFT),
    "_scaled_dot_product_fused_attention_overrideable": _is_causal(5, TOP_LEFT),
    "_flash_attention_forward": _is_causal(8, BOTTOM_RIGHT),
    "_efficient_attention_forward": _custom_mask_type(9),
}
ATTENTION_BACKWARD_MASKS: dict[str, MaskReader] = {
    "_scaled_dot_product_flash_attention_backward": _is_causal(11, TOP_LEFT),
    "_scaled_dot_product_flash_attention_for_cpu_backward": _is_causal(7, TOP_LEFT),
    "_scaled_dot_product_efficient_attention_backward": _is_causal(11, TOP_LEFT),
    "_scaled_dot_product_cudnn_attention_backward": _is_causal(14, TOP_LEFT),
    "_flash_attention_backward": _is_causal(11, BOTTOM_RIGHT),
    "_efficient_attention_backward": _custom_mask_type(14),
}


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    width = max(len(s) for s in shapes)
    padded = [(1,) * (width - len(s)) + s for s in shapes]
    return tuple(max(column) for column in zip(*padded))


def _tensors(call: Call) -> list[Tensor]:
    return [t for t in call.tensors if t is not None]


def elementwise(call: Call) -> Cost | None:
    tensors = _tensors(call)
    if not tensors:
        return None
    out = Tensor(_broadcast([t.dims for t in tensors]), tensors[0].dtype)
    return Cost(float(out.numel), _bytes(*tensors) + out.nbytes)


def inplace(call: Call) -> Cost | None:
    tensors = _tensors(call)
    if not tensors or call.tensor(0) is None:
        return None
    first = tensors[0]
    return Cost(float(first.numel), _bytes(*tensors) + first.nbytes)


def copy(call: Call) -> Cost | None:
    dst, src = call.tensor(0), call.tensor(1)
    if dst is None or src is None:
        return None
    return Cost(0.0, dst.nbytes + src.nbytes)


def fill(call: Call) -> Cost | None:
    dst = call.tensor(0)
    return Cost(0.0, dst.nbytes) if dst is not None else None


def reduction(call: Call) -> Cost | None:
    x = call.tensor(0)
    return Cost(float(x.numel), x.nbytes) if x is not None else None


_UNARY = ("relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "neg", "sqrt", "rsqrt", "abs", "clamp", "clamp_min", "clamp_max", "hardtanh", "leaky_relu")
_BINARY = ("add", "sub", "mul", "div", "pow", "where", "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward")

ESTIMATORS: dict[str, Estimator] = {
    "aten::mm": mm,
    "aten::addmm": addmm,
    "aten::bmm": bmm,
    "aten::baddbmm": baddbmm,
    "aten::matmul": matmul,
    "aten::linear": linear,
    **{f"aten::{name}": convolution for name in ("convolution", "_convolution", "cudnn_convolution", "miopen_convolution", "conv1d", "conv2d", "conv3d")},
    "aten::convolution_backward": _convolution_backward(0, 1),
    "aten::cudnn_convolution_backward": _convolution_backward(1, 0),
    "aten::miopen_convolution_backward": _convolution_backward(1, 0),
    "aten::cudnn_convolution_backward_input": conv_backward_input,
    "aten::cudnn_convolution_backward_weight": conv_backward_weight,
    **{f"aten::{name}": attention(mask) for name, mask in ATTENTION_MASKS.items()},
    **{f"aten::{name}": attention_backward(mask) for name, mask in ATTENTION_BACKWARD_MASKS.items()},
    **{f"aten::{name}": elementwise for name in (*_UNARY, *_BINARY)},
    **{f"aten::{name}_": inplace for name in (*_UNARY, *_BINARY)},
    "aten::copy_": copy,
    "aten::fill_": fill,
    "aten::zero_": fill,
    "aten::sum": reduction,
    "aten::mean": reduction,
}


def estimate(name: str, call: Call) -> Cost | None:
    """The op's cost from its recorded arguments, or None (no estimator, or arguments of
    shapes it cannot read)."""
    estimator = ESTIMATORS.get(name)
    return estimator(call) if estimator is not None else None
