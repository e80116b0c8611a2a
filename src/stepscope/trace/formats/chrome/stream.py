"""Decoding a Chrome/Kineto trace file as it is read, a piece at a time.

The whole-document decode (``document``) holds the file's whole inflated text while it
decodes the events (29 MiB for the V100 legacy trace, alive with its 18 MiB of args). This
reader takes the text in pieces (``files.read_pieces``) and decodes the ``traceEvents``
array a batch of whole events at a time, with one decoder call per batch, into the same
columns; each piece is dropped once its events are read. It makes exactly the
``TraceDocument`` the whole-document decode makes, or gives up (None) and leaves the file
to that path: a trace in the JSON Array Format, one that needs a repair (control
characters, invalid UTF-8, non-standard literals), one with more events than the limit,
anything malformed or odd. Giving up costs a second read, only for such files, and keeps
their warnings and errors in one place.

Where a batch ends: after an event's closing brace followed by a comma and the next
event's opening brace. Such text may also lie inside an event (a string, or a list of
objects in its args); but a cut there cannot decode (a string or an object left open), so
a batch that decodes is a run of whole events, and one that does not is retried at an
earlier cut.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec

from stepscope.trace import limits
from stepscope.trace.formats.chrome.columns import TIMED_EVENTS, ColumnBuilder
from stepscope.trace.formats.chrome.document import TraceDocument, check_counts, first_byte, load_estimate
from stepscope.trace.formats.chrome.scanned import scan

# Undecoded text gathered before a batch is decoded: ~2-3k Kineto events, whose decoded
# structs (~700 bytes each) set the transient peak, as columns.BATCH_EVENTS does. Measured
# on the V100 traces (4 fresh loads each): 1 MiB peaks 2 MB below 2 MiB on the ns trace at
# the same time or less; 256-512 KiB no better.
BATCH_BYTES = 1 << 20
# How far into the file "traceEvents" must begin (Kineto's header before it is ~2 KB).
HEADER_BYTES = 1 << 22
# Cuts tried, last first, before more text is read: each cut inside an event costs a
# decode of the batch. Past STUCK_BYTES of text with no cut that decodes, the file is left
# to the whole-document decode.
CUT_TRIES = 4
STUCK_BYTES = 1 << 26
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_EVENTS_NAME = b'"traceEvents"'
_BETWEEN_EVENTS = re.compile(rb"\}\s*,\s*\{")
# Searched for the last cut: the end of the buffer, widened until one is found.
_CUT_WINDOW = 1 << 16
_CUT_OVERLAP = 256
_ERROR_AT = re.compile(r"\(byte (\d+)\)$")
_RAW_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])
_EVENT_TEXTS = msgspec.json.Decoder(list[msgspec.Raw])
_ANY = msgspec.json.Decoder()
_PHASE = operator.attrgetter("ph")


class _GiveUp(Exception):
    """The file is left to the whole-document decode."""


def decode_streamed(path: Path, pieces: Iterable[bytes]) -> TraceDocument | None:
    """The trace the pieces of its text make, decoded as they come; None where the
    whole-document decode must read it (see the module's docstring). Raises what the
    pieces raise (the file's read errors), ``check_counts``' limit errors, and the memory
    limit's (``document.load_estimate``: checked after each batch, on the events so far)."""
    try:
        document = _decode(path, iter(pieces))
    except (_GiveUp, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    check_counts(path, document.events)
    return document


def _decode(path: Path, pieces: Iterator[bytes]) -> TraceDocument:
    buffer = bytearray()
    for piece in pieces:
        buffer += piece
        found = _EVENTS_KEY.search(buffer)
        if found or len(buffer) > HEADER_BYTES:
            break
    else:
        found = None
    if found is None or first_byte(buffer) != b"{":
        raise _GiveUp
    prefix = bytes(buffer[: found.start()])
    if prefix.rstrip()[-1:] not in (b"{", b",") or _EVENTS_NAME in prefix:
        raise _GiveUp
    _RAW_TOP.decode(prefix.rstrip().removesuffix(b",") + b"}")  # the key is at the top level
    del buffer[: found.end() - 1]  # the buffer starts with the array's "["
    batches = _Batches(path)
    for piece in pieces:
        buffer += piece
        if len(buffer) >= BATCH_BYTES and not batches.scan_whole_events(buffer):
            batches.decode_upto_last_cut(buffer)
    # The rest of the array and every key after it: the document with its events so far left out.
    if _EVENTS_NAME in buffer:
        raise _GiveUp  # a second "traceEvents" key, or the text of one in a string
    top = _RAW_TOP.decode(prefix + _EVENTS_NAME + b":" + buffer)
    del buffer
    batches.decode_text(top.pop("traceEvents"))
    header = {key: _ANY.decode(value) for key, value in top.items()}
    return TraceDocument(batches.builder.finish(), header)


class _Batches:
    """Decodes runs of whole events into the columns, counting them against the limit."""

    def __init__(self, path: Path) -> None:
        self.builder = ColumnBuilder()
        self._path = path
        self._count = self._bytes = self._metadata = 0
        self._allowed = limits.EVENTS.get()
        self._memory = limits.memory_budget()

    def scan_whole_events(self, buffer: bytearray) -> bool:
        """Reads the buffer's whole events with the compiled scanner (``scanned``) up to
        one it leaves to msgspec or the one cut off by the buffer's end, and drops them
        from it; whether it read any. The buffer starts with "[" before and after."""
        read = False
        while True:
            scanned = scan(buffer)
            if scanned is None or not len(scanned):
                return read
            self._counted(len(scanned), scanned.resume - 1, self.builder.add_scanned(scanned))
            del buffer[1 : scanned.resume]
            read = True
            if not scanned.full:  # (full: more whole events may follow)
                return read

    def decode_upto_last_cut(self, buffer: bytearray) -> None:
        """Decodes the buffer's events up to its last cut, and drops them from it; the
        buffer starts with "[" before and after."""
        for tries, (end, start) in enumerate(_cuts(buffer)):
            if tries == CUT_TRIES:
                break
            closing = buffer[end]
            buffer[end] = ord("]")
            text = bytes(memoryview(buffer)[: end + 1])
            buffer[end] = closing
            try:
                self.decode_text(text)
            except msgspec.DecodeError as error:
                if _cut_inside_an_event(error, len(text)):
                    continue
                raise  # malformed before the cut: the whole document is too
            buffer[start - 1] = ord("[")  # (a byte of the cut: a comma or a space)
            del buffer[: start - 1]
            return
        # No cut yet (an event longer than a batch, or text like a cut in it): more is read.
        if len(buffer) > STUCK_BYTES:
            raise _GiveUp

    def decode_text(self, text: bytes | msgspec.Raw) -> None:
        """The events of one JSON array's text: scanned by the compiled scanner where it
        takes them (``scanned``), the rest from the first it does not take decoded by
        msgspec."""
        buffer = bytearray(text)
        if self.scan_whole_events(buffer):
            text = bytes(buffer)
        if buffer[1:].strip() == b"]":
            return  # (no events left: nothing for msgspec)
        try:
            events = TIMED_EVENTS.decode(text)
        except msgspec.ValidationError:  # an element that is not an event object: skipped
            raws = _EVENT_TEXTS.decode(text)
            self._counted(len(raws), len(text), 0)
            self.builder.add_raw(raws)
            return
        self._counted(len(events), len(text), list(map(_PHASE, events)).count("M"))
        self.builder.add_timed(events)

    def _counted(self, count: int, text_bytes: int, metadata: int) -> None:
        self._count += count
        self._bytes += text_bytes
        self._metadata += metadata
        if self._count > self._allowed:
            raise _GiveUp  # the whole-document decode says by how many
        if self._memory is not None:
            self._memory.check(self._path, self._count, load_estimate(self._count, self._bytes, self._metadata))


def _cut_inside_an_event(error: msgspec.DecodeError, length: int) -> bool:
    """Whether the decode of a batch (``length`` bytes) failed at its end, as it does when
    the cut lies inside an event (msgspec: truncated inside a string, or a "]" where an
    object goes on), not at some byte before it (which no cut mends)."""
    at = _ERROR_AT.search(str(error))
    return at is None or int(at.group(1)) >= length - 1


def _cuts(buffer: bytearray) -> Iterator[tuple[int, int]]:
    """Places a batch may end, last first: (index of the byte after an event's closing
    brace, index of the next event's opening brace). Searched from the end in widening
    windows, each overlapping the one after it by ``_CUT_OVERLAP`` bytes (a cut across
    the edge)."""
    seen, window = len(buffer), _CUT_WINDOW
    while seen > 1:
        low = max(1, seen - window)
        found = [(m.start() + 1, m.end() - 1) for m in _BETWEEN_EVENTS.finditer(buffer, low, seen + _CUT_OVERLAP) if m.start() < seen]
        yield from reversed(found)
        seen, window = low, window * 4
