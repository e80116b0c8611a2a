"""The profile store (``trace.store``): a profile saved as column files and opened
memory-mapped is the profile its source file loads as, column by column and stat by stat,
and every tool says the same of it; a store that is damaged, truncated or of another
version is refused by name and rebuilt; two processes building one store at once leave
one good store.

Expected values come from the source file loaded directly (``stepscope.load``), the
independent path; the large profile's event count from the JSON written here."""

from __future__ import annotations

import dataclasses
import json
import mmap
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from stepscope.analysis import Output, specs
from stepscope.analysis.opstats import OpStats
from stepscope.errors import ProfileFormatError
from stepscope.render import render
from stepscope.trace.array_folder import IN_MEMORY_BYTES
from stepscope.trace.files import confine_reads
from stepscope.trace.model import EVENT_COLUMNS, Profile
from stepscope.trace.readers import load
from stepscope.trace.store import (
    DOCUMENT,
    FORMAT_VERSION,
    StoreFormatError,
    StoreUnsupported,
    load_cached,
    open_store,
    save_store,
    source_identity,
    store_folder,
)
from stepscope.viewer import build_index
from tests.support.traces import ALL_SHARED_TRACES, ROOT, shared

SMALL = "kineto/alexnet_small.pt.trace.json.gz"  # 870 events: quick to build and break


def assert_same_profile(expected: Profile, found: Profile) -> None:
    """Every fact, column, event type, line, flow and every event's stats equal."""
    assert (found.start_ns, found.host, found.source, found.format) == (expected.start_ns, expected.host, expected.source, expected.format)
    assert json.dumps(found.info, sort_keys=True, default=repr) == json.dumps(expected.info, sort_keys=True, default=repr)
    assert [plane.name for plane in found.planes] == [plane.name for plane in expected.planes]
    for want, got in zip(expected.planes, found.planes, strict=True):
        assert (got.id, got.lines, got.plane_stats) == (want.id, want.lines, want.plane_stats), want.name
        for column in EVENT_COLUMNS:
            assert np.array_equal(getattr(got.events, column), getattr(want.events, column)), (want.name, column)
        meta, want_meta = got.metadata, want.metadata
        assert (meta.names, meta.display_names, meta.categories, meta.serialized) == (
            want_meta.names,
            want_meta.display_names,
            want_meta.categories,
            want_meta.serialized,
        )
        assert np.array_equal(meta.kinds, want_meta.kinds)
        assert repr(meta.stats) == repr(want_meta.stats)  # repr: a NaN stat equals itself
        assert len(got.stats) == len(want.stats) == len(want.events)
        for row in range(len(want.events)):
            assert repr(got.event_stats(row)) == repr(want.event_stats(row)), (want.name, row)
            assert got.stats.raw(row) == want.stats.raw(row), (want.name, row)
    for column in ("flow_id", "category", "src_plane", "src_event", "dst_plane", "dst_event"):
        assert np.array_equal(getattr(found.flows, column), getattr(expected.flows, column)), column
    assert found.flows.categories == expected.flows.categories


def report_all_json(profile: Profile) -> str:
    """What ``stepscope report --tool all --format json`` prints of the profile."""
    stats = OpStats(profile)
    return render([spec.run(stats) for spec in specs() if spec.output is Output.TABLES], "json")


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda path: path.name.split(".")[0])
def test_a_stored_profile_is_the_loaded_profile_and_reports_the_same(path: Path, tmp_path: Path) -> None:
    direct = load(path)
    save_store(load(path), tmp_path / "store")
    stored = open_store(tmp_path / "store")
    assert_same_profile(direct, stored)
    # Every tool runs on the mapped (read-only) columns: one that wrote into a column would raise.
    assert report_all_json(stored) == report_all_json(direct)
    assert build_index(stored).tracks_json() == build_index(direct).tracks_json()


def test_a_blob_the_planes_share_is_one_file_and_one_object(tmp_path: Path) -> None:
    source = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")
    direct = load(source)
    with_args = [plane for plane in direct.planes if plane.stats.parts()[0]]
    assert len(with_args) >= 2 and len({id(plane.stats.parts()[0]) for plane in with_args}) == 1  # the reader's one args blob
    save_store(direct, tmp_path / "store")
    assert [path.name for path in (tmp_path / "store").glob("*.bin")] == ["plane0.stats.blob.bin"]
    stored = open_store(tmp_path / "store")
    assert len({id(plane.stats.parts()[0]) for plane in stored.planes if plane.stats.parts()[0]}) == 1


def big_chrome_trace(path: Path, events: int) -> None:
    """A Chrome trace of ``events`` complete events on one thread, each with args."""
    rows = [{"ph": "X", "name": f"op{i % 7}", "pid": 1, "tid": 1, "ts": i * 2, "dur": 1, "args": {"i": i, "text": "x" * 8}} for i in range(events)]
    path.write_text(json.dumps({"traceEvents": rows}))


def test_large_columns_are_mapped_and_small_ones_read(tmp_path: Path) -> None:
    events = 150_000  # an int64 column is 1.2 MB, past IN_MEMORY_BYTES (1 MiB); an int32 one 0.6 MB, not
    big_chrome_trace(tmp_path / "big.json", events)
    save_store(load(tmp_path / "big.json"), tmp_path / "store")
    stored = open_store(tmp_path / "store")
    assert stored.event_count == events
    columns = stored.planes[0].events
    for column in EVENT_COLUMNS:
        array = getattr(columns, column)
        assert isinstance(array, np.memmap) == (array.nbytes > IN_MEMORY_BYTES), column
        assert not array.flags.writeable, column
    assert isinstance(columns.start_ps, np.memmap) and not isinstance(columns.line, np.memmap)  # int64 mapped, int32 read
    blob = stored.planes[0].stats.parts()[0]
    assert isinstance(blob, mmap.mmap) and len(blob) > IN_MEMORY_BYTES  # ~40 bytes of args per event
    with pytest.raises(ValueError, match="read-only"):
        columns.duration_ps[0] = 5
    assert_same_profile(load(tmp_path / "big.json"), stored)


def _truncate(folder: Path) -> None:
    array = folder / "plane0.start_ps.npy"
    array.write_bytes(array.read_bytes()[:-8])


def _foreign_version(folder: Path) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "version": FORMAT_VERSION + 1}))


def _damage_document(folder: Path) -> None:
    data = bytearray((folder / DOCUMENT).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / DOCUMENT).write_bytes(bytes(data))


def _wrong_length(folder: Path) -> None:
    """An array whose length agrees with its own header, not with the manifest."""
    np.save(folder / "plane0.depth.npy", np.zeros(3, dtype=np.int32))


def _no_manifest(folder: Path) -> None:
    (folder / "manifest.json").unlink()


BREAKAGES = {
    "truncated": (_truncate, "array plane0.start_ps is missing or damaged"),
    "foreign version": (_foreign_version, f"profile store version {FORMAT_VERSION + 1}, expected {FORMAT_VERSION}"),
    "damaged document": (_damage_document, f"the store's {DOCUMENT} is damaged"),
    "wrong length": (_wrong_length, "array plane0.depth is int32"),
    "no manifest": (_no_manifest, "not a profile store"),
}


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_a_broken_store_is_refused_by_name_and_rebuilt(breakage: str, tmp_path: Path) -> None:
    source = shared(SMALL)
    root = tmp_path / "stores"
    folder = store_folder(root, source_identity(source))
    load_cached(source, root)  # builds it
    assert (folder / "manifest.json").is_file()
    damage, message = BREAKAGES[breakage]
    damage(folder)
    with pytest.raises(StoreFormatError) as refused:
        open_store(folder)
    text = str(refused.value)
    assert "\n" not in text and text.startswith(f"{folder}: ") and message in text
    rebuilt = load_cached(source, root)  # discards the broken folder and builds it again
    assert_same_profile(load(source), rebuilt)
    assert_same_profile(load(source), open_store(folder))
    assert sorted(path.name for path in root.iterdir()) == [folder.name]  # nothing left beside it


def test_a_store_of_another_source_is_refused(tmp_path: Path) -> None:
    source = shared(SMALL)
    save_store(load(source), tmp_path / "store", {"path": "/elsewhere", "size": 1, "mtime_ns": 1})
    with pytest.raises(StoreFormatError, match="of another source file than"):
        open_store(tmp_path / "store", source_identity(source))


def test_a_link_out_of_the_confined_folder_never_reaches_a_store(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "trace.json.gz"
    outside.parent.mkdir()
    outside.write_bytes(shared(SMALL).read_bytes())
    root = tmp_path / "stores"
    load_cached(outside, root)  # its store exists
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "link.json.gz").symlink_to(outside)
    confine_reads(tmp_path / "logs")
    try:
        with pytest.raises(ProfileFormatError, match="lies outside the log directory"):
            load_cached(tmp_path / "logs" / "link.json.gz", root)
    finally:
        confine_reads(None)


def test_a_profile_the_store_cannot_keep_is_refused_and_leaves_no_folder(tmp_path: Path) -> None:
    profile = dataclasses.replace(load(shared(SMALL)), info={"huge": 2**70})  # past MessagePack's integers
    with pytest.raises(StoreUnsupported, match="the profile's facts cannot be stored"):
        save_store(profile, tmp_path / "store")
    assert list(tmp_path.iterdir()) == []


def test_a_store_that_cannot_be_written_leaves_the_profile_as_loaded(tmp_path: Path) -> None:
    """The stores' root is a file, so no store can be written there (as on a full disk or
    a read-only cache): the profile comes back as read from its file, equal to a direct
    load, and nothing is left beside it."""
    root = tmp_path / "stores"
    root.write_bytes(b"not a folder")
    assert_same_profile(load(shared(SMALL)), load_cached(shared(SMALL), root))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["stores"] and root.read_bytes() == b"not a folder"


def test_a_changed_source_gets_a_new_store(tmp_path: Path) -> None:
    source = tmp_path / "trace.json.gz"
    source.write_bytes(shared(SMALL).read_bytes())
    before = store_folder(tmp_path / "stores", source_identity(source))
    os.utime(source, ns=(1, 1))
    assert store_folder(tmp_path / "stores", source_identity(source)) != before


BUILD_AND_OPEN = """
import sys, zlib
from pathlib import Path
from stepscope.trace.store import load_cached
profile = load_cached(sys.argv[1], Path(sys.argv[2]))
plane = max(profile.planes, key=lambda plane: len(plane.events))
print(profile.event_count, zlib.crc32(plane.events.start_ps.tobytes()), zlib.crc32(plane.stats.raw(len(plane.events) - 1)))
"""


def test_two_processes_build_and_open_one_store_at_once(tmp_path: Path) -> None:
    source = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")  # 27k events: ~1 s to load, so the builds overlap
    root = tmp_path / "stores"
    command = [sys.executable, "-c", BUILD_AND_OPEN, str(source), str(root)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    answers = [process.communicate(timeout=120) for process in running]
    assert [process.returncode for process in running] == [0, 0], answers
    direct = load(source)
    plane = max(direct.planes, key=lambda plane: len(plane.events))
    expected = f"{direct.event_count} {zlib.crc32(plane.events.start_ps.tobytes())} {zlib.crc32(plane.stats.raw(len(plane.events) - 1))}"
    assert [out.strip() for out, _ in answers] == [expected, expected]
    folder = store_folder(root, source_identity(source))
    assert sorted(path.name for path in root.iterdir()) == [folder.name]  # one store, no temporary left
    assert_same_profile(direct, open_store(folder))
