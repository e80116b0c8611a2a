"""A TraceIndex's folder: saving its arrays, names and manifest, and opening them again,
memory-mapped (``TraceIndex.save`` / ``TraceIndex.load`` call these).

The folder holds one ``<array>.npy`` per index array, ``names.json`` (the string table)
and ``manifest.json`` (format version, tracks, sections, profile facts). It is written
into a temporary sibling folder and renamed into place, so a reader never sees half an
index. ``load`` maps the arrays (``np.load(mmap_mode="r")``): opening costs the manifest
and the names, whatever the event count, and processes that open the same index share
its pages through the OS cache.
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

# 2: the layout leaves hidden planes (Kineto's /host:trace-spans) out of the index.
# 3: rows and positions are int32, and an event's plane is its track's (no ref_plane).
FORMAT_VERSION = 3
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
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        raise IndexFormatError(f"{folder}: not a trace index (no {MANIFEST})") from None
    except (OSError, ValueError) as error:
        raise IndexFormatError(f"{folder}: unreadable trace index manifest ({error})") from None
    if manifest.get("version") != FORMAT_VERSION:
        raise IndexFormatError(f"{folder}: trace index version {manifest.get('version')}, expected {FORMAT_VERSION}")
    arrays = {}
    for name, dtype in ARRAYS.items():
        try:
            array = np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
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
        names = msgspec.json.decode((folder / NAMES).read_bytes())
    except (OSError, msgspec.DecodeError) as error:
        raise IndexFormatError(f"{folder}: the index's names are missing or damaged ({error})") from None
    return manifest, arrays, names
