"""Flow endpoints paired into arrows by a walk (kernels, C where built): the bulk reader's way.

:func:`stepscope.trace.formats.xspace.read.pair_flows_numpy` pairs them with whole-array
operations, some twenty temporary arrays the size of the endpoints. At millions of flows
their fresh pages, not the arithmetic, were most of the pairing's time (0.9 s of a
10M-event load). This walks the endpoints three times, reading them only, and allocates
just the first-endpoint table and the arrows (sparse flow ids are first numbered densely). Same table: tests/trace/test_xspace_arrows.py
compares the two. The walks are kernels (:mod:`stepscope.trace.kernels`; the C of
``src/stepscope/kernels/flows.c``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.trace.formats.xspace.schema import FLOW_ID_MASK, FLOW_IN, FLOW_OUT
from stepscope.trace.kernels import kernel

# Flow ids below this many per endpoint (plus a floor) index a table as they are; sparser
# ones are numbered densely first.
_TABLE_PER_POINT = 4
_TABLE_FLOOR = 1 << 20

Arrows = tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64]]


def arrows(parts: npt.NDArray[np.int32], bounds: npt.NDArray[np.int64], rows: npt.NDArray[np.int64], encoded: npt.NDArray[np.uint64]) -> Arrows:
    """(flow id, source plane, source event, sink plane, sink event) of each arrow, in sink order.

    Endpoint ``i`` is event ``rows[i]`` of plane ``parts[p]`` for ``bounds[p] <= i < bounds[p + 1]``;
    ``encoded[i]`` its `flow` stat. Each in-endpoint gets an arrow from the first
    out-endpoint of its flow id, unless there is none or that is the same event."""
    high = _highest_flow_id(encoded)
    if high < _TABLE_PER_POINT * len(encoded) + _TABLE_FLOOR:
        slots, size = np.zeros(0, dtype=np.int64), high + 1  # (the flow id is its slot)
    else:
        distinct, inverse = np.unique((encoded >> np.uint64(2)) & np.uint64(FLOW_ID_MASK), return_inverse=True)
        slots, size = inverse.reshape(-1).astype(np.int64), len(distinct)
    first = np.full(size, -1, dtype=np.int64)
    _first_outs(encoded, slots, first)
    nothing = np.zeros(0, dtype=np.int64)
    count = _walk(parts, bounds, rows, encoded, slots, first, False, nothing, nothing.astype(np.int32), nothing, nothing.astype(np.int32), nothing)
    out = (
        np.empty(count, dtype=np.int64),
        np.empty(count, dtype=np.int32),
        np.empty(count, dtype=np.int64),
        np.empty(count, dtype=np.int32),
        np.empty(count, dtype=np.int64),
    )
    _walk(parts, bounds, rows, encoded, slots, first, True, *out)
    return out


@kernel("highest_flow_id")
def _highest_flow_id(encoded: npt.NDArray[np.uint64]) -> int:
    high = np.int64(0)
    for value in encoded:
        flow_id = _flow_id(value)
        if flow_id > high:
            high = flow_id
    return int(high)


def _flow_id(encoded: np.uint64) -> np.int64:
    return np.int64((encoded >> np.uint64(2)) & np.uint64(FLOW_ID_MASK))


def _direction(encoded: np.uint64) -> np.int64:
    return np.int64(encoded & np.uint64(3))


@kernel("first_outs")
def _first_outs(encoded: npt.NDArray[np.uint64], slots: npt.NDArray[np.int64], first: npt.NDArray[np.int64]) -> None:
    """``first[slot]``: the first out-endpoint of the flow in ``slot`` (-1: none)."""
    for i in range(len(encoded)):
        if _direction(encoded[i]) & FLOW_OUT:
            slot = slots[i] if len(slots) else _flow_id(encoded[i])
            if first[slot] < 0:
                first[slot] = i


@kernel("walk_arrows")
def _walk(
    parts: npt.NDArray[np.int32],
    bounds: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    encoded: npt.NDArray[np.uint64],
    slots: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
    fill: bool,
    flow_ids: npt.NDArray[np.int64],
    src_plane: npt.NDArray[np.int32],
    src_event: npt.NDArray[np.int64],
    dst_plane: npt.NDArray[np.int32],
    dst_event: npt.NDArray[np.int64],
) -> int:
    """The arrows into the in-endpoints: counted, and written when ``fill`` (the outputs then sized by a count)."""
    at = 0
    part = 0
    for i in range(len(encoded)):
        while i >= bounds[part + 1]:
            part += 1
        if not _direction(encoded[i]) & FLOW_IN:
            continue
        source = first[slots[i] if len(slots) else _flow_id(encoded[i])]
        if source < 0 or (bounds[part] <= source < bounds[part + 1] and rows[source] == rows[i]):
            continue  # (no out-endpoint, or an event to itself)
        if fill:
            flow_ids[at] = _flow_id(encoded[i])
            src_plane[at] = parts[np.searchsorted(bounds, source, side="right") - 1]
            src_event[at] = rows[source]
            dst_plane[at] = parts[part]
            dst_event[at] = rows[i]
        at += 1
    return at
