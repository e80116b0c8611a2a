"""Damage to real profiles, drawn by Hypothesis: the byte-level (and, for trace JSON,
value-level) mutations of the reader fuzzing, shared with the XSpace decoder's checks.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import re
import signal
from collections.abc import Iterator

from hypothesis import note
from hypothesis import strategies as st

from tests.support.traces import shared

# Bytes that real damage and format drift put into files: JSON's non-standard literals,
# numbers past int64/uint64/double, structural characters, escapes, control characters,
# invalid UTF-8, and protobuf varints (longest legal, over-long, a tag of each wire type).
TOKENS = (
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"-1",
    b"1e400",
    b"18446744073709551616",
    b"9223372036854775808",
    b"-9223372036854775809",
    b"100000000000000000000000000000",
    b"null",
    b"true",
    b'"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\x00",
    b"\x01",
    b"\x1f",
    b"\t",
    b"\n",
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\x80",
    b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    b"\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",
    b"\x0a\x00",
    b"\x12\x7f",
    b"\x1d\x00\x00\x00\x00",
    b"\x21\x00\x00\x00\x00\x00\x00\xf8\x7f",
)

# JSON keys whose values the importer turns into times, ids, phases, lines and stats, and
# values that drifted or damaged files hold there.
KEYS = tuple(b'"%s": ' % key for key in (b"dur", b"ts", b"id", b"pid", b"tid", b"ph", b"bp", b"args", b"name", b"cat"))
VALUES = (
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"-1",
    b"-0.5",
    b"0",
    b"1e300",
    b"-1e300",
    b"1e400",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"100000000000000000000000000000",
    b"null",
    b"true",
    b"[]",
    b"{}",
    b"[1, [2]]",
    b'"7"',
    b'"0x10"',
    b'"stream 7"',
    b'"x"',
    b'"X"',
    b'"B"',
    b'"E"',
    b'"b"',
    b'"e"',
    b'"s"',
    b'"t"',
    b'"f"',
    b'"i"',
    b'"C"',
    b'"M"',
    b'"\\ud800"',
)
_VALUE_END = re.compile(rb"[,}\]\n]")

# Mutations by name; set_value is listed thrice so that more damaged JSON still parses.
BYTE_OPS = ("truncate", "flip_bits", "replace_bytes", "insert_bytes", "insert_token", "delete_span", "duplicate_span")
JSON_OPS = (*BYTE_OPS, "set_value", "set_value", "set_value")


@functools.cache
def source_bytes(name: str) -> bytes:
    data = shared(name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


_POSITION_BITS = 24


def position(data: st.DataObject, size: int, label: str) -> int:
    """A position in ``[0, size)`` spread over the whole file.

    Hypothesis favours small integers (over half of its draws from a large range are in
    the range's first thousandth), which would put most damage at a file's first bytes; an
    affine bijection of the 24-bit draw (odd multiplier) scatters them, and the draw still
    replays the same position.
    """
    drawn = data.draw(st.integers(0, 2**_POSITION_BITS - 1), label=label)
    scrambled = (drawn * 0x9E3779B1 + 0x7F4A7C15) & (2**_POSITION_BITS - 1)
    return scrambled * size >> _POSITION_BITS


def mutate_bytes(data: st.DataObject, buffer: bytearray, ops: tuple[str, ...]) -> None:
    """Applies one drawn mutation to ``buffer`` in place."""
    op = data.draw(st.sampled_from(ops), label="op")
    size = len(buffer)
    if size == 0:
        token = data.draw(st.sampled_from(TOKENS), label="token")
        buffer.extend(token)
        note(f"file was empty: wrote {token!r}")
        return
    if op == "truncate":
        at = position(data, size, "truncate at")
        del buffer[at:]
        note(f"truncate at byte {at}")
    elif op == "flip_bits":
        for _ in range(data.draw(st.integers(1, 8), label="bits")):
            at = position(data, size, "flip at")
            bit = data.draw(st.integers(0, 7), label="bit")
            buffer[at] ^= 1 << bit
            note(f"flip bit {bit} of byte {at}")
    elif op == "replace_bytes":
        for _ in range(data.draw(st.integers(1, 8), label="bytes")):
            at = position(data, size, "replace at")
            buffer[at] = data.draw(st.integers(0, 255), label="with")
            note(f"byte {at} := {buffer[at]:#04x}")
    elif op in ("insert_bytes", "insert_token"):
        at = position(data, size + 1, "insert at")
        inserted = data.draw(st.binary(min_size=1, max_size=32) if op == "insert_bytes" else st.sampled_from(TOKENS))
        buffer[at:at] = inserted
        note(f"insert {inserted!r} at byte {at}")
    elif op == "delete_span":
        at = position(data, size, "delete from")
        length = data.draw(st.integers(1, 512), label="delete length")
        del buffer[at : at + length]
        note(f"delete bytes {at}..{at + length}")
    elif op == "duplicate_span":
        start = position(data, size, "copy from")
        length = data.draw(st.integers(1, 1024), label="copy length")
        at = position(data, size + 1, "paste at")
        buffer[at:at] = buffer[start : start + length]
        note(f"copy bytes {start}..{start + length} to byte {at}")
    else:  # set_value: overwrite the value of one occurrence of a JSON key
        key = data.draw(st.sampled_from(KEYS), label="key")
        occurrences = [m.end() for m in re.finditer(re.escape(key), buffer)]
        if not occurrences:  # the key was damaged away
            return
        start = occurrences[data.draw(st.integers(0, len(occurrences) - 1), label="occurrence")]
        end_match = _VALUE_END.search(buffer, start)
        end = end_match.start() if end_match else len(buffer)
        value = data.draw(st.sampled_from(VALUES), label="value")
        note(f"value of {key!r} at byte {start} ({bytes(buffer[start:end])[:40]!r}) := {value!r}")
        buffer[start:end] = value


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raises TimeoutError in the block once it has run ``seconds`` of wall-clock time (a
    SIGALRM timer: the main thread only, as pytest and its workers run tests), so that an
    example that would loop forever fails instead of hanging the run."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
