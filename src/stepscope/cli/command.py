"""A command of the ``stepscope`` line: what the registry in ``stepscope.cli`` holds."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from stepscope.cli.errors import Handler


@dataclass(frozen=True)
class Command:
    """A subcommand: its name and one-line help (``stepscope --help`` lists them), the
    arguments it adds to its own parser, and what runs it (returning the exit status)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Handler
