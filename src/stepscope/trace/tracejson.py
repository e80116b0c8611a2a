"""Decoding Chrome trace JSON (and Kineto's dialect of it) into flat event columns.

Fast path: msgspec decodes ``traceEvents`` straight into small structs, keeping each
event's ``args`` as raw bytes (decoded only when a view asks; see ``stats.JsonStats``).
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


class ChromeEvent(msgspec.Struct, gc=False):
    """One trace event; fields are untyped so that drifted files still decode."""

    ph: Any = ""
    name: Any = ""
    cat: Any = None
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    id: Any = None
    bp: Any = None
    s: Any = None
    # Raw JSON text of the args object; empty when the event has none.
    args: msgspec.Raw = msgspec.Raw()


@dataclass
class TraceDocument:
    """A decoded trace file: its events and every other top-level key."""

    events: list[ChromeEvent]
    header: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    # The events array's JSON text (fast path only), for exact re-reads of timestamps.
    events_json: bytes | None = None

    def timestamp_texts(self) -> list[bytes] | None:
        """Each event's ``ts`` as written (e.g. b"1712195495505543.2"), or None when the
        file went through the lenient parser and its text is gone."""
        if self.events_json is None:
            return None
        texts = _TIMESTAMPS.decode(self.events_json)
        return [bytes(item.ts) for item in texts]


class _TimestampOnly(msgspec.Struct, gc=False):
    ts: msgspec.Raw = msgspec.Raw()


_TIMESTAMPS = msgspec.json.Decoder(list[_TimestampOnly])
_RAW_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[ChromeEvent])
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


def decode_document(path: Path, data: bytes) -> TraceDocument:
    """Decodes a trace in the JSON Object Format or the JSON Array Format."""
    head = data.lstrip()[:1]
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
    if data.lstrip()[:1] == b"[":
        events, text = _decode_event_array(data)
        return TraceDocument(events, {}, events_json=text)
    top = _RAW_TOP.decode(data)
    events_raw = top.pop("traceEvents", None)
    events = _EVENTS.decode(events_raw) if events_raw is not None else []
    header = {key: _ANY.decode(value) for key, value in top.items()}
    return TraceDocument(events, header, events_json=None if events_raw is None else bytes(events_raw))


def _decode_event_array(data: bytes) -> tuple[list[ChromeEvent], bytes]:
    try:
        return _EVENTS.decode(data), data
    except msgspec.DecodeError:
        # The JSON Array Format may omit the closing bracket (a trace cut off by the
        # process exiting); only that case is accepted, a cut inside an event is not.
        body = data.rstrip().rstrip(b",")
        if body.endswith(b"}"):
            closed = body + b"]"
            return _EVENTS.decode(closed), closed
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
                s=raw.get("s"),
                args=msgspec.Raw() if args is None else msgspec.Raw(_encode_lenient(args)),
            )
        )
    if skipped:
        warnings.append(f"{skipped} trace events that are not JSON objects were skipped")
    return TraceDocument(events, header, warnings)


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
    if error.pos >= len(error.doc.rstrip()) - 1:
        return ProfileFormatError(path, f"JSON is truncated (ends at byte {error.pos} inside a value)")
    return ProfileFormatError(path, f"is not valid JSON ({error.msg} at line {error.lineno} column {error.colno})")


# --- column extraction ------------------------------------------------------------------------


def numbers(values: list[Any]) -> np.ndarray:
    """Numeric JSON values as float64; None, strings that are not numbers etc. become NaN."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return np.asarray([_number(v) for v in values], dtype=np.float64)


def _number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def int_ids(values: list[Any], absent: int) -> np.ndarray:
    """Integer ids (ints, numeric strings, "0x.." strings) as int64; others -> ``absent``."""
    try:
        array = np.asarray(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        array = np.asarray([_int_id(v, absent) for v in values], dtype=np.int64)
    return array


def _int_id(value: Any, absent: int) -> int:
    if isinstance(value, bool) or value is None:
        return absent
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else absent
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value == int(value) and abs(value) < 2**63 else absent
    if isinstance(value, str):
        try:
            parsed = int(value, 0)
        except ValueError:
            return absent
        return parsed if -(2**63) <= parsed < 2**63 else absent
    return absent


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return str(value)


def factorize(values: list[Any], normalise: Any = None) -> tuple[np.ndarray, list[Any]]:
    """Codes and uniques of ``values`` (first-seen order), touching each value once.

    ``normalise`` maps a unique value to its canonical form (e.g. "7" -> 7); values that
    normalise alike share a code. Unhashable values (lists, dicts) are keyed by their JSON.
    """
    try:
        index = {value: code for code, value in enumerate(dict.fromkeys(values))}
    except TypeError:
        values = [msgspec.json.encode(v).decode() if isinstance(v, (list, dict)) else v for v in values]
        index = {value: code for code, value in enumerate(dict.fromkeys(values))}
    codes = np.asarray(list(map(index.__getitem__, values)), dtype=np.int64)
    uniques = list(index)
    if normalise is None:
        return codes, uniques
    canonical: dict[Any, int] = {}
    remap = np.fromiter(
        (canonical.setdefault(normalise(u), len(canonical)) for u in uniques), dtype=np.int64, count=len(uniques)
    )
    return (remap[codes] if len(codes) else codes), list(canonical)


def id_columns_reader(
    struct: type[msgspec.Struct], columns: dict[str, tuple[str, ...]]
) -> Callable[[list[msgspec.Raw]], dict[str, np.ndarray]]:
    """A function that pulls integer id columns out of every event's raw args at once.

    ``struct`` names the args keys to decode (defaulting to -1); ``columns`` maps each
    event-table column to the struct fields that may hold it, first present wins. All
    args are decoded in one call, as one JSON array, so the cost is one C-level pass.
    """
    decoder = msgspec.json.Decoder(list[struct])

    def read(raws: list[msgspec.Raw]) -> dict[str, np.ndarray]:
        present = [i for i, raw in enumerate(raws) if len(raw)]
        result = {column: np.full(len(raws), -1, dtype=np.int64) for column in columns}
        if not present:
            return result
        try:
            decoded = decoder.decode(b"[" + b",".join(raws[i] for i in present) + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError):
            decoded = [_decode_one(raws[i], struct) for i in present]  # an args that is not an object
        rows = np.asarray(present, dtype=np.int64)
        for column, fields in columns.items():
            values = np.full(len(present), -1, dtype=np.int64)
            for name in fields:
                found = int_ids([getattr(item, name) for item in decoded], -1)
                values = np.where(values != -1, values, found)
            result[column][rows] = values
        return result

    return read


def _decode_one(raw: msgspec.Raw, struct: type[msgspec.Struct]) -> msgspec.Struct:
    try:
        return msgspec.json.decode(raw, type=struct)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return struct()
