"""Decoding Chrome trace JSON (and Kineto's dialect of it) into event columns.

Fast path: msgspec splits ``traceEvents`` into one raw slice per event, then decodes them
in batches into compact columns (see ``columns``), keeping each event's ``args`` as raw
bytes (decoded only when a view asks; see ``stats.JsonStats``).
Real files drift from the JSON standard, so a failed fast decode retries with repairs,
in order of cost: raw control characters escaped; invalid UTF-8 replaced; finally the
standard library's lenient parser (NaN literals, lone surrogates...). What was repaired is
recorded as a warning on the profile, not hidden. A file that is not a trace at all, or is
truncated, raises ProfileFormatError naming the file and the problem.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from stepscope.errors import ProfileFormatError
from stepscope.trace.columns import ChromeEvent, EventColumns, columns_from_events, columns_from_raw, int_ids
from stepscope.trace.stats import JsonStats, is_int64


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
GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if it is gzip (by content, not by name)."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ProfileFormatError(path, "is a directory, not a profile file") from None
    except OSError as error:
        raise ProfileFormatError(path, f"cannot be read ({error.strerror or error})") from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise ProfileFormatError(path, f"gzip data is truncated or corrupt ({error})") from None
    return data


_FIRST = re.compile(rb"\s*(\S)")


def first_byte(data: bytes) -> bytes:
    """The first non-whitespace byte (b"" if none), without copying the data."""
    match = _FIRST.match(data)
    return match.group(1) if match else b""


def decode_document(path: Path, data: bytes) -> TraceDocument:
    """Decodes a trace in the JSON Object Format or the JSON Array Format."""
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

    def apply(self, data: bytes) -> bytes | None:
        raise NotImplementedError


class _AsIs(_Repair):
    def apply(self, data: bytes) -> bytes | None:
        return data


class _EscapeControl(_Repair):
    def apply(self, data: bytes) -> bytes | None:
        if not _CONTROL.search(data):
            return None
        return _CONTROL.sub(lambda m: b"\\u%04x" % m.group()[0], data)


class _ReplaceInvalidUtf8(_Repair):
    def apply(self, data: bytes) -> bytes | None:
        text = data.decode("utf-8", "replace")
        fixed = _CONTROL.sub(lambda m: b"\\u%04x" % m.group()[0], text.encode("utf-8"))
        return None if fixed == data else fixed


_REPAIRS: tuple[_Repair, ...] = (
    _AsIs(""),
    _EscapeControl("raw control characters in strings were escaped"),
    _ReplaceInvalidUtf8("invalid UTF-8 was replaced with U+FFFD"),
)


def _decode_fast(path: Path, data: bytes) -> TraceDocument:
    if first_byte(data) == b"[":
        texts, closed = _decode_event_array(data)
        warnings = ["the JSON array of events had no closing ']' (a trace cut off at its end)"] if closed else []
        return TraceDocument(columns_from_raw(texts), {}, warnings)
    top = _RAW_TOP.decode(data)
    events_raw = top.pop("traceEvents", None)
    texts = _EVENT_TEXTS.decode(events_raw) if events_raw is not None else []
    header = {key: _ANY.decode(value) for key, value in top.items()}
    del top, events_raw
    return TraceDocument(columns_from_raw(texts), header)


def _decode_event_array(data: bytes) -> tuple[list[msgspec.Raw], bool]:
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


def _decode_lenient(path: Path, data: bytes) -> TraceDocument:
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
    except RecursionError:
        raise ProfileFormatError(path, "is not a trace: JSON nested too deeply") from None
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
    return msgspec.json.encode(_finite(value))


def _finite(value: Any) -> Any:
    """JSON has no NaN/Infinity; keep them as strings so the args stay valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _not_json(path: Path, error: json.JSONDecodeError) -> ProfileFormatError:
    at_end = error.pos >= len(error.doc.rstrip()) - 1
    if at_end or error.msg.startswith("Unterminated string"):
        return ProfileFormatError(path, f"JSON is truncated (the file ends inside a value, at byte {len(error.doc)})")
    return ProfileFormatError(path, f"is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})")


def id_columns_reader(
    struct: type[msgspec.Struct], columns: dict[str, tuple[str, ...]]
) -> Callable[[JsonStats], tuple[dict[str, np.ndarray], int]]:
    """A function that pulls integer id columns out of every event's raw args, and counts
    the ids past int64 (kept exactly in the args, but with no numeric id).

    ``struct`` names the args keys to decode (defaulting to -1); ``columns`` maps each
    event-table column to the struct fields that may hold it, first present wins. The
    decoder skips every other key without building it, so this costs one small struct per
    event.
    """
    decoder = msgspec.json.Decoder(struct)
    absent = struct()

    def decode(raw: memoryview) -> msgspec.Struct:
        if not len(raw):
            return absent
        try:
            return decoder.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):  # args that are not an object
            return absent

    def read(args: JsonStats) -> tuple[dict[str, np.ndarray], int]:
        decoded = [decode(raw) for raw in args.views()]
        result = {}
        oversized = 0
        for column, fields in columns.items():
            values = np.full(len(decoded), -1, dtype=np.int64)
            for name in fields:
                raw_values = [getattr(item, name) for item in decoded]
                found = int_ids(raw_values, -1)
                values = np.where(values != -1, values, found)
                oversized += sum(1 for v in raw_values if isinstance(v, int) and not isinstance(v, bool) and not is_int64(v))
            result[column] = values
        return result, oversized

    return read
