"""A report to share: tool results as sections (headline figures, the verdict with its
evidence, top tables, charts) that the Markdown and HTML renderers both write out.

One builder per tool (``SECTIONS``, a registry; any other tool gets its summary lines and
tables), so the two formats cannot disagree on what a report holds: the overview's own
recommendation (its verdict, evidence and next steps, word for word: never a second
verdict), its headline figures, the step-time chart, the top framework ops, the top kernels
where the profile has a device, the input pipeline's breakdown, and for ``diff`` its
verdict, changes and the gate's rules. Tables are cut to their top ``TOP_ROWS`` rows; the
JSON and CSV formats have them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stepscope.analysis.registry import ToolResult
from stepscope.analysis.tables import Column, Table
from stepscope.render.cells import cell, duration_us

TOP_ROWS = 10
# Chart kinds the report's script draws (web/report/main.ts KINDS).
STEP_TIME_CHART, TOP_KERNELS_CHART = "step_time", "top_kernels"
# The columns each top table keeps (the tools' own keys and labels).
OP_KEYS = ("host_or_device", "type", "name", "occurrences", "total_self_time_us", "self_time_percent")
KERNEL_KEYS = ("kernel_name", "op_name", "occurrences", "total_duration_us", "avg_duration_us", "is_kernel_using_tensor_core")
INPUT_OP_KEYS = ("name", "category", "count", "total_ms", "self_ms", "self_percent")
CATEGORY_CHANGE_KEYS = ("category", "base", "new", "change", "change_percent", "significant")
CHANGE_KEYS = ("status", "base_per_step_us", "new_per_step_us", "change_per_step_us", "change_per_step_percent")
STAT_LABELS = (("mean", "Mean"), ("median", "Median"), ("stddev", "Std. dev. of"), ("min", "Fastest"), ("max", "Slowest"))


@dataclass(frozen=True)
class Figure:
    key: str  # stable, for scripts and tests (the dashboard's data-metric names)
    label: str
    value: str  # as a person reads it
    raw: Any = None  # the number itself (HTML keeps it in data-value)


@dataclass(frozen=True)
class Shown:
    """A table cut to its top rows, with a title and how many rows it had."""

    title: str
    table: Table
    total: int

    @classmethod
    def top(cls, title: str, table: Table, keys: Sequence[str], sort_key: str | None = None) -> Shown:
        """``table``'s columns ``keys``, its ``TOP_ROWS`` largest rows by ``sort_key`` (else in its order)."""
        index = {column.key: i for i, column in enumerate(table.columns)}
        rows = table.rows
        if sort_key is not None:
            rows = sorted(rows, key=lambda row: -(row[index[sort_key]] or 0))
        columns = tuple(table.columns[index[key]] for key in keys)
        picked = [tuple(row[index[key]] for key in keys) for row in rows[:TOP_ROWS]]
        return cls(title, Table(table.name, columns, picked), len(table.rows))


@dataclass(frozen=True)
class Chart:
    name: str  # the canvas's data-chart
    kind: str  # STEP_TIME_CHART | TOP_KERNELS_CHART
    title: str
    data: Any  # the tool JSON the chart is drawn from


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    figures: tuple[Figure, ...] = ()
    text: tuple[str, ...] = ()  # paragraphs
    lists: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (heading, items)
    tables: tuple[Shown, ...] = ()
    charts: tuple[Chart, ...] = ()


def _table(result: ToolResult, name: str) -> Table:
    return next(table for table in result.tables() if table.name == name)


def _percent(key: str, label: str, value: float | None) -> Figure:
    return Figure(key, label, "-" if value is None else f"{value:.1f}%", value)


def _overview(result: ToolResult) -> list[Section]:
    data = result.to_json()
    times, rec, steps = data["step_time_us"], data["recommendation"], data["steps"]
    figures = [
        Figure("step_count", "Steps", f"{len(steps):,}", len(steps)),
        Figure("step_set_aside_count", "Steps set aside", f"{len(data['set_aside']):,}", len(data["set_aside"])),
        *(Figure(f"step_time_{key}_us", f"{label} step time", duration_us(times[key]), times[key]) for key, label in STAT_LABELS),
        _percent("input_percent", "Input (of step time)", rec["input_percent"]),
    ]
    if data["devices"]:
        figures += [
            _percent("device_busy_percent", "Device busy (active span)", data["device"]["busy_percent"]),
            _percent("kernel_launch_percent", "Kernel launch", rec["kernel_launch_percent"]),
        ]
    through = data["throughput"]
    if through["mfu_percent"] is not None:
        figures.append(_percent("mfu_percent", "MFU", through["mfu_percent"]))
    env = data["environment"]
    figures += [Figure("env_framework", "Framework", env["framework"]), Figure("env_device_type", "Device type", env["device_type"])]
    notes = [f"{len(steps):,} step(s) from {data['step_source']}."]
    if data["steps_inferred"]:
        notes.append("No step marker found: the whole profiled window is one step.")
    if rec["set_aside"]:
        notes.append(rec["set_aside"])
    evidence = tuple(
        f"{item['text']} (see {item['tool']})" + (f"; what if {item['predicted']['text']}" if item["predicted"] else "") for item in rec["evidence"]
    )
    breakdown = [
        Figure(f"breakdown_{key}_percent", key.replace("_", " "), f"{value:.1f}%", value) for key, value in data["breakdown_percent"].items() if value >= 0.05
    ]
    chart_steps = [{"step": step["step"], "breakdown": {k: v for k, v in step["breakdown"].items() if k.endswith("_us")}} for step in steps]
    sections = [
        Section("overview", "Overview", tuple(figures), tuple(notes)),
        Section("verdict", "Verdict", text=(rec["summary"],), lists=(("Evidence", evidence), ("Next steps", tuple(rec["next_steps"])))),
        Section(
            "step-time",
            "Step time by category",
            tuple(breakdown),
            charts=(Chart("step_time", STEP_TIME_CHART, "Step time per step, by category", {"steps": chart_steps}),) if steps else (),
        ),
    ]
    gpus = [gpu for gpu in data["gpus"] if gpu["top_kernels"]]
    if gpus:
        charts = tuple(Chart(f"top_kernels_{i}", TOP_KERNELS_CHART, f"Top kernels by time on {gpu['device']}", gpu) for i, gpu in enumerate(gpus))
        text = tuple(
            f"{gpu['device']}: GPU utilisation {gpu['utilization_percent']:.1f}% of its active span, TensorCore kernels {gpu['tensor_core_percent']:.1f}% of kernel time."
            for gpu in gpus
        )
        sections.append(Section("gpu", "GPU", text=text, charts=charts))
    return sections


def _framework_ops(result: ToolResult) -> list[Section]:
    shown = Shown.top("Top framework ops by self time", _table(result, "framework_ops"), OP_KEYS, "total_self_time_us")
    return [Section("top-ops", "Top framework ops", tables=(shown,) if shown.total else (), text=() if shown.total else ("No framework ops in this profile.",))]


def _kernels(result: ToolResult) -> list[Section]:
    table = _table(result, "kernels")
    if not table.rows:
        return [Section("top-kernels", "Top kernels", text=("No device kernels in this profile.",))]
    shown = Shown.top("Top kernels by total time", table, KERNEL_KEYS, "total_duration_us")
    return [Section("top-kernels", "Top kernels", text=tuple(result.summary()[:1]), tables=(shown,))]


def _input_pipeline(result: ToolResult) -> list[Section]:
    breakdown = _table(result, "host_breakdown")
    ops = _table(result, "input_ops")
    tables = [Shown.top("Host input time by category", breakdown, [c.key for c in breakdown.columns])] if breakdown.rows else []
    if ops.rows:
        tables.append(Shown.top("Top input ops", ops, INPUT_OP_KEYS))
    return [Section("input-pipeline", "Input pipeline", text=tuple(result.summary()[:2]), tables=tuple(tables))]


def _diff(result: ToolResult) -> list[Section]:
    data = result.to_json()
    times = data["step_time"]
    figures = tuple(
        Figure(
            f"step_time_{stat}",
            f"{stat.capitalize()} step time",
            f"{duration_us(times[stat]['base'])} -> {duration_us(times[stat]['new'])} ({_signed(times[stat]['change_percent'])})",
            times[stat]["change_percent"],
        )
        for stat in ("mean", "median", "p90")
    )
    tables = [Shown.top("Breakdown: mean time per step (us)", _table(result, "breakdown"), CATEGORY_CHANGE_KEYS)]
    for name, title in (("kernels", "Largest kernel changes per step"), ("ops", "Largest op changes per step")):
        table = _table(result, name)
        if table.rows:  # the kernels where the runs have any, else the ops (CPU runs)
            tables.append(Shown.top(title, table, ("name", *CHANGE_KEYS)))
            break
    text = (*(f"Warning: {warning}" for warning in data["warnings"]), data["verdict"], f"base: {data['base']}", f"new: {data['new']}")
    return [Section("diff", "What changed", figures, text, tables=tuple(tables))]


def _signed(percent: float | None) -> str:
    return "n/a" if percent is None else f"{percent:+.1f}%"


def _gate(result: ToolResult) -> list[Section]:
    table = _table(result, "rules")
    if not table.rows:
        return []
    return [Section("gate", "Regression gate", tables=(Shown("Rules (--fail-if)", table, len(table.rows)),))]


def _generic(result: ToolResult) -> list[Section]:
    tables = tuple(Shown.top(table.name, table, [c.key for c in table.columns]) for table in result.tables() if table.rows)
    return [Section(result.tool, result.tool, text=tuple(result.summary()), tables=tables)]


SECTIONS: dict[str, Callable[[ToolResult], list[Section]]] = {
    "overview_page": _overview,
    "framework_op_stats": _framework_ops,
    "kernel_stats": _kernels,
    "input_pipeline_analyzer": _input_pipeline,
    "diff": _diff,
    "gate": _gate,
}


def sections(results: Sequence[ToolResult]) -> list[Section]:
    return [section for result in results for section in SECTIONS.get(result.tool, _generic)(result)]


def cells(shown: Shown) -> list[list[str]]:
    """The table's rows as text (``cells.cell``)."""
    return [[cell(value) for value in row] for row in shown.table.rows]


def header(columns: Sequence[Column]) -> list[str]:
    return [column.label for column in columns]


def title(results: Sequence[ToolResult]) -> str:
    return "stepscope diff" if any(result.tool == "diff" for result in results) else "stepscope report"
