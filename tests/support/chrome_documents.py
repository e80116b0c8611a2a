"""Trace documents of the Chrome/Kineto stream reader for its tests: comparing two
decodes column by column, and hand-made events and files (odd ones included) to decode.

Shared by tests/trace/test_chrome_stream.py and test_chrome_scanned.py (a test module
never imports another)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from stepscope.trace.files import read_bytes, read_pieces
from stepscope.trace.formats.chrome import document, stream
from stepscope.trace.formats.chrome.columns import Coded, EventColumns

_CODED = ("phase", "name", "category", "pid", "tid", "flow_id")
_ARRAYS = ("ts_us", "dur_us", "dur_absent", "binds_enclosing", "exact_ns", "exact")


def assert_same_columns(got: EventColumns, expected: EventColumns) -> None:
    for name in _CODED:
        mine, theirs = getattr(got, name), getattr(expected, name)
        assert isinstance(mine, Coded)
        assert np.array_equal(mine.codes, theirs.codes), name
        assert [(type(v), v) for v in mine.values] == [(type(v), v) for v in theirs.values], name
    for name in _ARRAYS:
        mine, theirs = getattr(got, name), getattr(expected, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f"), name
    assert got.args._blob == expected.args._blob
    assert np.array_equal(got.args._starts, expected.args._starts) and np.array_equal(got.args._ends, expected.args._ends)
    assert got.skipped == expected.skipped


def whole(path: Path) -> document.TraceDocument:
    return document.decode_document(path, read_bytes(path))


def streamed(path: Path, pieces=None) -> document.TraceDocument | None:
    return stream.decode_streamed(path, read_pieces(path) if pieces is None else pieces)


def assert_same_document(got: document.TraceDocument | None, expected: document.TraceDocument) -> None:
    assert got is not None, "the stream reader gave the file up"
    assert_same_columns(got.events, expected.events)
    assert json.dumps(got.header) == json.dumps(expected.header)  # same keys, order and values
    assert got.warnings == expected.warnings


# --- hand-made files ------------------------------------------------------------------------


EPOCH_US = 1712195495519600  # microseconds since the epoch, past 2**43: re-read from the text


def event(i: int, **extra) -> dict:
    event = {"ph": "X", "name": f"op{i % 5}", "cat": "cpu_op", "pid": 1, "tid": 2, "ts": EPOCH_US + 10 * i, "dur": 5, "args": {"External id": i}}
    event.update(extra)
    return event


# Events whose text holds the cut's pattern ("}, {") where it is no cut: in a string (with
# escaped quotes and braces), in a list of objects in the args; multi-byte UTF-8; float and
# string tids; ids past int64; an element that is no object; a flow pair.
ODD_EVENTS = [
    event(0, name='quote "}, {" brace', args={"text": '}, {"ph": "X"}, {', "nested": [{"a": 1}, {"b": {"c": [{}, {}]}}]}),
    event(1, name="naïve ✓ 名前 😀" * 3, tid=2.0),
    event(2, tid="2", args={"External id": 2**70, "correlation": 2**64 + 1}),
    7,
    event(3, pid=18446744073709551617, tid="stream 7"),
    {"ph": "s", "id": 2**65, "pid": 1, "tid": 2, "ts": EPOCH_US + 1, "cat": "ac2g", "name": "flow"},
    {"ph": "f", "id": 2**65, "pid": 1, "tid": 2, "ts": EPOCH_US + 31, "cat": "ac2g", "name": "flow", "bp": "e"},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main ✓"}},
    event(4, ts=EPOCH_US + 89.047, dur=1.5),
] + [event(i) for i in range(5, 60)]


def document_text(events: list, **header) -> bytes:
    body = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceEvents": events, **header}
    return json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8")


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]
