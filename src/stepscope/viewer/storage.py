"""Saving a TraceIndex as a folder and opening it again, memory-mapped.

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

import msgspec
import numpy as np

from stepscope.errors import StepscopeError
from stepscope.viewer.index import ARRAYS, TraceIndex, Track

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
NAMES = "names.json"


class IndexFormatError(StepscopeError):
    """A folder that is not a complete trace index of this version (rebuild it)."""


def save_index(index: TraceIndex, folder: str | os.PathLike[str]) -> None:
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        for name in ARRAYS:
            np.save(temporary / f"{name}.npy", np.ascontiguousarray(index.arrays[name]), allow_pickle=False)
        (temporary / NAMES).write_bytes(msgspec.json.encode(index.names))
        manifest = {
            "version": FORMAT_VERSION,
            "keyed": index.keyed,
            "start_ns": index.start_ns,
            "span_ps": index.span_ps,
            "source": index.source,
            "host": index.host,
            "plane_names": index.plane_names,
            "sections": index.sections,
            "tracks": [track.to_json() for track in index.tracks],
            "event_count": index.event_count,
            "lane_count": index.lane_count,
        }
        # The manifest goes last: its presence marks a complete folder.
        (temporary / MANIFEST).write_text(json.dumps(manifest))
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


def load_index(folder: str | os.PathLike[str]) -> TraceIndex:
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
    return TraceIndex(
        sections=manifest["sections"],
        tracks=[Track.from_json(track) for track in manifest["tracks"]],
        names=names,
        arrays=arrays,
        keyed=manifest["keyed"],
        start_ns=manifest["start_ns"],
        span_ps=manifest["span_ps"],
        source=manifest["source"],
        host=manifest["host"],
        plane_names=manifest["plane_names"],
    )
