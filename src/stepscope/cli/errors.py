"""How a command fails: its exit statuses, the one-line error and the warnings.

Every failure the user can cause (a missing file, a corrupt profile, an unknown format, an
unwritable output, an out-of-range option) prints one line, ``stepscope: error: <file or
value>: <problem>``, and exits with status 2; Ctrl-C exits with status 130, quietly.

What counts as the user's failure: a ``StepscopeError``, an ``OSError`` (files, folders,
sockets: the environment, not stepscope) and a bad argument (argparse, ``arguments.Parser``).
Anything else is a bug in stepscope and keeps its traceback. ``STEPSCOPE_DEBUG=1`` shows
the traceback of the one-line errors too.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from stepscope.errors import StepscopeError

EXIT_USAGE = 2
EXIT_REGRESSION = 1  # stepscope diff: a --fail-if rule failed
EXIT_NOTHING_CAPTURED = 1  # stepscope capture: no host gave a profile
EXIT_INTERRUPTED = 130
DEBUG_ENV = "STEPSCOPE_DEBUG"
PREFIX = "stepscope"

Handler = Callable[[argparse.Namespace], int]


def warn(message: str) -> None:
    """One warning line on stderr: the command goes on."""
    print(f"{PREFIX}: warning: {message}", file=sys.stderr)


def run_handler(handler: Handler, args: argparse.Namespace) -> int:
    """``handler(args)``'s exit status; a failure of the user's is one line and status 2."""
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
    try:
        return handler(args)
    except StepscopeError as error:
        if debug:
            raise
        print(f"{PREFIX}: error: {one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return 0
    except OSError as error:
        # The environment, not stepscope: a file, folder or socket the commands do not name
        # themselves (they turn the expected ones into a StepscopeError). Not a catch-all:
        # any other exception is a bug and keeps its traceback.
        if debug:
            raise
        where = f"{error.filename}: " if error.filename else ""
        print(f"{PREFIX}: error: {where}{one_line(error.strerror or str(error))} (run with {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return EXIT_USAGE


def one_line(text: str) -> str:
    return " ".join(text.split("\n")).strip()
