"""Trace JSON recognised by its structure (stepscope.trace.sniff): an object with a
top-level "traceEvents" array wherever that key comes, an array of events, or Kineto's
header; nothing else. Each verdict is checked against the json module's reading of the
same document, for every way the bytes can be cut into pieces."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from stepscope.trace import sniff

# Documents and what they are, by their json.loads form: a trace where the top level has a
# "traceEvents" list (or is a list of objects with "ph"), or Kineto's header keys.
DOCUMENTS = [
    # A large metadata object first, with nested decoys: a nested "traceEvents", strings
    # holding brackets, quotes, backslashes and a colon-comma run.
    {"metadata": {"a": [1, 2, {"traceEvents": 5}], "s": 'x"}]{[\\', "k": {"traceEvents": []}, "t": '":,"'}, "traceEvents": [{"ph": "X"}]},
    {"schemaVersion": 1, "lr": 0.1, "layers": [64, 64]},  # a config: one Kineto key is no header
    {"traceEvents": 3},  # not an array
    {"traceEvents": "[]"},  # a string, not an array
    {"a": 1, "traceEvents": []},
    {"schemaVersion": 1, "deviceProperties": [], "x": 1},  # Kineto's header without events yet
    {"nested": {"deep": [[[{"traceEvents": []}]]]}},  # only nested: no trace
    {},
    [{"ph": "X", "name": "op"}],
    [{"name": "a"}, {"name": "b"}],
    [],
]


def expected(document) -> bool:
    if isinstance(document, list):
        return bool(document) and isinstance(document[0], dict) and any("ph" in item for item in document)
    header = {"schemaVersion", "deviceProperties", "distributedInfo"} & set(document)
    return isinstance(document.get("traceEvents"), list) or len(header) >= 2


@pytest.mark.parametrize("document", DOCUMENTS, ids=[json.dumps(d)[:40] for d in DOCUMENTS])
@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64, 1 << 20])
def test_every_cut_gives_the_json_modules_verdict(document, size: int):
    for text in (json.dumps(document).encode(), json.dumps(document, indent=2).encode()):
        pieces = iter([text[at : at + size] for at in range(0, len(text), size)])
        assert sniff.sniff_pieces(pieces).is_trace is expected(document), (text, size)


def test_a_large_metadata_object_before_the_events():
    """TraceLens' H100 samples open with a metadata object of hundreds of KiB: far past any
    fixed head, the top-level "traceEvents" is still found."""
    metadata = {f"kernel_{i}": {"dims": list(range(20)), "name": 'void f<{a}, [b]>("x")'} for i in range(4000)}
    text = json.dumps({"metadata": metadata, "traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2}]}).encode()
    assert len(text) > 500_000
    found = sniff.sniff_stream(io.BytesIO(text))
    assert found == sniff.Sniffed(True, "an object with a traceEvents array")
    assert sniff.sniff_stream(io.BytesIO(gzip.compress(text))) == found


class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        piece = super().read(size)
        self.taken += len(piece)
        return piece


def test_the_scan_is_bounded():
    """A first value longer than the scan's bound: no verdict of trace, and no more read than
    the bound (and a piece); the reason says where it stopped."""
    text = b'{"blob": "' + b"x" * (sniff.MAX_SCAN_BYTES + (8 << 20)) + b'", "traceEvents": []}'
    stream = CountingStream(text)
    found = sniff.sniff_stream(stream)
    assert found == sniff.Sniffed(False, f"a JSON object without traceEvents in its first {sniff.MAX_SCAN_BYTES >> 20} MiB (keys: blob)")
    assert stream.taken <= sniff.MAX_SCAN_BYTES + 2 * (256 << 10)


def test_a_gzip_bomb_inflates_no_further_than_the_bound():
    """1 GiB of spaces inside a string, gzipped (1 MiB): the scan stops at its bound."""
    import zlib

    packer = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b" " * (16 << 20)
    packed = packer.compress(b'{"blob": "') + b"".join(packer.compress(chunk) for _ in range(64)) + packer.flush()
    inflated = 0
    pieces = sniff._content(io.BytesIO(packed))
    for piece in pieces:
        inflated += len(piece)
        if inflated > sniff.MAX_SCAN_BYTES:
            break
    assert sniff.sniff_stream(io.BytesIO(packed)).is_trace is False
    assert inflated <= sniff.MAX_SCAN_BYTES + (256 << 10)  # pieces come bounded, never the whole GiB


@pytest.mark.parametrize(
    "data, why",
    [
        (b"", "not a JSON object or array"),
        (b"\x00" * 100, "not a JSON object or array"),
        (gzip.compress(b"\x00" * 100, mtime=0), "not a JSON object or array"),  # mtime=0: the same test id on every xdist worker
        (b'[{"name": "a"}]', "a JSON array, not of trace events"),
        (b'{"lr": 0.1, "traceEvents": 3}', "its traceEvents is not an array"),
        (b'{"lr": 0.1}', "a JSON object without traceEvents (keys: lr)"),
        (b'{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}', "a JSON object without traceEvents (keys: a, b, c, d, e, ...)"),
    ],
)
def test_why_a_file_is_no_trace(data: bytes, why: str):
    assert sniff.sniff_stream(io.BytesIO(data)) == sniff.Sniffed(False, why)
