"""`--format markdown` of `report` and `diff`: GitHub-flavoured tables whose rows hold the
numbers the trace gives (read here with json), within the size GitHub accepts."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter

import pytest

from stepscope.render.markdown import COMMENT_LIMIT, CUT_NOTE, escape, fit
from tests.support.cli import assert_one_error_line, run_stepscope
from tests.support.diff_traces import step_trace
from tests.support.traces import shared

GPU_TRACE = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")
CPU_TRACE = shared("kineto/cpu_only_rank34.pt.trace.json.gz")
_ESCAPED = re.compile(r"\\(.)")


def unescape(text: str) -> str:
    """Markdown's backslash escapes undone (what GitHub shows)."""
    return _ESCAPED.sub(r"\1", text.strip())


def table_after(markdown: str, heading: str) -> list[dict[str, str]]:
    """The rows of the first table after the line starting with ``heading``, by column header."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([unescape(cell) for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    header, _, *body = rows
    return [dict(zip(header, row)) for row in body]


def number(text: str) -> float:
    return float(text.replace(",", ""))


def trace_events(path) -> list[dict]:
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def test_gpu_report_rows_are_the_trace_numbers():
    result = run_stepscope("report", "--format", "markdown", str(GPU_TRACE))
    assert result.returncode == 0, result.stderr
    markdown = result.stdout
    assert len(markdown) < COMMENT_LIMIT
    events = trace_events(GPU_TRACE)
    steps_us = [event["dur"] for event in events if str(event.get("name", "")).startswith("ProfilerStep#")]
    kernel_us: Counter[str] = Counter()
    launches: Counter[str] = Counter()
    for event in events:
        if event.get("cat") == "kernel":
            kernel_us[event["name"]] += event["dur"]
            launches[event["name"]] += 1
    (top_kernel, top_us), _ = kernel_us.most_common(2)

    (overview,) = table_after(markdown, "### Overview")
    assert overview["Steps"] == str(len(steps_us)) == "3"
    # e.g. "222.368 ms": the mean of the three ProfilerStep durations, in ms to 3 decimals.
    assert overview["Mean step time"] == f"{sum(steps_us) / len(steps_us) / 1000:,.3f} ms"
    assert overview["Slowest step time"] == f"{max(steps_us) / 1000:,.3f} ms"

    kernels = table_after(markdown, "**Top kernels by total time**")
    assert len(kernels) == 10
    # Names are cut at 60 characters (57 and "..."): the trace's name starts the same way.
    assert top_kernel.startswith(kernels[0]["Kernel name"].removesuffix("..."))
    assert number(kernels[0]["Total duration (us)"]) == pytest.approx(top_us, abs=1e-3)
    assert int(kernels[0]["Occurrences"]) == launches[top_kernel]
    assert "**Top kernels by total time** (top 10 of " in markdown

    overview_json = json.loads(run_stepscope("report", "--format", "json", str(GPU_TRACE)).stdout)["overview_page"]
    verdict = markdown.split("### Verdict\n\n", 1)[1].split("\n", 1)[0]
    assert unescape(verdict) == overview_json["recommendation"]["summary"]


def test_cpu_report_has_no_kernel_table():
    markdown = run_stepscope("report", "--format", "markdown", str(CPU_TRACE)).stdout
    steps = [event for event in trace_events(CPU_TRACE) if str(event.get("name", "")).startswith("ProfilerStep#")]
    assert table_after(markdown, "### Overview")[0]["Steps"] == str(len(steps)) == "1"
    assert "### Top kernels\n\nNo device kernels in this profile.\n" in markdown
    assert "**Top framework ops by self time**" in markdown


def test_diff_markdown(tmp_path):
    # Steady steps 10..14 ms (mean 12) after a 40 ms outlier, against 15..19 ms (mean 17): +41.7%.
    base = step_trace(tmp_path / "base.pt.trace.json", [40, 10, 12, 11, 13, 14])
    new = step_trace(tmp_path / "new.pt.trace.json", [15, 17, 16, 18, 19])
    result = run_stepscope("diff", str(base), str(new), "--format", "markdown", "--fail-if", "step_time > +5%")
    assert result.returncode == 1
    markdown = result.stdout
    assert markdown.startswith("## stepscope diff\n")
    (figures,) = table_after(markdown, "### What changed")
    assert figures["Mean step time"] == "12.000 ms -> 17.000 ms (+41.7%)"
    (rule,) = table_after(markdown, "**Rules (--fail-if)**")
    assert (rule["Rule"], rule["Status"]) == ("step_time > +5%", "failed")


def test_escape_keeps_names_as_written():
    name = "void k<float, 1>(int*) | <lambda> _a_ [x]"
    assert unescape(escape(name)) == name
    assert escape(name) == r"void k\<float, 1>(int\*) \| \<lambda> \_a\_ \[x\]"  # no tag, no cell break


def test_a_long_report_is_cut_at_a_line():
    text = "".join(f"| row {index} |\n" for index in range(10_000))
    cut = fit(text)
    assert len(cut) <= COMMENT_LIMIT and cut.endswith(CUT_NOTE)
    assert cut.removesuffix(CUT_NOTE).splitlines() == [f"| row {index} |" for index in range(len(cut.removesuffix(CUT_NOTE).splitlines()))]


def test_bad_input_is_one_line(tmp_path):
    missing = tmp_path / "missing.pt.trace.json"
    assert_one_error_line(run_stepscope("report", "--format", "markdown", str(missing)), str(missing))
