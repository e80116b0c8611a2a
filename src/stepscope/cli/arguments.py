"""The parser's pieces that every command shares: a parser whose usage error is one line,
range-checked whole numbers, and the names of the output formats."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn

from stepscope.cli.errors import EXIT_USAGE, PREFIX

TEXT = "text"
JSON = "json"
CSV = "csv"
JUNIT = "junit"
MARKDOWN = "markdown"
HTML = "html"
GITHUB = "github"
# --format of the commands that list things (info, tools) and of those that render tool
# results (distributed; report adds the report to share, diff the CI formats and Markdown).
LISTING_FORMATS = (TEXT, JSON)
RESULT_FORMATS = (TEXT, JSON, CSV)
REPORT_FORMATS = (*RESULT_FORMATS, MARKDOWN, HTML)
DIFF_FORMATS = (*RESULT_FORMATS, JUNIT, MARKDOWN, GITHUB)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other error (and names --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PREFIX}: error: {message} (see: {self.prog} --help)\n")


def int_in(low: int, high: int, what: str = "", grouped: bool = True) -> Callable[[str], int]:
    """An argparse ``type=``: a whole number in ``low..high``, else a one-line complaint."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            spec = "," if grouped else ""
            raise argparse.ArgumentTypeError(f"{text} is out of range ({low:{spec}}..{high:{spec}}{what})")
        return value

    return parse


port = int_in(0, 65535, "; 0 picks a free port", grouped=False)


def add_output(parser: argparse.ArgumentParser) -> None:
    """``--output``, for the commands whose result may go to a file (``output.write_output``)."""
    parser.add_argument("-o", "--output", help="write to this file instead of standard output")
