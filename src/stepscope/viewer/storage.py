"""A TraceIndex's folder: saving its arrays, names and manifest, and opening them again,
memory-mapped (``TraceIndex.save`` / ``TraceIndex.load`` call these).

The folder holds one ``<array>.npy`` per index array, ``names.json`` (the string table)
and ``manifest.json`` (format version, tracks, sections, profile facts). It is written
into a temporary sibling folder and renamed into place, so a reader never sees half an
index. ``load`` maps the arrays: opening costs the manifest and the names, whatever the
event count, and processes that open the same index share its pages through the OS cache.

The folder is a cache: ``load`` checks every file before it trusts it (a regular file,
opened without blocking; an array's size exactly what its header says) and raises
IndexFormatError for the caller to rebuild it. A mapped file truncated later would kill
the process with SIGBUS on the next read of a page past its new end, so arrays up to
``IN_MEMORY_BYTES`` (every array of an index of up to ~131k events) are read into memory
instead, and only larger ones are mapped. Nothing stepscope does truncates a mapped file
(folders are written beside and renamed into place, old ones unlinked, which leaves the
mapping intact), and the files are writable by their owner only, so truncating a mapped
one takes the server's own user, who could as well stop it (docs/security.md).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from stepscope.errors import StepscopeError
from stepscope.trace.files import open_cache_file, read_cache_file

# 2: the layout leaves hidden planes (Kineto's /host:trace-spans) out of the index.
# 3: rows and positions are int32, and an event's plane is its track's (no ref_plane).
# 4: events are named by their label (XLA's `copy-done.2`, not its HLO text).
# 5: the manifest keeps the names those labels shorten (``full_names``).
FORMAT_VERSION = 5
# Arrays up to this size are read into memory, larger ones mapped (see above): at most
# 13 x 1 MiB per index, for the dashboard's 16 open indexes 208 MiB at worst.
IN_MEMORY_BYTES = 1 << 20
MANIFEST = "manifest.json"
NAMES = "names.json"
# Array name -> dtype: the index's arrays, which a folder holds exactly.
ARRAYS: dict[str, type] = {
    "lane_track": np.int32,
    "lane_depth": np.int32,
    "lane_offset": np.int64,
    "lane_shift": np.int64,
    "lane_min": np.int64,
    "lane_max": np.int64,
    "key": np.int64,
    "duration_ps": np.int64,
    "busy_before": np.int64,
    "name_id": np.int32,
    "ref_row": np.int32,
    "plane_offset": np.int64,
    "position": np.int32,
}


class IndexFormatError(StepscopeError):
    """A folder that is not a complete trace index of this version (rebuild it)."""


def save_index(folder: str | os.PathLike[str], manifest: dict[str, Any], arrays: dict[str, np.ndarray], names: list[str]) -> None:
    """Writes the folder; ``manifest`` (JSON) must give ``event_count`` and ``lane_count``."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        for name in ARRAYS:
            np.save(temporary / f"{name}.npy", np.ascontiguousarray(arrays[name]), allow_pickle=False)
        (temporary / NAMES).write_bytes(msgspec.json.encode(names))
        # The manifest goes last: its presence marks a complete folder.
        (temporary / MANIFEST).write_text(json.dumps({"version": FORMAT_VERSION, **manifest}))
        os.chmod(temporary, 0o755)
        _replace_folder(temporary, folder)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def _replace_folder(source: Path, target: Path) -> None:
    """Renames ``source`` to ``target``; an existing ``target`` is moved aside first (a
    directory cannot be renamed over a non-empty one) and removed after."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / "index")
    os.replace(source, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def load_index(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, np.ndarray], list[str]]:
    """The folder's manifest, arrays (memory-mapped) and names, checked against each other;
    IndexFormatError names what is missing or wrong."""
    folder = Path(folder)
    try:
        manifest = json.loads(read_cache_file(folder / MANIFEST))
    except FileNotFoundError:
        raise IndexFormatError(f"{folder}: not a trace index (no {MANIFEST})") from None
    except (OSError, ValueError) as error:
        raise IndexFormatError(f"{folder}: unreadable trace index manifest ({error})") from None
    if manifest.get("version") != FORMAT_VERSION:
        raise IndexFormatError(f"{folder}: trace index version {manifest.get('version')}, expected {FORMAT_VERSION}")
    arrays = {}
    for name, dtype in ARRAYS.items():
        try:
            array = _load_array(folder / f"{name}.npy")
        except (OSError, ValueError) as error:
            raise IndexFormatError(f"{folder}: array {name} is missing or damaged ({error})") from None
        if array.dtype != np.dtype(dtype) or array.ndim != 1:
            raise IndexFormatError(f"{folder}: array {name} has dtype {array.dtype}, expected {np.dtype(dtype)}")
        arrays[name] = array
    events, lanes = manifest["event_count"], manifest["lane_count"]
    expected = {"key": events, "busy_before": events + 1, "lane_track": lanes, "lane_offset": lanes + 1}
    for name, size in expected.items():
        if len(arrays[name]) != size:
            raise IndexFormatError(f"{folder}: array {name} has {len(arrays[name])} entries, expected {size}")
    try:
        names = msgspec.json.decode(read_cache_file(folder / NAMES))
    except (OSError, msgspec.DecodeError) as error:
        raise IndexFormatError(f"{folder}: the index's names are missing or damaged ({error})") from None
    return manifest, arrays, names


def _load_array(path: Path) -> np.ndarray:
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
