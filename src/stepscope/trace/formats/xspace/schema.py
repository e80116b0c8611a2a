"""What XSpace's values mean, as the reader, the writer and the wire decoder share them.

Plain constants: the decoder (:mod:`stepscope.trace.formats.xspace.decode`) and the wire
decoder (:mod:`stepscope.trace.formats.xspace.wire`, imported only when a file is read in
bulk) both use the stat kinds, and neither imports the other for them. The C kernels
(``src/stepscope/kernels``) repeat the kinds and the ``flow`` packing; tests check that
they agree.
"""

from __future__ import annotations

from stepscope.trace import names

# XStat value kinds as the decoders write them: stepscope.trace.stats.StatKind's values,
# and two the reader resolves.
KIND_INT64 = 0
KIND_UINT64 = 1
KIND_DOUBLE = 2
KIND_STR = 3
KIND_BYTES = 4
KIND_REF = 5  # ref_value: the name of the stat metadata with this id
KIND_NONE = 6  # no value field: reads as int64 0

# XSpace field 1..4 with wire type 2 (length-delimited): the only valid first bytes.
_XSPACE_FIRST_BYTES = frozenset({0x0A, 0x12, 0x1A, 0x22})


def looks_like_xspace(data: bytes | bytearray) -> bool:
    """Whether the bytes may be an XSpace (here, not in the reader: sniffing a file must
    not import protobuf, which a JSON trace's load never needs)."""
    return bool(data) and data[0] in _XSPACE_FIRST_BYTES


# Line timestamps at or past this (1973 in epoch ns) are UNIX times, not session offsets.
EPOCH_NS_THRESHOLD = 10**17
TASK_ENVIRONMENT_INFO = names.TASK_ENVIRONMENT_INFO
# TSL's other session stat, next to names.PROFILE_START_TIME.
PROFILE_STOP_TIME = "profile_stop_time"

# Stats copied into the event table's id columns when an event carries them (the writer
# writes them back in this order).
HOT_STATS = {
    names.CORRELATION_ID: "correlation_id",
    names.GROUP_ID: "group_id",
    names.STEP_NUM: "step_num",
    names.EXTERNAL_ID: "external_id",
}

# XSpace's `flow` stat packs direction (bits 0-1), id (bits 2-57) and category (58-63).
FLOW_IN, FLOW_OUT, FLOW_IN_OUT = 1, 2, 3
FLOW_ID_MASK = (1 << 56) - 1
FLOW_CATEGORY_SHIFT = 58
# Category codes stepscope writes: 0 none, else 1 + an index into the plane stat
# names.FLOW_CATEGORIES (TSL's writers put a ContextType there; without that stat it is
# not read). Categories past the 63rd are written as 0 and read as FLOW_CATEGORY.
FLOW_CATEGORY_CODES = 63
FLOW_CATEGORY = "flow"


def encode_flow(flow_id: int, direction: int) -> int:
    return direction | ((flow_id & FLOW_ID_MASK) << 2)
