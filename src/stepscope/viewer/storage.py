"""A TraceIndex's folder: saving its arrays, names and manifest, and opening them again,
memory-mapped (``TraceIndex.save`` / ``TraceIndex.load`` call these).

The folder holds one ``<array>.npy`` per index array, ``names.json`` (the string table)
and ``manifest.json`` (format version, tracks, sections, profile facts), written and
opened by ``trace.array_folder`` (atomically; checked before it is trusted; arrays up to
``IN_MEMORY_BYTES``, every array of an index of up to ~131k events, read into memory and
larger ones mapped: the SIGBUS reasoning is there). A folder that fails a check raises
IndexFormatError for the caller to rebuild it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from stepscope.errors import StepscopeError
from stepscope.trace.array_folder import load_array, read_manifest, write_folder
from stepscope.trace.files import read_cache_file

# 2: the layout leaves hidden planes (Kineto's /host:trace-spans) out of the index.
# 3: rows and positions are int32, and an event's plane is its track's (no ref_plane).
# 4: events are named by their label (XLA's `copy-done.2`, not its HLO text).
# 5: the manifest keeps the names those labels shorten (``full_names``).
FORMAT_VERSION = 5
# Arrays up to array_folder.IN_MEMORY_BYTES are read into memory, larger ones mapped: at
# most 13 x 1 MiB per index, for the dashboard's 16 open indexes 208 MiB at worst.
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

    def write(temporary: Path) -> None:
        for name in ARRAYS:
            np.save(temporary / f"{name}.npy", np.ascontiguousarray(arrays[name]), allow_pickle=False)
        (temporary / NAMES).write_bytes(msgspec.json.encode(names))

    write_folder(Path(folder), write, {"version": FORMAT_VERSION, **manifest})


def load_index(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, np.ndarray], list[str]]:
    """The folder's manifest, arrays (memory-mapped) and names, checked against each other;
    IndexFormatError names what is missing or wrong."""
    folder = Path(folder)
    manifest = read_manifest(folder, FORMAT_VERSION, "trace index", IndexFormatError)
    arrays = {}
    for name, dtype in ARRAYS.items():
        try:
            array = load_array(folder / f"{name}.npy")
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
