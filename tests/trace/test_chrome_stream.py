"""The stream reader (``chrome.stream``) makes exactly the document, and so the profile,
that the whole-document decode makes, wherever the pieces and batches split; and it leaves
every file it does not read exactly so to that decode (which then reports it as before).

Reference: ``document.decode_document`` of the whole file's bytes (``files.read_bytes``),
the reader stepscope used before the stream reader, compared column by column (codes and
string tables, times, args blob and offsets, header, warnings), and the two profiles with
``assert_same_profile`` (every column, string table and stat).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import stepscope
from stepscope.errors import ProfileFormatError
from stepscope.trace import readers
from stepscope.trace.files import read_bytes
from stepscope.trace.formats.chrome import stream
from tests.support.chrome_documents import ODD_EVENTS, assert_same_document, document_text, pieces, streamed, whole
from tests.support.reference.xspace import assert_same_profile
from tests.support.traces import KINETO_TRACES


def load_whole(path: Path, monkeypatch) -> stepscope.Profile:
    with monkeypatch.context() as patch:
        patch.setattr(readers, "_load_streamed", lambda path: None)
        return stepscope.load(path)


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_every_shared_trace_streams_to_the_same_document_and_profile(path, monkeypatch):
    assert_same_document(streamed(path), whole(path))
    assert readers._load_streamed(path) is not None  # load takes the stream path
    assert_same_profile(stepscope.load(path), load_whole(path, monkeypatch))


def test_small_batches_and_pieces_split_everywhere(monkeypatch):
    # Batches of a few events, pieces of 1,000 bytes: thousands of cuts, each piece split
    # at a place of its own in an event.
    path = next(p for p in KINETO_TRACES if "alexnet" in p.name)
    expected = whole(path)
    monkeypatch.setattr(stream, "BATCH_BYTES", 2_000)
    data = bytes(read_bytes(path))
    assert_same_document(streamed(path, [data[i : i + 1_000] for i in range(0, len(data), 1_000)]), expected)


@pytest.mark.parametrize("piece", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("batch", [1, 300, 1 << 21])
def test_odd_events_split_anywhere(piece, batch, tmp_path, monkeypatch):
    path = tmp_path / "odd.pt.trace.json"
    path.write_bytes(document_text(ODD_EVENTS, traceName="after the events", distributedInfo={"rank": 0}))
    expected = whole(path)
    monkeypatch.setattr(stream, "BATCH_BYTES", batch)
    assert_same_document(streamed(path, pieces(path.read_bytes(), piece)), expected)


def test_a_gzipped_file_streams_and_loads_the_same(tmp_path, monkeypatch):
    path = tmp_path / "odd.pt.trace.json.gz"
    path.write_bytes(gzip.compress(document_text(ODD_EVENTS)))
    monkeypatch.setattr(stream, "BATCH_BYTES", 500)
    assert_same_document(streamed(path), whole(path))
    assert_same_profile(stepscope.load(path), load_whole(path, monkeypatch))


def _with_control_character(text: bytes) -> bytes:
    return text.replace(b"op3", b"op\x013", 1)


def _with_invalid_utf8(text: bytes) -> bytes:
    return text.replace(b"op3", b"op\xff3", 1)


@pytest.mark.parametrize("spoil", [_with_control_character, _with_invalid_utf8], ids=["control", "utf8"])
def test_a_file_that_needs_a_repair_is_left_to_the_whole_document_decode(spoil, tmp_path, monkeypatch):
    path = tmp_path / "bad.pt.trace.json"
    path.write_bytes(spoil(document_text(ODD_EVENTS)))
    monkeypatch.setattr(stream, "BATCH_BYTES", 300)
    assert streamed(path) is None
    profile = stepscope.load(path)
    assert profile.info["warnings"][0] in ("raw control characters in strings were escaped", "invalid UTF-8 was replaced with U+FFFD")
    assert_same_profile(profile, load_whole(path, monkeypatch))


@pytest.mark.parametrize(
    "text",
    [
        b'[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]',  # the JSON Array Format
        b'{"traceEvents": [], "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"other": {"traceEvents": []}, "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"name": "a \\"traceEvents\\": [", "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}',
        b'{"displayTimeUnit": "ns"}',  # no events
    ],
    ids=["array", "twice", "nested", "in-a-string", "none"],
)
def test_other_shapes_load_as_the_whole_document_decode_reads_them(text, tmp_path, monkeypatch):
    path = tmp_path / "shape.trace.json"
    path.write_bytes(text)
    try:
        expected = load_whole(path, monkeypatch)
    except ProfileFormatError as error:
        with pytest.raises(ProfileFormatError) as got:
            stepscope.load(path)
        assert str(got.value) == str(error)
        return
    assert_same_profile(stepscope.load(path), expected)


@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gz"])
@pytest.mark.parametrize("keep", [0.3, 0.6, 0.999])
def test_a_truncated_file_fails_with_the_whole_document_error(gzipped, keep, tmp_path, monkeypatch):
    text = document_text(ODD_EVENTS)
    cut = text[: int(len(text) * keep)]
    path = tmp_path / ("cut.pt.trace.json.gz" if gzipped else "cut.pt.trace.json")
    path.write_bytes(gzip.compress(text)[: int(len(gzip.compress(text)) * keep)] if gzipped else cut)
    monkeypatch.setattr(stream, "BATCH_BYTES", 300)
    with pytest.raises(ProfileFormatError) as expected:
        load_whole(path, monkeypatch)
    with pytest.raises(ProfileFormatError) as got:
        stepscope.load(path)
    message = str(got.value)
    assert message == str(expected.value)
    assert str(path) in message and "\n" not in message
