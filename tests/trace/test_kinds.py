"""The readers translate each format's terms into one vocabulary (``trace.kinds``): every
event type's kind, from a Kineto trace, a Chrome trace, a Kineto trace written as XSpace
and read back, and a real XSpace capture.

Expected kinds are read off each fixture's categories and names by hand, from libkineto's
activity types (``cpu_op`` a framework op, ``cuda_runtime`` a runtime call, ``kernel``...)
and TSL's event names, not from the readers' tables.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from stepscope.protos import xplane_pb2
from stepscope.trace import categories as categories_module
from stepscope.trace import names
from stepscope.trace.kinds import EventKind
from stepscope.trace.model import Profile
from stepscope.trace.readers import load
from stepscope.trace.writers import save
from tests.support.kineto_events import complete
from tests.support.traces import shared

K = EventKind
GPU = {"pid": 0, "tid": 7}

# (name, cat, where, the kind by hand). Today's categories, then the 2021 schema's.
KINETO_EVENTS = [
    ("aten::addmm", "cpu_op", {}, K.FRAMEWORK_OP),
    ("aten::relu", "Operator", {}, K.FRAMEWORK_OP),  # 2021
    ("forward", "user_annotation", {}, K.ANNOTATION),
    ("train.py(12): step", "python_function", {}, K.PYTHON),
    ("cudaLaunchKernel", "cuda_runtime", {}, K.RUNTIME),
    ("cuLaunchKernel", "cuda_driver", {}, K.RUNTIME),
    ("cudaMemcpyAsync", "Runtime", {}, K.RUNTIME),  # 2021
    ("Record Window End", "cpu_instant_event", {}, K.PROFILER),
    ("PyTorch Profiler (0)", "Trace", {}, K.PROFILER_SPAN),
    ("[memory]", "cpu_instant_event", {}, K.MEMORY_DELTA),  # its name says it, not its category
    ("volta_sgemm_128x64_nn", "kernel", GPU, K.KERNEL),
    ("void at::native::vectorized_elementwise_kernel", "Kernel", GPU, K.KERNEL),  # 2021
    ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", GPU, K.MEMCPY),
    ("Memset (Device)", "gpu_memset", GPU, K.MEMSET),
    ("forward", "gpu_user_annotation", GPU, K.DEVICE_ANNOTATION),
    ("Wait Event", "cuda_sync", GPU, K.STREAM_WAIT),
    ("Event Sync", "cuda_sync", GPU, K.SYNC),
    ("my_region", "some_new_category", {}, K.OTHER),
]


def _events(rows: list[tuple[str, str, dict[str, int], EventKind]]) -> list[dict[str, object]]:
    events = []
    for index, (name, category, where, _) in enumerate(rows):
        event = complete(name, category, 10 + 10 * index, 5, **({"device": 0, "stream": 7} if where else {}))
        event.update(where)
        events.append(event)
    return events


def _kinds(profile: Profile) -> dict[tuple[str, str], EventKind]:
    """(name, category) -> kind, over every plane."""
    found: dict[tuple[str, str], EventKind] = {}
    for plane in profile.planes:
        meta = plane.metadata
        for name, category, kind in zip(meta.names, meta.categories, meta.kinds.tolist()):
            found[(name, category)] = EventKind(kind)
    return found


def _expected(rows: list[tuple[str, str, dict[str, int], EventKind]]) -> dict[tuple[str, str], EventKind]:
    return {(name, category): kind for name, category, _, kind in rows}


def _kineto_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.pt.trace.json"
    document = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Tesla V100"}], "traceEvents": _events(KINETO_EVENTS)}
    path.write_text(json.dumps(document))
    return path


def test_a_kineto_trace_gets_its_categories_kinds(tmp_path):
    profile = load(_kineto_file(tmp_path))
    assert profile.format == "kineto"
    profile.validate()
    assert _kinds(profile) == _expected(KINETO_EVENTS)


def test_a_kineto_trace_written_as_xspace_keeps_its_kinds(tmp_path):
    written = tmp_path / "run.xplane.pb"
    save(load(_kineto_file(tmp_path)), written)
    again = load(written)
    assert again.format == "xspace"
    assert _kinds(again) == _expected(KINETO_EVENTS)


# A Chrome trace that is not Kineto's (no .pt. in its name, no Kineto header): the same
# trace-event categories mean the same, TSL's allocator events keep their kinds, and a
# name shaped like TensorFlow's "<op name>:<op type>" is no op outside an XSpace.
CHROME_EVENTS = [
    ("aten::mm", "cpu_op", {}, K.FRAMEWORK_OP),
    ("cudaLaunchKernel", "cuda_runtime", {}, K.RUNTIME),
    ("MemoryAllocation", "", {}, K.ALLOCATION),
    ("MemoryDeallocation", "", {}, K.DEALLOCATION),
    ("dense/MatMul:MatMul", "", {}, K.OTHER),
    ("Iterator::Root", "", {}, K.OTHER),
    ("load batch", "my_app", {}, K.OTHER),
]


def test_a_chrome_trace_gets_the_same_kinds(tmp_path):
    path = tmp_path / "app.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": _events(CHROME_EVENTS)}).encode()))
    profile = load(path)
    assert profile.format == "chrome"
    assert _kinds(profile) == _expected(CHROME_EVENTS)


def test_xspace_names_say_tensorflow_kinds(tmp_path):
    """In an XSpace (no categories), TensorFlow's executor ops, tf.data's stages and the
    allocators' events are told by their names (TSL's conventions)."""
    rows = [
        ("dense/MatMul:MatMul", K.NAMED_OP),
        ("Iterator::Root::ParallelMapV2", K.INPUT_STAGE),
        ("MemoryAllocation", K.ALLOCATION),
        ("MemoryDeallocation", K.DEALLOCATION),
        ("aten::addmm", K.OTHER),  # a name with no category says nothing in an XSpace
        ("EagerExecute", K.OTHER),
    ]
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    line = plane.lines.add(id=1, name="main", timestamp_ns=1_700_000_000_000_000_000)
    for index, (name, _) in enumerate(rows, start=1):
        plane.event_metadata[index].CopyFrom(xplane_pb2.XEventMetadata(id=index, name=name))
        line.events.add(metadata_id=index, offset_ps=index * 1000, duration_ps=500)
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    assert _kinds(load(path)) == {(name, ""): kind for name, kind in rows}


def test_a_real_xspace_capture_gets_its_allocator_kinds():
    """The TPU capture: its MemoryAllocation / MemoryDeallocation types (counted in the
    protobuf itself) are allocation records, and no event type has a Kineto kind."""
    path = shared("xplane/tpu_v_inference_4chips.xplane.pb")
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    by_name: dict[str, int] = {}
    for plane in space.planes:
        for meta in plane.event_metadata.values():
            by_name[meta.name] = by_name.get(meta.name, 0) + 1
    profile = load(path)
    kinds = [EventKind(kind) for plane in profile.planes for kind in plane.metadata.kinds.tolist()]
    assert kinds.count(K.ALLOCATION) == by_name.get("MemoryAllocation", 0) > 0
    assert kinds.count(K.DEALLOCATION) == by_name.get("MemoryDeallocation", 0)
    kineto_only = {K.FRAMEWORK_OP, K.RUNTIME, K.KERNEL, K.MEMCPY, K.MEMSET, K.PYTHON, K.MEMORY_DELTA}
    assert not kineto_only & set(kinds)


def test_every_kineto_category_the_readers_know_has_a_kind():
    """The device categories the Kineto dialect places on a GPU are all device kinds."""
    device = {K.KERNEL, K.MEMCPY, K.MEMSET, K.DEVICE_ANNOTATION, K.SYNC}
    assert {categories_module.CATEGORY_KINDS[category] for category in names.KINETO_DEVICE_CATEGORIES} == device
