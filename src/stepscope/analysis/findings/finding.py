"""What a verdict rule concludes (a ``Finding``) and how the overview's JSON carries it.

Each finding's evidence names the tool that shows it and, where that tool has a table, the
rows that support it: the table, the column it is sorted by (descending: biggest first) and
a search text that keeps those rows (the dashboard's table search: any text column holding
it, ignoring case). The page turns them into the tool's address (``&sort=``, ``&q=``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

# The kinds of finding (the verdict is the first finding's kind).
INPUT, KERNEL_LAUNCH, COLLECTIVES, HOST, DEVICE = "input", "kernel_launch", "collectives", "host", "device"
UNKNOWN = "unknown"

# The tools that show each finding's evidence (registry names).
INPUT_TOOL = "input_pipeline_analyzer"
OPS_TOOL = "framework_op_stats"
KERNELS_TOOL = "kernel_stats"
TRACE_TOOL = "trace_viewer"

# The tables the evidence points into, and the columns it sorts them by.
INPUT_STEPS_TABLE, INPUT_SORT = "steps", "input_percent"
OPS_TABLE, OPS_SORT = "framework_ops", "total_self_time_us"
KERNELS_TABLE, KERNELS_SORT = "kernels", "occurrences"


class PredictedGain(TypedDict):
    """What fixing a finding would buy: the matching critical_path what-if (finding_gains)."""

    change: str  # the what-if's name ("input_free", "launch_halved", "faster", ...)
    description: str  # what it changes, in words
    step_ps: int  # the mean kept step, measured
    predicted_step_ps: int  # the same steps re-scheduled with the change
    gain_percent: float  # (step_ps - predicted_step_ps) / step_ps, in percent
    text: str  # "input free: 222 -> 151 ms, -32.0%"


class Evidence(TypedDict):
    finding: str  # the finding's kind ("input", "kernel_launch", ...)
    text: str  # its number and how it was taken
    tool: str  # the tool that shows it (a registry name)
    table: str | None  # the table of that tool's result holding the supporting rows; null: none (the trace viewer)
    sort_key: str | None  # the column those rows are sorted by, descending
    query: str  # the search that keeps them ("" keeps every row)
    predicted: PredictedGain | None  # what fixing it would buy; null where no what-if matches


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One rule's conclusion. Keyword-only: nine fields, four of them strings, read wrong
    when passed by position."""

    kind: str
    share: float  # percent of the step time the finding rests on
    summary: str  # the verdict's sentence when this finding comes first
    evidence: str  # its number and how it was taken
    tool: str
    advice: tuple[str, ...]
    table: str | None = None
    sort_key: str | None = None
    query: str = ""

    def to_json(self, predicted: PredictedGain | None = None) -> Evidence:
        return Evidence(finding=self.kind, text=self.evidence, tool=self.tool, table=self.table, sort_key=self.sort_key, query=self.query, predicted=predicted)
