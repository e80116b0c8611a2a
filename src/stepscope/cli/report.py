"""``stepscope report``: the analysis tools run on one profile, rendered as text, JSON or CSV,
or as a report to share (Markdown, one HTML file) of the tools its format shows."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepscope.cli.arguments import REPORT_FORMATS, TEXT, add_output
from stepscope.cli.command import Command
from stepscope.cli.output import check_output, write_output
from stepscope.cli.profiles import load_profile, pick_host
from stepscope.errors import StepscopeError

if TYPE_CHECKING:
    from stepscope.analysis.registry import ToolSpec

ALL_TOOLS = "all"
DEFAULT_TOOL = "overview_page"


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a profile file, a run folder or a log directory")
    parser.add_argument("--run", help="the run, when PATH holds several")
    parser.add_argument("--host", help="the host, when the run has several")
    parser.add_argument(
        "--tool",
        help=f"a tool name, or {ALL_TOOLS} (default: {DEFAULT_TOOL}; for markdown and html, the overview, top ops, kernels and input pipeline; stepscope tools lists them)",
    )
    parser.add_argument(
        "--option",
        dest="options",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a tool option, e.g. top_n=5 (repeatable; stepscope tools lists them)",
    )
    parser.add_argument("--format", choices=REPORT_FORMATS, default=TEXT, help="markdown: a PR comment or CI job summary; html: one self-contained file")
    add_output(parser)


def run_report(args: argparse.Namespace) -> int:
    from stepscope.analysis import Output, spec, tool_names
    from stepscope.analysis.opstats import OpStats
    from stepscope.render import FORMATS, render

    form = FORMATS[args.format]
    form.check()  # e.g. html's script is built: before any loading
    if args.tool == ALL_TOOLS:
        chosen = tool_names()
    elif args.tool is None:
        chosen = list(form.tools or [DEFAULT_TOOL])
    elif args.tool not in tool_names(None):
        raise StepscopeError(f"unknown tool {args.tool!r} (tools: {', '.join(tool_names())}, {ALL_TOOLS})")
    elif spec(args.tool).output is not Output.TABLES:
        raise StepscopeError(f"{args.tool} is shown by the dashboard only (stepscope serve), not by report")
    else:
        chosen = [args.tool]
    tools = [spec(name) for name in chosen]
    options = tool_options(tools, args.options)
    host = pick_host(args.path, args.run, args.host)
    if args.output:  # before the analysis: an output that can never be written fails now
        output_path = Path(args.output)
        check_output(output_path)
        if output_path.exists() and output_path.resolve() == host.path.resolve():
            raise StepscopeError(f"{output_path}: the output is the profile being reported on; choose another name")
    profile = load_profile(host.path)
    stats = OpStats(profile)  # what the tools share, built once for all of them
    results = [tool.run(stats, **options[tool.name]) for tool in tools]
    write_output(args.output, render(results, args.format))
    return 0


def tool_options(tools: list[ToolSpec], given: list[str]) -> dict[str, dict[str, Any]]:
    """``--option NAME=VALUE``s, typed by the registry, per tool: each applies to the chosen
    tools that have it, and one that none of them has is an error."""
    values: dict[str, str] = {}
    for text in given:
        name, equals, value = text.partition("=")
        if not equals or not name:
            raise StepscopeError(f"--option {text!r}: give NAME=VALUE (see stepscope tools)")
        values[name] = value
    names = {tool.name: {option.name for option in tool.options} for tool in tools}
    for name in values:
        if not any(name in known for known in names.values()):
            raise StepscopeError(f"--option {name}: no option of that name in {', '.join(names)} (see stepscope tools)")
    return {tool.name: tool.parse_options({name: value for name, value in values.items() if name in names[tool.name]}) for tool in tools}


REPORT = Command("report", "run the analysis tools on one profile", add_report_arguments, run_report)
