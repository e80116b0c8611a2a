"""graph_viewer on the shared TPU profile and on a real JAX CPU capture made here: every
instruction's neighbourhood against a plain breadth-first walk over the HloProto read
from the file (tests/support/xla_graph.py), the nodes' times against hlo_stats' rows, and
the edges against XProf's own graph viewer on the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.opstats import OpStats
from stepscope.errors import StepscopeError
from stepscope.render import render
from tests.support.traces import shared
from tests.support.xla_graph import fusion_of, plain_neighbourhood, xprof_edges
from tests.support.xla_memory import file_programs

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
PSUM = "jit__psum(9646411105960254074)"
F = "jit_f(12190760917235803885)"


@pytest.fixture(scope="module")
def tpu_path() -> Path:
    return shared(TPU)


def _stats(path: Path) -> OpStats:
    return OpStats(stepscope.load(path))


def _check_against_the_file(path: Path, hops_tried: tuple[int, ...] = (0, 1, 2, 3)) -> int:
    """Every instruction of every program, at each hops: nodes, distances and edges as the
    plain walk finds them; times as hlo_stats' rows. Returns the nodes checked."""
    stats = _stats(path)
    rows = {(r["program"], r["name"]): r for r in run_tool("hlo_stats", stats).to_json()["rows"]}
    checked = 0
    for label, proto in file_programs(path).items():
        program_self = sum(r["total_self_time_ps"] for (p, _), r in rows.items() if p == label)
        for computation in proto.hlo_module.computations:
            for instruction in computation.instructions:
                for hops in hops_tried:
                    result = run_tool("graph_viewer", stats, program=label, op=instruction.name, hops=hops).to_json()
                    distance, pairs = plain_neighbourhood(proto, instruction.name, hops)
                    assert {n["name"]: n["distance"] for n in result["nodes"]} == distance, (label, instruction.name, hops)
                    edges = [(e["source"], e["target"]) for e in result["edges"]]
                    assert len(edges) == len(set(edges)) and set(edges) == pairs, (label, instruction.name, hops)
                    assert result["computation"] == computation.name and result["program_self_time_ps"] == program_self
                    for node in result["nodes"]:
                        row = rows.get((label, node["name"]))
                        if row is None:
                            assert node["total_time_ps"] is None and node["self_time_percent"] is None
                        else:
                            assert node["total_time_ps"] == row["total_time_ps"] and node["total_self_time_ps"] == row["total_self_time_ps"]
                            assert node["occurrences"] == row["occurrences"] and node["flops"] == row["flops"]
                            assert node["self_time_percent"] == pytest.approx(100 * row["total_self_time_ps"] / program_self)
                        checked += 1
    return checked


def test_tpu_neighbourhoods_and_times_are_the_files(tpu_path: Path):
    assert _check_against_the_file(tpu_path) > 100


def test_tpu_defaults_and_fusion_nodes(tpu_path: Path):
    result = run_tool("graph_viewer", _stats(tpu_path)).to_json()
    # jit_f holds the most op time (its four copy-done ops alone: ~304 s of the profile's
    # summed device time); its largest op is copy-done.4 (77,773,215,731,250 ps, hlo_stats' top row).
    assert result["program"] == F and result["op"] == "copy-done.4" and result["hops"] == 2
    assert result["op_names"][0] == "copy-done.4"
    nodes = {n["name"]: n for n in result["nodes"]}
    # param.2 -> copy-start.4 -> copy-done.4 -> broadcast_add_fusion -> copy-start.5
    assert set(nodes) == {"param.2", "copy-start.4", "copy-done.4", "broadcast_add_fusion", "copy-start.5"}
    fusion = nodes["broadcast_add_fusion"]
    # fused_computation: param_0, constant, broadcast, add (the HLO text XProf prints).
    assert fusion["fused_instructions"] == 4 and fusion["opcode"] == "fusion" and fusion["called_computations"] == ["fused_computation"]
    assert nodes["param.2"]["total_time_ps"] is None and nodes["param.2"]["shape"] == "f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)}"
    assert nodes["copy-done.4"]["total_self_time_ps"] == 77773215731250


def test_tpu_edges_match_xprofs_graph_viewer(tpu_path: Path):
    """XProf draws a fusion as a cluster of its fused instructions: its edges are mapped to
    the fusion's name (the fusion node here). Where XLA's graph dumper walks differently
    from a plain walk (docs/tools/graph_viewer.md), the difference is listed by hand."""
    stats = _stats(tpu_path)
    programs = file_programs(tpu_path)
    # all-reduce <- bitcast <- param: XLA walks through a bitcast without spending a hop.
    # tuple.1 gathers copy-done.1, .3, .5: reached from one of them as a user, XLA does not
    # go on to the tuple's other operands, which are two hops away by a plain walk.
    tuple_edges = {("copy-done.1", "tuple.1"), ("copy-done.3", "tuple.1"), ("copy-done.5", "tuple.1")}
    known = {
        (PSUM, "all-reduce", 1): (set(), {("param", "bitcast")}),
        **{(F, f"copy-done.{n}", 2): (tuple_edges - {(f"copy-done.{n}", "tuple.1")}, set()) for n in (1, 3, 5)},
    }
    compared = 0
    for label in (PSUM, F):
        proto = programs[label]
        fused = fusion_of(proto)
        entry = next(c for c in proto.hlo_module.computations if not c.is_fusion_computation and c.name.startswith("main"))
        for instruction in entry.instructions:
            for hops in (1, 2):
                ours = {(e["source"], e["target"]) for e in run_tool("graph_viewer", stats, program=label, op=instruction.name, hops=hops).edges}
                theirs = {(fused.get(a, a), fused.get(b, b)) for a, b in xprof_edges(tpu_path, label, instruction.name, hops)}
                theirs = {(a, b) for a, b in theirs if a != b}  # edges inside a fusion's cluster
                only_ours, only_theirs = known.get((label, instruction.name, hops), (set(), set()))
                assert (ours - theirs, theirs - ours) == (only_ours, only_theirs), (label, instruction.name, hops)
                compared += 1
    assert compared == 2 * (3 + 19)  # psum's entry: 3 instructions; jit_f's: 19


@pytest.mark.framework
def test_jax_cpu_neighbourhoods_and_times_are_the_files(jax_path: Path):
    assert _check_against_the_file(jax_path, (0, 1, 2)) > 20
    result = run_tool("graph_viewer", _stats(jax_path)).to_json()
    assert result["program"].startswith("jit_train_step(")
    centre = next(n for n in result["nodes"] if n["distance"] == 0)
    assert centre["name"] == result["op_names"][0] and centre["total_time_ps"] > 0


def test_bad_options_are_one_line_errors(tpu_path: Path):
    stats = _stats(tpu_path)
    with pytest.raises(StepscopeError, match=r"graph_viewer: no program 'nope' \(choose from jit__psum\(") as error:
        run_tool("graph_viewer", stats, program="nope")
    assert "\n" not in str(error.value)
    with pytest.raises(StepscopeError, match=r"graph_viewer: no op 'nope' in program 'jit_f\(12190760917235803885\)' \(ops include copy-done.4, ") as error:
        run_tool("graph_viewer", stats, program="jit_f", op="nope")
    with pytest.raises(stepscope.analysis.registry.OptionError, match="hops must be at least 0"):
        stepscope.analysis.spec("graph_viewer").parse_options({"hops": "-1"})


def test_text_render_and_a_profile_without_hlo_protos(tpu_path: Path):
    result = run_tool("graph_viewer", _stats(tpu_path), program="9646411105960254074", op="all-reduce", hops=0)
    assert [n["name"] for n in result.nodes] == ["all-reduce"] and result.edges == []
    text = render([result], "text")
    assert "jit__psum(9646411105960254074): all-reduce (all-reduce, 100.0% of the program's op time) in main.10_spmd" in text
    empty = run_tool("graph_viewer", stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz")))
    assert empty.program == "" and empty.nodes == [] and "No XLA programs" in render([empty], "text")


def test_a_program_that_never_ran_centres_on_its_root(tpu_path: Path):
    # jit_convert_element_type has an HLO proto but no op of it ran in the profile
    # (hlo_stats has rows for jit_f, jit__psum and jit_broadcast_in_dim only).
    label = "jit_convert_element_type(2433868464432466958)"
    module = file_programs(tpu_path)[label].hlo_module
    entry = next(c for c in module.computations if c.id == module.entry_computation_id)
    root = next(i.name for i in entry.instructions if i.id == entry.root_id)
    result = run_tool("graph_viewer", _stats(tpu_path), program="jit_convert_element_type", hops=5)
    assert result.program == label and result.op == root and result.op_names == []
    assert result.program_self_time_ps == 0 and all(n["total_time_ps"] is None for n in result.nodes)
    assert len(result.nodes) == len(entry.instructions)  # 3 instructions, all within 5 hops
