"""``stepscope tools``: the analysis tools of the registry, what each answers, and their
options; then the registry's analyses over several profiles (diff, distributed), each a
command of its own."""

from __future__ import annotations

import argparse
import json

from stepscope.cli.arguments import JSON, LISTING_FORMATS, TEXT
from stepscope.cli.command import Command


def add_tools_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=LISTING_FORMATS, default=TEXT)


# What an analysis over several profiles takes, as the listing says it.
TAKES = {"pair": "two profiles", "run": "every host of a run"}


def run_tools(args: argparse.Namespace) -> int:
    from stepscope.analysis import Output, analysis_specs, specs

    if args.format == JSON:
        listing = {"tools": [entry.to_json() for entry in specs()], "analyses": [entry.to_json() for entry in analysis_specs()]}
        print(json.dumps(listing, indent=2))
        return 0
    for entry in specs():
        where = "report and dashboard" if entry.output is Output.TABLES else "dashboard only"
        print(f"{entry.name}  ({entry.title}; {where})\n  {entry.description}")
        for option in entry.options:
            described = option.to_json()
            bound = f", at least {option.minimum}" if option.minimum is not None else ""
            print(f"  --option {option.name}=VALUE  ({described['type']}, default {option.default!r}{bound}): {option.help}")
    for analysis in analysis_specs():
        print(f"{analysis.name}  ({analysis.title}; {TAKES[analysis.inputs]}: stepscope {analysis.name} and dashboard)\n  {analysis.description}")
    return 0


TOOLS = Command("tools", "the analysis tools, what each answers, and their options", add_tools_arguments, run_tools)
