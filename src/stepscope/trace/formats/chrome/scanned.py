"""A batch of Chrome/Kineto events scanned by the compiled scanner, as the column builder
takes it.

msgspec decodes a batch into a struct per event, and the builder then walks the structs
field by field (codes, numbers, args): ~0.4 us of Python per event and field, most of a
Kineto load. ``stepscope._kernels.scan_chrome_events``
(``src/stepscope/kernels/chrome.c``) walks the array's text once instead and writes
columns: each field's text span, "ts" and "dur" as doubles, the exact ns of an epoch
"ts", integer flow ids, the args joined, the integers of the id args (``ARG_INT_KEYS``),
and for the fields coded together (phase, name, category, pid, tid, bp) and for the flow
id a code per distinct text, numbered in first-seen order. Only one text per distinct
code is then decoded by msgspec (a few hundred per batch), so the columns come out as
the struct path makes them (``ColumnBuilder.add_scanned``).

The scanner takes the common case only; it stops before anything else (escapes it does
not read, non-ASCII text, exponents, strings where numbers belong...), and the text from
there goes the msgspec way, the reference, as all of it does where the extension was not
built or ``STEPSCOPE_PURE_PYTHON`` is set. tests/trace/test_chrome_scanned.py holds the
two to the same columns and profiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.trace import kernels

# The fields the scanner writes spans of, in its order (chrome.c's F_* enum).
FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp")
FIELD_INDEX = {name: index for index, name in enumerate(FIELDS)}
FLAG_EXACT, FLAG_DUR_ABSENT, FLAG_ID_INT, FLAG_ARGS_ODD = 1, 2, 4, 8
# The args keys whose integer values the scanner reads for every event: those the
# dialects' id columns decode (kineto._KinetoIds, read._XSpaceNamedIds), which then need
# no second decode of the args (half a second of loading a 1M-event trace).
ARG_INT_KEYS = ("correlation", "External id", "external id", "correlation_id", "group_id", "step_num", "external_id")
_ARG_KEYS_TEXT = b"\0".join(key.encode() for key in ARG_INT_KEYS)
# Rows given to a scan of a text of n bytes: n // ROOM_BYTES + ROOM_MIN (Kineto's events
# are 150-600 bytes; where they are smaller the caller scans again for the rest).
ROOM_BYTES = 32
ROOM_MIN = 64


@dataclass
class ScannedEvents:
    """The events the scanner read from the start of a JSON array's text (the arrays cut
    to ``len``), whether it read the array to its end (``ended``), and where the first
    event it did not read begins (``resume``: after its comma, or the array's "]")."""

    source: bytes | bytearray  # the text scanned (spans index it)
    spans: np.ndarray  # (count, 20) int64: start, end of each field's value text; -1 absent
    ts: np.ndarray  # float64, NaN where absent or null
    dur: np.ndarray
    exact_ns: np.ndarray  # int64, valid where flags & FLAG_EXACT
    id_int: np.ndarray  # int64, the "id" where flags & FLAG_ID_INT
    flags: np.ndarray  # uint8
    key_codes: np.ndarray  # int64 code of (ph, name, cat, pid, tid, bp)'s texts
    key_first: np.ndarray  # the row each key code first appears at
    id_codes: np.ndarray
    id_first: np.ndarray
    args: np.ndarray  # uint8: the present args, a comma between two
    args_length: np.ndarray  # int64, 0 where none
    arg_ints: np.ndarray  # (len(ARG_INT_KEYS), count) int64: -1 where absent; not to be used where flags & FLAG_ARGS_ODD
    ended: bool
    resume: int
    full: bool  # every row given was used: the text may hold more whole events

    def __len__(self) -> int:
        return len(self.ts)

    def texts(self, field: str, rows: np.ndarray) -> list[bytes | None]:
        """The value text of ``field`` at each row (None where absent)."""
        index = FIELD_INDEX[field]
        starts = self.spans[rows, 2 * index].tolist()
        ends = self.spans[rows, 2 * index + 1].tolist()
        source = self.source  # sliced as itself: a numpy slice per text cost 0.7 us, a bytearray's 0.06
        return [None if start < 0 else bytes(source[start:end]) for start, end in zip(starts, ends)]


def available() -> bool:
    return kernels.native is not None and hasattr(kernels.native, "scan_chrome_events")


def scan(text: bytes | bytearray | memoryview) -> ScannedEvents | None:
    """The events the scanner reads from the start of one JSON array's text (which begins
    with its "["); None where it is not built (then msgspec decodes every batch)."""
    if not available():
        return None
    data = np.frombuffer(text, dtype=np.uint8)
    room = len(data) // ROOM_BYTES + ROOM_MIN
    spans = np.empty((room, 2 * len(FIELDS)), dtype=np.int64)
    ts, dur = np.empty(room), np.empty(room)
    exact_ns, id_int = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.int64)
    flags = np.empty(room, dtype=np.uint8)
    key_codes, key_first, id_codes, id_first, args_length = (np.empty(room, dtype=np.int64) for _ in range(5))
    args = np.empty(len(data), dtype=np.uint8)
    arg_ints = np.empty((len(ARG_INT_KEYS), room), dtype=np.int64)
    assert kernels.native is not None
    ended, count, resume, keys, ids, args_bytes = kernels.native.scan_chrome_events(
        data, spans, ts, dur, exact_ns, id_int, flags, key_codes, key_first, id_codes, id_first, args, args_length, _ARG_KEYS_TEXT, arg_ints
    )
    return ScannedEvents(
        source=text if isinstance(text, (bytes, bytearray)) else bytes(text),  # (msgspec.Raw slices not)
        spans=spans[:count],
        # Copied: the batch's columns are kept, the room left over is not.
        ts=ts[:count].copy(),
        dur=dur[:count].copy(),
        exact_ns=exact_ns[:count].copy(),
        id_int=id_int[:count],
        flags=flags[:count].copy(),
        key_codes=key_codes[:count],
        key_first=key_first[:keys],
        id_codes=id_codes[:count],
        id_first=id_first[:ids],
        args=args[:args_bytes],
        args_length=args_length[:count].copy(),
        arg_ints=arg_ints[:, :count],
        ended=bool(ended),
        resume=resume,
        full=count == room,
    )
