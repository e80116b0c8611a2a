"""The ``stepscope`` command line: a registry of commands, one module per command (or
family of two), and the pieces they share.

- ``command``: what a registry entry holds (name, help line, arguments, handler);
- ``errors``: exit statuses, the one-line error every user failure ends in, warnings;
- ``arguments``: the parser, range-checked numbers, the output format names;
- ``profiles``: the run and host a path and ``--run`` / ``--host`` pick, loaded;
- ``output``: the output checked before the work and written atomically;
- ``progress``: the progress bars on stderr.

The console script (``stepscope``) and ``python -m stepscope.cli`` both call ``main``.
"""

from __future__ import annotations

from collections.abc import Sequence

from stepscope import __version__
from stepscope.cli.arguments import Parser
from stepscope.cli.capture import CAPTURE
from stepscope.cli.command import Command
from stepscope.cli.convert import CONVERT
from stepscope.cli.diff import DIFF
from stepscope.cli.distributed import DISTRIBUTED
from stepscope.cli.errors import run_handler
from stepscope.cli.flame import FLAME
from stepscope.cli.info import INFO
from stepscope.cli.report import REPORT
from stepscope.cli.serve import DEMO, SERVE
from stepscope.cli.tools import TOOLS

# In the order ``stepscope --help`` lists them.
COMMANDS: tuple[Command, ...] = (INFO, CONVERT, REPORT, FLAME, DIFF, DISTRIBUTED, TOOLS, CAPTURE, SERVE, DEMO)

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


def build_parser() -> Parser:
    parser = Parser(prog="stepscope", description="Profiles of ML training jobs: inspect, convert, analyse.")
    parser.add_argument("--version", action="version", version=f"stepscope {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help)
        command.add_arguments(sub)
        sub.set_defaults(handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_handler(args.handler, args)
