"""JUnit XML of the regression gate: one testcase per ``--fail-if`` rule.

CI systems (GitHub Actions' test reporters, GitLab, Jenkins, Buildkite) read JUnit XML and
show each testcase with its message, so a regression reads as a failed test named after
the rule ("step_time > +5%") with the change as its message. A rule that tripped on noise
passes with the reason in its ``system-out``; one on a metric neither run recorded is
``skipped``. The diff's verdict is the suite's ``system-out``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from stepscope.analysis.diff.gate import FAILED, NOISE, NOT_RECORDED, GateResult
from stepscope.analysis.registry import ToolResult

SUITE = "stepscope diff"
CLASS = "stepscope.diff"


def render_junit(results: Sequence[ToolResult]) -> str:
    gates = [result for result in results if isinstance(result, GateResult)]
    outcomes = [outcome for result in gates for outcome in result.rules]
    counts = {
        "tests": str(len(outcomes)),
        "failures": str(sum(outcome["status"] == FAILED for outcome in outcomes)),
        "errors": "0",
        "skipped": str(sum(outcome["status"] == NOT_RECORDED for outcome in outcomes)),
    }
    root = ET.Element("testsuites", {"name": SUITE, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, **counts})
    for outcome in outcomes:
        case = ET.SubElement(suite, "testcase", {"classname": CLASS, "name": outcome["rule"]})
        if outcome["status"] == FAILED:
            ET.SubElement(case, "failure", {"message": outcome["reason"], "type": "regression"}).text = outcome["reason"]
        elif outcome["status"] == NOT_RECORDED:
            ET.SubElement(case, "skipped", {"message": outcome["reason"]})
        elif outcome["status"] == NOISE:
            ET.SubElement(case, "system-out").text = outcome["reason"]
    ET.SubElement(suite, "system-out").text = " ".join(result.verdict for result in gates)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
