"""Builders of hostile profile files: small on disk, costly to a naive reader.

Each writes one file (or a FIFO) at ``path`` and returns ``path``, fast and in bounded
memory, so that the reader tests, the CLI's and the server's can all feed them to
stepscope. What each file does to a reader that has no limits:

- ``gzip_bomb``: a few MB of gzip that expand to ``expanded_bytes`` (GiB) of zeros or of a
  repeated pattern (trace JSON events, so that a reader decodes all the way);
- ``xspace_of_empty_planes`` / ``xspace_of_empty_lines`` / ``xspace_of_metadata``: an XSpace
  of very many containers (planes, lines, event metadata, stat metadata) and no events;
  ``xspace_of_events``: one line of very many small events;
- ``json_of_threads`` / ``json_of_processes`` / ``json_of_names``: trace JSON of very many
  threads (named, with or without events), processes named like planes, or event names;
- ``deep_json``: JSON nested ``depth`` levels, at the top or in one event's ``args``;
  ``json_of_nested_events``: events nested ``count`` levels deep (same start and end);
- ``fifo`` / ``device_file``: paths that are not regular files (reading never ends).

The bombs are written without compressing their expansion: one block of the pattern is
compressed once, ending with a full flush (so its compressed bytes do not depend on what
came before), and repeated; the gzip trailer's CRC-32 of the whole expansion is combined
from the block's (``crc32_combine``, as zlib does it), so the file is valid gzip.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

from tests.support.xspaces import varint

GIB = 1 << 30
MIB = 1 << 20
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # deflate, no flags, mtime 0, max compression
# A trace event as Chrome writes it, repeated by JSON bombs.
EVENT = b'{"ph":"X","name":"op","ts":1,"dur":1,"pid":1,"tid":1},'
# A thread-name metadata event: decoded like any event, but adds no event to a plane.
METADATA_EVENT = b'{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}},'
_BLOCK = MIB


# --- gzip ---------------------------------------------------------------------------------


def gzip_bomb(
    path: Path,
    expanded_bytes: int,
    pattern: bytes = b"\0",
    prefix: bytes = b"",
    suffix: bytes = b"",
    members: int = 1,
) -> Path:
    """A gzip file expanding to ``prefix``, then ``pattern`` repeated to about
    ``expanded_bytes`` in all (a whole number of repetitions), then ``suffix``; in
    ``members`` concatenated gzip members (each a share of the pattern) when more than one.

    ``gzip_bomb(p, GIB)`` is ~1 MB on disk; ``gzip_bomb(p, GIB, EVENT, b'{"traceEvents":[',
    b'{}]}')`` is valid trace JSON of ~19M events.
    """
    path = Path(path)
    body = max(expanded_bytes - len(prefix) - len(suffix), 0) // len(pattern)  # repetitions
    shares = [body // members + (1 if index < body % members else 0) for index in range(members)]
    with open(path, "wb") as stream:
        for index, repetitions in enumerate(shares):
            head = prefix if index == 0 else b""
            tail = suffix if index == members - 1 else b""
            _write_member(stream, head, pattern, repetitions, tail)
    return path


def _write_member(stream, prefix: bytes, pattern: bytes, repetitions: int, suffix: bytes) -> None:
    per_block = max(_BLOCK // len(pattern), 1)
    block = pattern * per_block
    blocks, rest = divmod(repetitions, per_block)
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    stream.write(GZIP_HEADER)
    stream.write(packer.compress(prefix) + packer.flush(zlib.Z_FULL_FLUSH))
    crc, size = zlib.crc32(prefix), len(prefix)
    if blocks:
        packed = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
        # After a full flush the compressor starts afresh: the block packs the same again.
        assert packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH) == packed
        for _ in range(blocks):
            stream.write(packed)
        block_crc = _crc32_repeated(zlib.crc32(block), len(block), blocks)
        crc = crc32_combine(crc, block_crc, len(block) * blocks)
        size += len(block) * blocks
    tail = pattern * rest + suffix
    stream.write(packer.compress(tail) + packer.flush())
    crc, size = zlib.crc32(tail, crc), size + len(tail)
    stream.write(struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))


def _crc32_repeated(crc: int, length: int, count: int) -> int:
    """The CRC-32 of ``count`` copies of a block of ``length`` bytes whose CRC-32 is ``crc``."""
    result, result_length = 0, 0  # CRC of the empty string
    power, power_length = crc, length  # CRC of 2**k copies
    while count:
        if count & 1:
            result = crc32_combine(result, power, power_length) if result_length else power
            result_length += power_length
        count >>= 1
        if count:
            power = crc32_combine(power, power, power_length)
            power_length *= 2
    return result


def _gf2_times(matrix: list[int], vector: int) -> int:
    total, index = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[index]
        vector >>= 1
        index += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, row) for row in matrix]


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """CRC-32 of A+B from CRC-32(A), CRC-32(B) and len(B): zlib's ``crc32_combine``."""
    if length2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << bit for bit in range(31)]  # one zero bit
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four
    while True:
        even = _gf2_square(odd)
        if length2 & 1:
            crc1 = _gf2_times(even, crc1)
        length2 >>= 1
        if not length2:
            break
        odd = _gf2_square(even)
        if length2 & 1:
            crc1 = _gf2_times(odd, crc1)
        length2 >>= 1
        if not length2:
            break
    return crc1 ^ crc2


def json_bomb(path: Path, expanded_bytes: int, members: int = 1, event: bytes = EVENT) -> Path:
    """A gzip bomb that is valid trace JSON all the way: ``event`` (ending in a comma)
    repeated, ~``expanded_bytes / len(event)`` times, then one complete event.

    The default event is a complete event; all at one time, they nest one in the other
    (``builder.nesting`` takes them in n log n time): for a decode workload alone, give
    ``event=METADATA_EVENT``."""
    return gzip_bomb(path, expanded_bytes, event, b'{"traceEvents":[', EVENT[:-1] + b"]}", members)


# --- XSpace -------------------------------------------------------------------------------


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def _write_chunks(path: Path, chunks) -> Path:
    path = Path(path)
    with open(path, "wb") as stream:
        batch: list[bytes] = []
        for chunk in chunks:
            batch.append(chunk)
            if len(batch) >= 65536:
                stream.write(b"".join(batch))
                batch.clear()
        stream.write(b"".join(batch))
    return path


def _event(metadata_id: int, offset_ps: int, duration_ps: int) -> bytes:
    return _int_field(1, metadata_id) + _int_field(2, offset_ps) + _int_field(3, duration_ps)


def _one_event_plane() -> bytes:
    """A ``/host:CPU`` plane with one line holding one event (so the file is a profile)."""
    metadata = _int_field(1, 1) + _field(2, b"op")  # XEventMetadata {id: 1, name: "op"}
    line = _int_field(1, 1) + _field(2, b"main") + _int_field(3, 1_000) + _field(4, _event(1, 0, 1_000))
    return _field(1, _int_field(1, 1) + _field(2, b"/host:CPU") + _field(3, line) + _field(4, _int_field(1, 1) + _field(2, metadata)))


def xspace_of_empty_planes(path: Path, count: int, with_event: bool = True) -> Path:
    """An XSpace of ``count`` planes each with an id and a name and nothing else (~15
    bytes each: 200,000 are 3 MB), after one plane with one event (``with_event``)."""

    def chunks():
        if with_event:
            yield _one_event_plane()
        for index in range(count):
            yield _field(1, _int_field(1, index + 2) + _field(2, b"/gpu:%d" % index))

    return _write_chunks(path, chunks())


def xspace_of_empty_lines(path: Path, count: int) -> Path:
    """One plane of one event and ``count`` lines with a name and no events."""

    def chunks():
        yield _one_event_plane()
        plane = b"".join(_field(3, _int_field(1, index + 2) + _field(2, b"line %d" % index)) for index in range(count))
        yield _field(1, _int_field(1, 2) + _field(2, b"/device:GPU:0") + plane)

    return _write_chunks(path, chunks())


def xspace_of_events(path: Path, count: int) -> Path:
    """One ``/host:CPU`` plane whose one line holds ``count`` back-to-back 1 ns events of one
    type (~10 bytes each)."""
    metadata = _field(4, _int_field(1, 1) + _field(2, _int_field(1, 1) + _field(2, b"op")))
    events = b"".join(_field(4, _event(1, index * 1_000, 1_000)) for index in range(count))
    line = _int_field(1, 1) + _field(2, b"main") + _int_field(3, 1_000) + events
    return _write_chunks(path, [_field(1, _int_field(1, 1) + _field(2, b"/host:CPU") + _field(3, line) + metadata)])


def xspace_of_metadata(path: Path, count: int, kind: str = "event") -> Path:
    """One plane of one event whose map of event metadata (``kind="event"``, field 4) or of
    stat metadata (``"stat"``, field 5) has ``count`` entries."""
    number = 4 if kind == "event" else 5

    def chunks():
        yield _one_event_plane()
        entries = b"".join(_field(number, _int_field(1, index + 2) + _field(2, _int_field(1, index + 2) + _field(2, b"m%d" % index))) for index in range(count))
        yield _field(1, _int_field(1, 2) + _field(2, b"/device:GPU:0") + entries)

    return _write_chunks(path, chunks())


# --- JSON ---------------------------------------------------------------------------------


def deep_json(path: Path, depth: int, where: str = "top") -> Path:
    """JSON nested ``depth`` levels: ``[[[...]]]`` (``where="top"``) or one event of a
    valid trace whose ``args`` are ``{"a":{"a":...}}`` (``"args"``)."""
    if where == "top":
        text = b"[" * depth + b"]" * depth
    else:
        args = b'{"a":' * depth + b"1" + b"}" * depth
        text = b'{"traceEvents":[{"ph":"X","name":"op","ts":1,"dur":1,"pid":1,"tid":1,"args":' + args + b"}]}"
    path = Path(path)
    path.write_bytes(text)
    return path


def json_of_threads(path: Path, count: int, events: bool = False) -> Path:
    """Trace JSON of ``count`` threads, each named by a thread_name metadata event and, with
    ``events``, holding one complete event (so each is a line); plus one event."""

    def chunks():
        yield b'{"traceEvents":[{"ph":"X","name":"op","ts":1,"dur":1,"pid":1,"tid":1}'
        for index in range(count):
            yield b',{"ph":"M","name":"thread_name","pid":1,"tid":%d,"args":{"name":"t%d"}}' % (index + 2, index)
            if events:
                yield b',{"ph":"X","name":"op","ts":1,"dur":1,"pid":1,"tid":%d}' % (index + 2)
        yield b"]}"

    return _write_chunks(path, chunks())


def json_of_processes(path: Path, count: int) -> Path:
    """Trace JSON of ``count`` processes named like XSpace device planes (``/device:GPU:N``:
    each a plane), each with one complete event."""

    def chunks():
        yield b'{"traceEvents":[{"ph":"X","name":"op","ts":1,"dur":1,"pid":1,"tid":1}'
        for index in range(count):
            pid = index + 2
            yield b',{"ph":"M","name":"process_name","pid":%d,"tid":0,"args":{"name":"/device:GPU:%d"}}' % (pid, index)
            yield b',{"ph":"X","name":"op","ts":1,"dur":1,"pid":%d,"tid":1}' % pid
        yield b"]}"

    return _write_chunks(path, chunks())


def json_of_nested_events(path: Path, count: int) -> Path:
    """Trace JSON of ``count`` complete events at the same time on one thread: each nests
    in the one before, ``count`` levels deep."""

    def chunks():
        yield b'{"traceEvents":['
        for index in range(count):
            yield (b"," if index else b"") + EVENT[:-1]
        yield b"]}"

    return _write_chunks(path, chunks())


def json_of_names(path: Path, count: int) -> Path:
    """Trace JSON of ``count`` complete events, each with a name of its own."""

    def chunks():
        yield b'{"traceEvents":['
        for index in range(count):
            yield b'%s{"ph":"X","name":"op %d","ts":%d,"dur":1,"pid":1,"tid":1}' % (b"," if index else b"", index, index)
        yield b"]}"

    return _write_chunks(path, chunks())


# --- not regular files --------------------------------------------------------------------


def fifo(path: Path) -> Path:
    """A named pipe: opening it for reading blocks until a writer comes (none will)."""
    os.mkfifo(path)
    return Path(path)


def device_file(path: Path, target: str = "/dev/zero") -> Path:
    """A symbolic link at ``path`` to a character device (endless zeros by default)."""
    os.symlink(target, path)
    return Path(path)
