"""The Chrome/Kineto reader's decoded columns against a reference decode of the same file.

The reader's fast path (msgspec, timestamps decoded a batch at a time from their text,
args stored comma-joined and their ids decoded a batch per call) must give exactly what the
file says. The reference here is the standard library's ``json.loads``, with each number
kept with its own text (``parse_float`` / ``parse_int`` hooks), and the rules of the format
written out below: no stepscope code is involved in it. Every column is compared element
by element, on every real Kineto trace in ../shared/traces and on a file of odd events
(huge, negative and fractional timestamps, unicode and escaped names, nested args, missing
fields, non-numeric values, events on unexpected pids, elements that are not events).
"""

from __future__ import annotations

import gzip
import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.trace.files import read_bytes
from stepscope.trace.formats.chrome import columns, document
from stepscope.trace.formats.chrome.document import decode_document
from stepscope.trace.formats.chrome.kineto import KINETO_DIALECT
from tests.support.traces import KINETO_TRACES

PLAIN_DECIMAL = re.compile(r"^[0-9]+(\.[0-9]+)?$")
# Past 2**43 us a double is spaced >= 1 ns apart: such times are decoded from their text.
EXACT_FROM_US = 2.0**43
FLOAT_MAX = Decimal(str(np.finfo(np.float64).max))


class TextFloat(float):
    """A JSON number with a fraction or exponent, with its text."""

    text: str


class TextInt(int):
    """A JSON integer, with its text."""

    text: str


def _float(text: str) -> TextFloat:
    value = TextFloat(text)
    value.text = text
    return value


def _int(text: str) -> TextInt:
    value = TextInt(text)
    value.text = text
    return value


def reference_elements(path: Path) -> list[Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as stream:
        top = json.loads(stream.read(), parse_float=_float, parse_int=_int)
    return top["traceEvents"] if isinstance(top, dict) else top


def out_of_range(value: Any) -> bool:
    """A number past the double's range anywhere in ``value`` (the reader's decoder rejects
    it, so its event is no event)."""
    if isinstance(value, TextFloat | TextInt) and not isinstance(value, bool):
        return abs(Decimal(value.text)) > FLOAT_MAX and isinstance(value, TextFloat)
    if isinstance(value, list):
        return any(out_of_range(item) for item in value)
    if isinstance(value, dict):
        return any(out_of_range(item) for item in value.values())
    return False


FIELDS = ("ph", "name", "cat", "ts", "dur", "pid", "tid", "id", "bp")


def reference_events(elements: list[Any]) -> tuple[list[dict], int]:
    events = [e for e in elements if isinstance(e, dict) and not any(out_of_range(e.get(k)) for k in FIELDS)]
    return events, len(elements) - len(events)


def as_number(value: Any) -> float:
    """A time as the format reads it: a JSON number, or a string holding one; else NaN."""
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def canonical(value: Any) -> Any:
    """A pid / tid / flow id as one key: 7, 7.0 and "7" alike."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value == int(value) and abs(value) < 2**63:
        return int(value)
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else value


def exact_ns(value: Any) -> int | None:
    """The ns of a plain decimal time past 2**43 us, from its text, rounded half up; None
    where it has none, or past int64 ns (it then keeps its double)."""
    text = getattr(value, "text", None)
    if text is None or not PLAIN_DECIMAL.match(text) or abs(float(value)) < EXACT_FROM_US:
        return None
    ns = math.floor(Decimal(text) * 1000 + Decimal("0.5"))
    return ns if ns < 2**63 else None


def plain_type(value: Any) -> type:
    """The type a JSON value decodes to (a list or object where a name belongs: its text)."""
    if isinstance(value, list | dict):
        return str
    return {TextInt: int, TextFloat: float}.get(type(value), type(value))


def same_floats(actual: np.ndarray, expected: list[float]) -> bool:
    wanted = np.asarray(expected, dtype=np.float64)
    return actual.shape == wanted.shape and bool(np.all((actual == wanted) | (np.isnan(actual) & np.isnan(wanted))))


def check_columns(path: Path) -> None:
    decoded = decode_document(path, read_bytes(path)).events
    events, skipped = reference_events(reference_elements(path))
    assert decoded.skipped == skipped
    assert len(decoded) == len(events)
    rows = range(len(events))
    ph = [e.get("ph", "") for e in events]
    assert [decoded.phase[r] for r in rows] == [p if isinstance(p, str) else str(p) for p in ph]
    for column, key, default in ((decoded.name, "name", ""), (decoded.category, "cat", None)):
        expected = [e.get(key, default) for e in events]
        got = [column[r] for r in rows]
        assert [canonical(v) if isinstance(v, list | dict) else v for v in expected] == got
        assert [type(v) for v in got] == [plain_type(v) for v in expected]
    for column, key in ((decoded.pid, "pid"), (decoded.tid, "tid"), (decoded.flow_id, "id")):
        assert [column[r] for r in rows] == [canonical(e.get(key)) for e in events], key
    assert same_floats(decoded.ts_us, [as_number(e.get("ts")) for e in events])
    assert same_floats(decoded.dur_us, [as_number(e.get("dur")) for e in events])
    assert decoded.dur_absent.tolist() == [e.get("dur") is None for e in events]
    assert decoded.binds_enclosing.tolist() == [e.get("bp") == "e" for e in events]
    exact = [exact_ns(e.get("ts")) for e in events]
    assert decoded.exact.tolist() == [ns is not None for ns in exact]
    assert decoded.exact_ns[decoded.exact].tolist() == [ns for ns in exact if ns is not None]
    args = decoded.args
    for row, event in enumerate(events):
        if event.get("args") is None:
            assert args.raw(row) == b"{}" or json.loads(args.raw(row)) is None
        else:
            assert json.loads(args.raw(row), parse_float=_float, parse_int=_int) == event["args"]
    check_id_columns(decoded, events)


def as_id(value: Any) -> int | None:
    """An id as the format writes it: an integer (not true / false), an integral float, or
    a string of one in Python's literal syntax ("12", "0x1f"); None if it is none or is
    past int64."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        number = int(value) if math.isfinite(value) and value == int(value) else None
    elif isinstance(value, str):
        try:
            number = int(value, 0)
        except ValueError:
            number = None
    else:
        number = int(value) if isinstance(value, int) else None
    return number if number is not None and -(2**63) <= number < 2**63 else None


def reference_id(args: Any, keys: tuple[str, ...]) -> tuple[int, int]:
    """The first of ``keys`` holding an id (-1 if none), and how many of them hold an
    integer past int64."""
    found, oversized = -1, 0
    for key in keys:
        value = args.get(key) if isinstance(args, dict) else None
        oversized += isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63
        number = as_id(value)
        if found == -1 and number is not None:
            found = number
    return found, oversized


def check_id_columns(decoded: columns.EventColumns, events: list[dict]) -> None:
    """Kineto's correlation and external ids, decoded a batch of args per call, and (over
    the args in reverse order, not stored joined) one by one."""
    expected = [reference_id(e.get("args"), ("correlation",)) for e in events]
    expected_external = [reference_id(e.get("args"), ("External id", "external id")) for e in events]
    order = np.arange(len(events))[::-1]
    for stored, rows in ((decoded.args, np.arange(len(events))), (decoded.args.take(order), order)):
        ids, oversized = KINETO_DIALECT.id_columns(stored)  # type: ignore[misc]
        assert ids["correlation_id"].tolist() == [expected[r][0] for r in rows.tolist()]
        assert ids["external_id"].tolist() == [expected_external[r][0] for r in rows.tolist()]
        assert oversized.tolist() == [expected[r][1] + expected_external[r][1] for r in rows.tolist()]


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_real_traces_decode_as_the_reference_reads_them(path: Path):
    check_columns(path)


ODD_EVENTS_TEXT = """[
  {"ph": "X", "name": "h\\u00e9llo \\u2603 \u540d\u524d \\"q\\" \\\\ back", "cat": "cpu_op", "pid": 1, "tid": "7",
   "ts": 1712195495519689.047, "dur": 1.5,
   "args": {"nested": {"a": [1, {"b": null}], "c": "}{,]["}, "correlation": 5, "External id": 9}},
  {"ph": "X", "name": "negative", "pid": 1, "tid": 7, "ts": -12.25, "dur": 0, "args": {}},
  {"ph": "X", "name": "exponent", "pid": 1, "tid": 7, "ts": 1e20, "dur": 2E-3},
  {"ph": "X", "name": "wide", "pid": 1, "tid": 7, "ts": 99999999999999999.9995, "dur": 1},
  {"ph": "X", "name": "round down", "pid": 1, "tid": 7, "ts": 1712195495519689.0474999, "dur": 1},
  {"ph": "X", "name": "round half up", "pid": 1, "tid": 7, "ts": 1712195495519689.0475, "dur": 1},
  {"ph": "X", "name": "whole epoch", "pid": 1, "tid": 7, "ts": 1623212388426902, "dur": 35},
  {"ph": "X", "name": "tiny", "pid": 1, "tid": 7, "ts": 0.0005, "dur": 0.0004},
  {"ph": "X", "name": "string time", "pid": "Spans", "tid": null, "ts": "123.5", "dur": "bad"},
  {"ph": "X", "name": "epoch string", "pid": 1.0, "tid": 7.5, "ts": "1712195495519689.047", "dur": null},
  {"ph": "X", "name": 17, "cat": ["a", 1], "pid": [1, 2], "tid": {"t": 1}, "ts": true, "dur": false},
  {"ph": "X", "name": "no time", "pid": 18446744073709551616, "tid": -3},
  {"ph": "X", "name": "past the range", "pid": 1, "tid": 7, "ts": 1e400, "dur": 1},
  {"ph": "i", "pid": 2},
  {},
  {"name": "no phase", "args": {"correlation": 18446744073709551616, "external id": 4}},
  {"ph": "f", "bp": "e", "id": "0x1f", "cat": "ac2g", "name": "flow", "pid": 1, "tid": 7, "ts": 10},
  {"ph": "s", "id": 18446744073709551617, "cat": "ac2g", "name": "flow", "pid": 1, "tid": 7, "ts": 9},
  {"ph": "X", "name": "args a list", "pid": 1, "tid": 7, "ts": 11, "dur": 1, "args": [1, 2]},
  {"ph": "X", "name": "args a string", "pid": 1, "tid": 7, "ts": 12, "dur": 1, "args": "text"},
  {"ph": "X", "name": "true id", "pid": 1, "tid": 7, "ts": 13, "dur": 1, "args": {"correlation": true, "External id": "12"}},
  5, "a string", [1, 2], null,
  {"ph": "X", "name": "last", "pid": 3, "tid": 3, "ts": 14.000000001, "dur": 1, "args": {"correlation": 7}}
]"""


@pytest.mark.parametrize("batch", [columns.BATCH_EVENTS, 3])
@pytest.mark.parametrize("gzipped", [False, True])
def test_odd_events_decode_as_the_reference_reads_them(tmp_path: Path, monkeypatch, batch: int, gzipped: bool):
    path = tmp_path / ("odd.trace.json.gz" if gzipped else "odd.trace.json")
    data = ODD_EVENTS_TEXT.encode()
    path.write_bytes(gzip.compress(data) if gzipped else data)
    monkeypatch.setattr(columns, "BATCH_EVENTS", batch)  # 3: batches that split the odd ones
    check_columns(path)
    # The reference itself: the odd cases are there (22 objects, 1 past the range; 4 not objects).
    events, skipped = reference_events(reference_elements(path))
    assert (len(events), skipped) == (21, 5)
    # Decoded from their text: ...689.047, ...689.0474999, ...689.0475 and 1623212388426902
    # (not 1e20, an exponent; not 99999999999999999.9995, past int64 ns; not a string).
    assert sum(exact_ns(e.get("ts")) is not None for e in events) == 4


# Ids the integer shortcut reads (every id in a batch a JSON integer within int64) beside
# those it must leave to the general path: 2**63 (within uint64, past int64), a float, a
# string. An explicit -1 counts as no id, so "external id" then gives the external id.
ID_EVENTS_TEXT = """{"traceEvents": [
  {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 5, "External id": 9}},
  {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"external id": 4, "other": [1, {"correlation": 8}]}},
  {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {"External id": -1, "external id": 7}},
  {"ph": "X", "name": "d", "pid": 1, "tid": 1, "ts": 4, "dur": 1, "args": {"correlation": 9223372036854775807}},
  {"ph": "X", "name": "e", "pid": 1, "tid": 1, "ts": 5, "dur": 1, "args": {"correlation": 9223372036854775808}},
  {"ph": "X", "name": "f", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {"correlation": -9223372036854775808}},
  {"ph": "X", "name": "g", "pid": 1, "tid": 1, "ts": 7, "dur": 1, "args": {"correlation": 3.0, "External id": "0x10"}},
  {"ph": "X", "name": "h", "pid": 1, "tid": 1, "ts": 8, "dur": 1, "args": {"correlation": 11}}
]}"""


@pytest.mark.parametrize("batch", [document.ID_BATCH_EVENTS, 2, 1])
def test_integer_ids_read_as_the_reference_reads_them(tmp_path: Path, monkeypatch, batch: int):
    path = tmp_path / "ids.trace.json"
    path.write_text(ID_EVENTS_TEXT)
    monkeypatch.setattr(document, "ID_BATCH_EVENTS", batch)  # 2, 1: batches all-int and not
    check_columns(path)
    # The reference on its own, by hand: correlation 5, -1, -1, 2**63 - 1, -1 (2**63 is past
    # int64), -2**63, 3 (an integral float), 11; External id 9, 4, 7, -1, -1, -1, 16, -1.
    events, _ = reference_events(reference_elements(path))
    assert [reference_id(e["args"], ("correlation",))[0] for e in events] == [5, -1, -1, 2**63 - 1, -1, -(2**63), 3, 11]
    assert [reference_id(e["args"], ("External id", "external id"))[0] for e in events] == [9, 4, 7, -1, -1, -1, 16, -1]


def _decimal_reference(text: str, base: int, scale: int) -> int | None:
    """value * scale rounded half up, less base * scale, from the decimal text; None where
    the text is not a plain decimal or the value at this scale is past int64 (or its whole
    part past 18 digits, which the reader keeps as a double)."""
    if not PLAIN_DECIMAL.match(text) or len(text.split(".")[0]) > 18:
        return None
    value = int((Decimal(text) * scale).to_integral_value(rounding="ROUND_HALF_UP")) - base * scale
    return value if value <= np.iinfo(np.int64).max else None


@pytest.mark.parametrize(
    "texts",
    [
        # Aligned (one length, the dot at one column: read by matrix products).
        ["1712195495519689.047", "1712195495519689.999", "1712195495519690.000"],
        ["1712195495519689.0474999", "1712195495519689.0475000", "9999999999999999.9995000"],
        ["1623212388426902", "1623212388426903", "0000000000000001"],
        ["12.5", "99.9", "00.0"],
        ["999999999999999999.9", "100000000000000000.0"],  # 18 whole digits
        ["1234567890123456789.5", "9999999999999999999.0"],  # 19: past what the reader reads (so, the loop)
        [".125", ".999"],  # no whole digits: not plain
        ["1.5", "2x5"],  # one length, a byte that is no digit where the dot is not
        # Not aligned (the column-by-column loop).
        ["1712195495519689.047", "17.5", "3", "1e20", "-12.25", "1.2.3"],
        ["1712195495519689.047", "1712195495519689047"],  # one length, no common dot
    ],
)
def test_decimal_units_are_the_decimal_values_rounded_half_up(texts: list[str]):
    for base, scale in ((0, 1000), (1712195495519000, 1000), (0, 1)):
        values, plain = columns.decimal_units([t.encode() for t in texts], base, scale)
        expected = [_decimal_reference(t, base, scale) for t in texts]
        assert plain.tolist() == [e is not None for e in expected]
        assert values.tolist() == [0 if e is None else e for e in expected]


def test_aligned_decimal_units_of_random_texts_are_the_decimal_values():
    rng = np.random.default_rng(20)
    for _ in range(200):
        whole, after = int(rng.integers(1, 20)), int(rng.integers(0, 6))
        digits = rng.integers(0, 10, size=(int(rng.integers(1, 30)), whole + after))
        texts = ["".join(map(str, row[:whole])) + ("." + "".join(map(str, row[whole:])) if after else "") for row in digits]
        for base, scale in ((0, 1000), (int(texts[0].split(".")[0][:15] or 0), 1000), (0, 1_000_000)):
            values, plain = columns.decimal_units([t.encode() for t in texts], base, scale)
            expected = [_decimal_reference(t, base, scale) for t in texts]
            assert plain.tolist() == [e is not None for e in expected], texts
            assert values.tolist() == [0 if e is None else e for e in expected], texts
