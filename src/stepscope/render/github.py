"""The regression gate as GitHub Actions workflow commands: annotations on the run.

A runner turns a stdout line ``::error title=T::MESSAGE`` into an annotation on the job (and
on the pull request): an ``error`` per failed ``--fail-if`` rule, a ``warning`` per rule that
tripped within noise and per significant slow-down no failed rule already names (the step
time or a breakdown category), a ``warning`` per line of the diff's ``warnings`` (runs on
different hardware or frameworks), and a ``notice`` with the diff's verdict. Data and property
values are escaped as the runner unescapes them (``%`` first, then CR and LF; in properties
also ``:`` and ``,``), so a kernel name holding ``::`` or a newline cannot end the command
early. The Markdown summary for ``$GITHUB_STEP_SUMMARY`` is ``markdown``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from stepscope.analysis.diff.compare import DiffResult
from stepscope.analysis.diff.gate import FAILED, NOISE, GateResult
from stepscope.analysis.registry import ToolResult
from stepscope.render.cells import duration_us

TITLE = "stepscope diff"
ERROR, WARNING, NOTICE = "error", "warning", "notice"
_DATA = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY = (*_DATA, (":", "%3A"), (",", "%2C"))


def _escaped(text: str, table: tuple[tuple[str, str], ...]) -> str:
    for char, code in table:
        text = text.replace(char, code)
    return text


def command(level: str, title: str, message: str) -> str:
    return f"::{level} title={_escaped(title, _PROPERTY)}::{_escaped(message, _DATA)}"


def _slowdowns(diff: DiffResult, gated: set[str]) -> list[str]:
    """Lines for each significant slow-down whose metric no failed rule covers."""
    mean = diff.step_time["mean"]
    changes = [("step_time", mean), *((change["category"], change) for change in diff.breakdown)]
    return [
        command(WARNING, f"{TITLE}: {name} slower", f"{name} +{duration_us(change['change'])} per step ({change['change_percent'] or 0:+.1f}%), beyond noise")
        for name, change in changes
        if change["significant"] and change["change"] > 0 and name not in gated
    ]


def render_github(results: Sequence[ToolResult]) -> str:
    gates = [result for result in results if isinstance(result, GateResult)]
    outcomes = [outcome for result in gates for outcome in result.rules]
    lines = [command(ERROR, f"{TITLE}: {outcome['rule']}", outcome["reason"]) for outcome in outcomes if outcome["status"] == FAILED]
    lines += [command(WARNING, f"{TITLE}: {outcome['rule']}", outcome["reason"]) for outcome in outcomes if outcome["status"] == NOISE]
    failed = {outcome["metric"] for outcome in outcomes if outcome["status"] == FAILED}
    for diff in (result for result in results if isinstance(result, DiffResult)):
        lines += [command(WARNING, f"{TITLE}: runs not comparable", warning) for warning in diff.warnings]
        lines += _slowdowns(diff, failed)
        lines.append(command(NOTICE, TITLE, diff.verdict))
    return "".join(line + "\n" for line in lines)
