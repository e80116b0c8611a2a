"""A loaded profile kept on disk, memory-mapped: the profile store.

``save_store(profile, folder)`` writes every column of the profile (each plane's event
columns, its event kinds, its stat store's arrays and blobs, the flows) as ``.npy`` (or,
for a store's bytes, raw ``.bin``) files, and the rest (planes, lines, event type names,
metadata stats, plane stats, the profile's facts) as one MessagePack document
(``profile.msgpack``: bytes, uint64 and float values round-trip exactly, as JSON's would
not), with ``manifest.json`` last. ``open_store(folder)`` maps the large files read-only
(``trace.array_folder``): opening costs the manifest and the document (a few entries per
event type, not per event), whatever the event count, and processes that open the same
store share its pages through the OS cache instead of each holding the profile. A mapped
profile is read-only: a tool that wrote into a column would raise, not change the store.

A store is a cache of the source file it was read from (``load_cached``): its folder is
named by the source's identity (the real path of the file as opened for reading, its size
and mtime_ns) and the store's format version, under a private cache folder; one that is missing, of another version,
truncated or inconsistent raises StoreFormatError naming the folder, and is rebuilt.
Building is atomic (a temporary sibling renamed into place): of two processes building
the same store at once, the first rename wins and the second drops its copy.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from stepscope.errors import ProfileFormatError, StepscopeError
from stepscope.trace import readers
from stepscope.trace.array_folder import discard_folder, load_array, load_blob, read_manifest, write_folder
from stepscope.trace.files import open_regular, read_cache_file, real_path
from stepscope.trace.formats.chrome.kineto import translate_args
from stepscope.trace.merge import ConcatStats
from stepscope.trace.model import EVENT_COLUMNS, EventMetadata, EventTable, FlowTable, Line, Plane, Profile
from stepscope.trace.stat_types import Stat, StatKind
from stepscope.trace.stats import ArgsTranslator, Blob, EmptyStats, JsonStats, StatStore, TextValues, TypedStats, plain_translator

# 1: the first layout.
FORMAT_VERSION = 1
DOCUMENT = "profile.msgpack"
FLOW_COLUMNS = ("flow_id", "category", "src_plane", "src_event", "dst_plane", "dst_event")
# A JsonStats' translator, saved by name: the functions the readers give them.
TRANSLATORS: dict[str, ArgsTranslator] = {"plain": plain_translator, "kineto": translate_args}


class StoreFormatError(StepscopeError):
    """A folder that is not a complete profile store of this version (rebuild it)."""


class StoreUnsupported(StepscopeError):
    """A profile holding something the store cannot keep (a stat store or args translator
    it does not know): it stays in memory."""


class _Writer:
    """The files of a store being saved: arrays and blobs by name. One object given twice
    (the Kineto reader's planes share one args blob) is one file, named once."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.blobs: dict[str, Blob] = {}
        self._named: dict[int, tuple[str, object]] = {}  # id of an object given -> its file's name, and it (kept: its id stays its own)

    def array(self, name: str, array: np.ndarray) -> str:
        if id(array) not in self._named:
            self._named[id(array)] = name, array
            self.arrays[name] = np.ascontiguousarray(array)
        return self._named[id(array)][0]

    def blob(self, name: str, blob: Blob) -> str:
        if id(blob) not in self._named:
            self._named[id(blob)] = name, blob
            self.blobs[name] = blob
        return self._named[id(blob)][0]

    def write(self, folder: Path) -> None:
        for name, array in self.arrays.items():
            np.save(folder / f"{name}.npy", array, allow_pickle=False)
        for name, blob in self.blobs.items():
            with open(folder / f"{name}.bin", "wb") as out:
                out.write(memoryview(blob))


class _Reader:
    """The files of a store being opened, each checked against the manifest, and opened
    once however many parts of the profile share it."""

    def __init__(self, folder: Path, manifest: dict[str, Any]) -> None:
        self.folder = folder
        self.shapes: dict[str, list[Any]] = manifest["arrays"]
        self.sizes: dict[str, int] = manifest["blobs"]
        self._opened: dict[str, Any] = {}

    def array(self, name: str) -> np.ndarray:
        if name not in self._opened:
            self._opened[name] = self._array(name)
        array: np.ndarray = self._opened[name]
        return array

    def _array(self, name: str) -> np.ndarray:
        dtype, length = self.shapes[name]
        try:
            array = load_array(self.folder / f"{name}.npy")
        except (OSError, ValueError) as error:
            raise StoreFormatError(f"{self.folder}: array {name} is missing or damaged ({error})") from None
        if array.dtype != np.dtype(dtype) or array.shape != (length,):
            raise StoreFormatError(f"{self.folder}: array {name} is {array.dtype}[{len(array)}], expected {dtype}[{length}]")
        return array

    def blob(self, name: str) -> Blob:
        if name not in self._opened:
            try:
                self._opened[name] = load_blob(self.folder / f"{name}.bin", self.sizes[name])
            except (OSError, ValueError) as error:
                raise StoreFormatError(f"{self.folder}: blob {name} is missing or damaged ({error})") from None
        blob: Blob = self._opened[name]
        return blob


def _stat_list(stats: list[Stat]) -> list[list[Any]]:
    return [[stat.name, int(stat.kind), stat.value] for stat in stats]


def _stats_of(entries: list[list[Any]]) -> list[Stat]:
    return [Stat(name, StatKind(kind), value) for name, kind, value in entries]


def _translator_name(translate: ArgsTranslator) -> str:
    for name, known in TRANSLATORS.items():
        if known is translate:
            return name
    raise StoreUnsupported(f"the args translator {translate!r} has no name in trace.store.TRANSLATORS")


# Stat store -> its description (small values, and the names of its files), by class.
def _put_empty(store: Any, prefix: str, out: _Writer) -> dict[str, Any]:
    return {"count": len(store)}


def _put_json(store: Any, prefix: str, out: _Writer) -> dict[str, Any]:
    blob, starts, ends, translate = store.parts()
    return {
        "translator": _translator_name(translate),
        "blob": out.blob(f"{prefix}.blob", blob),
        "starts": out.array(f"{prefix}.starts", starts),
        "ends": out.array(f"{prefix}.ends", ends),
    }


def _put_typed(store: Any, prefix: str, out: _Writer) -> dict[str, Any]:
    parts = store.parts()
    blob, offsets, extra = parts["texts"].parts()
    rows, boxed = parts["rows"], parts["boxed"]
    return {
        **{name: out.array(f"{prefix}.{name}", parts[name]) for name in ("event", "key", "kind", "bits")},
        "key_names": parts["key_names"],
        "rows": rows if isinstance(rows, int) else out.array(f"{prefix}.rows", rows),
        "boxed": None if boxed is None else out.array(f"{prefix}.boxed", boxed),
        "text_blob": out.blob(f"{prefix}.text_blob", blob),
        "text_offsets": out.array(f"{prefix}.text_offsets", offsets),
        "text_extra": extra,
    }


def _put_concat(store: Any, prefix: str, out: _Writer) -> dict[str, Any]:
    stores, store_of_row, local_row = store.parts()
    return {
        "stores": [_put_stats(part, f"{prefix}.{number}", out) for number, part in enumerate(stores)],
        "store_of_row": out.array(f"{prefix}.store_of_row", store_of_row),
        "local_row": out.array(f"{prefix}.local_row", local_row),
    }


def _get_empty(entry: dict[str, Any], files: _Reader) -> StatStore:
    return EmptyStats(entry["count"])


def _get_json(entry: dict[str, Any], files: _Reader) -> StatStore:
    return JsonStats(files.blob(entry["blob"]), files.array(entry["starts"]), files.array(entry["ends"]), TRANSLATORS[entry["translator"]])


def _get_typed(entry: dict[str, Any], files: _Reader) -> StatStore:
    rows, boxed = entry["rows"], entry["boxed"]
    event, key, kind, bits = (files.array(entry[name]) for name in ("event", "key", "kind", "bits"))
    texts = TextValues(files.blob(entry["text_blob"]), files.array(entry["text_offsets"]), entry["text_extra"])
    rows_or_count = rows if isinstance(rows, int) else files.array(rows)
    return TypedStats.from_columns(event, key, kind, bits, texts, entry["key_names"], rows_or_count, None if boxed is None else files.array(boxed))


def _get_concat(entry: dict[str, Any], files: _Reader) -> StatStore:
    stores = [_get_stats(part, files) for part in entry["stores"]]
    return ConcatStats(stores, files.array(entry["store_of_row"]), files.array(entry["local_row"]))


# Stat store classes: (name, saver, opener).
STAT_STORES: dict[type, tuple[str, Callable[[Any, str, _Writer], dict[str, Any]], Callable[[dict[str, Any], _Reader], StatStore]]] = {
    EmptyStats: ("empty", _put_empty, _get_empty),
    JsonStats: ("json", _put_json, _get_json),
    TypedStats: ("typed", _put_typed, _get_typed),
    ConcatStats: ("concat", _put_concat, _get_concat),
}
_OPENERS = {name: opener for name, _, opener in STAT_STORES.values()}


def _put_stats(store: StatStore, prefix: str, out: _Writer) -> dict[str, Any]:
    found = STAT_STORES.get(type(store))
    if found is None:
        raise StoreUnsupported(f"a {type(store).__name__} stat store has no entry in trace.store.STAT_STORES")
    name, saver, _ = found
    return {"type": name, **saver(store, prefix, out)}


def _get_stats(entry: dict[str, Any], files: _Reader) -> StatStore:
    return _OPENERS[entry["type"]](entry, files)


def _put_plane(plane: Plane, prefix: str, out: _Writer) -> dict[str, Any]:
    metadata = plane.metadata
    return {
        "id": plane.id,
        "name": plane.name,
        "events": len(plane.events),
        "columns": {column: out.array(f"{prefix}.{column}", getattr(plane.events, column)) for column in EVENT_COLUMNS},
        "lines": [[line.id, line.name, line.display_name, line.timestamp_ns, line.duration_ps] for line in plane.lines],
        "names": metadata.names,
        "display_names": metadata.display_names,
        "categories": metadata.categories,
        "metadata_stats": [_stat_list(stats) for stats in metadata.stats],
        "serialized": metadata.serialized,
        "kinds": out.array(f"{prefix}.kinds", metadata.kinds),
        "stats": _put_stats(plane.stats, f"{prefix}.stats", out),
        "plane_stats": _stat_list(plane.plane_stats),
    }


def _get_plane(entry: dict[str, Any], files: _Reader) -> Plane:
    events = EventTable(**{column: files.array(entry["columns"][column]) for column in EVENT_COLUMNS})
    metadata = EventMetadata(
        names=entry["names"],
        display_names=entry["display_names"],
        categories=entry["categories"],
        stats=[_stats_of(stats) for stats in entry["metadata_stats"]],
        serialized=entry["serialized"],
        kinds=files.array(entry["kinds"]),
    )
    stats = _get_stats(entry["stats"], files)
    count, types = entry["events"], len(metadata.names)
    if (
        len(events) != count
        or len(stats) != count
        or any(len(part) != types for part in (metadata.display_names, metadata.categories, metadata.stats, metadata.serialized, metadata.kinds))
    ):
        raise StoreFormatError(f"{files.folder}: plane {entry['name']}'s columns, stats and event types do not agree in length")
    lines = [Line(*line) for line in entry["lines"]]
    return Plane(entry["id"], entry["name"], lines, metadata, events, stats, _stats_of(entry["plane_stats"]))


def save_store(profile: Profile, folder: str | os.PathLike[str], source: dict[str, Any] | None = None, replace: bool = True) -> bool:
    """Writes ``profile`` as a store in ``folder``; ``source``: the source file's identity,
    kept in the manifest (``load_cached`` checks it). ``replace=False`` keeps a folder that
    another process renamed into place first (returns False). StoreUnsupported where the
    profile holds what the store cannot keep."""
    out = _Writer()
    flows = profile.flows
    document = {
        "start_ns": profile.start_ns,
        "host": profile.host,
        "source": profile.source,
        "format": profile.format,
        "info": profile.info,
        "planes": [_put_plane(plane, f"plane{number}", out) for number, plane in enumerate(profile.planes)],
        "flows": {"categories": flows.categories, **{column: out.array(f"flows.{column}", getattr(flows, column)) for column in FLOW_COLUMNS}},
    }
    try:
        encoded = msgspec.msgpack.encode(document)
    except (TypeError, OverflowError) as error:  # an info value MessagePack has no type for
        raise StoreUnsupported(f"{profile.source}: the profile's facts cannot be stored ({error})") from None
    manifest = {
        "version": FORMAT_VERSION,
        "source": source,
        "events": profile.event_count,
        "document": [len(encoded), zlib.crc32(encoded)],
        "arrays": {name: [array.dtype.str, len(array)] for name, array in out.arrays.items()},
        "blobs": {name: len(blob) for name, blob in out.blobs.items()},
    }

    def write(temporary: Path) -> None:
        out.write(temporary)
        (temporary / DOCUMENT).write_bytes(encoded)

    return write_folder(Path(folder), write, manifest, mode=0o700, replace=replace)


def open_store(folder: str | os.PathLike[str], source: dict[str, Any] | None = None) -> Profile:
    """The profile saved in ``folder``, its columns mapped read-only; StoreFormatError (one
    line, naming the folder) for a folder that is missing, of another version, truncated,
    damaged or inconsistent, or saved from another ``source`` than the one given."""
    folder = Path(folder)
    manifest = _manifest(folder)
    if source is not None and manifest.get("source") != source:
        raise StoreFormatError(f"{folder}: the store is of another source file than {source['path']}")
    try:
        encoded = read_cache_file(folder / DOCUMENT)
    except OSError as error:
        raise StoreFormatError(f"{folder}: the store's {DOCUMENT} is missing or unreadable ({error})") from None
    if [len(encoded), zlib.crc32(encoded)] != manifest["document"]:
        raise StoreFormatError(f"{folder}: the store's {DOCUMENT} is damaged (not the size and CRC-32 written)")
    files = _Reader(folder, manifest)
    try:
        document = msgspec.msgpack.decode(encoded)
        planes = [_get_plane(entry, files) for entry in document["planes"]]
        flows_entry = document["flows"]
        flows = FlowTable(**{column: files.array(flows_entry[column]) for column in FLOW_COLUMNS}, categories=flows_entry["categories"])
        profile = Profile(planes, document["start_ns"], document["host"], document["source"], document["format"], flows, document["info"])
    except (msgspec.DecodeError, KeyError, TypeError, ValueError) as error:
        raise StoreFormatError(f"{folder}: the store is inconsistent ({type(error).__name__}: {error})") from None
    if profile.event_count != manifest["events"]:
        raise StoreFormatError(f"{folder}: the store holds {profile.event_count} events, its manifest {manifest['events']}")
    return profile


def _manifest(folder: Path) -> dict[str, Any]:
    manifest = read_manifest(folder, FORMAT_VERSION, "profile store", StoreFormatError)
    if not all(isinstance(manifest.get(key), kind) for key, kind in (("arrays", dict), ("blobs", dict), ("events", int), ("document", list))):
        raise StoreFormatError(f"{folder}: the profile store manifest lacks its arrays, blobs or counts")
    return manifest


# The folder this process keeps the stores of the profiles it loads in (``keep_stores_in``;
# None: ``load_profile`` reads each from its file).
_stores: Path | None = None


def keep_stores_in(root: str | os.PathLike[str] | None) -> None:
    """From now on ``load_profile`` in this process goes through stores under ``root``
    (the dashboard's workers: ``<cache>/profiles``), None: it reads the file."""
    global _stores
    _stores = None if root is None else Path(root)


def load_profile(path: str | Path) -> Profile:
    """The profile of the file ``path``: from its store where this process keeps stores
    (``keep_stores_in``), else read (``readers.load``)."""
    return readers.load(path) if _stores is None else load_cached(path, _stores)


def source_identity(path: Path) -> dict[str, Any]:
    """What names a source file's store: its real path, size and mtime_ns, of the file
    opened as a profile is (``files.open_regular``: a regular file, inside the log directory
    where reads are confined), so that a link to another file's store is never followed
    where reading that file would be refused. ProfileFormatError where it would be."""
    with open_regular(path) as stream:
        stat, real = os.fstat(stream.fileno()), real_path(stream, path)
    if real is None:
        raise ProfileFormatError(path, "changed while it was opened")
    return {"path": str(real), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def store_folder(root: Path, identity: dict[str, Any]) -> Path:
    """The folder of the store of the source ``identity`` under ``root`` (a caller gives
    each stepscope release a root of its own: its readers may read a file differently);
    another store version is another folder."""
    key = f"{FORMAT_VERSION}\0{identity['path']}\0{identity['size']}\0{identity['mtime_ns']}"
    return root / hashlib.sha256(key.encode()).hexdigest()[:32]


def load_cached(path: str | os.PathLike[str], root: Path) -> Profile:
    """The profile of the file ``path`` from its store under ``root``, built there first
    where missing or refused (a damaged one is discarded): read once, then mapped by every
    process that asks. A profile the store cannot keep, or cannot write (a full disk, a
    cache folder it may not write in), is returned as loaded: the store is a cache."""
    source = Path(path)
    identity = source_identity(source)
    folder = store_folder(root, identity)
    try:
        return open_store(folder, identity)
    except StoreFormatError:
        if os.path.lexists(folder):
            discard_folder(folder)
    profile = readers.load(source)
    try:
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o700)  # only this user may reach (and so truncate or replace) what the workers map
        save_store(profile, folder, identity, replace=False)
        return open_store(folder, identity)  # replaces the loaded copy: its pages are the OS cache's, shared
    except (StoreUnsupported, StoreFormatError, OSError):  # not kept, gone bad at once, or not written: as loaded
        return profile
