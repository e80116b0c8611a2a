"""How much reading one profile file may cost: the readers' limits (issue 14).

A profile is untrusted input: a 6 MB ``.json.gz`` can expand to 6 GiB, a 3 MB XSpace can
hold 200,000 empty planes, a FIFO never ends. Each limit below bounds one of those costs;
past it the reader raises :class:`~stepscope.errors.ProfileLimitError` (a
``ProfileFormatError``), one line naming the file, the limit and how to raise it, before
doing the work the excess would cost.

=========================  ===========  ======================================================
environment variable       default      what it bounds
=========================  ===========  ======================================================
STEPSCOPE_MAX_INPUT_BYTES  2 GiB        a file's size on disk, and its size decompressed
STEPSCOPE_MAX_EVENTS       20,000,000   events (all planes; trace JSON: array elements)
STEPSCOPE_MAX_PLANES       1,000        XSpace planes; processes of a trace JSON
STEPSCOPE_MAX_LINES        100,000      XSpace lines (all planes); threads of a trace JSON
STEPSCOPE_MAX_METADATA     1,000,000    a plane's event and stat metadata entries beyond
                                        one per event and one per stat of the plane
=========================  ===========  ======================================================

Why these numbers (measured on the bench's traces): the largest real trace we benchmark is
a 440 MiB torch.profiler JSON of 1.1M events (peak 1.2 GB to load); the largest synthetic
profile is 10M events. A reader holds the decompressed bytes (gzip is inflated in pieces
into one buffer, so not twice) plus 0.5-1 KB per event, so 2 GiB and 20M events admit
profiles several times the largest we know while bounding a gzip bomb at 2 GiB of bytes
and the decoded events at roughly 10-20 GB; lower them on small machines. Real profiles
have a few to a few dozen planes (one per device plus the host's), hundreds to a few
thousand threads and one metadata entry per distinct op or interned string: the other
defaults leave two orders of magnitude of room, while each container costs time and memory
whatever it holds (before these limits: 200,000 empty planes in 3 MB, 1.2 GB and 60 s;
20,000 one-event processes of a trace JSON, 18 s).

Bounds that need no setting: JSON nested deeper than the decoder's recursion limit
(Python's, about 1,000 levels) and protobuf messages nested past 100 levels are format
errors; only regular files are read (not FIFOs, devices or sockets).

Each limit is read when a file is read: from a value the program set (:func:`set_limit`,
e.g. by a CLI option), else from its environment variable (a whole number, with an
optional binary suffix: ``4GiB``, ``512M``, ``30m``... K, M, G, T are powers of 1024), else
its default. Worker processes see the environment, not the setting: a program that starts
them should export the variable too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from stepscope.errors import ProfileLimitError, StepscopeError
from stepscope.sizes import parse_size

GiB = 1 << 30


@dataclass(frozen=True)
class Limit:
    """One limit: its environment variable, default and the unit it counts."""

    env: str
    default: int
    unit: str  # "bytes" or what is counted ("planes", ...)

    def get(self) -> int:
        """The value in force now (set by the program, else the environment, else default)."""
        found = _set.get(self.env)
        if found is not None:
            return found
        text = os.environ.get(self.env, "").strip()
        return parse(self.env, text) if text else self.default

    def error(self, path: str | os.PathLike[str] | Path, problem: str, value: int | None = None) -> ProfileLimitError:
        """``path: problem (limit ENV=N); raise it to read larger profiles``."""
        value = self.get() if value is None else value
        return ProfileLimitError(path, f"{problem} (limit {self.env}={value}); raise it to read larger profiles", self.env, value)


INPUT_BYTES = Limit("STEPSCOPE_MAX_INPUT_BYTES", 2 * GiB, "bytes")
PLANES = Limit("STEPSCOPE_MAX_PLANES", 1_000, "planes")
LINES = Limit("STEPSCOPE_MAX_LINES", 100_000, "lines")
EVENTS = Limit("STEPSCOPE_MAX_EVENTS", 20_000_000, "events")
METADATA = Limit("STEPSCOPE_MAX_METADATA", 1_000_000, "metadata entries")
ALL = (INPUT_BYTES, EVENTS, PLANES, LINES, METADATA)

# Values the program set (environment variable name -> value); they win over the environment.
_set: dict[str, int] = {}


def set_limit(limit: Limit, value: int | None) -> None:
    """Sets ``limit`` for this process (``None``: back to the environment or the default)."""
    if value is None:
        _set.pop(limit.env, None)
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{limit.env}: a limit is a positive whole number, not {value!r}")
    _set[limit.env] = value


@contextlib.contextmanager
def limited(values: dict[Limit, int]) -> Iterator[None]:
    """Sets limits for the duration of a ``with`` block (tests, embedding programs)."""
    previous = {limit: _set.get(limit.env) for limit in values}
    try:
        for limit, value in values.items():
            set_limit(limit, value)
        yield
    finally:
        for limit, earlier in previous.items():
            set_limit(limit, earlier)


def parse(env: str, text: str) -> int:
    """A limit from its environment variable's text: ``2147483648``, ``2GiB``, ``512M``."""
    try:
        value = parse_size(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise StepscopeError(f"{env}={text!r} is not a limit: give a positive whole number (sizes may end in K, M, G or T, e.g. 4GiB)")
    return value
