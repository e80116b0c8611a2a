"""The XLA ops of an ``.xplane.pb`` summed per HLO op, read here with the generated protobuf
classes (not stepscope's reader), and XProf's own hlo_stats / roofline_model tables of the
same file: the two references the XLA tools' tests compare with.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepscope.protos import xplane_pb2


@dataclass
class HloOpSums:
    """One HLO op (program id, name) on the planes summed."""

    occurrences: int = 0
    time_ps: int = 0
    flops: float | None = None  # per execution x executions
    bytes_accessed: float | None = None
    planes: set[str] = field(default_factory=set)


def _value(stat: Any, stat_names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    return None if kind is None else getattr(stat, kind)


def hlo_op_sums(path: Path, plane: str | None = None) -> dict[tuple[str, str], HloOpSums]:
    """(program id, HLO op name) -> sums over the file's XLA ops (one plane's, or all).

    XLA ops: the events of a device plane's ``XLA Ops`` line (not its ``Async XLA Ops``
    line, whose copy spans name the op that waits for them in ``hlo_op``), and host events
    carrying an ``hlo_op`` stat (XLA on CPU). An op's name is its metadata's display name, else its ``hlo_op``; its
    time the ``device_duration_ps`` stat, else its duration; flops and bytes accessed are
    its metadata's stats (per execution).
    """
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    sums: dict[tuple[str, str], HloOpSums] = defaultdict(HloOpSums)
    for xplane in space.planes:
        if plane is not None and xplane.name != plane:
            continue
        stat_names = {key: meta.name for key, meta in xplane.stat_metadata.items()}
        for line in xplane.lines:
            for event in line.events:
                meta = xplane.event_metadata[event.metadata_id]
                meta_stats = {stat_names.get(s.metadata_id, ""): _value(s, stat_names) for s in meta.stats}
                own = {stat_names.get(s.metadata_id, ""): _value(s, stat_names) for s in event.stats}
                on_device = xplane.name.startswith("/device:")
                if (on_device and line.name != "XLA Ops") or (not on_device and "hlo_op" not in own):
                    continue
                name = meta.display_name or str(own.get("hlo_op") or meta.name)
                program_id = str(own.get("program_id", meta_stats.get("program_id", "")))
                entry = sums[(program_id, name)]
                entry.occurrences += 1
                entry.time_ps += int(own.get("device_duration_ps", event.duration_ps))
                entry.planes.add(xplane.name)
                for key in ("flops", "bytes_accessed"):
                    if key in meta_stats:
                        setattr(entry, key, (getattr(entry, key) or 0.0) + float(meta_stats[key]))
    return dict(sums)


def plane_stats(path: Path) -> dict[str, dict[str, Any]]:
    """Plane name -> its plane-level stats."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    out = {}
    for xplane in space.planes:
        stat_names = {key: meta.name for key, meta in xplane.stat_metadata.items()}
        out[xplane.name] = {stat_names.get(s.metadata_id, ""): _value(s, stat_names) for s in xplane.stats}
    return out


@dataclass
class XprofTable:
    rows: list[dict[str, Any]]
    properties: dict[str, str]


def xprof_tables(path: Path, tool: str) -> list[XprofTable]:
    """XProf's converter on a copy of ``path`` (it writes caches beside its input), every
    DataTable it returns (one for hlo_stats; the roofline's rows and its diagnostics)."""
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GLOG_minloglevel", "3")
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, {"use_saved_result": False})
    document = json.loads(data)
    tables = document if isinstance(document, list) else [document]
    out = []
    for table in tables:
        columns = [column["id"] for column in table.get("cols") or []]
        rows = [dict(zip(columns, (cell.get("v") for cell in row["c"]))) for row in table.get("rows") or []]
        out.append(XprofTable(rows, dict(table.get("p") or {})))
    return out


def device_clock_spans(path: Path) -> dict[str, int]:
    """Device plane -> ps from its first XLA op's start to its last op's end by the device's
    clock (``device_offset_ps`` + ``device_duration_ps``): XProf's per-core total time,
    idle between ops included."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    spans = {}
    for xplane in space.planes:
        stat_names = {key: meta.name for key, meta in xplane.stat_metadata.items()}
        for line in xplane.lines:
            if not xplane.name.startswith("/device:") or line.name != "XLA Ops" or not line.events:
                continue
            starts, ends = [], []
            for event in line.events:
                own = {stat_names.get(s.metadata_id, ""): _value(s, stat_names) for s in event.stats}
                starts.append(int(own["device_offset_ps"]))
                ends.append(int(own["device_offset_ps"]) + int(own["device_duration_ps"]))
            spans[xplane.name] = max(ends) - min(starts)
    return spans


def xprof_op_profile(path: Path, device: str | None = None) -> dict[str, Any]:
    """XProf's op_profile document (``byProgram``, ``byProgramExcludeIdle``) of ``path``, or,
    with ``device``, of a copy holding only that one device plane (and the host planes):
    XProf's op profile always adds up every device of the file, so this is how its answer
    for one chip is had."""
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GLOG_minloglevel", "3")
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    if device is not None:
        kept = [p for p in space.planes if not p.name.startswith("/device:") or p.name == device]
        assert any(p.name == device for p in kept), device
        del space.planes[:]
        space.planes.extend(kept)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_bytes(space.SerializeToString())
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], "op_profile", {"use_saved_result": False})
    document: dict[str, Any] = json.loads(data)
    return document
