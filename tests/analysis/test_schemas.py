"""The tool registry: entries, options, and the JSON Schema every tool's JSON is checked against.

The schemas under web/src/generated/schemas are committed (the page's TypeScript types are
generated from them); here they must equal what the registry makes now, and every tool's
JSON, as the CLI writes it, on every shared real profile and on a CPU capture made here,
must validate against them with no property missing and none extra.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import jsonschema
import pytest

import stepscope
from stepscope.analysis import Output, analysis_specs, run_tool, spec, specs, tool_names
from stepscope.analysis.diff.compare import diff
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import OptionError
from stepscope.analysis.schemas import SUFFIX, schema_texts
from stepscope.errors import StepscopeError
from stepscope.render.formats import render_json
from tests.support.traces import ALL_SHARED_TRACES, ROOT, shared

SCHEMAS = ROOT / "web" / "src" / "generated" / "schemas"
TABLE_TOOLS = tool_names(Output.TABLES)


def _validator(tool: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{tool}{SUFFIX}").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _documents(profile: stepscope.Profile) -> dict:
    stats = OpStats(profile)
    return json.loads(render_json([run_tool(name, stats) for name in TABLE_TOOLS]))


def test_committed_schemas_are_current():
    expected = schema_texts()
    committed = {path.name: path.read_text() for path in SCHEMAS.glob(f"*{SUFFIX}")}
    assert sorted(committed) == sorted(expected), "run make schemas"
    for name, text in expected.items():
        assert committed[name] == text, f"{name} is out of date: run make schemas"


@pytest.fixture(scope="module")
def cpu_capture(cpu_capture_path: Path) -> stepscope.Profile:
    return stepscope.load(cpu_capture_path)


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda path: path.name)
def test_every_tool_json_matches_its_schema_on_real_profiles(path: Path):
    documents = _documents(stepscope.load(path))
    assert sorted(documents) == sorted(TABLE_TOOLS)
    for tool, document in documents.items():
        errors = sorted(_validator(tool).iter_errors(document), key=lambda error: list(error.path))
        assert not errors, f"{tool}: {errors[0].message} at {list(errors[0].path)}"


def test_every_tool_json_matches_its_schema_on_a_cpu_capture(cpu_capture):
    for tool, document in _documents(cpu_capture).items():
        _validator(tool).validate(document)


def test_op_profile_options_keep_the_schema():
    profile = stepscope.load(shared("xplane/tpu_v_inference_4chips.xplane.pb"))
    document = json.loads(render_json([run_tool("op_profile", profile, device="all", top_n=1)]))["op_profile"]
    _validator("op_profile").validate(document)
    assert document["device"] == "all devices" and document["top_n"] == 1
    # top_n=1: every node shows one child and, where it had more, one "(K more)" node
    assert all(len(node["children"]) <= 2 for node in _walk(document["root"]))


def _walk(node: dict) -> list[dict]:
    return [node, *(inner for child in node["children"] for inner in _walk(child))]


def test_the_schemas_reject_a_missing_or_an_extra_property():
    document = _documents(stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz")))["kernel_stats"]
    validator = _validator("kernel_stats")
    assert document["rows"], "the AlexNet trace has kernels"
    extra = copy.deepcopy(document)
    extra["rows"][0]["not_a_field"] = 1
    missing = copy.deepcopy(document)
    del missing["rows"][0]["occurrences"]
    wrong = copy.deepcopy(document)
    wrong["total_kernel_time_ps"] = "12"
    for bad in (extra, missing, wrong):
        assert not validator.is_valid(bad)
    assert validator.is_valid(document)


def test_json_form_is_the_result_fields():
    """to_json is derived: its keys are the result dataclass's fields, nothing else."""
    stats = OpStats(stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz")))
    for name in TABLE_TOOLS:
        result = run_tool(name, stats)
        assert result.tool == name
        assert list(result.to_json()) == [field.name for field in dataclasses.fields(result)]


def test_registry_order_and_output_kinds():
    # XProf's tools menu order (the XLA tools after memory_profile), then the trace viewer (an index, dashboard only)
    assert [entry.name for entry in specs()] == [
        "overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "op_profile", "memory_profile", "hlo_stats", "roofline_model", "graph_viewer", "memory_viewer", "flame_graph", "critical_path", "trace_viewer",
    ]  # fmt: skip
    assert tool_names() == [entry.name for entry in specs()][:-1]
    assert spec("trace_viewer").output is Output.INDEX
    with pytest.raises(StepscopeError, match="makes an index for the dashboard"):
        run_tool("trace_viewer", stepscope.load(shared("kineto/alexnet_small.pt.trace.json.gz")))
    with pytest.raises(StepscopeError, match="unknown tool 'nope'"):
        spec("nope")


def test_options_are_typed_checked_and_listed():
    op_profile = spec("op_profile")
    assert [option.name for option in op_profile.options] == ["device", "top_n"]
    # values that equal the defaults are dropped, so they hit the cached default result
    assert op_profile.parse_options({"top_n": "10", "device": ""}) == {}
    assert op_profile.parse_options({"top_n": "3", "device": "/device:TPU:1"}) == {"top_n": 3, "device": "/device:TPU:1"}
    for values, message in (
        ({"top_n": "0"}, "top_n must be at least 1, not 0"),
        ({"top_n": "3.5"}, "top_n must be an integer, not '3.5'"),
        ({"colour": "red"}, "op_profile has no option 'colour' \\(its options: device, top_n\\)"),
    ):
        with pytest.raises(OptionError, match=message):
            op_profile.parse_options(values)
    with pytest.raises(OptionError, match="kernel_stats has no option 'top_n' \\(its options: none\\)"):
        spec("kernel_stats").parse_options({"top_n": "3"})
    listed = op_profile.to_json()["options"]
    assert listed[1] == {
        "name": "top_n", "type": "integer", "default": 10, "minimum": 1, "choices": [], "choices_from": None, "resets": [],
        "help": op_profile.options[1].help,
    }  # fmt: skip
    assert listed[0]["choices_from"] == "devices" and listed[0]["choices"] == ["all", "/host:CPU"]


def test_the_tools_listing_matches_its_schema(cpu_capture):
    """``/api/tools``'s answer as the server makes it, the tools with nothing to show for a
    CPU capture among it (``stepscope tools`` lists the ``tools`` and ``analyses`` parts)."""
    from stepscope.analysis.registry import ToolsAnswer

    schema = json.loads((SCHEMAS / f"tools{SUFFIX}").read_text())
    reasons = {entry.name: entry.why_not(cpu_capture) for entry in specs()}
    answer = ToolsAnswer(
        tools=[entry.to_json() for entry in specs()],
        analyses=[entry.to_json() for entry in analysis_specs()],
        unavailable={tool: why for tool, why in reasons.items() if why},
        checked=True,
    )
    assert "kernel_stats" in answer["unavailable"]  # a plain Python loop: no GPU
    jsonschema.Draft202012Validator(schema).validate(answer)
    assert [tool["name"] for tool in answer["tools"]] == [entry.name for entry in specs()]


def test_the_diff_json_matches_its_schema(cpu_capture):
    """The diff is not a registry tool (it takes two runs); its schema sits beside theirs.
    Two ranks of a real job (ops, kernels, memory, new and vanished rows) and a CPU capture
    against itself (no kernels, nothing changed)."""
    base, new = (stepscope.load(shared(f"kineto/recsys_sampled_rank{rank}_of_128.pt.trace.json.gz")) for rank in (0, 1))
    for result in (diff(base, new), diff(cpu_capture, cpu_capture)):
        document = json.loads(render_json([result]))["diff"]
        errors = sorted(_validator("diff").iter_errors(document), key=lambda error: list(error.path))
        assert not errors, f"{errors[0].message} at {list(errors[0].path)}"
