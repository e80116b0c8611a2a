"""The commands' progress bars: on stderr, shown only on a terminal, gone when done."""

from __future__ import annotations

import sys
from typing import NoReturn

from tqdm import tqdm

FILES = "file"
EVENTS = "ev"


def progress(total: int, description: str, unit: str) -> tqdm[NoReturn]:
    """A bar of ``total`` ``unit``s (stdout stays the command's output alone)."""
    return tqdm(total=total, desc=description, unit=unit, disable=None, leave=False, file=sys.stderr)
