"""Reading any profile file: the registry of readers, chosen by content.

``load(path)`` sniffs the bytes (gzip, protobuf or JSON) rather than trusting the name, so
a renamed or mis-suffixed file still loads, and a file that is none of them gets a clear
error. Every reader raises ``ProfileFormatError`` for bad input and nothing else.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path

from stepscope.errors import ProfileFormatError, ProfileLimitError
from stepscope.trace import remote
from stepscope.trace.files import read_bytes, read_pieces
from stepscope.trace.formats.chrome import document, kineto, stream
from stepscope.trace.formats.chrome import read as chrome
from stepscope.trace.formats.xspace.schema import looks_like_xspace
from stepscope.trace.model import Profile


class FileBytes:
    """A file's bytes handed to a reader, which takes them over.

    A trace can be hundreds of MB; once the reader has decoded it, nothing else should
    keep the bytes alive (a plain argument would stay referenced by the caller's frame
    until the reader returns).
    """

    def __init__(self, data: bytes | bytearray) -> None:
        self._data: bytes | bytearray | None = data

    def peek(self) -> bytes | bytearray:
        assert self._data is not None, "already taken"
        return self._data

    def take(self) -> bytes | bytearray:
        data, self._data = self.peek(), None
        return data


def _read_json(path: Path, source: FileBytes) -> Profile:
    return _import_json(path, document.decode_document(path, source.take()))


def _import_json(path: Path, decoded: document.TraceDocument) -> Profile:
    dialect = kineto.KINETO_DIALECT if _is_kineto(path, decoded) else chrome.CHROME_DIALECT
    return chrome.import_document(path, decoded, dialect)


def _is_kineto(path: Path, decoded: document.TraceDocument) -> bool:
    return ".pt.trace.json" in path.name or kineto.looks_like_kineto(decoded.header)


def _read_xspace(path: Path, source: FileBytes) -> Profile:
    # Imported here: the XSpace reader needs protobuf (~2 MB of RSS), a JSON trace does not.
    from stepscope.trace.formats.xspace.read import read_xspace

    return read_xspace(path, source)  # (taken there, and let go once decoded)


# Format name -> reader of (path, decompressed bytes).
READERS: dict[str, Callable[[Path, FileBytes], Profile]] = {
    "json": _read_json,
    "xspace": _read_xspace,
}


def warm() -> Profile:
    """Imports what a read needs (the XSpace reader and protobuf: ~0.06 s of a fresh
    process) by reading a small sample; the sample's profile, to warm what follows a read
    (the trace viewer's index). For a process that will read profiles, before anyone waits
    for one."""
    from stepscope.trace.formats.xspace import warm as xspace_warm

    return xspace_warm.warm()


def candidates(path: Path, data: bytes | bytearray) -> list[str]:
    """Formats the bytes could be, most likely first.

    A newline is both JSON whitespace and XSpace's first field tag, so a file may look
    like both; the name breaks the tie, and the loader tries the other if the first fails.
    """
    found = []
    if document.first_byte(data) in (b"{", b"["):
        found.append("json")
    if looks_like_xspace(data):
        found.append("xspace")
    if path.name.endswith((".pb", ".pb.gz")):
        found.sort(key=lambda kind: kind != "xspace")
    return found


def load(path: str | Path) -> Profile:
    """Loads one profile file (.xplane.pb, Kineto or Chrome JSON, gzipped or not).

    Reads regular files only, within the limits of :mod:`stepscope.trace.limits`; anything
    else, and anything nested past the decoders' recursion limit, is a ProfileFormatError.
    A URL (``s3://...``, ``file://...``: :mod:`stepscope.trace.remote`) is read through
    fsspec, and the profile and its errors are named by the URL as given.
    """
    if remote.is_url(path):
        url = str(path)
        try:
            profile = _load_or_nested(Path(url), lambda: remote.read_url(url))
        except ProfileFormatError as error:
            raise _renamed(error, url) from None
        return dataclasses.replace(profile, source=url)
    path = Path(path)
    return _load_or_nested(path, lambda: read_bytes(path, check_head=lambda head: _check_head(path, head)), streamed=True)


def _load_or_nested(path: Path, read: Callable[[], bytes | bytearray], streamed: bool = False) -> Profile:
    try:
        profile = _load_streamed(path) if streamed else None
        return profile if profile is not None else _load(path, read)
    except RecursionError:
        raise ProfileFormatError(path, "is nested too deeply to read (past Python's recursion limit)") from None


def _renamed(error: ProfileFormatError, url: str) -> ProfileFormatError:
    """The same error about ``url`` (the readers named it by ``Path(url)``, which folds
    ``//``); its other arguments kept (a limit error's setting and value)."""
    kind, arguments = error.__reduce__()
    renamed: ProfileFormatError = kind(url, *arguments[1:])
    return renamed


def _load(path: Path, read: Callable[[], bytes | bytearray]) -> Profile:
    source = FileBytes(read())
    if not document.first_byte(source.peek()):
        raise ProfileFormatError(path, "is empty")
    kinds = candidates(path, source.peek())
    if not kinds:
        raise _not_a_profile(path)
    first_error: ProfileFormatError | None = None
    for attempt, kind in enumerate(kinds):
        # The first reader takes the bytes over (nothing here keeps them alive while it
        # builds the profile: on the V100 Kineto traces, which start with a newline and
        # so look like both, that held the whole file through the import, +30 MiB at the
        # peak); a later one, only reached when it failed, reads the file again.
        try:
            return READERS[kind](path, source if attempt == 0 else FileBytes(read()))
        except ProfileFormatError as error:
            first_error = first_error or error
    assert first_error is not None
    raise first_error


def _load_streamed(path: Path) -> Profile | None:
    """A JSON trace decoded as it is read (``chrome.stream``: the whole text is never held,
    -16 MB at the peak on the V100 legacy trace); None for anything else, and for any file
    that decode gives up on or fails to import, which ``_load`` then reads whole and so
    reports as it always has (which readers it tried, the first one's error)."""
    if path.name.endswith((".pb", ".pb.gz")):
        return None
    try:
        pieces = read_pieces(path, check_head=lambda head: _check_head(path, head))
        with contextlib.closing(pieces):
            decoded = stream.decode_streamed(path, _if_json_object(pieces))
        return _import_json(path, decoded) if decoded is not None else None
    except ProfileLimitError:
        raise  # the whole read would only say the same, at a greater cost
    except ProfileFormatError:
        return None


def _if_json_object(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """The pieces, if the first starts a JSON object; none otherwise (XSpace, which may
    start with a newline too, or the JSON Array Format, left to ``_load``)."""
    first = next(pieces, b"")
    if document.first_byte(first) == b"{":
        yield first
        yield from pieces


def _check_head(path: Path, head: bytes) -> None:
    """Stops decompressing a file whose first bytes are no profile's (a bomb of zeros)."""
    if document.first_byte(head) and not candidates(path, head):
        raise _not_a_profile(path)


def _not_a_profile(path: Path) -> ProfileFormatError:
    return ProfileFormatError(path, "is not a profile (neither XSpace protobuf nor trace JSON)")
