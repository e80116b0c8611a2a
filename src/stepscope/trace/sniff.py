"""Is this ``.json[.gz]`` file a trace? Decided from its structure, not its name.

HTA and hand-renamed Kineto files (``rank3.json.gz``, ``events.json``) do not say
``.pt.trace.json``, yet a log directory also holds JSON that is no trace (``config.json``,
TensorBoard's tool caches). Run discovery asks this for every such file.

A trace is a JSON array of events (objects with a phase, ``"ph"``) or an object with a
top-level ``"traceEvents"`` array. The object's keys may come in any order, and real files
put much before the events: TraceLens' H100 samples open with a ``"metadata"`` object of
hundreds of KiB. So the object is scanned key by key at its top level, skipping nested
values whole (strings, objects, arrays), until ``"traceEvents"`` is met, the object ends,
or ``MAX_SCAN_BYTES`` have been scanned. Kineto's header keys (two of them at the top level)
also make a trace, so that a file whose events lie past the scan is still found. Reads are
bounded: no more than ``MAX_SCAN_BYTES`` of content (gzip inflated no further), from
regular files only; the full read, within :mod:`stepscope.trace.limits`, is ``load``'s.
"""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from stepscope.errors import ProfileFormatError
from stepscope.trace.files import GZIP_MAGIC, open_regular

# The most content (decompressed) scanned for the top-level keys, and the size of a read.
MAX_SCAN_BYTES = 32 << 20
_READ_PIECE = 256 << 10
_GZIP_WBITS = 16 + zlib.MAX_WBITS

# The object key of a Chrome trace's events.
TRACE_EVENTS = "traceEvents"
# Kineto's header keys. A lone "schemaVersion" is a common config key, so a Kineto header is
# recognised by two of them (Kineto writes "schemaVersion" first, then "deviceProperties"
# or "distributedInfo").
KINETO_KEYS = frozenset({"schemaVersion", "deviceProperties", "distributedInfo"})
# Every Chrome trace event has a phase: an array of objects with one is an event array.
_EVENT_KEY = re.compile(rb'"ph"\s*:')
_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*([\[{])\s*(\S?)")
# The tokens that give a JSON text's structure: a string (group 1 is its closing quote,
# missing where the string runs past the bytes at hand), a bracket, and at the top level a
# colon or a comma (inside a nested value they do not matter, and skipping them is faster).
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*(")?'
_TOKEN = re.compile(_STRING + rb"|[{}\[\]:,]")
_NESTED_TOKEN = re.compile(_STRING + rb"|[{}\[\]]")
# The rest of a string cut at a piece's end (group 1: its closing quote), and how much of a
# cut string is kept (a key's name; a longer string is only skipped).
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*(")?')
_KEY_BYTES = 1024


@dataclass(frozen=True)
class Sniffed:
    """Whether a file is a trace, and why (said where a file is skipped)."""

    is_trace: bool
    why: str


def sniff_stream(stream: BinaryIO) -> Sniffed:
    """What the content of ``stream`` (plain or gzip, by its first bytes) is."""
    return sniff_pieces(_content(stream))


def sniff_pieces(pieces: Iterator[bytes]) -> Sniffed:
    """What the JSON text given in ``pieces`` (consecutive bytes) is, from its structure."""
    head = b""
    for piece in pieces:
        head += piece
        if len(head) >= 64 or not piece:
            break
    start = _START.match(head)
    if start is None:
        return Sniffed(False, "not a JSON object or array")
    if start.group(1) == b"[":
        if start.group(2) == b"{" and _EVENT_KEY.search(head):
            return Sniffed(True, "a JSON array of trace events")
        return Sniffed(False, "a JSON array, not of trace events")
    return _TopLevel().scan(head[start.start(1) :], pieces)


class _TopLevel:
    """Walks an object's top level: its keys, and the first token of each value."""

    def __init__(self) -> None:
        self.depth = 0
        self.expect_key = False
        self.key: str | None = None  # the key whose value comes next
        self.keys: list[str] = []
        # A string cut at the end of a piece: its start (kept up to _KEY_BYTES, enough for
        # a key), or None outside a string.
        self.cut: bytes | None = None

    def scan(self, text: bytes, pieces: Iterator[bytes]) -> Sniffed:
        scanned = len(text)
        while True:
            rest, found = self._read(text)
            if found is not None:
                return found
            piece = next(pieces, b"")
            if not piece:
                return self._verdict(ended=self.depth == 0)
            scanned += len(piece)
            if scanned > MAX_SCAN_BYTES:
                return self._verdict(ended=False)
            text = rest + piece

    def _read(self, text: bytes) -> tuple[bytes, Sniffed | None]:
        """Reads the tokens of ``text``: the bytes to read again before the next piece (a
        backslash that ends it), and the verdict once there is one. Each byte is scanned
        once, however long a string runs over pieces."""
        at = 0
        if self.cut is not None:  # inside a string: find its end first
            rest = _STRING_REST.match(text)
            assert rest is not None  # (the pattern matches the empty string)
            self.cut = (self.cut + text[: rest.end()])[:_KEY_BYTES]
            if rest.group(1) is None:
                return text[rest.end() :], None
            at = rest.end()
            found = self._token(self.cut)
            self.cut = None
            if found is not None:
                return b"", found
        while True:
            match = (_TOKEN if self.depth <= 1 else _NESTED_TOKEN).search(text, at)
            if match is None:
                return b"", None
            if match.group()[:1] == b'"' and match.group(1) is None:  # the string goes on
                self.cut = text[match.start() : match.end()][:_KEY_BYTES]
                return text[match.end() :], None
            found = self._token(match.group())
            if found is not None:
                return b"", found
            at = match.end()

    def _token(self, token: bytes) -> Sniffed | None:
        if token[:1] == b'"' and self.depth == 1 and self.expect_key:
            self.key = token[1:-1].decode("utf-8", "replace")
            self.keys.append(self.key)
            self.expect_key = False
            return None
        if token == b":":
            return None
        if self.depth == 1 and self.key is not None:  # the first token of a value
            key, self.key = self.key, None
            if key == TRACE_EVENTS:
                if token == b"[":
                    return Sniffed(True, f"an object with a {TRACE_EVENTS} array")
                return Sniffed(False, f"its {TRACE_EVENTS} is not an array")
        if token == b",":
            self.expect_key = self.depth == 1
        elif token in (b"{", b"["):
            self.depth += 1
            self.expect_key = self.depth == 1
        elif token in (b"}", b"]"):
            self.depth -= 1
            if self.depth == 0:
                return self._verdict(ended=True)
        return None

    def _verdict(self, ended: bool) -> Sniffed:
        if len(KINETO_KEYS.intersection(self.keys)) >= 2:
            return Sniffed(True, "an object with Kineto's header keys")
        shown = ", ".join(self.keys[:5]) + (", ..." if len(self.keys) > 5 else "")
        where = "" if ended else f" in its first {MAX_SCAN_BYTES >> 20} MiB"
        return Sniffed(False, f"a JSON object without {TRACE_EVENTS}{where} (keys: {shown or 'none'})")


def _content(stream: BinaryIO) -> Iterator[bytes]:
    """The stream's content in pieces, gunzipped where it is gzip; at most about
    MAX_SCAN_BYTES (the scanner stops asking there). A corrupt gzip ends where it breaks."""
    first = stream.read(_READ_PIECE)
    if first[:2] != GZIP_MAGIC:
        piece = first
        while piece:
            yield piece
            piece = stream.read(_READ_PIECE)
        return
    unpacker = zlib.decompressobj(_GZIP_WBITS)
    pending = first
    while pending and not unpacker.eof:
        try:
            # Bounded output per call: a gzip bomb inflates no further than is asked for.
            out = unpacker.decompress(pending, _READ_PIECE)
        except zlib.error:
            return
        pending = unpacker.unconsumed_tail or stream.read(_READ_PIECE)
        if out:
            yield out


def sniff_file(path: Path) -> Sniffed:
    """What the file ``path`` is. Cached per file version (discovery runs again every
    second while the dashboard is open)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as error:
        return Sniffed(False, f"cannot be read ({getattr(error, 'strerror', None) or error})")
    return _cached(str(path), info.st_ino, info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=4096)
def _cached(path: str, inode: int, size: int, mtime_ns: int) -> Sniffed:
    try:
        with open_regular(Path(path)) as stream:
            return sniff_stream(stream)
    except ProfileFormatError as error:
        return Sniffed(False, error.problem)
    except OSError as error:
        return Sniffed(False, f"cannot be read ({error.strerror or error})")
