"""``stepscope flame``: a profile's call stacks as a flame graph file (collapsed stacks or
speedscope), for a step, a window or the whole profile, one thread or several."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stepscope.cli.arguments import int_in
from stepscope.cli.command import Command
from stepscope.cli.output import cannot_write, check_output
from stepscope.cli.profiles import load_profile, pick_host
from stepscope.errors import StepscopeError

MAX_PS = (1 << 63) - 1


def add_flame_arguments(parser: argparse.ArgumentParser) -> None:
    from stepscope.render.flame import COLLAPSED, FLAME_FORMATS

    parser.add_argument("path", help="a profile file, a run folder or a log directory")
    parser.add_argument("--run", help="the run, when PATH holds several")
    parser.add_argument("--host", help="the host, when the run has several")
    parser.add_argument("--format", choices=tuple(FLAME_FORMATS), default=COLLAPSED, help=f"the file format (default: {COLLAPSED})")
    parser.add_argument("--step", default="", help="a step number (default: the whole profile)")
    parser.add_argument("--thread", default="", help="a thread, or a plane for all its threads (default: every /host:CPU thread)")
    parser.add_argument("--start-ps", type=int_in(0, MAX_PS), default=0, help="the window's start, ps from the profile's start")
    parser.add_argument("--end-ps", type=int_in(0, MAX_PS), default=0, help="the window's end, ps (default: the profile's end)")
    parser.add_argument("-o", "--output", help="the file to write (default: standard output)")


def run_flame(args: argparse.Namespace) -> int:
    from stepscope.analysis.opstats import OpStats
    from stepscope.analysis.tools.flame_graph import window
    from stepscope.render.flame import FLAME_FORMATS
    from stepscope.trace.files import atomic_write

    host = pick_host(args.path, args.run, args.host)
    output = Path(args.output) if args.output else None
    if output is not None:
        check_output(output)
        if output.exists() and output.resolve() == host.path.resolve():
            raise StepscopeError(f"{output}: the output is the profile; choose another name")
    profile = load_profile(host.path)
    chosen = window(OpStats(profile), args.thread, args.step, args.start_ps, args.end_ps)
    if not chosen.threads:
        raise StepscopeError(f"{host.path}: no thread with timed events to draw (see --thread)")
    data = FLAME_FORMATS[args.format](profile, chosen, host.path.name)
    if output is None:
        sys.stdout.buffer.write(data)
        return 0
    try:
        atomic_write(output, data)
    except OSError as error:
        raise cannot_write(output, error) from error
    print(f"wrote {output} ({args.format}, {len(chosen.threads)} thread(s), {(chosen.end_ps - chosen.start_ps) / 1e6:,.1f} us)", file=sys.stderr)
    return 0


FLAME = Command("flame", "write a profile's call stacks as a flame graph file: collapsed stacks or speedscope", add_flame_arguments, run_flame)
