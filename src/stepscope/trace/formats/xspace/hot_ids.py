"""The hot id columns (``schema.HOT_STATS``) scattered from the stat columns in one pass (a kernel).

A mask, a gather and a scatter in numpy walk a plane's millions of stats five times and
allocate three temporaries per column; the loop walks them once and writes in place, in
stat order, so a later stat of an event overwrites an earlier one as numpy's assignment does.
``_scatter`` is a kernel (:mod:`stepscope.trace.kernels`; the C of ``src/stepscope/kernels/flows.c``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.trace.kernels import kernel
from stepscope.trace.model import NO_ID
from stepscope.trace.stat_types import StatKind


def hot_id_column(count: int, event: np.ndarray, key: np.ndarray, kind: np.ndarray, bits: np.ndarray, code: int) -> np.ndarray | None:
    """The ``count`` events' values of the stat keyed ``code`` (NO_ID where an event has
    none), from its int64 entries and the uint64 ones that fit an int64; None when it has none."""
    column = np.full(count, NO_ID, dtype=np.int64)
    found = _scatter(event, key, kind, bits, np.int32(code), np.int8(StatKind.INT64), np.int8(StatKind.UINT64), column)
    return column if found else None


@kernel("scatter_ids")
def _scatter(
    event: npt.NDArray[np.int64],
    key: npt.NDArray[np.int32],
    kind: npt.NDArray[np.int8],
    bits: npt.NDArray[np.int64],
    code: np.int32,
    int64: np.int8,
    uint64: np.int8,
    column: npt.NDArray[np.int64],
) -> int:
    """Writes each matching stat's bits at its event's row; returns how many matched."""
    found = 0
    for index in range(len(event)):
        if key[index] == code and (kind[index] == int64 or (kind[index] == uint64 and bits[index] >= 0)):
            column[event[index]] = bits[index]
            found += 1
    return found
