"""The .pftrace writer, checked by reading its files with Perfetto's own protos
(tests/support/perfetto_trace.py) against the source files read independently (json and
gzip for Kineto, xplane_pb2 for XSpace)."""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

import stepscope
from stepscope.protos import xplane_pb2
from stepscope.trace.formats.perfetto.write import FLOW_CATEGORY_ARG, FLOW_CATEGORY_SHIFT
from tests.support.perfetto_trace import read_pftrace
from tests.support.traces import shared

KINETO_GPU = [
    "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz",
    "kineto/v100_resnet_ns_resolution.pt.trace.json.gz",
    "kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz",
    "kineto/mi250_rocm_toy_train.pt.trace.json.gz",
]
TPU = "xplane/tpu_v_inference_4chips.xplane.pb"


def _convert(source: Path, out: Path):
    stepscope.save(stepscope.load(source), out)
    return read_pftrace(out)


def _ns(base_ns: int, us: Decimal) -> int:
    """Epoch ns of a Kineto time: the header's base plus the microseconds, to the ns."""
    return base_ns + int((Decimal(us) * 1000).to_integral_value(ROUND_HALF_UP))


@pytest.mark.parametrize("name", KINETO_GPU, ids=lambda n: n.split("/")[1].split(".")[0])
def test_kineto_trace_as_pftrace(name: str, tmp_path: Path):
    with gzip.open(shared(name), "rt") as stream:
        source = json.load(stream, parse_float=Decimal)
    events = source["traceEvents"]
    base = int(source.get("baseTimeNanoseconds", 0))
    decoded = _convert(shared(name), tmp_path / "out.pftrace")
    assert decoded.unbalanced == 0

    # Every X event is one slice with its name and absolute begin and end, in ns.
    complete = [e for e in events if e.get("ph") == "X"]
    expected = Counter((e["name"], _ns(base, e["ts"]), _ns(base, e["ts"]) + _ns(0, e.get("dur", 0))) for e in complete)
    assert Counter((s.name, s.start_ns, s.end_ns) for s in decoded.slices) == expected
    instants = [e for e in events if e.get("ph") == "i"]
    assert Counter((s.name, s.start_ns) for s in decoded.instants) == Counter((e["name"], _ns(base, e["ts"])) for e in instants)

    # Flows: an arrow per flow end whose (category, id) has a start in the source; each id
    # leaves one event and ends at one, its category named on the source slice and coded
    # in the id's bits 48-55 (one code per category).
    starts = {(e.get("cat"), e["id"]) for e in events if e.get("ph") == "s"}
    expected_flows = Counter(e.get("cat") for e in events if e.get("ph") == "f" and (e.get("cat"), e["id"]) in starts)
    leaving = [(flow_id, s.args[FLOW_CATEGORY_ARG]) for s in decoded.slices + decoded.instants for flow_id in s.flow_ids]
    ending = [flow_id for s in decoded.slices + decoded.instants for flow_id in s.terminating_flow_ids]
    assert Counter(category for _, category in leaving) == expected_flows
    assert sorted(flow_id for flow_id, _ in leaving) == sorted(ending)
    assert len(set(ending)) == len(ending)
    codes = {category: {flow_id >> FLOW_CATEGORY_SHIFT for flow_id, c in leaving if c == category} for category in expected_flows}
    assert all(len(code) == 1 for code in codes.values())
    assert len({next(iter(code)) for code in codes.values()}) == len(codes)

    # Processes and threads: a device process per GPU that ran kernels, and each GPU stream
    # (thread_name metadata of the kernels' pid/tid) a thread of it.
    devices = {e["args"]["device"] for e in complete if e.get("cat") in ("kernel", "Kernel")}
    assert {f"/device:GPU:{device}" for device in devices} | {"/host:CPU"} <= set(decoded.processes.values())
    kernel_threads = {(e["pid"], e["tid"]) for e in complete if e.get("cat") in ("kernel", "Kernel")}
    stream_names = {e["args"]["name"].strip() for e in events if e.get("ph") == "M" and e["name"] == "thread_name" and (e["pid"], e["tid"]) in kernel_threads}
    assert stream_names <= set(decoded.threads.values())
    assert stream_names or "legacy" in name  # (the 2021 schema names no streams)


def test_kineto_memory_instants_as_counters(tmp_path: Path):
    """The 2021 schema's [memory] instants carry Bytes but no totals: one counter per
    device, the running sum of Bytes in time order."""
    name = "kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz"
    with gzip.open(shared(name), "rt") as stream:
        events = json.load(stream, parse_float=Decimal)["traceEvents"]
    decoded = _convert(shared(name), tmp_path / "out.pftrace")
    memory = [e for e in events if e.get("name") == "[memory]"]
    by_device: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in memory:
        by_device[(e["args"]["Device Type"], e["args"]["Device Id"])].append((_ns(0, e["ts"]), e["args"]["Bytes"]))
    gpu0 = sorted(by_device[(1, 0)], key=lambda item: item[0])
    running, expected = 0, []
    for time_ns, size in gpu0:
        running += size
        expected.append((time_ns, float(running)))
    track = "Memory (GPU:0) Allocated (sum of Bytes since the profile start)"
    assert sorted(decoded.counters[track]) == sorted(expected)
    assert sum(len(samples) for samples in decoded.counters.values()) == len(memory)
    # The [memory] events stay instants.
    assert sum(1 for s in decoded.instants if s.name == "[memory]") == len(memory)


def test_tpu_xspace_as_pftrace(tmp_path: Path):
    space = xplane_pb2.XSpace.FromString(shared(TPU).read_bytes())
    decoded = _convert(shared(TPU), tmp_path / "out.pftrace")
    assert decoded.unbalanced == 0
    environment = next(p for p in space.planes if p.name == "Task Environment")
    stat_names = {key: meta.name for key, meta in environment.stat_metadata.items()}
    start_ns = next(s.uint64_value for s in environment.stats if stat_names[s.metadata_id] == "profile_start_time")

    expected = Counter()
    thread_names = set()
    allocated: list[float] = []
    for plane in space.planes:
        meta_names = {key: meta.name for key, meta in plane.event_metadata.items()}
        plane_stats = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            if line.events:
                thread_names.add(line.name)
            for event in line.events:
                # Line times are session times; the session started at profile_start_time.
                begin_ps = line.timestamp_ns * 1000 + event.offset_ps
                name = meta_names[event.metadata_id]
                expected[(name, start_ns + begin_ps // 1000, start_ns + (begin_ps + event.duration_ps) // 1000)] += 1
                if name in ("MemoryAllocation", "MemoryDeallocation"):
                    allocated += [float(s.uint64_value or s.int64_value) for s in event.stats if plane_stats[s.metadata_id] == "bytes_allocated"]
    planes_with_events = {p.name for p in space.planes if any(line.events for line in p.lines)}
    assert planes_with_events <= set(decoded.processes.values())
    assert thread_names <= set(decoded.threads.values())
    # XSpace events are all slices (XSpace has no instants), at their absolute ns. The end
    # is the floor of the end's ns; the writer floors start and duration apart, so an end
    # may be 1 ns earlier where both have sub-ns digits.
    begins: Counter = Counter()
    for (name, begin, _), count in expected.items():
        begins[(name, begin)] += count
    assert Counter((s.name, s.start_ns) for s in decoded.slices) == begins
    ends = sorted(s.end_ns for s in decoded.slices)
    wanted_ends = sorted(end for (_, _, end), count in expected.items() for _ in range(count))
    assert all(0 <= w - g <= 1 for g, w in zip(ends, wanted_ends))
    assert not decoded.instants
    samples = [value for track, values in decoded.counters.items() if track.endswith("bytes_allocated") for _, value in values]
    assert sorted(samples) == sorted(allocated) and len(allocated) == 906


def _chrome(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "odd.trace.json"
    meta = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "app"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "worker"}},
    ]
    path.write_text(json.dumps({"traceEvents": meta + events}))
    return path


T0 = 1_700_000_000_000_000  # us: an epoch time, so the file's times are absolute


def test_odd_shapes_on_one_thread(tmp_path: Path):
    """Nested slices with an equal start, a zero-length slice, two slices that overlap
    without nesting (the second goes on a track of its own), an instant and a counter."""
    events = [
        {"ph": "X", "name": "outer", "pid": 1, "tid": 7, "ts": T0, "dur": 10},
        {"ph": "X", "name": "inner", "pid": 1, "tid": 7, "ts": T0, "dur": 5},
        {"ph": "X", "name": "zero", "pid": 1, "tid": 7, "ts": T0 + 20, "dur": 0},
        {"ph": "X", "name": "first", "pid": 1, "tid": 7, "ts": T0 + 30, "dur": 10},
        {"ph": "X", "name": "second", "pid": 1, "tid": 7, "ts": T0 + 35, "dur": 10},
        {"ph": "i", "name": "mark", "pid": 1, "tid": 7, "ts": T0 + 50, "s": "t"},
        {"ph": "C", "name": "queue", "pid": 1, "ts": T0 + 60, "args": {"depth": 3}},
    ]
    decoded = _convert(_chrome(tmp_path, events), tmp_path / "odd.pftrace")
    assert decoded.unbalanced == 0
    base = T0 * 1000
    by_name = {s.name: s for s in decoded.slices}
    assert {name: (s.start_ns - base, s.end_ns - base) for name, s in by_name.items()} == {
        "outer": (0, 10_000),
        "inner": (0, 5_000),
        "zero": (20_000, 20_000),
        "first": (30_000, 40_000),
        "second": (35_000, 45_000),
    }
    worker = by_name["outer"].track
    assert decoded.threads[worker] == "app (1) / worker"  # a thread of a process that is not a plane
    assert {by_name[n].track for n in ("inner", "zero", "first")} == {worker}
    assert decoded.threads[by_name["second"].track] == "app (1) / worker (overlapping 2)"
    assert [(s.name, s.start_ns - base, s.track) for s in decoded.instants] == [("mark", 50_000, worker)]
    assert decoded.counters == {"queue depth": [(base + 60_000, 3.0)]}


def test_convert_command_writes_pftrace(tmp_path: Path):
    from stepscope.cli import main

    out = tmp_path / "alexnet.pftrace"
    assert main(["convert", str(shared("kineto/alexnet_small.pt.trace.json.gz")), str(out)]) == 0
    with gzip.open(shared("kineto/alexnet_small.pt.trace.json.gz"), "rt") as stream:
        complete = sum(1 for e in json.load(stream)["traceEvents"] if e.get("ph") == "X")
    assert len(read_pftrace(out).slices) == complete  # 868 X events


def test_pftrace_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from stepscope.trace.formats.perfetto import write

    out = tmp_path / "out.pftrace"
    out.write_bytes(b"previous")

    def broken(*args, **kwargs):
        yield b"\n"
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(write, "iter_chunks", broken)
    with pytest.raises(RuntimeError):
        stepscope.save(stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz")), out)
    assert out.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.pftrace"]
