"""Reading any profile file: the registry of readers, chosen by content.

``load(path)`` sniffs the bytes (gzip, protobuf or JSON) rather than trusting the name, so
a renamed or mis-suffixed file still loads, and a file that is none of them gets a clear
error. Every reader raises ``ProfileFormatError`` for bad input and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from stepscope.errors import ProfileFormatError
from stepscope.trace import chrome, kineto, tracejson, xspace
from stepscope.trace.model import Profile


def _read_json(path: Path, data: bytes) -> Profile:
    document = tracejson.decode_document(path, data)
    dialect = kineto.KINETO_DIALECT if _is_kineto(path, document) else chrome.CHROME_DIALECT
    return chrome.import_document(path, document, dialect)


def _is_kineto(path: Path, document: tracejson.TraceDocument) -> bool:
    return ".pt.trace.json" in path.name or kineto.looks_like_kineto(document.header)


def _read_xspace(path: Path, data: bytes) -> Profile:
    return xspace.read_xspace(path, data)


# Format name -> reader of (path, decompressed bytes).
READERS: dict[str, Callable[[Path, bytes], Profile]] = {
    "json": _read_json,
    "xspace": _read_xspace,
}


def sniff(data: bytes) -> str | None:
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        return "json"
    if xspace.looks_like_xspace(data):
        return "xspace"
    return None


def load(path: str | Path) -> Profile:
    """Loads one profile file (.xplane.pb, Kineto or Chrome JSON, gzipped or not)."""
    path = Path(path)
    data = tracejson.read_bytes(path)
    if not data.strip():
        raise ProfileFormatError(path, "is empty")
    kind = sniff(data)
    if kind is None:
        raise ProfileFormatError(path, "is not a profile (neither XSpace protobuf nor trace JSON)")
    return READERS[kind](path, data)
