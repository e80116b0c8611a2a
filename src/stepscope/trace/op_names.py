"""How each source names its framework ops: the vocabulary the op tables read and the
XSpace writer writes for XProf (``formats/xspace/xprof_hints.py``), in one place so that
both call the same events ops, by the same names.

- Kineto (PyTorch): host events of category ``cpu_op`` (2021: ``Operator``);
- TensorFlow's executor: events named ``<op name>:<op type>``;
- tf.data: iterator stages named ``Iterator::...``, of type ``Dataset`` (as XProf lists them);
- XLA ops run by a CPU backend: events carrying ``hlo_op``, typed by the name without its
  numeric suffix.
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


def op_type_of(name: str) -> str:
    """``fusion.3`` -> ``fusion``; ``MatMul_1`` -> ``MatMul``."""
    return _SUFFIX.sub("", name) or name
