"""``stepscope convert``: a profile rewritten in the format its output name asks for."""

from __future__ import annotations

import argparse
from pathlib import Path

from stepscope.cli.command import Command
from stepscope.cli.output import cannot_write, check_output
from stepscope.cli.profiles import load_profile
from stepscope.cli.progress import EVENTS, progress
from stepscope.errors import StepscopeError
from stepscope.trace.writers import save, writer_suffix


def add_convert_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input")
    parser.add_argument("output")


def run_convert(args: argparse.Namespace) -> int:
    source, target = Path(args.input), Path(args.output)
    writer_suffix(target)  # fail on an unknown output format before reading anything
    if target.exists() and source.exists() and target.resolve() == source.resolve():
        raise StepscopeError(f"{target}: the output is the input file; choose another name")
    check_output(target)
    profile = load_profile(source)
    with progress(profile.event_count, "writing", EVENTS) as bar:
        try:
            save(profile, target, bar.update)
        except OSError as error:
            raise cannot_write(target, error) from error
    print(f"wrote {target} ({profile.event_count:,} events)")
    return 0


CONVERT = Command("convert", "convert a profile by extension: .xplane.pb, .json, .json.gz, .pftrace", add_convert_arguments, run_convert)
