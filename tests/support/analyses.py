"""A dummy analysis over several profiles, registered for one test and taken back after it:
what a new entry of the kind gets from the registry alone (a schema, a place in the
tools listing) without a line of ``analysis/schemas.py`` or ``dashboard/app.py``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from stepscope.analysis.registry import ANALYSES, AnalysisSpec, Inputs, Option, ToolResult, register_analysis

NAME = "step_count_change"


@dataclass
class StepCountChange(ToolResult):
    base_steps: int
    new_steps: int


ENTRY = AnalysisSpec(
    NAME,
    title="Step count change",
    order=85,  # between the diff (80) and the distributed view (90)
    inputs=Inputs.PAIR,
    description="How many more steps the new run has.",
    result=StepCountChange,
    result_description="The steps of two runs, counted.",
    options=(Option("base_run", str, "", "the run to compare against"),),
)


@contextlib.contextmanager
def registered() -> Iterator[AnalysisSpec]:
    register_analysis(ENTRY)
    try:
        yield ENTRY
    finally:
        del ANALYSES[NAME]
