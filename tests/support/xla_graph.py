"""What the graph_viewer tests compare against: the neighbourhood of an HLO instruction by
a plain breadth-first walk over the HloProto read from the file (``xla_memory``'s
``file_programs``), and XProf's own graph viewer (its DOT output) on a copy of the file."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from stepscope.protos import hlo_pb2

_EDGE = re.compile(r'tooltip="(?P<source>[^"]*) -> (?P<target>[^"]*)"')


def plain_neighbourhood(proto: hlo_pb2.HloProto, name: str, hops: int) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """(instruction name -> hops, the operand -> user name pairs among them): every
    instruction of ``name``'s computation whose shortest undirected operand/user path to
    it is at most ``hops``, found by repeating one expansion ``hops`` times."""
    computation = next(c for c in proto.hlo_module.computations if any(i.name == name for i in c.instructions))
    names = {i.id: i.name for i in computation.instructions}
    pairs = {(names[o], i.name) for i in computation.instructions for o in i.operand_ids if o in names}
    distance = {name: 0}
    for step in range(1, hops + 1):
        frontier = [n for n, d in distance.items() if d == step - 1]
        for a, b in pairs:
            for here, there in ((a, b), (b, a)):
                if here in frontier and there not in distance:
                    distance[there] = step
    return distance, {(a, b) for a, b in pairs if a in distance and b in distance}


def fusion_of(proto: hlo_pb2.HloProto) -> dict[str, str]:
    """Each fused instruction's name -> the name of the fusion instruction that calls its
    computation (XProf draws a fusion as a cluster of its fused instructions)."""
    computations = {c.id: c for c in proto.hlo_module.computations}
    out = {}
    for c in proto.hlo_module.computations:
        for i in c.instructions:
            if i.opcode == "fusion":
                for called in i.called_computation_ids:
                    for inner in computations[called].instructions:
                        out[inner.name] = i.name
    return out


def xprof_edges(path: Path, label: str, node: str, width: int) -> set[tuple[str, str]]:
    """The (source, target) instruction names of the edges XProf's graph viewer draws for
    ``node`` at ``graph_width`` ``width`` (its DOT names each edge in a tooltip)."""
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GLOG_minloglevel", "3")
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        raw_to_tool_data.xspace_to_tool_names([str(copy)])  # writes <label>.hlo_proto.pb
        options = {"node_name": node, "module_name": label, "graph_width": width, "type": "graph", "format": "dot", "show_metadata": 0, "merge_fusion": 0}
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], "graph_viewer", {"use_saved_result": False, "graph_viewer_options": options})
    text = data.decode() if isinstance(data, bytes) else str(data)
    return {(m["source"], m["target"]) for m in _EDGE.finditer(text)}
