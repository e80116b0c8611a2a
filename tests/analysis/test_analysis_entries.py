"""The registry's analyses over several profiles (``AnalysisSpec``): the diff and the
distributed view are entries of their input kind, and a new entry reaches the schema
writer from the registry alone."""

from __future__ import annotations

import dataclasses
import json

import pytest

from stepscope.analysis import Inputs, analysis_spec, analysis_specs, spec, tool_names
from stepscope.analysis.registry import SCHEMA_DIALECT, register_analysis
from stepscope.analysis.schemas import SUFFIX, schema_texts
from tests.support import analyses


def test_diff_and_distributed_are_listed_with_their_inputs():
    assert [(entry.name, entry.inputs) for entry in analysis_specs()] == [("diff", Inputs.PAIR), ("distributed", Inputs.RUN)]
    assert [entry.name for entry in analysis_specs(Inputs.RUN)] == ["distributed"]
    # Not tools: every tool runs on one profile (the report, the dashboard's analysis workers).
    assert {"diff", "distributed"}.isdisjoint(tool_names(None))
    assert spec("kernel_stats").inputs is Inputs.ONE and analysis_spec("kernel_stats") is None
    # Their options, as the page keeps them in its address: the base (and the paired trace
    # view's pair and scale); the unit, auto by default (stepscope distributed --by).
    diff = analysis_spec("diff")
    assert diff is not None and [option.name for option in diff.options] == ["base_run", "base_host", "pair", "scale"]
    (by,) = analysis_specs(Inputs.RUN)[0].options
    assert (by.name, by.default, by.choices) == ("by", "auto", ("rank", "device"))
    listed = analysis_specs()[1].to_json()
    assert (listed["inputs"], listed["output"], listed["title"]) == ("run", "tables", "Distributed")


def test_a_new_entry_gets_its_schema_from_the_registry():
    assert f"{analyses.NAME}{SUFFIX}" not in schema_texts()
    with analyses.registered():
        schema = json.loads(schema_texts()[f"{analyses.NAME}{SUFFIX}"])
    assert f"{analyses.NAME}{SUFFIX}" not in schema_texts()
    # Two integer fields, both required, nothing else allowed (ToolSpec.schema's rule).
    assert (schema["$schema"], schema["title"], schema["description"]) == (SCHEMA_DIALECT, analyses.NAME, "The steps of two runs, counted.")
    definition = schema["$defs"]["StepCountChange"]
    assert definition["properties"] == {"base_steps": {"type": "integer"}, "new_steps": {"type": "integer"}}
    assert definition["required"] == ["base_steps", "new_steps"] and definition["additionalProperties"] is False


def test_an_entry_needs_several_profiles_and_a_name_of_its_own():
    with pytest.raises(ValueError, match="one profile is a tool's input"):
        register_analysis(dataclasses.replace(analyses.ENTRY, inputs=Inputs.ONE))
    with pytest.raises(ValueError, match="tool 'kernel_stats' registered twice"):
        register_analysis(dataclasses.replace(analyses.ENTRY, name="kernel_stats"))
    with analyses.registered(), pytest.raises(ValueError, match=f"tool '{analyses.NAME}' registered twice"):
        register_analysis(analyses.ENTRY)
