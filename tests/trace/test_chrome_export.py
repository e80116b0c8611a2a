"""Chrome / Perfetto JSON export: valid JSON, exact times, streaming, and a faithful re-import."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.trace import names
from stepscope.trace.formats.chrome import export as chrome_export
from stepscope.trace.formats.chrome.export import iter_chunks
from stepscope.trace.model import EVENT_COLUMNS
from tests.support.traces import shared

ALEXNET = "kineto/alexnet_small.pt.trace.json.gz"


def test_export_is_valid_json_with_every_event_and_flow(tmp_path: Path):
    profile = stepscope.load(shared(ALEXNET))
    out = tmp_path / "alexnet.json.gz"
    stepscope.save(profile, out)
    with gzip.open(out, "rt") as stream:
        exported = json.load(stream, parse_float=Decimal)
    events = exported["traceEvents"]
    slices = [e for e in events if e["ph"] in ("X", "C", "i")]
    assert len(slices) == profile.event_count
    assert sum(1 for e in events if e["ph"] == "s") == len(profile.flows)
    assert sum(1 for e in events if e["ph"] == "f") == len(profile.flows)
    process_names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert process_names == [plane.name for plane in profile.planes]
    # Times are absolute (UNIX epoch): no base for a reader to add again.
    assert "baseTimeNanoseconds" not in exported
    # Each event's ts is its epoch time in picoseconds (start_ns * 1000 + the model's start_ps)
    # written as exact decimal microseconds, each dur the model's picoseconds.
    first_plane = profile.planes[0]
    exported_first = [e for e in slices if e["pid"] == 0]
    assert [int(e["ts"] * 1_000_000) - profile.start_ns * 1000 for e in exported_first] == first_plane.events.start_ps.tolist()
    assert [int(e.get("dur", 0) * 1_000_000) for e in exported_first] == first_plane.events.duration_ps.tolist()
    # A Kineto source keeps its own args (original keys) in the export.
    with gzip.open(shared(ALEXNET), "rt") as file:
        source = json.load(file)
    kernel = next(e for e in source["traceEvents"] if e.get("cat") == "kernel")
    twin = next(e for e in slices if e["name"] == kernel["name"] and e["args"].get("correlation") == kernel["args"]["correlation"])
    assert json.loads(json.dumps(twin["args"], default=float)) == kernel["args"]


def test_export_streams_in_chunks(monkeypatch: pytest.MonkeyPatch):
    """The export is produced chunk by chunk: no chunk holds more than CHUNK_EVENTS events."""
    monkeypatch.setattr(chrome_export, "CHUNK_EVENTS", 100)
    profile = stepscope.load(shared(ALEXNET))
    chunks = list(iter_chunks(profile))
    # 728 + 139 + 3 events in chunks of at most 100 per plane: 8 + 2 + 1 event chunks.
    event_chunks = [c for c in chunks if c.lstrip(b",\n").startswith(b'{"ph":"X"')]
    assert len(event_chunks) == 11
    assert max(c.count(b'{"ph":"X"') for c in event_chunks) == 100
    json.loads(b"".join(chunks))


@pytest.mark.parametrize("name", [ALEXNET, "xplane/tpu_v_inference_4chips.xplane.pb"])
def test_reimport_of_export_matches(name: str, tmp_path: Path):
    original = stepscope.load(shared(name))
    out = tmp_path / "export.json"
    stepscope.save(original, out)
    again = stepscope.load(out)
    again.validate()
    assert again.start_ns == original.start_ns
    with_events = [p for p in original.planes if len(p.events)]
    assert [p.name for p in again.planes] == [p.name for p in with_events]
    for plane, copy in zip(with_events, again.planes):
        # The export adds the memory totals as counters (C events, on the _counters_ line once
        # read back): the TPU host plane's 906 MemoryAllocation/Deallocation events carry
        # bytes_allocated and bytes_reserved, 2 samples each.
        counters = copy.line_index(names.COUNTERS_LINE)
        if counters is not None and plane.line_index(names.COUNTERS_LINE) is None:
            added = copy.line_slice(counters)
            assert added.stop - added.start == 2 * _count_named(plane, (names.MEMORY_ALLOCATION, names.MEMORY_DEALLOCATION))
            copy = crop_line(copy, counters)
        # Epoch timestamps are read back rounded to the nanosecond (the file keeps the TPU's
        # 250 ps digits; the reader's exact decimal decode stops at ns): within half a ns,
        # and durations, differences of two such times, within one ns.
        assert np.abs(copy.events.start_ps - plane.events.start_ps).max() <= 500
        assert np.abs(copy.events.duration_ps - plane.events.duration_ps).max() <= 1000
        assert [copy.event_name(r) for r in range(len(copy.events))] == [plane.event_name(r) for r in range(len(plane.events))]
    assert len(again.flows) == len(original.flows)


def test_export_leaves_no_partial_file_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    profile = stepscope.load(shared(ALEXNET))
    out = tmp_path / "out.json"
    out.write_text("previous export")

    def broken(*args, **kwargs):
        yield b"{"
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(chrome_export, "iter_chunks", broken)
    with pytest.raises(RuntimeError):
        stepscope.save(profile, out)
    assert out.read_text() == "previous export"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_written_files_follow_the_umask(tmp_path: Path):
    import os

    previous = os.umask(0o027)
    try:
        out = tmp_path / "shared.xplane.pb"
        stepscope.save(stepscope.load(shared(ALEXNET)), out)
    finally:
        os.umask(previous)
    # 0o666 without the umask's 0o027 bits: owner rw, group r, others nothing.
    assert out.stat().st_mode & 0o777 == 0o640


def _count_named(plane, wanted: tuple[str, ...]) -> int:
    return sum(1 for row in range(len(plane.events)) if plane.event_name(row) in wanted)


def crop_line(plane, line: int):
    """The plane less one line's events (a view for comparing columns and names)."""
    from dataclasses import replace

    keep = np.flatnonzero(plane.events.line != line)
    events = replace(plane.events, **{column: getattr(plane.events, column)[keep] for column in EVENT_COLUMNS})
    return replace(plane, events=events, stats=plane.stats.take(keep))


@pytest.mark.parametrize(
    "name",
    ["kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz", "kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz"],
    ids=["a100", "v100_legacy"],
)
def test_export_of_a_profile_kept_as_xspace_matches_the_source(name: str, tmp_path: Path):
    """Captures are kept as XSpace: exported from there, the JSON still has the source's
    flow categories, its instants as instants, memory counters and absolute times."""
    with gzip.open(shared(name), "rt") as stream:
        source = json.load(stream, parse_float=Decimal)
    events = source["traceEvents"]
    kept = tmp_path / "kept.xplane.pb"
    stepscope.save(stepscope.load(shared(name)), kept)
    out = tmp_path / "export.json"
    stepscope.save(stepscope.load(kept), out)
    exported = json.loads(out.read_text(), parse_float=Decimal)["traceEvents"]

    # An arrow per flow end whose (category, id) has a start in the source.
    starts = {(e.get("cat"), e["id"]) for e in events if e.get("ph") == "s"}
    arrows = Counter(e.get("cat") for e in events if e.get("ph") == "f" and (e.get("cat"), e["id"]) in starts)
    assert Counter(e["cat"] for e in exported if e["ph"] == "s") == arrows
    assert Counter(e["cat"] for e in exported if e["ph"] == "f") == arrows
    assert Counter(e["name"] for e in exported if e["ph"] == "i") == Counter(e["name"] for e in events if e.get("ph") == "i")
    # One memory sample per [memory] instant (the a100 trace has none).
    memory = sum(1 for e in events if e.get("name") == "[memory]")
    assert sum(1 for e in exported if e["ph"] == "C") == memory
    # The first event's time: the source's, as an absolute time (base + ts), exact.
    base_us = Decimal(source.get("baseTimeNanoseconds", 0)) / 1000
    first = min(Decimal(e["ts"]) for e in events if e.get("ph") in ("X", "i"))
    assert min(e["ts"] for e in exported if e["ph"] in ("X", "i")) == base_us + first
