"""The regression gate: rules such as ``step_time > +5%`` checked against a diff.

A rule is ``METRIC OP AMOUNT``:
- METRIC: ``step_time`` (the mean over steady-state steps), ``memory_peak`` (the largest
  device peak), or a breakdown category (``input``, ``device_compute``, ``idle``...: its
  mean time per step); ``METRICS`` is the registry;
- OP: ``>`` (trips when the change is above AMOUNT) or ``<`` (below: ``step_time < -10%``
  trips on a speed-up of more than 10%, for a job that must not change either way);
- AMOUNT: a signed percentage of the base (``+5%``, ``-10%``) or a signed amount with a
  unit: ``ns``, ``us``, ``ms``, ``s`` for times, ``B``, ``KB``, ``MB``, ``GB``, ``KiB``,
  ``MiB``, ``GiB`` for memory (``+2ms``, ``+512MiB``). No sign means ``+``.

A rule *trips* when the change compares as OP says with AMOUNT; it *fails* the gate only
when the change is also significant (``step_change``: its interval excludes 0), so noise
never fails a build. A change whose noise cannot be measured (one steady step in a run; a
memory peak, which is one figure, not a mean) counts as real. A metric that neither run
recorded (no memory events) is "not recorded": it passes, and JUnit shows it skipped.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypedDict

from stepscope.analysis.diff.compare import CATEGORIES, DiffResult
from stepscope.analysis.diff.step_change import Change
from stepscope.analysis.diff.verdict import duration
from stepscope.analysis.registry import ToolResult
from stepscope.analysis.tables import Column, Table
from stepscope.errors import StepscopeError

TOOL = "gate"
PASSED, FAILED, NOISE, NOT_RECORDED = "passed", "failed", "not significant", "not recorded"
TIME, BYTES = "time", "bytes"
# Amounts in the unit a diff holds them in: microseconds for times, bytes for memory.
UNITS: dict[str, dict[str, float]] = {
    TIME: {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6},
    BYTES: {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30},
}
_RULE = re.compile(r"^\s*(?P<metric>[A-Za-z_]\w*)\s*(?P<op>[<>])\s*(?P<sign>[+-]?)\s*(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>%|[A-Za-z]+)?\s*$")


class RuleError(StepscopeError):
    """A ``--fail-if`` rule that cannot be read."""


@dataclass(frozen=True)
class Measured:
    """A metric of both runs, in its kind's unit (us or bytes)."""

    base: float
    new: float
    change: float
    change_percent: float | None
    significant: bool | None  # None: noise not measured (counts as real)


@dataclass(frozen=True)
class Metric:
    kind: str  # TIME | BYTES
    read: Callable[[DiffResult], Measured | None]  # None: not recorded


def _of_change(change: Change) -> Measured:
    return Measured(change["base"], change["new"], change["change"], change["change_percent"], change["significant"])


def _memory_peak(result: DiffResult) -> Measured | None:
    peak = result.memory_peak
    if peak["base_bytes"] is None or peak["new_bytes"] is None or peak["change_bytes"] is None:
        return None
    return Measured(peak["base_bytes"], peak["new_bytes"], peak["change_bytes"], peak["change_percent"], None)


def _category(index: int) -> Callable[[DiffResult], Measured | None]:
    return lambda result: _of_change(result.breakdown[index])


METRICS: dict[str, Metric] = {
    "step_time": Metric(TIME, lambda result: _of_change(result.step_time["mean"])),
    "memory_peak": Metric(BYTES, _memory_peak),
    **{category: Metric(TIME, _category(index)) for index, category in enumerate(CATEGORIES)},
}


@dataclass(frozen=True)
class Rule:
    text: str
    metric: str
    above: bool  # ">" (else "<")
    amount: float  # percent, or the kind's unit
    percent: bool

    @classmethod
    def parse(cls, text: str) -> Rule:
        match = _RULE.match(text)
        if match is None:
            raise RuleError(f"--fail-if {text!r}: write METRIC > AMOUNT or METRIC < AMOUNT, e.g. 'step_time > +5%' or 'memory_peak > +512MiB'")
        metric = METRICS.get(match["metric"])
        if metric is None:
            raise RuleError(f"--fail-if {text!r}: unknown metric {match['metric']!r} (metrics: {', '.join(METRICS)})")
        unit = match["unit"]
        number = float(match["number"]) * (-1 if match["sign"] == "-" else 1)
        if unit == "%":
            return cls(text.strip(), match["metric"], match["op"] == ">", number, True)
        units = UNITS[metric.kind]
        if unit not in units:
            raise RuleError(
                f"--fail-if {text!r}: give the amount as a percentage or with a unit of {metric.kind} ({', '.join(units)}), not {unit or 'no unit'}"
            )
        return cls(text.strip(), match["metric"], match["op"] == ">", number * units[unit], False)

    def trips(self, measured: Measured) -> bool:
        if self.percent:
            value = measured.change_percent
            if value is None:  # from nothing: any growth is infinitely many percent
                value = math.copysign(math.inf, measured.change) if measured.change else 0.0
        else:
            value = measured.change
        return value > self.amount if self.above else value < self.amount


class RuleOutcome(TypedDict):
    rule: str
    metric: str
    status: str  # "passed" | "failed" | "not significant" | "not recorded"
    reason: str  # one line: the change, and why it passed or failed


def _observed(metric: Metric, measured: Measured) -> str:
    show = duration if metric.kind == TIME else (lambda amount: f"{amount:,.0f} bytes")
    percent = f"{measured.change_percent:+.1f}%" if measured.change_percent is not None else "from 0"
    return f"{percent} ({show(measured.base)} -> {show(measured.new)})"


def evaluate(rule: Rule, result: DiffResult) -> RuleOutcome:
    metric = METRICS[rule.metric]
    measured = metric.read(result)
    if measured is None:
        return RuleOutcome(rule=rule.text, metric=rule.metric, status=NOT_RECORDED, reason=f"{rule.metric} is not recorded in both runs")
    observed = f"{rule.metric} {_observed(metric, measured)}"
    if not rule.trips(measured):
        return RuleOutcome(rule=rule.text, metric=rule.metric, status=PASSED, reason=observed)
    if measured.significant is False:
        return RuleOutcome(rule=rule.text, metric=rule.metric, status=NOISE, reason=f"{observed}, within noise (the 95% interval of the change holds 0)")
    noise = "" if measured.significant else " (noise not measured)"
    return RuleOutcome(rule=rule.text, metric=rule.metric, status=FAILED, reason=f"{observed}{noise}")


COLUMNS = (Column("rule", "Rule", "string"), Column("status", "Status", "string"), Column("reason", "Reason", "string"))


@dataclass
class GateResult(ToolResult):
    """Every rule's outcome, in the order given; the gate fails if any rule failed."""

    tool: ClassVar[str] = TOOL
    rules: list[RuleOutcome]
    verdict: str  # the diff's, for a report that shows only the gate (JUnit)

    @property
    def failed(self) -> list[RuleOutcome]:
        return [outcome for outcome in self.rules if outcome["status"] == FAILED]

    def tables(self) -> list[Table]:
        return [Table.of("rules", COLUMNS, self.rules)]

    def summary(self) -> list[str]:
        return [f"{outcome['status'].upper()}: {outcome['rule']}: {outcome['reason']}" for outcome in self.rules] or ["no rules"]


def gate(rules: list[Rule], result: DiffResult) -> GateResult:
    return GateResult(rules=[evaluate(rule, result) for rule in rules], verdict=result.verdict)
