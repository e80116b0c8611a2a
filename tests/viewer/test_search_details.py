"""Search by name (next / previous), the index on disk, and the details pane's data:
details, flows between a launch and its kernel, aggregates of a selection."""

from __future__ import annotations

import os
import re
from collections import Counter

import numpy as np
import pytest

from stepscope.analysis.steps.steps import find_steps
from stepscope.trace.array_folder import IN_MEMORY_BYTES, load_array
from stepscope.trace.readers import load
from stepscope.viewer import (
    STEPS_PLANE,
    TraceIndex,
    build_index,
    decode,
    details,
    find,
    flows_for,
    query,
    summarize,
)
from stepscope.viewer.storage import IndexFormatError
from tests.support.reference.viewer import overlaps, random_profile
from tests.support.traces import read_json, shared


def all_matches(profile, text):
    """(start, name) of every event whose name contains ``text`` (case-insensitive),
    the Steps track's "Step N" events included."""
    found = []
    for plane in profile.planes:
        for row in range(len(plane.events)):
            name = plane.event_name(row)
            if text.lower() in name.lower():
                found.append((int(plane.events.start_ps[row]), name))
    steps = find_steps(profile)
    if not steps.inferred:
        for number, start in zip(steps.number.tolist(), steps.start_ps.tolist()):
            if text.lower() in f"step {number}":
                found.append((int(start), f"Step {number}"))
    return sorted(found)


@pytest.fixture(scope="module")
def profile():
    return random_profile(21)


@pytest.fixture(scope="module")
def index(profile):
    return build_index(profile)


@pytest.mark.parametrize("text", ["alpha", "Step", "KERNEL"])
def test_find_steps_through_every_match_in_time_order(profile, index, text):
    want = all_matches(profile, text)
    assert want
    seen = []
    match = find(index, text)
    while match is not None:
        assert match.total == len(want) and match.ordinal == len(seen)
        seen.append((match.start_ps, match.name))
        match = find(index, text, after_id=match.id)
    starts = [start for start, _ in seen]
    assert starts == sorted(starts) and Counter(seen) == Counter(want)
    backwards = []
    match = find(index, text, before=True)
    while match is not None:
        backwards.append((match.start_ps, match.name))
        match = find(index, text, before=True, after_id=match.id)
    assert backwards == seen[::-1]


def test_find_after_a_time(profile, index):
    starts = [start for start, _ in all_matches(profile, "beta")]
    for time in (starts[0] - 1, starts[0], starts[len(starts) // 2], starts[-1]):
        following = [s for s in starts if s > time]
        earlier = [s for s in starts if s < time]
        after, before = find(index, "beta", after_ps=time), find(index, "beta", after_ps=time, before=True)
        assert (after.start_ps if after else None) == (following[0] if following else None)
        assert (before.start_ps if before else None) == (earlier[-1] if earlier else None)


def test_find_match_points_at_its_event(profile, index):
    match = find(index, "gamma")
    plane, row = match.ref
    events = profile.planes[plane].events
    assert (match.start_ps, match.duration_ps) == (events.start_ps[row], events.duration_ps[row])
    assert match.name == profile.planes[plane].event_name(row)
    track = index.tracks[match.track]
    assert (track.plane, track.line) == (plane, events.line[row])


def test_find_nothing_and_bad_text(index):
    assert find(index, "no such name") is None
    with pytest.raises(ValueError, match="empty"):
        find(index, "")


def test_save_and_load_round_trip(tmp_path, profile, index):
    folder = tmp_path / "cache" / "trace-index"
    index.save(folder)
    loaded = TraceIndex.load(folder)
    loaded.validate()
    # Mapped where larger than IN_MEMORY_BYTES, read into memory (safe from a truncation
    # under the server) where not.
    for name, array in loaded.arrays.items():
        assert isinstance(array, np.memmap) == (index.arrays[name].nbytes > IN_MEMORY_BYTES), name
    assert loaded.tracks == index.tracks and loaded.names == index.names and loaded.sections == index.sections
    for name, array in index.arrays.items():
        assert np.array_equal(loaded.arrays[name], array), name
    assert loaded.matches(profile)
    for args in ((0, index.span_ps, 1600), (1000, 90_000, 33)):
        assert query(loaded, *args) == query(index, *args)
        assert query(loaded, *args, name_filter="a") == query(index, *args, name_filter="a")
    # Saving again replaces the folder whole; nothing is left beside it.
    other = build_index(random_profile(22))
    other.save(folder)
    assert TraceIndex.load(folder).event_count == other.event_count
    assert sorted(p.name for p in folder.parent.iterdir()) == ["trace-index"]
    assert not TraceIndex.load(folder).matches(profile)


def test_load_refuses_a_broken_folder(tmp_path, index):
    with pytest.raises(IndexFormatError, match="no manifest"):
        TraceIndex.load(tmp_path / "missing")
    folder = tmp_path / "index"
    index.save(folder)
    (folder / "key.npy").write_bytes(b"\x93NUMPY broken")
    with pytest.raises(IndexFormatError, match="key"):
        TraceIndex.load(folder)
    index.save(folder)
    np.save(folder / "duration_ps.npy", np.asarray(index.duration_ps)[::-1].copy())
    with pytest.raises(ValueError, match=r"overlap|busy"):
        TraceIndex.load(folder).validate()


def test_load_checks_each_array_file_and_maps_only_large_ones(tmp_path):
    """The storage's own array reader: a 2 MiB array is mapped, a 1 KiB one read; a file
    shorter than its header says, a FIFO or a link is refused (a cache file is read only as a plain file of its header's size)."""

    large, small = np.arange(IN_MEMORY_BYTES // 8 * 2, dtype=np.int64), np.arange(128, dtype=np.int32)  # 2 MiB, 512 bytes
    for name, array in (("large", large), ("small", small)):
        np.save(tmp_path / f"{name}.npy", array)
    assert isinstance(load_array(tmp_path / "large.npy"), np.memmap) and np.array_equal(load_array(tmp_path / "large.npy"), large)
    loaded = load_array(tmp_path / "small.npy")
    assert not isinstance(loaded, np.memmap) and np.array_equal(loaded, small)
    with open(tmp_path / "small.npy", "r+b") as stream:  # 128-byte header + 512 bytes, less 1
        stream.truncate(128 + 511)
    with pytest.raises(ValueError, match="639 bytes, expected 640"):
        load_array(tmp_path / "small.npy")
    os.mkfifo(tmp_path / "fifo.npy")
    with pytest.raises(OSError, match="not a regular file"):
        load_array(tmp_path / "fifo.npy")  # at once: a FIFO is never waited on
    (tmp_path / "link.npy").symlink_to(tmp_path / "large.npy")
    with pytest.raises(OSError):
        load_array(tmp_path / "link.npy")  # ELOOP: cache files are never read through a link


def test_summarize_a_selection(profile, index):
    span = profile.span_ps
    start, end = span // 4, span // 2
    want = Counter()
    for plane in profile.planes:
        events = plane.events
        for row in range(len(events)):
            a, b = int(events.start_ps[row]), int(events.start_ps[row] + events.duration_ps[row])
            if overlaps(a, b, start, end):
                want[plane.event_name(row)] += 1
    steps = find_steps(profile)
    for number, a, b in zip(steps.number.tolist(), steps.start_ps.tolist(), steps.end_ps.tolist()):
        if overlaps(a, b, start, end):
            want[f"Step {number}"] += 1
    summary = summarize(index, start, end)
    assert summary["events"] == sum(want.values())
    assert {entry["name"]: entry["count"] for entry in summary["names"]} == dict(want)
    totals = [entry["total_ps"] for entry in summary["names"]]
    assert totals == sorted(totals, reverse=True)
    assert all(0 <= e["selected_ps"] <= min(e["total_ps"], (end - start) * e["count"]) for e in summary["names"])


# --- a real GPU trace: a launch, its kernel, their flow ---------------------------------------


@pytest.fixture(scope="module")
def gpu_trace():
    path = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")
    profile = load(path)
    return read_json(path), profile, build_index(profile)


def first_launch(document):
    """The earliest kernel with a runtime call of the same correlation id, from the JSON."""
    events = [e for e in document["traceEvents"] if e.get("ph") == "X"]
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    kernels = sorted((e for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in runtime), key=lambda e: e["ts"])
    kernel = kernels[0]
    return runtime[kernel["args"]["correlation"]], kernel


def ref_with_correlation(profile, device: bool, correlation: int):
    for plane_index, plane in enumerate(profile.planes):
        if plane.is_device == device:
            rows = np.flatnonzero(plane.events.correlation_id == correlation)
            if len(rows):
                return plane_index, int(rows[0])
    raise AssertionError(correlation)


def test_details_of_a_kernel(gpu_trace):
    document, profile, index = gpu_trace
    _, kernel = first_launch(document)
    ref = ref_with_correlation(profile, True, kernel["args"]["correlation"])
    record = details(profile, ref, index)
    assert record["name"] == kernel["name"]
    assert abs(record["duration_ps"] - kernel["dur"] * 1e6) <= 1000
    assert record["ids"]["correlation_id"] == kernel["args"]["correlation"]
    stats = {s["name"]: s["value"] for s in record["stats"]}
    assert stats["correlation_id"] == kernel["args"]["correlation"]
    assert record["plane"].startswith("/device:GPU:")
    assert index.tracks[record["track"]].section == record["plane"]
    assert record["end_ps"] == record["start_ps"] + record["duration_ps"]


@pytest.mark.parametrize("select", ["launch", "kernel"])
def test_flow_from_launch_to_kernel_either_way(gpu_trace, select):
    document, profile, index = gpu_trace
    launch, kernel = first_launch(document)
    correlation = kernel["args"]["correlation"]
    launch_ref = ref_with_correlation(profile, False, correlation)
    kernel_ref = ref_with_correlation(profile, True, correlation)
    arrows = flows_for(profile, launch_ref if select == "launch" else kernel_ref, index)
    linking = [a for a in arrows if a["from"]["ref"] == list(launch_ref) and a["to"]["ref"] == list(kernel_ref)]
    assert len(linking) == 1
    arrow = linking[0]
    assert arrow["from"]["name"] == launch["name"] and arrow["to"]["name"] == kernel["name"]
    assert abs((arrow["to"]["start_ps"] - arrow["from"]["start_ps"]) - (kernel["ts"] - launch["ts"]) * 1e6) <= 1000
    assert index.tracks[arrow["to"]["track"]].section.startswith("/device:GPU:")
    assert index.tracks[arrow["from"]["track"]].section == "/host:CPU"
    # The endpoints' ids are the ones queries return for these events.
    assert index.ref(arrow["to"]["id"]) == kernel_ref


def test_the_steps_track_is_on_top_with_the_profiler_steps(gpu_trace):
    document, profile, index = gpu_trace
    numbers = sorted(
        int(re.match(r"ProfilerStep#(\d+)", e["name"]).group(1))
        for e in document["traceEvents"]
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    )
    top = index.tracks[0]
    assert (top.section, top.name, top.plane, top.event_count) == ("Steps", "Steps", STEPS_PLANE, len(set(numbers)))
    record = details(profile, (STEPS_PLANE, 0), index)
    assert record["name"] == f"Step {numbers[0]}" and record["track"] == 0
    data = decode(query(index, 0, index.span_ps, 1000, tracks=[0]))
    names = sorted(data["header"]["names"].values())
    assert names == sorted(f"Step {n}" for n in set(numbers))


def test_sections_put_devices_first_by_ordinal_then_hosts():
    profile = random_profile(2)  # planes GPU:1, CPU, GPU:0, python-tracer, metadata
    index = build_index(profile)
    assert index.sections == ["Steps", "/device:GPU:0", "/device:GPU:1", "/host:CPU", "/host:python-tracer"]
    for track in index.tracks[1:]:
        plane = profile.planes[track.plane]
        assert track.section == plane.name
        assert track.event_count == int(np.count_nonzero(plane.events.line == track.line))
        assert track.name == plane.lines[track.line].label


def test_details_refuses_a_bad_reference(gpu_trace):
    _, profile, _ = gpu_trace
    for ref in ((99, 0), (0, 10**9), ("x", 1), (STEPS_PLANE, 99)):
        with pytest.raises(ValueError):
            details(profile, ref)


def test_tpu_device_sections_come_before_the_host_threads():
    """XProf's order: on the TPU sample (4 chips and a host with many threads) the chips'
    sections come first (after Steps, where a profile has steps), by ordinal, then the host."""
    from stepscope.trace.readers import load
    from tests.support.traces import shared

    profile = load(shared("xplane/tpu_v_inference_4chips.xplane.pb"))
    chips = sorted((p.name for p in profile.planes if p.name.startswith("/device:TPU:")), key=lambda name: int(name.rsplit(":", 1)[1]))
    index = build_index(profile)
    assert len(chips) == 4
    planes = [section for section in index.sections if section != "Steps"]  # the Steps track is on top when there are steps
    assert planes[: len(chips)] == chips
    assert planes.index("/host:CPU") == len(chips)


def test_kineto_spans_have_no_section_and_every_real_thread_has_its_track():
    """Kineto's own spans (string pids: the profiler's window and two markers) are kept in
    the profile but get no section: the timeline's sections and tracks are the trace's
    real processes and threads, read here from the JSON with the standard library."""
    path = shared("kineto/alexnet_small.pt.trace.json.gz")
    raw = read_json(path)["traceEvents"]
    labels = {e["pid"]: e["args"]["labels"] for e in raw if e.get("ph") == "M" and e.get("name") == "process_labels"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"].strip() for e in raw if e.get("ph") == "M" and e.get("name") == "thread_name"}
    counts = Counter((e["pid"], e["tid"]) for e in raw if e.get("ph") in ("X", "i") and isinstance(e["pid"], int))
    # pid 0 is labelled "GPU 0" (a device plane); the python process (labels "CPU") is the host.
    section = {pid: "/device:GPU:0" if labels[pid] == "GPU 0" else "/host:CPU" for pid, _ in counts}
    want = sorted((section[pid], threads[(pid, tid)], count) for (pid, tid), count in counts.items())
    assert len(want) == 4  # streams 7 and 20, "Device 0" (tid -1, cuda_sync) and the python thread

    profile = load(path)
    index = build_index(profile)
    index.validate()
    assert index.sections == ["/device:GPU:0", "/host:CPU"]
    assert sorted((t.section, t.name, t.event_count) for t in index.tracks) == want
    assert index.event_count == sum(counts.values())
    # The spans stay in the profile (exports and other tools still have them), unreachable here.
    spans = next(p for p, plane in enumerate(profile.planes) if plane.name == "/host:trace-spans")
    string_pid_events = [e for e in raw if e.get("ph") in ("X", "i") and isinstance(e["pid"], str)]
    assert len(profile.planes[spans].events) == len(string_pid_events) == 3
    assert index.id_of(spans, 0) is None
