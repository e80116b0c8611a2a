"""Folders of ``.npy`` arrays written once and opened memory-mapped: what the trace
viewer's index (``viewer.storage``) and the profile store (``trace.store``) are made of.

A folder is written into a temporary sibling and renamed into place, its manifest last,
so a reader never sees half of one. Opening maps the arrays: it costs the manifest,
whatever the event count, and processes that open the same folder share its pages
through the OS cache.

A folder is a cache: every file is checked before it is trusted (a regular file, opened
without blocking and never through a link; an array's size exactly what its header says),
and the caller rebuilds a folder that fails. A mapped file truncated later would kill the
process with SIGBUS on the next read of a page past its new end, so arrays up to
``IN_MEMORY_BYTES`` are read into memory instead, and only larger ones are mapped. Nothing
stepscope does truncates a mapped file (folders are written beside and renamed into place,
old ones unlinked, which leaves the mapping intact), and the files are writable by their
owner only, so truncating a mapped one takes the server's own user, who could as well
stop it (docs/security.md).
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from stepscope.errors import StepscopeError
from stepscope.trace.files import open_cache_file, read_cache_file

# Arrays up to this size are read into memory, larger ones mapped (see above).
IN_MEMORY_BYTES = 1 << 20
MANIFEST = "manifest.json"


def write_folder(folder: Path, write: Callable[[Path], None], manifest: dict[str, Any], mode: int = 0o755, replace: bool = True) -> bool:
    """Makes ``folder``: ``write`` fills a temporary sibling, then the manifest goes in
    (its presence marks a complete folder) and the sibling is renamed into place.

    ``replace``: an existing ``folder`` is replaced (moved aside, then removed); otherwise
    it is kept and this one dropped (another process built the same folder first), and
    False is returned."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        write(temporary)
        (temporary / MANIFEST).write_text(json.dumps(manifest))
        os.chmod(temporary, mode)
        if replace:
            _replace_folder(temporary, folder)
            return True
        try:
            os.rename(temporary, folder)  # fails on an existing folder (ENOTEMPTY/EEXIST): theirs stays
        except OSError:
            if not folder.is_dir():
                raise
            shutil.rmtree(temporary, ignore_errors=True)
            return False
        return True
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def _replace_folder(source: Path, target: Path) -> None:
    """Renames ``source`` to ``target``; an existing ``target`` is moved aside first (a
    directory cannot be renamed over a non-empty one) and removed after."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / "folder")
    os.replace(source, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def discard_folder(folder: Path) -> None:
    """Moves ``folder`` aside and removes it; what a process still maps of it stays valid
    (its files are unlinked, never truncated)."""
    aside = folder.with_name(f".{folder.name}.{os.getpid()}.discarded")
    with contextlib.suppress(OSError):
        os.replace(folder, aside)
    shutil.rmtree(aside, ignore_errors=True)


def read_manifest(folder: Path, version: int, what: str, error: type[StepscopeError]) -> dict[str, Any]:
    """The folder's manifest, if it is of ``version``; ``error`` (one line naming the
    folder and ``what`` it should be) where it is missing, unreadable or of another."""
    try:
        manifest = json.loads(read_cache_file(folder / MANIFEST))
    except FileNotFoundError:
        raise error(f"{folder}: not a {what} (no {MANIFEST})") from None
    except (OSError, ValueError) as problem:
        raise error(f"{folder}: unreadable {what} manifest ({problem})") from None
    found = manifest.get("version") if isinstance(manifest, dict) else None
    if found != version:
        raise error(f"{folder}: {what} version {found}, expected {version}")
    checked: dict[str, Any] = manifest
    return checked


def load_array(path: Path) -> np.ndarray:
    """The ``.npy`` file's array, in memory up to ``IN_MEMORY_BYTES``, mapped beyond; a
    file whose size is not its header's promise raises ValueError."""
    with open_cache_file(path) as stream:
        version = np.lib.format.read_magic(stream)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(stream)
        if fortran_order or dtype.hasobject:
            raise ValueError("not a plain array")
        count = int(np.prod(shape, dtype=np.int64))
        offset, size = stream.tell(), os.fstat(stream.fileno()).st_size
        if size != offset + count * dtype.itemsize:
            raise ValueError(f"{size} bytes, expected {offset + count * dtype.itemsize} (truncated or grown)")
        if count * dtype.itemsize <= IN_MEMORY_BYTES:
            data = stream.read(count * dtype.itemsize)
            return np.frombuffer(data, dtype=dtype, count=count).reshape(shape)
        return np.memmap(stream, dtype=dtype, mode="r", offset=offset, shape=shape)


def load_blob(path: Path, size: int) -> bytes | mmap.mmap:
    """A file of raw bytes that must hold exactly ``size`` of them: read up to
    ``IN_MEMORY_BYTES``, else mapped read-only (an ``mmap`` slices to ``bytes`` as a
    ``bytes`` does, so the stores that slice a blob take either). ValueError on another size."""
    with open_cache_file(path) as stream:
        found = os.fstat(stream.fileno()).st_size
        if found != size:
            raise ValueError(f"{found} bytes, expected {size} (truncated or grown)")
        if size <= IN_MEMORY_BYTES:
            return stream.read()
        return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
