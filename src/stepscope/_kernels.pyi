"""Types of ``stepscope._kernels``, the C of ``src/stepscope/kernels`` (see
:mod:`stepscope.trace.kernels`). Each function stands for the Python one named in its
docstring and takes the same arguments: numpy arrays of the dtypes given, C-contiguous,
writable where written. Wrong dtypes raise TypeError; other shapes, read-only outputs,
lengths or indexes out of range raise ValueError."""

from typing import Final

import numpy as np
import numpy.typing as npt

_Bytes = npt.NDArray[np.uint8]
_Int8s = npt.NDArray[np.int8]
_Int32s = npt.NDArray[np.int32]
_Int64s = npt.NDArray[np.int64]
_Int = int | np.integer

TRUNCATED: Final[int]
LONG_VARINT: Final[int]
BAD_TAG: Final[int]
BAD_WIRE_TYPE: Final[int]
BAD_GROUP: Final[int]
BAD_LENGTH: Final[int]
TOO_DEEP: Final[int]
DEPTH_LIMIT: Final[int]
STATE_LINE: Final[int]
STATE_POS: Final[int]
STATE_EVENTS: Final[int]
STATE_STATS: Final[int]
STATE_TEXT_SIZE: Final[int]
STATE_TEXTS: Final[int]
STATE_HEADS: Final[int]
STATE_HEAD_LINE: Final[int]
STATE_HEAD_END: Final[int]
STATE_LINE_FIRST: Final[int]
STATE_ROOM_FOR: Final[int]
STATE_ROOM_NEED: Final[int]
STATE_SIZE: Final[int]
ROOM: Final[int]
ROOM_EVENTS: Final[int]
ROOM_STATS: Final[int]
ROOM_TEXT: Final[int]
ROOM_TEXTS: Final[int]
ROOM_HEADS: Final[int]
KIND_INT64: Final[int]
KIND_UINT64: Final[int]
KIND_DOUBLE: Final[int]
KIND_STR: Final[int]
KIND_BYTES: Final[int]
KIND_REF: Final[int]
KIND_NONE: Final[int]
FLOW_IN: Final[int]
FLOW_OUT: Final[int]
FLOW_ID_MASK: Final[int]

def scan_fields(buf: _Bytes, start: _Int, end: _Int, depth: _Int, out: _Int64s, /) -> tuple[int, int, int]:
    """wire.scan_fields"""

def decode_lines(
    buf: _Bytes,
    line_start: _Int64s,
    line_end: _Int64s,
    state: _Int64s,
    event_metadata: _Int64s,
    event_offset: _Int64s,
    event_duration: _Int64s,
    event_line: _Int32s,
    stat_event: _Int64s,
    stat_metadata: _Int64s,
    stat_kind: _Int8s,
    stat_bits: _Int64s,
    out_text: _Bytes,
    out_text_offsets: _Int64s,
    out_heads: _Int64s,
    out_line_events: _Int64s,
    /,
) -> tuple[int, int]:
    """wire.decode_lines"""

def encode_sizes(
    metadata: _Int64s,
    offset: _Int64s,
    duration: _Int64s,
    entry_row: _Int64s,
    entry_id: _Int64s,
    entry_kind: _Int8s,
    entry_bits: _Int64s,
    text_offsets: _Int64s,
    event_size: _Int64s,
    stat_size: _Int64s,
    /,
) -> int:
    """encode._sizes"""

def encode_fill(
    metadata: _Int64s,
    offset: _Int64s,
    duration: _Int64s,
    entry_row: _Int64s,
    entry_id: _Int64s,
    entry_kind: _Int8s,
    entry_bits: _Int64s,
    text_blob: _Bytes,
    text_offsets: _Int64s,
    event_size: _Int64s,
    stat_size: _Int64s,
    buffer: _Bytes,
    event_end: _Int64s,
    /,
) -> int:
    """encode._fill"""

def nest(line: _Int32s, start: _Int64s, duration: _Int64s, depth: _Int32s, parent: _Int64s, /) -> None:
    """presorted._nest"""

def highest_flow_id(encoded: npt.NDArray[np.uint64], /) -> int:
    """arrows._highest_flow_id"""

def first_outs(encoded: npt.NDArray[np.uint64], slots: _Int64s, first: _Int64s, /) -> None:
    """arrows._first_outs"""

def walk_arrows(
    parts: _Int32s,
    bounds: _Int64s,
    rows: _Int64s,
    encoded: npt.NDArray[np.uint64],
    slots: _Int64s,
    first: _Int64s,
    fill: bool,
    flow_ids: _Int64s,
    src_plane: _Int32s,
    src_event: _Int64s,
    dst_plane: _Int32s,
    dst_event: _Int64s,
    /,
) -> int:
    """arrows._walk"""

def scatter_ids(event: _Int64s, key: _Int32s, kind: _Int8s, bits: _Int64s, code: _Int, int64: _Int, uint64: _Int, column: _Int64s, /) -> int:
    """hot_ids._scatter"""

def lod_lanes(
    key: _Int64s,
    duration: _Int64s,
    busy_before: _Int64s,
    lane_shift: _Int64s,
    ids: _Int64s,
    name_id: _Int32s,
    lanes: _Int64s,
    first: _Int64s,
    stop: _Int64s,
    edges: _Int64s,
    min_event: _Int,
    out: tuple[np.ndarray, ...] | list[np.ndarray],
    /,
) -> tuple[int, int]:
    """lod_loop.lod_lanes"""

def schedule_starts(offsets: _Int64s, src: _Int64s, weight: _Int64s, residual: _Int64s, fixed: _Int64s, starts: _Int64s, /) -> None:
    """schedule._schedule_starts"""

def scan_chrome_events(
    text: _Bytes,
    spans: _Int64s,
    ts: npt.NDArray[np.float64],
    dur: npt.NDArray[np.float64],
    exact_ns: _Int64s,
    flags: _Bytes,
    key_codes: _Int64s,
    key_first: _Int64s,
    id_codes: _Int64s,
    id_first: _Int64s,
    args: _Bytes,
    args_length: _Int64s,
    arg_keys: bytes,
    arg_ints: _Int64s,
) -> tuple[int, int, int, int, int, int]:
    """chrome/scanned.py's scan: (status, events, distinct keys, distinct ids, args bytes)."""
