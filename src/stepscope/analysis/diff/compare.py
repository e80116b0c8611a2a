"""diff: what changed between two runs (BASE and NEW), and whether it is more than noise.

"Did my change make the step faster, and why?" A diff reads each run's own tool results
(overview_page, framework_op_stats, kernel_stats, memory_profile: ``RunResults``; the
dashboard can hand over the ones it has cached) and subtracts them, so every figure is
one that each run's pages show:
- step time: mean, median and p90 over each run's steady-state steps (the overview's
  ``set_aside`` steps, warm-up compiles and one-off outliers, are left out as the overview
  leaves them out), with the change of the mean's confidence interval (``step_change``);
- each breakdown category: its mean time per steady-state step in both runs, with its
  interval, and its share of the step;
- steps side by side: by step number where the runs share numbers (a run resumed at step
  0 again), by order otherwise (two captures at different points of a job);
- ops, op categories, kernels and memory devices matched by name (``row_changes``), each
  with its time per step (the run's total over its step count), so runs of different
  lengths compare;
- the memory peak: the largest peak allocated of any device (the one the memory page
  opens on) in each run;
- a verdict in one sentence (``diff.verdict``);
- ``warnings`` before it all where the runs ran on different hardware or frameworks, whose
  figures do not compare op by op (``diff.warnings``).

An analysis over a pair of runs (``ENTRY``: an ``AnalysisSpec`` of ``Inputs.PAIR``), not a
tool (those take one profile); the CLI's ``stepscope diff`` renders it through the same
renderers (``tool`` is "diff").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypedDict

import numpy as np

from stepscope.analysis.diff.row_changes import (
    KernelChange,
    MemoryDeviceChange,
    OpCategoryChange,
    OpChange,
    StepCounts,
    kernel_changes,
    memory_changes,
    op_category_changes,
    op_changes,
)
from stepscope.analysis.diff.step_change import Change, Point, mean_change, point, relative
from stepscope.analysis.diff.verdict import verdict
from stepscope.analysis.diff.warnings import comparability_warnings
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import AnalysisSpec, Inputs, Option, ToolResult, register_analysis, run_tool
from stepscope.analysis.steps.breakdown import BREAKDOWN, IDLE
from stepscope.analysis.tables import Column, Table
from stepscope.analysis.tools.framework_op_stats import FrameworkOpStatsResult
from stepscope.analysis.tools.kernel_stats import KernelStatsResult
from stepscope.analysis.tools.memory_profile import MemoryProfileResult
from stepscope.analysis.tools.overview_page import OverviewResult, OverviewStep
from stepscope.trace.model import Profile

TOOL = "diff"
CATEGORIES = [*BREAKDOWN.values(), IDLE]
BY_NUMBER, BY_ORDER = "number", "order"
P90 = 90


@dataclass(frozen=True)
class RunResults:
    """The tool results of one run that a diff reads (``TOOLS``: each field's tool)."""

    overview: OverviewResult
    framework_ops: FrameworkOpStatsResult
    kernels: KernelStatsResult
    memory: MemoryProfileResult

    TOOLS: ClassVar[dict[str, str]] = {
        "overview": "overview_page",
        "framework_ops": "framework_op_stats",
        "kernels": "kernel_stats",
        "memory": "memory_profile",
    }

    @classmethod
    def of(cls, source: Profile | OpStats) -> RunResults:
        """Runs the four tools on one ``OpStats`` (what they share is built once)."""
        stats = OpStats.of(source)
        return cls(**{field: run_tool(tool, stats) for field, tool in cls.TOOLS.items()})  # type: ignore[arg-type]


class StepTime(TypedDict):
    """Step time in microseconds over each run's steady-state steps."""

    steps_base: int  # steps counted (not set aside)
    steps_new: int
    set_aside_base: int
    set_aside_new: int
    mean: Change
    median: Point
    p90: Point  # numpy's linear-interpolation percentile


class CategoryChange(Change):
    """One breakdown category: mean us per steady-state step, and its share of the step."""

    category: str
    base_percent: float
    new_percent: float


class StepPair(TypedDict):
    """A step of each run, side by side (null where one run has no partner)."""

    base_step: int | None
    new_step: int | None
    base_us: float | None
    new_us: float | None
    change_us: float | None
    change_percent: float | None
    base_set_aside: str | None
    new_set_aside: str | None
    # Where each step lies in its profile, exact (the compare view opens both trace viewers on it).
    base_start_ps: int | None
    new_start_ps: int | None
    base_step_ps: int | None
    new_step_ps: int | None


class MemoryPeak(TypedDict):
    """The largest device peak of each run (null: the run recorded no memory events)."""

    base_bytes: int | None
    new_bytes: int | None
    base_device: str | None
    new_device: str | None
    change_bytes: int | None  # null unless both runs have a peak
    change_percent: float | None


STEP_TIME_COLUMNS = (
    Column("statistic", "Step time", "string"),
    Column("base", "Base (us)"),
    Column("new", "New (us)"),
    Column("change", "Change (us)"),
    Column("change_percent", "Change %"),
    Column("ci_low_percent", "95% CI low %"),
    Column("ci_high_percent", "95% CI high %"),
    Column("significant", "Significant", "bool"),
)
CATEGORY_COLUMNS = (
    Column("category", "Category", "string"),
    Column("base", "Base (us/step)"),
    Column("new", "New (us/step)"),
    Column("change", "Change (us/step)"),
    Column("change_percent", "Change %"),
    Column("base_percent", "Base % of step"),
    Column("new_percent", "New % of step"),
    Column("significant", "Significant", "bool"),
)
CHANGE_COLUMNS = (
    Column("status", "Status", "string"),
    Column("base_occurrences", "Base count"),
    Column("new_occurrences", "New count"),
    Column("base_total_us", "Base total (us)"),
    Column("new_total_us", "New total (us)"),
    Column("change_us", "Change (us)"),
    Column("change_percent", "Change %"),
    Column("base_per_step_us", "Base per step (us)"),
    Column("new_per_step_us", "New per step (us)"),
    Column("change_per_step_us", "Change per step (us)"),
    Column("change_per_step_percent", "Change per step %"),
)
OP_COLUMNS = (
    Column("host_or_device", "Host/device", "string"),
    Column("type", "Type", "string"),
    Column("name", "Name", "string"),
    *CHANGE_COLUMNS,
    Column("change_self_us", "Self change (us)"),
)
OP_CATEGORY_COLUMNS = (Column("host_or_device", "Host/device", "string"), Column("type", "Type", "string"), *CHANGE_COLUMNS)
KERNEL_COLUMNS = (Column("name", "Kernel", "string"), *CHANGE_COLUMNS)
MEMORY_COLUMNS = (
    Column("device", "Device", "string"),
    Column("status", "Status", "string"),
    Column("base_peak_bytes", "Base peak (bytes)"),
    Column("new_peak_bytes", "New peak (bytes)"),
    Column("change_bytes", "Change (bytes)"),
    Column("change_percent", "Change %"),
)
STEP_COLUMNS = (
    Column("base_step", "Base step"),
    Column("new_step", "New step"),
    Column("base_us", "Base (us)"),
    Column("new_us", "New (us)"),
    Column("change_us", "Change (us)"),
    Column("change_percent", "Change %"),
    Column("base_set_aside", "Base set aside", "string"),
    Column("new_set_aside", "New set aside", "string"),
)


@dataclass
class DiffResult(ToolResult):
    tool: ClassVar[str] = TOOL
    base: str  # what BASE was (a path, a run name)
    new: str
    warnings: list[str]  # the runs do not compare (different hardware or frameworks); said first
    verdict: str
    step_time: StepTime
    breakdown: list[CategoryChange]  # in the breakdown's order
    aligned_by: str  # "number" | "order": how ``steps`` pairs them
    steps: list[StepPair]
    ops: list[OpChange]  # largest change per step first
    op_categories: list[OpCategoryChange]
    kernels: list[KernelChange]
    memory: list[MemoryDeviceChange]
    memory_peak: MemoryPeak

    def tables(self) -> list[Table]:
        times = self.step_time
        statistics = [{"statistic": "mean", **times["mean"]}, {"statistic": "median", **times["median"]}, {"statistic": "p90", **times["p90"]}]
        return [
            Table.of("step_time", STEP_TIME_COLUMNS, statistics),
            Table.of("breakdown", CATEGORY_COLUMNS, self.breakdown),
            Table.of("ops", OP_COLUMNS, self.ops),
            Table.of("op_categories", OP_CATEGORY_COLUMNS, self.op_categories),
            Table.of("kernels", KERNEL_COLUMNS, self.kernels),
            Table.of("memory", MEMORY_COLUMNS, self.memory),
            Table.of("steps", STEP_COLUMNS, self.steps),
        ]

    def summary(self) -> list[str]:
        times = self.step_time
        mean, median, p90 = times["mean"], times["median"], times["p90"]
        peak = self.memory_peak
        memory = (
            f"memory peak: {peak['base_bytes']:,} -> {peak['new_bytes']:,} bytes ({_signed(peak['change_percent'])})"
            if peak["base_bytes"] is not None and peak["new_bytes"] is not None
            else "memory peak: not recorded in both runs"
        )
        return [
            *(f"warning: {warning}" for warning in self.warnings),
            f"base: {self.base}",
            f"new:  {self.new}",
            self.verdict,
            f"step time (us): mean {mean['base']:,.1f} -> {mean['new']:,.1f} ({_signed(mean['change_percent'])}), "
            f"median {median['base']:,.1f} -> {median['new']:,.1f} ({_signed(median['change_percent'])}), "
            f"p90 {p90['base']:,.1f} -> {p90['new']:,.1f} ({_signed(p90['change_percent'])})",
            f"steps: {times['steps_base']} base, {times['steps_new']} new "
            f"({times['set_aside_base']} and {times['set_aside_new']} set aside); side by side by step {self.aligned_by}",
            memory,
        ]


def _signed(percent: float | None) -> str:
    return "n/a" if percent is None else f"{percent:+.1f}%"


def _kept(steps: list[OverviewStep]) -> list[OverviewStep]:
    return [step for step in steps if step["set_aside"] is None]


def _us(steps: list[OverviewStep], key: str | None = None) -> np.ndarray:
    """Per step, the step time (``key`` None) or a category's time, in microseconds."""
    return np.asarray([step["step_time_ps"] if key is None else step["breakdown"][f"{key}_ps"] for step in steps], dtype=np.int64) / 1e6


def _percentile(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else 0.0


def step_time(base: OverviewResult, new: OverviewResult) -> StepTime:
    base_us, new_us = _us(_kept(base.steps)), _us(_kept(new.steps))
    return StepTime(
        steps_base=len(base_us),
        steps_new=len(new_us),
        set_aside_base=len(base.set_aside),
        set_aside_new=len(new.set_aside),
        mean=mean_change(base_us, new_us),
        median=point(base.step_time_us["median"], new.step_time_us["median"]),
        p90=point(_percentile(base_us, P90), _percentile(new_us, P90)),
    )


def breakdown_changes(base: OverviewResult, new: OverviewResult) -> list[CategoryChange]:
    base_kept, new_kept = _kept(base.steps), _kept(new.steps)
    return [
        CategoryChange(
            **mean_change(_us(base_kept, key), _us(new_kept, key)),
            category=key,
            base_percent=base.breakdown_percent[key],
            new_percent=new.breakdown_percent[key],
        )
        for key in CATEGORIES
    ]


def _pair(base: OverviewStep | None, new: OverviewStep | None) -> StepPair:
    base_us = base["step_time_us"] if base else None
    new_us = new["step_time_us"] if new else None
    both = base_us is not None and new_us is not None
    return StepPair(
        base_step=base["step"] if base else None,
        new_step=new["step"] if new else None,
        base_us=base_us,
        new_us=new_us,
        change_us=new_us - base_us if base_us is not None and new_us is not None else None,
        change_percent=relative(new_us - base_us, base_us) if both and base_us is not None and new_us is not None else None,
        base_set_aside=base["set_aside"] if base else None,
        new_set_aside=new["set_aside"] if new else None,
        base_start_ps=base["start_ps"] if base else None,
        new_start_ps=new["start_ps"] if new else None,
        base_step_ps=base["step_time_ps"] if base else None,
        new_step_ps=new["step_time_ps"] if new else None,
    )


def aligned_steps(base: list[OverviewStep], new: list[OverviewStep]) -> tuple[str, list[StepPair]]:
    """Every step of both runs side by side: by number where the runs share step numbers
    (each run's own steps in its order, then the new run's unmatched ones), else by order."""
    new_by_number = {step["step"]: step for step in new}
    if not any(step["step"] in new_by_number for step in base):
        count = max(len(base), len(new))
        return BY_ORDER, [_pair(base[i] if i < len(base) else None, new[i] if i < len(new) else None) for i in range(count)]
    base_numbers = {step["step"] for step in base}
    pairs = [_pair(step, new_by_number.get(step["step"])) for step in base]
    pairs += [_pair(None, step) for step in new if step["step"] not in base_numbers]
    return BY_NUMBER, pairs


def memory_peak(base: MemoryProfileResult, new: MemoryProfileResult) -> MemoryPeak:
    def largest(result: MemoryProfileResult) -> tuple[int | None, str | None]:
        if not result.devices:
            return None, None
        device = max(result.devices, key=lambda device: device["peak_allocated_bytes"])
        return device["peak_allocated_bytes"], device["device"]

    (base_bytes, base_device), (new_bytes, new_device) = largest(base), largest(new)
    change = new_bytes - base_bytes if base_bytes is not None and new_bytes is not None else None
    return MemoryPeak(
        base_bytes=base_bytes,
        new_bytes=new_bytes,
        base_device=base_device,
        new_device=new_device,
        change_bytes=change,
        change_percent=relative(change, base_bytes) if change is not None and base_bytes is not None else None,
    )


def diff_results(base: RunResults, new: RunResults, base_name: str = "base", new_name: str = "new") -> DiffResult:
    """The diff of two runs' tool results (see the module docstring)."""
    times = step_time(base.overview, new.overview)
    categories = breakdown_changes(base.overview, new.overview)
    aligned_by, steps = aligned_steps(base.overview.steps, new.overview.steps)
    counts = StepCounts(len(base.overview.steps), len(new.overview.steps))
    ops = op_changes(base.framework_ops, new.framework_ops, counts)
    kernels = kernel_changes(base.kernels, new.kernels, counts)
    return DiffResult(
        base=base_name,
        new=new_name,
        warnings=comparability_warnings(base.overview.environment, new.overview.environment),
        verdict=verdict(times["mean"], [(change["category"], change) for change in categories], ops, kernels),
        step_time=times,
        breakdown=categories,
        aligned_by=aligned_by,
        steps=steps,
        ops=ops,
        op_categories=op_category_changes(base.framework_ops, new.framework_ops, counts),
        kernels=kernels,
        memory=memory_changes(base.memory, new.memory),
        memory_peak=memory_peak(base.memory, new.memory),
    )


def diff(base: Profile | OpStats, new: Profile | OpStats, base_name: str = "base", new_name: str = "new") -> DiffResult:
    """The diff of two profiles (each analysed once, by the four tools a diff reads)."""
    return diff_results(RunResults.of(base), RunResults.of(new), base_name, new_name)


def _page_option(name: str, help: str) -> Option:
    return Option(name, str, "", help)


# The compare view's entry: the base run/host are its query parameters (the new profile is
# the page's run/host); pair and scale are the page's paired trace view, kept in its address.
ENTRY = register_analysis(
    AnalysisSpec(
        TOOL,
        title="Compare",
        order=80,  # after every tool (trace_viewer, 70)
        inputs=Inputs.PAIR,
        description="What changed from a base run/host to this one (stepscope diff).",
        result=DiffResult,
        result_description="GET /api/diff and stepscope diff --format json: what changed between two runs.",
        options=(
            _page_option("base_run", "the run to compare against"),
            _page_option("base_host", "its host"),
            _page_option("pair", "the paired trace view's pair of aligned steps (an index into the diff's steps)"),
            _page_option("scale", 'the paired trace view\'s time scale: one for both (default) or "step" (each step fills its viewer)'),
        ),
    )
)
