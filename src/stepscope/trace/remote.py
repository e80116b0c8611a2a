"""Profiles named by URL (``s3://bucket/run/rank0.pt.trace.json.gz``, ``gs://``, ``file://``,
``memory://``...), read through fsspec, so that a cluster's workers read each rank's file
where it lies (an object store, a shared filesystem) instead of the driver shipping bytes.

fsspec is imported only when a URL is met: a local path never needs it, and stepscope
imports without it. A URL is read within the same input limit as a local file and gunzipped
by content the same way; the readers then see the bytes under the URL's own name, and every
error and ``Profile.source`` name the URL as given (``pathlib.Path`` would fold its ``//``).

Discovery of a run under a URL (``discover_url``) applies the local layout's rules
(``logdir.parse_path``) to the relative paths that fsspec lists; where it finds no profile,
its error names the files it skipped and why, as a local folder's does.

A URL of the local filesystem (``file://``, or any fsspec filesystem whose files are local)
is read and listed as a local path is: regular files only (``files.open_regular``), so a
FIFO does not hang it, a link to ``/dev/zero`` is not read, and each says so in one line.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from stepscope.errors import ProfileFormatError, StepscopeError
from stepscope.sizes import size_text
from stepscope.trace import limits
from stepscope.trace.files import GZIP_MAGIC, gunzip_stream, is_regular_file, open_regular, read_bytes
from stepscope.trace.logdir import PROFILE_SUFFIXES, SNIFFED_SUFFIXES, XPLANE_SUFFIX, Skipped, file_host, parse_path, skipped_summary
from stepscope.trace.sniff import sniff_stream

# scheme://... as RFC 3986 spells a scheme; one letter is a Windows drive (C://), not a URL.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
FSSPEC_MISSING = "reading a URL needs fsspec (pip install fsspec, or stepscope[ray])"


def is_url(path: object) -> bool:
    return isinstance(path, str) and _URL.match(path) is not None


def _filesystem(url: str) -> tuple[Any, str]:
    """fsspec's filesystem for the URL and the path within it (no protocol)."""
    try:
        import fsspec
    except ImportError:
        raise StepscopeError(f"{url}: {FSSPEC_MISSING}") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
        return fs, str(path)
    except (ValueError, ImportError) as error:  # an unknown protocol, or its package missing
        raise ProfileFormatError(url, f"cannot be opened ({error})") from None


def _is_local(fs: Any) -> bool:
    """Whether fsspec's filesystem holds local files (``file://``, ``local://``)."""
    return bool(getattr(fs, "local_file", False))


def read_url(url: str) -> bytes | bytearray:
    """The bytes at ``url``, gunzipped if gzip (by content), within ``limits.INPUT_BYTES``;
    a local file's through the local reader, with its checks."""
    fs, path = _filesystem(url)
    if _is_local(fs):
        return read_bytes(Path(path))
    limit = limits.INPUT_BYTES.get()
    try:
        info = fs.info(path)
        if info.get("type") == "directory":
            raise ProfileFormatError(url, "is a directory, not a profile file")
        size = int(info.get("size") or 0)
        if size > limit:
            raise limits.INPUT_BYTES.error(url, f"is {size_text(size)} on disk, more than {size_text(limit)}")
        with fs.open(path, "rb") as stream:
            data: bytes = stream.read(limit + 1)
    except FileNotFoundError:
        raise ProfileFormatError(url, "does not exist") from None
    except OSError as error:
        raise ProfileFormatError(url, f"cannot be read ({error.strerror or error})") from None
    if len(data) > limit:
        raise limits.INPUT_BYTES.error(url, f"grew past {size_text(limit)} while being read")
    if data[:2] == GZIP_MAGIC:
        return gunzip_stream(Path(url), io.BytesIO(data), limit, None)
    return data


@dataclass(frozen=True)
class UrlHost:
    name: str
    path: str  # the file's full URL


@dataclass
class UrlRun:
    """A run whose host files are URLs (``logdir.Run``'s shape, with ``str`` paths)."""

    name: str
    path: str
    hosts: list[UrlHost] = field(default_factory=list)


def discover_url(url: str) -> list[UrlRun]:
    """Runs under ``url`` (a folder) or the one run that ``url`` (a file) is; the layout's
    rules are ``logdir.discover``'s, applied to the names fsspec lists."""
    fs, root = _filesystem(url)
    local = _is_local(fs)
    try:
        if not fs.exists(root):
            raise ProfileFormatError(url, "does not exist")
        if local and not fs.isdir(root):
            _check_local_file(url, Path(root))
        if fs.isfile(root):
            name = PurePosixPath(root).name
            return [UrlRun(name, url, [UrlHost(file_host(Path(name)), url)])]
        files = sorted(str(file) for file in fs.find(root))
    except OSError as error:
        raise ProfileFormatError(url, f"cannot be listed ({error.strerror or error})") from None
    runs: dict[str, UrlRun] = {}
    skipped: list[Skipped] = []
    base = root.rstrip("/") or "/"
    for file in files:
        name = PurePosixPath(file).name
        if name.startswith(".") or not name.endswith((*PROFILE_SUFFIXES, *SNIFFED_SUFFIXES)):
            continue
        why = _why_not_a_profile(fs, file, name, local)
        if why:
            skipped.append(Skipped(Path(file), why))
            continue
        parsed = parse_path(Path(base), Path(file))
        if parsed is None:
            continue
        folder = fs.unstrip_protocol(str(PurePosixPath(file).parent))
        runs.setdefault(parsed.run, UrlRun(parsed.run, folder)).hosts.append(UrlHost(parsed.host, fs.unstrip_protocol(file)))
    if not runs:
        raise ProfileFormatError(
            url,
            "contains no profiles (looked for plugins/profile/<session>/<host>.xplane.pb, *.pt.trace.json[.gz] and trace JSON by content)"
            + skipped_summary(Path(base), skipped),
        )
    for run in runs.values():
        run.hosts = _prefer_xspace(run.hosts)
    return sorted(runs.values(), key=lambda run: run.name)


def _check_local_file(url: str, path: Path) -> None:
    """Raises, naming ``url``, what the local file is when it is no regular file."""
    try:
        with open_regular(path):
            pass
    except ProfileFormatError as error:
        raise ProfileFormatError(url, error.problem) from None


def _why_not_a_profile(fs: Any, file: str, name: str, local: bool) -> str:
    """Why a file named like a profile is none ("" when it is one): a local file that is
    no regular file, JSON that is no trace by content, or one that cannot be read."""
    if local and not is_regular_file(Path(file)):
        return "not a regular file"
    if name.endswith(PROFILE_SUFFIXES):
        return ""
    try:
        with fs.open(file, "rb") as stream:
            sniffed = sniff_stream(stream)
    except OSError as error:
        return f"cannot be read ({error.strerror or error})"
    return "" if sniffed.is_trace else f"not a trace: {sniffed.why}"


def _prefer_xspace(hosts: list[UrlHost]) -> list[UrlHost]:
    """One host per name; XSpace over trace JSON (as ``logdir`` does)."""
    chosen: dict[str, UrlHost] = {}
    for host in hosts:
        current = chosen.get(host.name)
        if current is None or (host.path.endswith(XPLANE_SUFFIX) and not current.path.endswith(XPLANE_SUFFIX)):
            chosen[host.name] = host
    return sorted(chosen.values(), key=lambda host: host.name)
