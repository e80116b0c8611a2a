"""Every real Kineto trace in ../shared/traces loads, validates and keeps its numbers exactly.

The reference numbers are computed here from the JSON itself, read by the standard
library with decimal numbers (``parse_float=Decimal``), so no float rounding and none of
stepscope's code is involved.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.trace import names
from stepscope.trace.summary import device_names
from tests.support.traces import KINETO_TRACES, shared

GPU_LABEL = re.compile(r"^GPU (\d+)$")
DEVICE_CATEGORIES = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "gpu_user_annotation", "cuda_sync"}


def exact_json(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return json.load(stream, parse_float=Decimal)


def reference_plane(event: dict, labels: dict, device_pids: set) -> str:
    """The plane a Kineto event belongs to, by the format's own conventions."""
    pid = event["pid"]
    if isinstance(pid, str) and not pid.isdigit():
        return names.TRACE_SPANS_PLANE
    label = GPU_LABEL.match(labels.get(pid, ""))
    if label:
        return f"/device:GPU:{label.group(1)}"
    if pid in device_pids:
        return f"/device:GPU:{pid}"
    return names.HOST_PLANE


def reference_events(trace: dict) -> Counter:
    """Multiset of (plane, name, start ns, duration ns) from the JSON text.

    Start is ``baseTimeNanoseconds`` (0 when absent: then ts is epoch us) + ts * 1000.
    """
    labels = {e["pid"]: e["args"]["labels"] for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_labels"}
    device_pids = {e["pid"] for e in trace["traceEvents"] if e.get("cat") in DEVICE_CATEGORIES}
    base = trace.get("baseTimeNanoseconds", 0)
    result = Counter()
    for event in trace["traceEvents"]:
        if event.get("ph") not in ("X", "i"):
            continue
        start = base + int(Decimal(event["ts"]) * 1000)
        duration = int(Decimal(event.get("dur", 0)) * 1000) if event["ph"] == "X" else 0
        result[(reference_plane(event, labels, device_pids), event["name"], start, duration)] += 1
    return result


def loaded_events(profile: stepscope.Profile) -> Counter:
    result = Counter()
    for plane in profile.planes:
        events = plane.events
        starts = (profile.start_ns + events.start_ps // 1000).tolist()
        durations = (events.duration_ps // 1000).tolist()
        for row, (start, duration) in enumerate(zip(starts, durations)):
            result[(plane.name, plane.event_name(row), start, duration)] += 1
    return result


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_every_event_keeps_its_plane_name_and_exact_times(path: Path):
    profile = stepscope.load(path)
    profile.validate()
    assert profile.format == "kineto"
    assert loaded_events(profile) == reference_events(exact_json(path))
    # Kineto times are whole nanoseconds: nothing below the ns digit is invented.
    for plane in profile.planes:
        assert not np.any(plane.events.start_ps % 1000)
        assert not np.any(plane.events.duration_ps % 1000)


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_launch_flows_join_runtime_calls_to_their_device_work(path: Path):
    """Each ac2g / 2021 "async" arrow goes from a host runtime call to the device activity
    with the same correlation id; their number is the number of device-side flow ends
    whose id has a host-side flow start."""
    trace = exact_json(path)
    launch_cats = {"ac2g", "async"}
    starts = {e["id"] for e in trace["traceEvents"] if e.get("ph") == "s" and e.get("cat") in launch_cats}
    device_pids = {e["pid"] for e in trace["traceEvents"] if e.get("cat") in DEVICE_CATEGORIES}
    expected = sum(1 for e in trace["traceEvents"] if e.get("ph") == "f" and e.get("cat") in launch_cats and e["pid"] in device_pids and e["id"] in starts)
    profile = stepscope.load(path)
    flows = profile.flows
    launch = [i for i in range(len(flows)) if flows.categories[int(flows.category[i])] in launch_cats]
    assert len(launch) == expected
    for index in launch:
        source = profile.planes[int(flows.src_plane[index])]
        target = profile.planes[int(flows.dst_plane[index])]
        assert source.name == names.HOST_PLANE and target.is_device
        source_row, target_row = int(flows.src_event[index]), int(flows.dst_event[index])
        assert source.events.correlation_id[source_row] == flows.flow_id[index]
        assert target.events.correlation_id[target_row] == flows.flow_id[index]


def test_device_planes_streams_and_device_names():
    profile = stepscope.load(shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"))
    # Device events sit on pid 0 (labelled "GPU 0"), streams 7 and 40 (thread_name metadata).
    gpu = profile.plane("/device:GPU:0")
    assert {line.id for line in gpu.lines} == {7, 40}
    assert device_names(profile) == ["/device:GPU:0 (NVIDIA A100-PG509-200)"]
    vendor = {stat.name: stat.value for stat in gpu.plane_stats}
    # deviceProperties[0]: numSms 108, totalGlobalMem 42297524224, compute capability 8.0.
    assert vendor == {
        names.DEVICE_VENDOR: "Nvidia",
        names.DEV_CAP_CORE_COUNT: 108,
        names.DEV_CAP_MEMORY_SIZE: 42297524224,
        names.DEV_CAP_COMPUTE_CAP_MAJOR: 8,
        names.DEV_CAP_COMPUTE_CAP_MINOR: 0,
    }
    assert profile.info["distributedInfo"]["rank"] == 0


def test_kernel_and_copy_stats_use_xspace_names():
    path = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")
    trace = exact_json(path)
    kernel = next(e for e in trace["traceEvents"] if e.get("cat") == "kernel")
    memcpy = next(e for e in trace["traceEvents"] if e.get("cat") == "gpu_memcpy")
    profile = stepscope.load(path)
    gpu = profile.plane("/device:GPU:0")
    base = trace["baseTimeNanoseconds"]

    def row_of(event: dict) -> int:
        start_ps = (base + int(Decimal(event["ts"]) * 1000) - profile.start_ns) * 1000
        rows = [r for r in np.flatnonzero(gpu.events.start_ps == start_ps).tolist() if gpu.event_name(r) == event["name"]]
        assert len(rows) == 1
        return rows[0]

    stats = {stat.name: stat.value for stat in gpu.event_stats(row_of(kernel))}
    args = kernel["args"]
    grid = ",".join(str(v) for v in args["grid"])
    block = ",".join(str(v) for v in args["block"])
    assert stats[names.KERNEL_DETAILS] == (
        f"regs:{args['registers per thread']} static_shared:{args['shared memory']} dynamic_shared:0 "
        f"grid:{grid} block:{block} occ_pct:{args['est. achieved occupancy %']}"
    )
    assert stats[names.CORRELATION_ID] == args["correlation"]
    assert stats[names.EXTERNAL_ID] == args["External id"]
    assert stats[names.DEVICE_ID] == args["device"] and stats[names.STREAM] == args["stream"]

    copy_stats = {stat.name: stat.value for stat in gpu.event_stats(row_of(memcpy))}
    kind = memcpy["name"].split()[1]  # "Memcpy DtoD (Device -> Device)" -> "DtoD"
    assert copy_stats[names.MEMCPY_DETAILS] == f"kind:{kind} size:{memcpy['args']['bytes']}"


def test_2021_schema_string_tids_categories_and_memory_events():
    path = shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz")
    trace = exact_json(path)
    events = trace["traceEvents"]
    profile = stepscope.load(path)
    gpu = profile.plane("/device:GPU:0")
    # tid "stream 7" is stream 7.
    assert [line.id for line in gpu.lines] == [7]
    # Host threads are written both as "5555" and 5555: one line per thread.
    host_tids = {int(e["tid"]) for e in events if e.get("ph") == "X" and e["pid"] == 5555}
    host = profile.plane(names.HOST_PLANE)
    assert sorted(line.id for line in host.lines) == sorted(host_tids)
    categories = Counter(host.metadata.categories[m] for m in host.events.metadata_id.tolist())
    assert categories["Operator"] == sum(1 for e in events if e.get("cat") == "Operator")
    assert categories["Runtime"] == sum(1 for e in events if e.get("cat") == "Runtime")
    memory = [e for e in events if e.get("name") == names.KINETO_MEMORY_EVENT]
    rows = [r for r in range(len(host.events)) if host.event_name(r) == names.KINETO_MEMORY_EVENT]
    assert len(rows) == len(memory)
    total = sum(int({s.name: s.value for s in host.event_stats(r)}[names.ALLOCATION_BYTES]) for r in rows)
    assert total == sum(e["args"]["Bytes"] for e in memory)
    # The 2021 schema spells "external id" in lower case; it lands in the same column.
    kernels = [e for e in events if e.get("cat") == "Kernel"]
    assert sorted(gpu.events.external_id.tolist()) == sorted(
        e["args"]["external id"] for e in kernels + [e for e in events if e.get("cat") in ("Memcpy", "Memset")]
    )


def test_nanosecond_text_beyond_double_precision_is_kept_exactly():
    # ts values like 1712195495519689.047 us need 19 significant digits; a double keeps
    # ~16, so a float parse would move events by up to 125 ns. The first X event:
    path = shared("kineto/v100_resnet_ns_resolution.pt.trace.json.gz")
    trace = exact_json(path)
    first = next(e for e in trace["traceEvents"] if e.get("ph") == "X" and e["cat"] == "cpu_op")
    expected_ns = int(Decimal(first["ts"]) * 1000)
    assert expected_ns % 1000 != 0  # the file really has sub-microsecond digits here
    profile = stepscope.load(path)
    host = profile.plane(names.HOST_PLANE)
    starts = profile.start_ns + host.events.start_ps // 1000
    rows = [r for r in np.flatnonzero(starts == expected_ns).tolist() if host.event_name(r) == first["name"]]
    assert len(rows) == 1


def _details_by_hand(args: dict) -> str:
    def number(value) -> int:
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    text = (
        f"regs:{number(args.get('registers per thread'))} static_shared:{number(args.get('shared memory'))} dynamic_shared:0 "
        f"grid:{','.join(str(number(v)) for v in args['grid'])} block:{','.join(str(number(v)) for v in args['block'])}"
    )
    occupancy = args.get("est. achieved occupancy %")
    return text + (f" occ_pct:{occupancy}" if isinstance(occupancy, (int, float)) else "")


def test_every_kernel_details_text_matches_its_args():
    """Details texts are kept per launch shape (kernels of one shape repeat by the thousand):
    every kernel of a real trace still gets the text of its own args, in JSON order."""
    path = shared("kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz")
    kernels = [e for e in exact_json(path)["traceEvents"] if e.get("cat") in names.KINETO_KERNEL_CATEGORIES and e.get("ph") == "X"]
    profile = stepscope.load(path)
    texts = []
    for plane in profile.planes:
        if plane.name.startswith(names.GPU_PLANE_PREFIX):
            meta = plane.metadata
            for row in range(len(plane.events)):
                kind = int(plane.events.metadata_id[row])
                if meta.categories[kind] in names.KINETO_KERNEL_CATEGORIES:
                    texts.append(plane.stats.value(row, names.KERNEL_DETAILS, meta.names[kind], meta.categories[kind]))
    assert len(texts) == len(kernels) > 1000
    assert Counter(texts) == Counter(_details_by_hand(e["args"]) for e in kernels)


def test_look_alike_launch_args_keep_their_own_details():
    """1, 1.0 and true are one dict key but not one text: 1.0 occupancy prints as 1.0, a
    boolean register count counts as 0."""
    from stepscope.trace.formats.chrome.kineto import _details

    shapes = [
        {"grid": [1, 1, 1], "block": [32, 1, 1], "registers per thread": 1, "shared memory": 0, "est. achieved occupancy %": 1},
        {"grid": [1, 1, 1], "block": [32, 1, 1], "registers per thread": True, "shared memory": 0, "est. achieved occupancy %": 1.0},
        {"grid": [True, 1, 1], "block": [32, 1, 1], "registers per thread": 1.0, "shared memory": 0.0, "est. achieved occupancy %": True},
        {"grid": [1, 1, 1], "block": [32, 1, 1], "registers per thread": 1, "shared memory": [0], "est. achieved occupancy %": None},
    ]
    for _ in range(2):  # the second round reads what the first one kept
        assert [_details(args, "k", "kernel") for args in shapes] == [
            (names.KERNEL_DETAILS, "regs:1 static_shared:0 dynamic_shared:0 grid:1,1,1 block:32,1,1 occ_pct:1"),
            (names.KERNEL_DETAILS, "regs:0 static_shared:0 dynamic_shared:0 grid:1,1,1 block:32,1,1 occ_pct:1.0"),
            (names.KERNEL_DETAILS, "regs:1 static_shared:0 dynamic_shared:0 grid:0,1,1 block:32,1,1 occ_pct:True"),
            (names.KERNEL_DETAILS, "regs:1 static_shared:0 dynamic_shared:0 grid:1,1,1 block:32,1,1"),
        ]


@pytest.mark.parametrize("path", KINETO_TRACES, ids=lambda p: p.name)
def test_every_complete_and_instant_event_is_an_event(path: Path):
    """The event count is the file's complete ("X") and instant ("i") events, counted here
    with the json module: flows ("s"/"f") become arrows and metadata ("M") names, not
    events. (HTA's parse_trace_dataframe keeps fewer rows, as bench/README's ingest entry
    says: the complete events less Kineto's whole-trace span, cat "Trace"; no instants,
    which on the V100 legacy trace are 10,982 "[memory]" records.)"""
    phases = Counter(event.get("ph") for event in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"])
    assert set(phases) <= {"X", "i", "s", "f", "M"}  # what these files hold: no other phase to count
    assert stepscope.load(path).event_count == phases["X"] + phases["i"]
