"""How each source names its framework ops: the vocabulary the op tables read and the
XSpace writer writes for XProf (``formats/xspace/xprof_hints.py``), in one place so that
both call the same events ops, by the same names.

- Kineto (PyTorch): host events of category ``cpu_op`` (2021: ``Operator``);
- TensorFlow's executor: events named ``<op name>:<op type>``;
- tf.data: iterator stages named ``Iterator::...``, of type ``Dataset`` (as XProf lists them);
- XLA ops run by a CPU backend: events carrying ``hlo_op``, typed by the name without its
  numeric suffix;
- XLA ops on a device (TPU, XLA on GPU): the event metadata's name is the instruction's HLO
  text and its display name the instruction's name; ``op_label`` is the name people read.
"""

from __future__ import annotations

import re
from typing import Final

KINETO_OP_CATEGORIES: Final = frozenset({"cpu_op", "Operator"})
TF_DATASET_PREFIX: Final = "Iterator::"
TF_DATASET_TYPE: Final = "Dataset"
# "gradient_tape/MatMul/MatMul:_MklMatMul": TensorFlow op name, then type ("::" is C++).
TF_OP_EVENT: Final = re.compile(r"^([^:\s][^:]*):([A-Za-z_]\w*)$")
_SUFFIX = re.compile(r"[.:_-]?\d+$")
# An instruction's HLO text: ``%copy-done.2 = f32[8]{0} copy-done((f32[8]{0}, f32[8]{0:S(5)}, u32[]) %copy-start.2)``
# (newer XLA leaves out the ``%``): group 1 the instruction's name, group 2 its opcode.
HLO_INSTRUCTION: Final = re.compile(r"^%?([^\s=]+) = (?:\(.*?\)|\S+) ([a-z][a-z0-9-]*)\(")


def op_type_of(name: str) -> str:
    """``fusion.3`` -> ``fusion``; ``MatMul_1`` -> ``MatMul``."""
    return _SUFFIX.sub("", name) or name


def op_label(name: str, display_name: str = "") -> str:
    """The name a person reads for an event type: its display name where the source gave one
    (XLA writes ``copy-done.2`` beside the HLO text), else the instruction's name where the
    name is HLO text (``%copy-done.2 = f32[5,1024,1024,256]{...} copy-done(...)`` ->
    ``copy-done.2``), else the name. The whole text stays the event's name, for details."""
    if display_name:
        return display_name
    found = HLO_INSTRUCTION.match(name) if " = " in name else None
    return found.group(1) if found else name
