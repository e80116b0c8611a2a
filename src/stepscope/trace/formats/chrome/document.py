"""Decoding Chrome trace JSON (and Kineto's dialect of it) into event columns.

Fast path: msgspec splits ``traceEvents`` into one raw slice per event, then decodes them
in batches into compact columns (see ``columns``), keeping each event's ``args`` as raw
bytes (decoded only when a view asks; see ``stats.JsonStats``).
Real files drift from the JSON standard, so a failed fast decode retries with repairs,
in order of cost: raw control characters escaped; invalid UTF-8 replaced; finally the
standard library's lenient parser (NaN literals, lone surrogates...). What was repaired is
recorded as a warning on the profile, not hidden. A file that is not a trace at all, or is
truncated, raises ProfileFormatError naming the file and the problem.

Decoding is bounded (:mod:`stepscope.trace.limits`; the file itself was read within its
limits by :func:`stepscope.trace.files.read_bytes`): JSON nested past the decoder's
recursion limit and traces of more events, processes or threads than
``STEPSCOPE_MAX_EVENTS`` / ``STEPSCOPE_MAX_PLANES`` / ``STEPSCOPE_MAX_LINES`` are errors
(the events counted before they are decoded), as are events whose load would take more
memory than the process has (``check_events``).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from stepscope import jsonform
from stepscope.errors import ProfileFormatError
from stepscope.trace import limits
from stepscope.trace.formats.chrome.columns import ChromeEvent, EventColumns, columns_from_events, columns_from_raw, int_ids
from stepscope.trace.stats import JsonStats


@dataclass
class TraceDocument:
    """A decoded trace file: its events as columns and every other top-level key."""

    events: EventColumns
    header: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


_RAW_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENT_TEXTS = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


_FIRST = re.compile(rb"\s*(\S)")


def first_byte(data: bytes | bytearray) -> bytes:
    """The first non-whitespace byte (b"" if none), without copying the data."""
    match = _FIRST.match(data)
    return match.group(1) if match else b""


def decode_document(path: Path, data: bytes | bytearray) -> TraceDocument:
    """Decodes a trace in the JSON Object Format or the JSON Array Format.

    JSON nested deeper than the decoders' recursion limit (Python's, ~1,000 levels) is a
    ProfileFormatError, as are more processes or threads than ``limits.PLANES`` /
    ``limits.LINES`` (each can be a plane or a line)."""
    try:
        document = _decode_document(path, data)
    except RecursionError:
        raise nested_too_deeply(path) from None
    check_counts(path, document.events)
    return document


def nested_too_deeply(path: Path) -> ProfileFormatError:
    return ProfileFormatError(path, f"is not a trace: JSON nested too deeply (past the decoder's limit of about {sys.getrecursionlimit():,} levels)")


def check_counts(path: Path, events: EventColumns) -> None:
    """Raises ProfileLimitError when the trace has more processes than ``limits.PLANES``
    or more threads (distinct pid and tid pairs) than ``limits.LINES``: the importer's
    cost grows with each (a plane or a line) whatever it holds."""
    planes, lines = limits.PLANES.get(), limits.LINES.get()
    processes = len(events.pid.values)
    if processes > planes:
        raise limits.PLANES.error(path, f"has {processes:,} processes, more than {planes:,}")
    if len(events.tid.values) > lines or processes * len(events.tid.values) > lines:
        pairs = np.unique(events.pid.codes.astype(np.int64) * len(events.tid.values) + events.tid.codes)
        if len(pairs) > lines:
            raise limits.LINES.error(path, f"has {len(pairs):,} threads, more than {lines:,}")


def _decode_document(path: Path, data: bytes | bytearray) -> TraceDocument:
    head = first_byte(data)
    if not head:
        raise ProfileFormatError(path, "is empty")
    if head not in (b"{", b"["):
        raise ProfileFormatError(path, "is not a trace: not JSON (does not start with '{' or '[')")
    warnings: list[str] = []
    for repair in _REPAIRS:
        repaired = repair.apply(data)
        if repaired is None:
            continue
        try:
            document = _decode_fast(path, repaired)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        if repair.warning:
            warnings.append(repair.warning)
        document.warnings[:0] = warnings
        return document
    document = _decode_lenient(path, data)
    return document


@dataclass(frozen=True)
class _Repair:
    warning: str

    def apply(self, data: bytes | bytearray) -> bytes | bytearray | None:
        raise NotImplementedError


class _AsIs(_Repair):
    def apply(self, data: bytes | bytearray) -> bytes | bytearray | None:
        return data


class _EscapeControl(_Repair):
    def apply(self, data: bytes | bytearray) -> bytes | bytearray | None:
        if not _CONTROL.search(data):
            return None
        return _CONTROL.sub(lambda m: b"\\u%04x" % m.group()[0], data)


class _ReplaceInvalidUtf8(_Repair):
    def apply(self, data: bytes | bytearray) -> bytes | bytearray | None:
        text = data.decode("utf-8", "replace")
        fixed = _CONTROL.sub(lambda m: b"\\u%04x" % m.group()[0], text.encode("utf-8"))
        return None if fixed == data else fixed


_REPAIRS: tuple[_Repair, ...] = (
    _AsIs(""),
    _EscapeControl("raw control characters in strings were escaped"),
    _ReplaceInvalidUtf8("invalid UTF-8 was replaced with U+FFFD"),
)


def _decode_fast(path: Path, data: bytes | bytearray) -> TraceDocument:
    if first_byte(data) == b"[":
        texts, closed = _decode_event_array(data)
        check_events(path, len(texts), len(data))
        warnings = ["the JSON array of events had no closing ']' (a trace cut off at its end)"] if closed else []
        return TraceDocument(columns_from_raw(texts), {}, warnings)
    top = _RAW_TOP.decode(data)
    events_raw = top.pop("traceEvents", None)
    texts = _EVENT_TEXTS.decode(events_raw) if events_raw is not None else []
    check_events(path, len(texts), len(data))
    header = {key: _ANY.decode(value) for key, value in top.items()}
    del top, events_raw
    return TraceDocument(columns_from_raw(texts), header)


# The peak memory of loading a trace JSON, per event beyond its text (``load_estimate``).
# Measured (peak RSS growth, 2026-12-05): 390-400 bytes per event on 1-4M one-name events,
# the smallest events there are (51-206 MiB of JSON); 690 on 1M events of a name each;
# 73 per metadata event (2M: they add no event to a plane). A load's peak is estimated from
# the events and the text once the count is known (the streamed decode: after each batch),
# before the columns and planes that cost it are built; the estimate runs high (the tools
# that follow a load need memory too). Measured figures: docs/security.md.
BYTES_PER_EVENT = 512
BYTES_PER_METADATA_EVENT = 128


def load_estimate(events: int, text_bytes: int, metadata: int = 0) -> int:
    """About the peak memory loading ``events`` events (``metadata`` of them phase "M") of
    ``text_bytes`` of JSON takes."""
    return (events - metadata) * BYTES_PER_EVENT + metadata * BYTES_PER_METADATA_EVENT + text_bytes


def check_events(path: Path, count: int, text_bytes: int) -> None:
    """Raises ProfileLimitError past ``limits.EVENTS`` events, or when loading them would
    take more memory than the process may have (``limits.memory_budget``), before they are
    decoded."""
    allowed = limits.EVENTS.get()
    if count > allowed:
        raise limits.EVENTS.error(path, f"has {count:,} events, more than {allowed:,}", allowed)
    budget = limits.memory_budget()
    if budget is not None:
        budget.check(path, count, load_estimate(count, text_bytes))


def _decode_event_array(data: bytes | bytearray) -> tuple[list[msgspec.Raw], bool]:
    """The events, and whether the closing bracket had to be added."""
    try:
        return _EVENT_TEXTS.decode(data), False
    except msgspec.DecodeError:
        # The JSON Array Format may omit the closing bracket (a trace cut off by the
        # process exiting); only that case is accepted, a cut inside an event is not.
        body = data.rstrip().rstrip(b",")
        if body.endswith(b"}"):
            return _EVENT_TEXTS.decode(body + b"]"), True
        raise


def _decode_lenient(path: Path, data: bytes | bytearray) -> TraceDocument:
    text = data.decode("utf-8", "replace")
    stripped = text.rstrip().rstrip(",")
    try:
        top = json.loads(text, strict=False)
    except json.JSONDecodeError as error:
        if stripped.startswith("[") and stripped.endswith("}"):
            try:
                top = json.loads(stripped + "]", strict=False)
            except json.JSONDecodeError:
                raise _not_json(path, error) from None
        else:
            raise _not_json(path, error) from None
    warnings = ["parsed with the lenient JSON parser (non-standard literals or encoding)"]
    if isinstance(top, list):
        raw_events, header = top, {}
    elif isinstance(top, dict):
        raw_events = top.pop("traceEvents", [])
        header = top
    else:
        raise ProfileFormatError(path, f"is not a trace: top-level JSON is a {type(top).__name__}")
    if not isinstance(raw_events, list):
        raise ProfileFormatError(path, "is not a trace: 'traceEvents' is not a list")
    check_events(path, len(raw_events), len(data))
    events: list[ChromeEvent] = []
    skipped = 0
    for raw in raw_events:
        if not isinstance(raw, dict):
            skipped += 1
            continue
        args = raw.get("args")
        events.append(
            ChromeEvent(
                ph=raw.get("ph", ""),
                name=raw.get("name", ""),
                cat=raw.get("cat"),
                ts=raw.get("ts"),
                dur=raw.get("dur"),
                pid=raw.get("pid"),
                tid=raw.get("tid"),
                id=raw.get("id"),
                bp=raw.get("bp"),
                args=msgspec.Raw() if args is None else msgspec.Raw(_encode_lenient(args)),
            )
        )
    columns = columns_from_events(events)
    columns.skipped += skipped
    return TraceDocument(columns, header, warnings)


def _encode_lenient(value: Any) -> bytes:
    """JSON has no NaN/Infinity: args keep them as text, so they stay valid JSON."""
    return jsonform.encode(jsonform.trace_value(value))


def _not_json(path: Path, error: json.JSONDecodeError) -> ProfileFormatError:
    at_end = error.pos >= len(error.doc.rstrip()) - 1
    if at_end or error.msg.startswith("Unterminated string"):
        return ProfileFormatError(path, f"JSON is truncated (the file ends inside a value, at byte {len(error.doc)})")
    return ProfileFormatError(path, f"is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})")


# Rows whose id args are decoded at a time (their structs, ~100 bytes each, and the batch's
# text are what the id columns cost at the peak).
ID_BATCH_EVENTS = 2_048


def _as_ints(struct: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """``struct`` with every field typed int (same names, keys and defaults)."""
    fields = struct.__struct_fields__
    return msgspec.defstruct(
        f"{struct.__name__}Ints",
        [(name, int, default) for name, default in zip(fields, struct.__struct_defaults__)],
        rename=dict(zip(fields, struct.__struct_encode_fields__)),
        gc=False,
    )


def id_columns_reader(
    struct: type[msgspec.Struct], columns: dict[str, tuple[str, ...]]
) -> Callable[[JsonStats, dict[str, np.ndarray | None] | None], tuple[dict[str, np.ndarray], np.ndarray]]:
    """A function that pulls integer id columns out of every event's raw args, and counts
    each event's ids past int64 (kept exactly in the args, but with no numeric id).

    ``struct`` names the args keys to decode (defaulting to -1); ``columns`` maps each
    event-table column to the struct fields that may hold it, first present wins. The
    decoder skips every other key without building it, so this costs one small struct per
    event, decoded a batch of events per call where the args are stored joined
    (``JsonStats.joined``: a third of the time of a call per event).
    """
    decoder = msgspec.json.Decoder(struct)
    batch_decoder = msgspec.json.Decoder(list[struct])  # type: ignore[valid-type]
    ints_decoder = msgspec.json.Decoder(list[_as_ints(struct)])  # type: ignore[misc]
    getters = {column: [attrgetter(name) for name in fields] for column, fields in columns.items()}
    absent = struct()

    def decode(raw: bytes | memoryview) -> msgspec.Struct:
        try:
            return decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):  # args that are not an object
            return absent

    def decode_batch(array: bytes | None) -> list[msgspec.Struct] | None:
        if array is None:
            return None
        try:
            decoded: list[msgspec.Struct] = batch_decoder.decode(array)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None  # some args are not an object (or nest past the limit in a list)
        return decoded

    def int_batch(array: bytes | None, count: int) -> dict[str, np.ndarray] | None:
        """A batch's id columns where every id it holds is a JSON integer within int64, as
        Kineto writes them: decoded as ints, each field read in one pass (no list of
        values, no look at their types: a sixth of loading the V100 ns trace went to
        those); None otherwise, for the general path."""
        if array is None:
            return None
        try:
            found = ints_decoder.decode(array)
            if len(found) != count:
                return None
            ids = {}
            for column, getters_of_column in getters.items():
                values = np.fromiter(map(getters_of_column[0], found), dtype=np.int64, count=count)
                for getter in getters_of_column[1:]:
                    values = np.where(values != -1, values, np.fromiter(map(getter, found), dtype=np.int64, count=count))
                ids[column] = values
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, OverflowError):
            return None  # an id of another type, or past int64 (uint64 decodes as an int)
        return ids

    keys = dict(zip(struct.__struct_fields__, struct.__struct_encode_fields__))
    all_absent_is_minus_one = all(default == -1 for default in struct.__struct_defaults__)

    def from_known(known: dict[str, np.ndarray | None], count: int) -> dict[str, np.ndarray]:
        """The columns from the integers the scanner read (-1 where absent, as the
        struct's defaults; None: absent everywhere): the first field not -1 wins, as below."""
        result = {}
        for column, fields in columns.items():
            values = np.full(count, -1, dtype=np.int64)
            for name in fields:
                found = known[keys[name]]
                if found is not None:
                    values = np.where(values != -1, values, found)
            result[column] = values
        return result

    def read(args: JsonStats, known: dict[str, np.ndarray | None] | None = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
        if known is not None and all_absent_is_minus_one and all(keys[name] in known for fields in columns.values() for name in fields):
            return from_known(known, len(args)), np.zeros(len(args), dtype=np.int64)
        # A batch of rows at a time (those with args; the others keep -1): only a batch's
        # structs are alive at once, not one per event.
        result = {column: np.full(len(args), -1, dtype=np.int64) for column in columns}
        oversized = np.zeros(len(args), dtype=np.int64)
        for rows, text in args.joined(ID_BATCH_EVENTS):
            array = None if text is None else b"[" + text + b"]"  # the batch's args as one JSON array
            ints = int_batch(array, len(rows))
            if ints is not None:
                for column, values in ints.items():
                    result[column][rows] = values
                continue
            found = decode_batch(array)
            if found is None or len(found) != len(rows):  # one by one
                found = [decode(args.raw(row)) for row in rows.tolist()]
            for column, getters_of_column in getters.items():
                values = np.full(len(rows), -1, dtype=np.int64)
                for getter in getters_of_column:
                    ids, past_int64 = int_ids(list(map(getter, found)), -1)
                    oversized[rows] += past_int64
                    values = np.where(values != -1, values, ids)
                result[column][rows] = values
        return result, oversized

    return read
