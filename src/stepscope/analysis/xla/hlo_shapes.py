"""XLA shapes as people read them: ``f32[8,32]{1,0}``, ``bf16[4,128]{1,0:T(8,128)(2,1)}``,
tuples ``(f32[32,32]{1,0}, f32[])``; the element type's name and an array's unpadded bytes.

The text follows XLA's own shape-with-layout notation (element type, dimensions, then the
layout: minor-to-major order, tiles ``T(...)``, the memory space ``S(n)`` when not the
default), which is what the XLA dumps and XProf's memory viewer show.
"""

from __future__ import annotations

from stepscope.protos import hlo_pb2
from stepscope.trace.stat_types import INT64_MAX  # XLA's sizes are int64

PrimitiveType = hlo_pb2.PrimitiveType

# Bits per element; types without a fixed size (tuples, tokens, opaque) have none.
_BITS = {
    PrimitiveType.PRED: 8,
    PrimitiveType.S1: 1,
    PrimitiveType.U1: 1,
    PrimitiveType.S2: 2,
    PrimitiveType.U2: 2,
    PrimitiveType.S4: 4,
    PrimitiveType.U4: 4,
    PrimitiveType.F4E2M1FN: 4,
    PrimitiveType.S8: 8,
    PrimitiveType.U8: 8,
    PrimitiveType.F8E5M2: 8,
    PrimitiveType.F8E4M3: 8,
    PrimitiveType.F8E4M3FN: 8,
    PrimitiveType.F8E4M3B11FNUZ: 8,
    PrimitiveType.F8E3M4: 8,
    PrimitiveType.F8E5M2FNUZ: 8,
    PrimitiveType.F8E4M3FNUZ: 8,
    PrimitiveType.F8E8M0FNU: 8,
    PrimitiveType.S16: 16,
    PrimitiveType.U16: 16,
    PrimitiveType.F16: 16,
    PrimitiveType.BF16: 16,
    PrimitiveType.S32: 32,
    PrimitiveType.U32: 32,
    PrimitiveType.F32: 32,
    PrimitiveType.S64: 64,
    PrimitiveType.U64: 64,
    PrimitiveType.F64: 64,
    PrimitiveType.C64: 64,
    PrimitiveType.C128: 128,
}
_KNOWN_TYPES = frozenset(PrimitiveType.values())
POINTER_BYTES = 8  # a tuple's buffer holds one pointer per element


def dtype(shape: hlo_pb2.ShapeProto) -> str:
    """The element type as XLA writes it (``f32``, ``bf16``, ``pred``; ``tuple`` for tuples)."""
    if shape.element_type == PrimitiveType.OPAQUE_TYPE:
        return "opaque"
    if shape.element_type not in _KNOWN_TYPES:  # a newer XLA's type, or damage
        return f"type{shape.element_type}"
    return str(PrimitiveType.Name(shape.element_type)).lower()


def subshape(shape: hlo_pb2.ShapeProto, index: list[int]) -> hlo_pb2.ShapeProto:
    """The shape at ``index`` inside a (nested) tuple shape; ``shape`` itself for ``[]``.
    An index outside the tuple (past it, or negative: a damaged proto) stops at the deepest
    shape reached."""
    for i in index:
        if not 0 <= i < len(shape.tuple_shapes):
            break
        shape = shape.tuple_shapes[i]
    return shape


def _layout(layout: hlo_pb2.LayoutProto) -> str:
    extras = "".join("T(" + ",".join(str(d) for d in tile.dimensions) + ")" for tile in layout.tiles)
    if layout.memory_space:
        extras += f"S({layout.memory_space})"
    order = ",".join(str(d) for d in layout.minor_to_major)
    if not order and not extras:
        return ""
    return "{" + order + (":" + extras if extras else "") + "}"


def shape_text(shape: hlo_pb2.ShapeProto) -> str:
    """``f32[5,1024]{1,0:T(8,128)}``; ``(a, b)`` for a tuple."""
    if shape.element_type == PrimitiveType.TUPLE:
        return "(" + ", ".join(shape_text(element) for element in shape.tuple_shapes) + ")"
    if shape.element_type in (PrimitiveType.TOKEN, PrimitiveType.OPAQUE_TYPE):
        return dtype(shape)
    dims = ",".join(str(d) for d in shape.dimensions)
    return f"{dtype(shape)}[{dims}]" + (_layout(shape.layout) if shape.HasField("layout") else "")


class ShapeTooLarge(ValueError):
    """An array shape of more bytes than XLA can hold: a damaged proto (see ``unpadded_bytes``)."""


def unpadded_bytes(shape: hlo_pb2.ShapeProto) -> int | None:
    """The bytes of the array's elements without layout padding (a tuple: its pointers);
    None for types without a size and for arrays with a negative (unbounded dynamic)
    dimension. More than ``INT64_MAX`` bytes raises ShapeTooLarge: XLA sizes are int64 and
    its compiler refuses such a shape (XProf's converter aborts on one), so only a damaged
    or forged proto has it."""
    if shape.element_type == PrimitiveType.TUPLE:
        return POINTER_BYTES * len(shape.tuple_shapes)
    bits = _BITS.get(shape.element_type)
    if bits is None or any(d < 0 for d in shape.dimensions):
        return None
    elements = 0 if 0 in shape.dimensions else 1
    for d in shape.dimensions if elements else ():
        elements *= d  # checked as it grows: a forged shape can have thousands of huge dimensions
        if elements * bits > INT64_MAX * 8:
            raise ShapeTooLarge(f"its shape {dtype(shape)}[{len(shape.dimensions)} dimensions] holds more than {INT64_MAX:,} bytes")
    return (elements * bits + 7) // 8
