"""`stepscope diff --format github`: workflow command lines a GitHub Actions runner turns
into annotations, parsed back here by an unescape written from GitHub's rules, and the
Markdown summary appended to $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import json
import re

import pytest

from stepscope.render.github import command
from tests.support.cli import assert_one_error_line, run_stepscope
from tests.support.diff_traces import step_trace

# "::level title=T::MESSAGE": ":" is escaped in properties, so the first "::" after them ends them.
_COMMAND = re.compile(r"^::(?P<level>error|warning|notice) title=(?P<title>[^:]*)::(?P<message>.*)$")


def unescape(text: str, codes: tuple[str, ...]) -> str:
    """GitHub's escapes undone: the codes first, %25 last (it may have made a '%' of them)."""
    table = {"%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","}
    for code in codes:
        text = text.replace(code, table[code])
    return text.replace("%25", "%")


def parse(line: str) -> tuple[str, str, str]:
    match = _COMMAND.match(line)
    assert match, line
    return match["level"], unescape(match["title"], ("%0D", "%0A", "%3A", "%2C")), unescape(match["message"], ("%0D", "%0A"))


@pytest.fixture
def pair(tmp_path):
    # Steady 10..14 ms (mean 12) against 15..19 ms (mean 17): +41.7%, +5 ms, beyond noise.
    base = step_trace(tmp_path / "base.pt.trace.json", [40, 10, 12, 11, 13, 14], peak_bytes=2**20)
    new = step_trace(tmp_path / "new.pt.trace.json", [15, 17, 16, 18, 19], peak_bytes=2**20)
    return str(base), str(new)


def test_annotations_match_the_gate(pair, tmp_path):
    base, new = pair
    rules = ["step_time > +5%", "memory_peak > +10%"]
    flags = [arg for rule in rules for arg in ("--fail-if", rule)]
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step's summary\n")
    result = run_stepscope("diff", base, new, *flags, "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 1  # as the gate says
    lines = [parse(line) for line in result.stdout.splitlines()]
    gate = json.loads(run_stepscope("diff", base, new, *flags, "--format", "json").stdout)["gate"]
    failed = [(outcome["rule"], outcome["reason"]) for outcome in gate["rules"] if outcome["status"] == "failed"]
    assert failed == [("step_time > +5%", "step_time +41.7% (12.00 ms -> 17.00 ms)")]
    assert [(title.removeprefix("stepscope diff: "), message) for level, title, message in lines if level == "error"] == failed
    notices = [message for level, _, message in lines if level == "notice"]
    assert len(notices) == 1 and notices[0].startswith("Step +41.7% (12.00 ms -> 17.00 ms")
    # The failed rule's metric is not warned about again.
    assert not any(level == "warning" and "step_time" in title for level, title, _ in lines)
    written = summary.read_text()
    assert written.startswith("earlier step's summary\n## stepscope diff\n")  # appended
    assert "| step\\_time > +5% | failed | step\\_time +41.7% (12.00 ms -> 17.00 ms) |" in written


def test_a_slowdown_no_rule_fails_is_a_warning(pair):
    base, new = pair
    result = run_stepscope("diff", base, new, "--fail-if", "step_time > +50%", "--format", "github")
    assert result.returncode == 0
    warnings = [(title, message) for level, title, message in map(parse, result.stdout.splitlines()) if level == "warning"]
    assert ("stepscope diff: step_time slower", "step_time +5.000 ms per step (+41.7%), beyond noise") in warnings


def test_escaping_round_trips():
    title, message = "rule: a, b % c", "50% of\r\nk<float>::run, done"
    assert parse(command("error", title, message)) == ("error", title, message)
    assert command("error", title, message) == "::error title=rule%3A a%2C b %25 c::50%25 of%0D%0Ak<float>::run, done"


def test_no_summary_file_outside_actions(pair):
    base, _ = pair
    result = run_stepscope("diff", base, base, "--format", "github", env={"GITHUB_STEP_SUMMARY": ""})
    assert result.returncode == 0 and [parse(line)[0] for line in result.stdout.splitlines()] == ["notice"]


def test_bad_input_is_one_line(pair, tmp_path):
    base, _ = pair
    garbage = tmp_path / "garbage.pt.trace.json"
    garbage.write_text("not a trace")
    assert_one_error_line(run_stepscope("diff", base, str(garbage), "--format", "github"), str(garbage))
