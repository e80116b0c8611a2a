"""``stepscope tools``: the analysis tools of the registry, what each answers, and their options."""

from __future__ import annotations

import argparse
import json

from stepscope.cli.arguments import JSON, LISTING_FORMATS, TEXT
from stepscope.cli.command import Command


def add_tools_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=LISTING_FORMATS, default=TEXT)


def run_tools(args: argparse.Namespace) -> int:
    from stepscope.analysis import Output, specs

    if args.format == JSON:
        print(json.dumps({"tools": [entry.to_json() for entry in specs()]}, indent=2))
        return 0
    for entry in specs():
        where = "report and dashboard" if entry.output is Output.TABLES else "dashboard only"
        print(f"{entry.name}  ({entry.title}; {where})\n  {entry.description}")
        for option in entry.options:
            described = option.to_json()
            bound = f", at least {option.minimum}" if option.minimum is not None else ""
            print(f"  --option {option.name}=VALUE  ({described['type']}, default {option.default!r}{bound}): {option.help}")
    return 0


TOOLS = Command("tools", "the analysis tools, what each answers, and their options", add_tools_arguments, run_tools)
