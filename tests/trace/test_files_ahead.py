"""``files.ahead``: gzip inflated by a thread ahead of the reader gives the same pieces,
in order, the same errors, and stops when the reader stops."""

from __future__ import annotations

import gzip
import threading

import pytest

from stepscope.errors import ProfileFormatError
from stepscope.trace import files


def test_pieces_come_in_order_and_the_file_reads_the_same(tmp_path):
    text = b"".join(b"%08d," % i for i in range(400_000))  # 3.6 MB: four 1 MiB pieces and a rest
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text))
    pieces = list(files.read_pieces(path))
    assert b"".join(pieces) == text and len(pieces) == 4  # 3,600,000 bytes = 3 pieces of 1,048,576 and 454,272
    assert list(files.ahead(iter(range(100)), 3)) == list(range(100))


def test_an_error_is_raised_where_the_piece_would_have_been():
    def pieces():
        yield b"a"
        yield b"b"
        raise ValueError("third")

    reader = files.ahead(pieces(), 2)
    assert next(reader) == b"a" and next(reader) == b"b"
    with pytest.raises(ValueError, match="third"):
        next(reader)


def test_a_truncated_gzip_fails_as_before(tmp_path):
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(b"x" * 3_000_000)[:-20])
    with pytest.raises(ProfileFormatError, match="gzip data is truncated or corrupt"):
        b"".join(files.read_pieces(path))


def test_a_reader_that_stops_early_stops_the_thread():
    made = []

    def endless():
        while True:
            made.append(1)
            yield b"x"

    reader = files.ahead(endless(), 2)
    assert next(reader) == b"x"
    reader.close()
    assert not [t for t in threading.enumerate() if t.name == "stepscope-inflate"]
    assert len(made) <= 5  # the one read, two queued, one waiting to be queued, one being made
