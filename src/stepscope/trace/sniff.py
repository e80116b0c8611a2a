"""Is this ``.json[.gz]`` file a trace? Decided from its first few KiB, not its name.

HTA and hand-renamed Kineto files (``rank3.json.gz``, ``events.json``) do not say
``.pt.trace.json``, yet a log directory also holds JSON that is no trace (``config.json``,
TensorBoard's tool caches). Run discovery asks this for every such file, so it reads only
a bounded head (gzip inflated no further than that) from regular files only, and never
loads a whole file: the full read, within :mod:`stepscope.trace.limits`, is ``load``'s.
"""

from __future__ import annotations

import os
import re
import zlib
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from stepscope.errors import ProfileFormatError
from stepscope.trace.files import GZIP_MAGIC, open_regular

# The decompressed head looked at, and the most compressed bytes read to get it (a gzip
# that inflates to less than the head within these is judged on what it gave).
HEAD_BYTES = 8 << 10
MAX_COMPRESSED_BYTES = 64 << 10
_READ_PIECE = 4 << 10
_GZIP_WBITS = 16 + zlib.MAX_WBITS

# A Chrome trace object's own key, and Kineto's header keys. A lone "schemaVersion" is a
# common config key, so a Kineto header is recognised by two of its keys (Kineto writes
# "schemaVersion" first, then "deviceProperties" or "distributedInfo").
CHROME_KEY = b"traceEvents"
KINETO_KEYS = (b"schemaVersion", b"deviceProperties", b"distributedInfo")
# Every Chrome trace event has a phase: an array of objects with one is an event array.
EVENT_KEY = b"ph"

_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*([\[{])\s*(\S?)")


def _key(name: bytes) -> re.Pattern[bytes]:
    return re.compile(rb'"' + re.escape(name) + rb'"\s*:')


_CHROME_KEY = _key(CHROME_KEY)
_KINETO_KEYS = tuple(_key(name) for name in KINETO_KEYS)
_EVENT_KEY = _key(EVENT_KEY)


def looks_like_trace_json(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, decompressed) starts a Chrome/Kineto trace:
    an object with "traceEvents" or Kineto's header keys, or a JSON array of events."""
    start = _START.match(head)
    if start is None:
        return False
    if start.group(1) == b"[":
        return start.group(2) == b"{" and _EVENT_KEY.search(head) is not None
    if _CHROME_KEY.search(head):
        return True
    return sum(1 for key in _KINETO_KEYS if key.search(head)) >= 2


def is_trace_json(path: Path) -> bool:
    """Whether the regular file ``path`` is a trace by content; False for anything that is
    not a regular file or cannot be read. Cached per file version (discovery runs again
    every second while the dashboard is open)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return False
    return _cached(str(path), info.st_ino, info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=4096)
def _cached(path: str, inode: int, size: int, mtime_ns: int) -> bool:
    try:
        return looks_like_trace_json(read_head(Path(path)))
    except ProfileFormatError:
        return False


def read_head(path: Path) -> bytes:
    """Up to HEAD_BYTES of the file, gunzipped if it is gzip (by content); what a corrupt
    gzip gave before its error. ProfileFormatError if it is no regular file."""
    with open_regular(path) as stream:
        try:
            if stream.peek(2)[:2] != GZIP_MAGIC:
                return stream.read(HEAD_BYTES)
            return gunzip_head(stream)
        except OSError:
            return b""


def gunzip_head(stream: BinaryIO) -> bytes:
    """Up to HEAD_BYTES of a gzip stream's content, from at most MAX_COMPRESSED_BYTES of it."""
    unpacker = zlib.decompressobj(_GZIP_WBITS)
    head = b""
    taken = 0
    while len(head) < HEAD_BYTES and taken < MAX_COMPRESSED_BYTES and not unpacker.eof:
        piece = stream.read(_READ_PIECE)
        if not piece:
            break
        taken += len(piece)
        try:
            # At most what the head lacks; input left over is not needed (the head is full).
            head += unpacker.decompress(piece, HEAD_BYTES - len(head))
        except zlib.error:
            break
    return head
