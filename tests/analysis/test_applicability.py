"""Which tools have something to show (the registry's ``applies`` rules), per tool, on the
shared GPU and TPU profiles and a CPU capture. What each file holds is read here from the
file itself (its JSON, its XSpace protobuf), not through stepscope's reader."""

from __future__ import annotations

from pathlib import Path

import stepscope
from stepscope.analysis import applicability, specs
from stepscope.analysis.applicability import NO_GPU_KERNELS, NO_MEMORY_EVENTS, NO_ROOFLINE_OPS, NO_XLA_MODULES, NO_XLA_OPS, ONE_RANK
from stepscope.protos import xplane_pb2
from tests.support.traces import read_json, shared

GPU = "kineto/alexnet_small.pt.trace.json.gz"
TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
# The tools whose rule depends on what the profile holds; every other tool always applies.
RULED = {"kernel_stats", "memory_profile", "hlo_stats", "roofline_model", "graph_viewer", "memory_viewer"}


def reasons(profile: stepscope.Profile) -> dict[str, str]:
    found = {spec.name: spec.why_not(profile) for spec in specs()}
    found["distributed"] = applicability.several_devices(profile)
    return found


def always(expected: dict[str, str]) -> dict[str, str]:
    """``expected`` for the ruled tools and distributed, "" for every other tool."""
    return {**{spec.name: "" for spec in specs()}, **expected}


def test_every_rule_is_a_registry_field():
    assert {spec.name for spec in specs() if spec.applies is not None} == RULED


def test_a_gpu_trace():
    events = read_json(shared(GPU))["traceEvents"]
    kernels = [event for event in events if event.get("cat") == "kernel"]
    devices = {event["pid"] for event in kernels}
    memory = [event for event in events if event.get("name") == "[memory]"]
    # Kernels on one GPU (so one device: one rank), no memory events, no XLA at all.
    assert kernels and len(devices) == 1 and not memory
    assert not any("hlo" in str(event.get("args", {})).lower() for event in events)
    assert reasons(stepscope.load(shared(GPU))) == always(
        {
            "kernel_stats": "",
            "memory_profile": NO_MEMORY_EVENTS,
            "hlo_stats": NO_XLA_OPS,
            "roofline_model": "",  # its PyTorch ops' kernels, with FLOPs from their shapes
            "graph_viewer": NO_XLA_MODULES,
            "memory_viewer": NO_XLA_MODULES,
            "distributed": ONE_RANK,
        }
    )


def test_a_tpu_xspace():
    space = xplane_pb2.XSpace()
    space.ParseFromString(shared(TPU).read_bytes())
    planes = {plane.name: plane for plane in space.planes}
    chips = [name for name in planes if name.startswith("/device:TPU:")]
    assert len(chips) == 4 and not any(name.startswith("/device:GPU:") for name in planes)
    metadata = planes["/host:metadata"]
    stat_names = {meta.id: meta.name for meta in metadata.stat_metadata.values()}
    assert any(stat_names[stat.metadata_id] == "Hlo Proto" for meta in metadata.event_metadata.values() for stat in meta.stats)
    chip = planes[chips[0]]
    assert any(line.name == "XLA Ops" and len(line.events) for line in chip.lines)
    allocations = {meta.id for plane in space.planes for meta in plane.event_metadata.values() if meta.name == "MemoryAllocation"}
    assert allocations
    assert reasons(stepscope.load(shared(TPU))) == always(
        {
            "kernel_stats": NO_GPU_KERNELS,
            "memory_profile": "",
            "hlo_stats": "",
            "roofline_model": "",
            "graph_viewer": "",
            "memory_viewer": "",
            "distributed": "",  # four chips: the view compares them
        }
    )


def test_a_cpu_capture(cpu_capture_path: Path):
    space = xplane_pb2.XSpace()
    space.ParseFromString(cpu_capture_path.read_bytes())
    names = {plane.name for plane in space.planes}
    # No device plane, no metadata plane; no allocation events on any plane.
    assert not any(name.startswith("/device:") for name in names) and "/host:metadata" not in names
    assert not any(meta.name in ("MemoryAllocation", "MemoryDeallocation", "[memory]") for plane in space.planes for meta in plane.event_metadata.values())
    assert reasons(stepscope.load(cpu_capture_path)) == always(
        {
            "kernel_stats": NO_GPU_KERNELS,
            "memory_profile": NO_MEMORY_EVENTS,
            "hlo_stats": NO_XLA_OPS,
            "roofline_model": NO_ROOFLINE_OPS,
            "graph_viewer": NO_XLA_MODULES,
            "memory_viewer": NO_XLA_MODULES,
            "distributed": ONE_RANK,
        }
    )
