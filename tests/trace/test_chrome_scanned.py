"""The compiled scanner (``chrome.scanned``, ``kernels/chrome.c``) makes the columns the
msgspec decode makes, event for event, and leaves to msgspec what it does not take.

References: the stream reader with the scanner switched off (``stream.scan`` giving
None: every batch decoded by msgspec into structs, the reader before the compiled scanner), and the
whole-document decode (``document.decode_document``); compared column by column
(``assert_same_document``: codes, tables with their values' types, times, exact ns, args
blob and offsets, header, warnings) and as profiles (``assert_same_profile``). Numbers
the scanner reads itself are checked against values worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stepscope
from stepscope.trace import kernels
from stepscope.trace.files import read_pieces
from stepscope.trace.formats.chrome import scanned, stream
from stepscope.trace.formats.chrome.kineto import KINETO_DIALECT
from stepscope.trace.formats.chrome.read import CHROME_DIALECT
from tests.support.chrome_documents import EPOCH_US, ODD_EVENTS, assert_same_document, document_text, event, pieces, whole
from tests.support.reference.xspace import assert_same_profile
from tests.support.traces import KINETO_TRACES


class _Counting:
    """``stream.scan`` that counts the events the scanner read (the reader takes them all)."""

    def __init__(self) -> None:
        self.events = 0

    def __call__(self, text):
        result = scanned.scan(text)
        self.events += len(result) if result is not None else 0
        return result


def _msgspec_only(path: Path, monkeypatch, pieces=None):
    with monkeypatch.context() as patch:
        patch.setattr(stream, "scan", lambda text: None)
        return stream.decode_streamed(path, read_pieces(path) if pieces is None else pieces)


def _scanned(path: Path, pieces=None):
    return stream.decode_streamed(path, read_pieces(path) if pieces is None else pieces)


def test_the_extension_has_the_scanner():
    assert kernels.COMPILED and scanned.available()


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_every_shared_trace_is_scanned_whole_to_the_msgspec_columns(path, monkeypatch):
    counting = _Counting()
    monkeypatch.setattr(stream, "scan", counting)
    got = _scanned(path)
    expected_events = len(json.loads(read_bytes_text(path))["traceEvents"])  # counted by the json module
    assert got is not None and len(got.events) == expected_events
    assert counting.events == expected_events  # every event went through the scanner
    monkeypatch.undo()
    assert_same_document(got, _msgspec_only(path, monkeypatch))
    assert_same_document(got, whole(path))


def read_bytes_text(path: Path) -> str:
    import gzip

    return gzip.decompress(path.read_bytes()).decode("utf-8")


# Number texts json.dumps does not write (a double near 1.7e15 keeps no 4th decimal), put
# in place of these strings.
RAW_NUMBERS = {f'"@ts{i}@"'.encode(): f"{EPOCH_US + i}.{'0475'[:i]}".encode() for i in range(1, 5)} | {b'"@-0@"': b"-0", b'"@-0.0@"': b"-0.0"}


def _write(tmp_path: Path, events: list, name: str = "t.pt.trace.json") -> Path:
    path = tmp_path / name
    text = document_text(events, traceName="after the events")
    for placeholder, number in RAW_NUMBERS.items():
        text = text.replace(placeholder, number)
    path.write_bytes(text)
    return path


# Events the scanner reads itself (escapes it takes, nesting, absent fields, null times,
# begin/end, flows with ids of several spellings, epoch times with 0-4 decimals) and
# events it leaves to msgspec (a \u escape, non-ASCII text, a number as a string, an
# exponent, a duplicate key, an element that is no object, nesting past its limit).
SCANNER_CASES = {
    "escapes": [
        event(0, name='tab\t "quoted" back\\slash /slash\n'),
        event(1, args={"s": 'a\\b"c', "nested": {"x": [1, [2, {"y": None}]], "t": True, "f": False}}),
    ],
    "absent": [{"ph": "X"}, {"name": "n"}, {}, {"ph": "i", "ts": None, "pid": 1, "tid": 1}, {"ph": "X", "pid": 1, "tid": 1, "ts": 5, "dur": None}],
    "begin-end": [
        {"ph": "B", "name": "b", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "E", "name": "b", "pid": 1, "tid": 1, "ts": 20.5},
        {"ph": "b", "name": "a", "cat": "c", "id": "0x1", "pid": 1, "tid": 1, "ts": 11},
        {"ph": "e", "name": "a", "cat": "c", "id": "0x1", "pid": 1, "tid": 1, "ts": 19},
    ],
    "flows": [
        event(0),
        {"ph": "s", "id": 7, "pid": 1, "tid": 2, "ts": EPOCH_US + 1, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 7.0, "pid": 1, "tid": 2, "ts": EPOCH_US + 2, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "s", "id": "7", "pid": 1, "tid": 2, "ts": EPOCH_US + 3, "cat": "ac2g", "name": "ac2g"},
        {"ph": "s", "id": -3, "pid": 1, "tid": 2, "ts": EPOCH_US + 4, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": -3, "pid": 1, "tid": 2, "ts": EPOCH_US + 5, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    ],
    "epoch-decimals": [event(0)] + [event(i, ts=f"@ts{i}@", dur=0.001 * i) for i in range(1, 5)] + [event(9, ts="@-0.0@", dur="@-0@")],
    "pid-spellings": [event(0, pid=7), event(1, pid=7.0), event(2, pid="7"), event(3, tid=[1, 2]), event(4, tid={"a": 1})],
    "unicode-escape": [event(0), event(1, name="\x7f\u0001"), event(2)],
    "non-ascii": [event(0), event(1, name="naïve"), event(2)],
    "number-as-string": [event(0), event(1, ts=str(EPOCH_US)), event(2, dur="5")],
    "exponent": [event(0), event(1, dur=1e-7), event(2)],
    "not-an-object": [event(0), 7, "x", None, event(1)],
    "deep": [event(0, args={"d": json.loads("[" * 80 + "]" * 80)}), event(1)],
    "booleans": [event(0, ts=True), event(1, dur=False)],
}


READ_BY_THE_SCANNER = ("escapes", "absent", "begin-end", "flows", "epoch-decimals", "pid-spellings")
# Where each other case's first event the scanner leaves to msgspec is (in SCANNER_CASES).
FIRST_LEFT = {"unicode-escape": 1, "non-ascii": 1, "number-as-string": 1, "exponent": 1, "not-an-object": 1, "deep": 0, "booleans": 0}


@pytest.mark.parametrize("case", SCANNER_CASES, ids=str)
@pytest.mark.parametrize("batch", [1, 200, 1 << 21])
def test_odd_cases_give_the_msgspec_columns(case, batch, tmp_path, monkeypatch):
    # Many plain events around the case: a batch may mix events the scanner read and a
    # run msgspec decoded.
    events = [event(i) for i in range(100, 140)] + SCANNER_CASES[case] + [event(i) for i in range(140, 180)]
    path = _write(tmp_path, events)
    monkeypatch.setattr(stream, "BATCH_BYTES", batch)
    expected = _msgspec_only(path, monkeypatch)
    counting = _Counting()
    monkeypatch.setattr(stream, "scan", counting)
    got = _scanned(path, pieces(path.read_bytes(), 97))
    if batch == 1 << 21:  # one batch: the scanner reads all of it, or up to the first event it leaves
        assert counting.events == (len(events) if case in READ_BY_THE_SCANNER else 40 + FIRST_LEFT[case])
    if expected is None:  # left to the whole-document decode either way
        assert got is None
        return
    assert_same_document(got, expected)
    assert_same_document(got, whole(path))


def test_the_stream_tests_odd_events_are_the_msgspec_columns(tmp_path, monkeypatch):
    path = _write(tmp_path, ODD_EVENTS)
    monkeypatch.setattr(stream, "BATCH_BYTES", 300)
    assert_same_document(_scanned(path), _msgspec_only(path, monkeypatch))


def test_numbers_the_scanner_reads_itself():
    text = (
        b'[{"ph": "X", "ts": 1712195495519689.0475, "dur": 2.5, "id": 12},'  # 4th decimal 5: rounded up
        b' {"ts": 1712195495519689, "dur": null, "id": -4},'  # an integer: whole us
        b' {"ts": 1712195495519689.04, "id": "5"},'  # 2 decimals: 040 ns
        b' {"ts": -1712195495519689.5, "dur": -0},'  # negative: not exact; "-0" is 0
        b' {"ts": 12.25}]'  # below 2**43 us: the double is exact enough
    )
    got = scanned.scan(text)
    assert got is not None and got.ended and len(got) == 5
    assert got.exact_ns[:3].tolist() == [1712195495519689048, 1712195495519689000, 1712195495519689040]
    assert ((got.flags & scanned.FLAG_EXACT) != 0).tolist() == [True, True, True, False, False]
    assert got.ts[4] == 12.25 and got.ts[0] == 1712195495519689.0475  # the double nearest the text
    assert got.dur[0] == 2.5 and np.isnan(got.dur[1]) and np.isnan(got.dur[2]) and got.dur[3] == 0.0 and not np.signbit(got.dur[3])
    assert ((got.flags & scanned.FLAG_DUR_ABSENT) != 0).tolist() == [False, True, True, False, True]
    ints = (got.flags & scanned.FLAG_ID_INT) != 0
    assert ints.tolist() == [True, True, False, False, False] and got.id_int[:2].tolist() == [12, -4]
    # ids 12, -4, "5", absent, absent: four distinct texts in first-seen order
    assert got.id_codes.tolist() == [0, 1, 2, 3, 3] and got.id_first.tolist() == [0, 1, 2, 3]
    # the args of none, the keys (ph, name, cat, pid, tid, bp): "X" then four without any
    assert got.key_codes.tolist() == [0, 1, 1, 1, 1] and got.args.tobytes() == b"" and got.args_length.tolist() == [0] * 5


def test_a_scan_stops_before_an_event_cut_off_and_says_where_it_resumes():
    text = b'[{"ph": "X", "args": {"a": [1, 2]}}, {"ph": "i"} ,\n {"ph": "X", "name": "cut of'
    got = scanned.scan(text)
    assert got is not None and not got.ended and len(got) == 2
    assert text[got.resume :].lstrip().startswith(b'{"ph": "X", "name": "cut')
    assert got.args.tobytes() == b'{"a": [1, 2]}' and got.args_length.tolist() == [13, 0]
    ended = scanned.scan(b'[{"ph": "X"}]  \n')
    assert ended is not None and ended.ended and len(ended) == 1
    after = scanned.scan(b'[{"ph": "X"}], "traceName": "x"}')  # the array ends, the document goes on
    assert after is not None and not after.ended and after.resume == len(b'[{"ph": "X"}')


def test_thousands_of_distinct_names_in_one_batch(tmp_path, monkeypatch):
    # More keys and ids than the scanner's first hash table holds (it grows).
    events = [event(i, name=f"name {i}", id=i * 3) for i in range(5000)]
    path = _write(tmp_path, events)
    got = _scanned(path)
    assert got is not None and len(got.events.name.values) == 5000
    assert_same_document(got, _msgspec_only(path, monkeypatch))


def test_without_the_extension_msgspec_decodes_every_batch(tmp_path, monkeypatch):
    path = _write(tmp_path, ODD_EVENTS)
    expected, expected_profile = _scanned(path), stepscope.load(path)
    monkeypatch.setattr(kernels, "native", None)
    assert scanned.scan(b"[]") is None
    assert_same_document(_scanned(path), expected)
    assert_same_profile(stepscope.load(path), expected_profile)


def test_events_smaller_than_the_room_per_byte_are_read_in_several_scans(tmp_path, monkeypatch):
    # 64 rows per scan (ROOM_MIN; the room per byte made negligible): a 1 MiB batch of
    # 20-byte events takes hundreds of scans of the same buffer.
    events = [{"ph": "i", "ts": i, "pid": 1, "tid": i % 3} for i in range(60_000)]
    path = _write(tmp_path, events)
    monkeypatch.setattr(scanned, "ROOM_BYTES", 1 << 40)
    counting = _Counting()
    monkeypatch.setattr(stream, "scan", counting)
    got = _scanned(path)
    assert counting.events == 60_000
    monkeypatch.undo()
    assert_same_document(got, _msgspec_only(path, monkeypatch))


def _id_columns_both_ways(document, dialect):
    known = dialect.id_columns(document.events.args, document.events.arg_ints)
    decoded = dialect.id_columns(document.events.args, None)  # msgspec over the args, as before
    assert known[0].keys() == decoded[0].keys()
    for column in decoded[0]:
        assert np.array_equal(known[0][column], decoded[0][column]), column
    assert np.array_equal(known[1], decoded[1])
    return decoded[0]


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_the_id_args_the_scanner_reads_are_those_msgspec_decodes(path):
    document = _scanned(path)
    assert document.events.arg_ints is not None  # every id arg of the shared traces is an integer
    columns = _id_columns_both_ways(document, KINETO_DIALECT)
    assert np.count_nonzero(columns["correlation_id"] != -1) > 0 or "cpu_only" in path.name


@pytest.mark.parametrize(
    "args, known",
    [
        ({"correlation": 5, "External id": 7, "other": {"correlation": "x"}}, True),  # nested keys are not the event's
        ({"External id": -1, "external id": 9}, True),  # -1 counts as absent: the 2021 key wins
        ({"correlation": -0, "External id": 123456789012345678}, True),
        ({"correlation": "12"}, False),  # a string: msgspec's int_ids reads it
        ({"correlation": 1.0}, False),
        ({"correlation": 2**64 + 1}, False),  # past int64: counted as oversized
        ({"correlation": None}, False),
        ({"correlation_id": 3, "group_id": 4, "step_num": 5, "external_id": 6}, True),  # XSpace's names
    ],
    ids=str,
)
def test_id_args_of_every_kind_give_the_msgspec_columns(args, known, tmp_path):
    events = [event(0), event(1, args=args), {"ph": "X", "name": "no args", "pid": 1, "tid": 1, "ts": 3, "dur": 1}, event(2, args=[1, 2])]
    path = _write(tmp_path, events)
    document = _scanned(path)
    assert (document.events.arg_ints is not None) == known
    for dialect in (KINETO_DIALECT, CHROME_DIALECT):
        _id_columns_both_ways(document, dialect)
    kineto = _id_columns_both_ways(document, KINETO_DIALECT)
    # event(0)'s args are {"External id": 0}; the third event has none, the fourth a list
    assert kineto["external_id"][[0, 2, 3]].tolist() == [0, -1, -1] and kineto["correlation_id"][[0, 2, 3]].tolist() == [-1, -1, -1]


# --- differential fuzzing: random events, the scanner against msgspec -----------------------

_KEYS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp")
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
    | st.sampled_from(("X", "i", "B", "E", "s", "f", "M", "C", "b", "e", "0x1", "7", "-0", "1e3", "", "\\", '"'))
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
_PLAIN_TIMES = st.integers(0, 10**9) | st.floats(0, 1e9, allow_nan=False) | st.integers(EPOCH_US, EPOCH_US + 10**6)
_EVENTS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "ph": st.sampled_from(("X", "i", "B", "E", "s", "f", "M", "C", "b", "e")) | _VALUES,
            "name": st.sampled_from(("op", "thread_name", "ac2g")) | _VALUES,
            "cat": st.sampled_from(("cpu_op", "kernel", "ac2g")) | _VALUES,
            "pid": st.integers(-3, 3) | _VALUES,
            "tid": st.integers(-3, 3) | _VALUES,
            "ts": _PLAIN_TIMES | _VALUES,
            "dur": _PLAIN_TIMES | _VALUES,
            "args": st.dictionaries(st.sampled_from((*scanned.ARG_INT_KEYS, "name", "x")), _VALUES | st.integers(-(2**65), 2**65), max_size=3) | _VALUES,
            "id": st.integers(-(2**65), 2**65) | _VALUES,
            "bp": st.sampled_from(("e", "s")) | _VALUES,
        },
    )
    | _VALUES,
    min_size=1,
    max_size=12,
)


@settings(derandomize=True, database=None, deadline=None, max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(events=_EVENTS, ascii_only=st.booleans(), batch=st.sampled_from((1, 300, 1 << 21)))
def test_random_events_give_the_msgspec_columns(events, ascii_only, batch, tmp_path_factory, monkeypatch):
    """Whatever the events hold (any JSON value in any field, escapes, non-ASCII text, big and
    odd numbers), the scanner and msgspec give the same document, or both give the file up."""
    path = tmp_path_factory.mktemp("fuzz") / "t.pt.trace.json"
    body = {"schemaVersion": 1, "traceEvents": [event(0), *events, event(1)]}
    path.write_bytes(json.dumps(body, ensure_ascii=ascii_only).encode("utf-8"))
    monkeypatch.setattr(stream, "BATCH_BYTES", batch)
    expected = _msgspec_only(path, monkeypatch)
    got = _scanned(path, pieces(path.read_bytes(), 61))
    if expected is None:
        assert got is None
    else:
        assert_same_document(got, expected)
