"""stepscope's own error types: one clear line for the user, never a traceback."""

from __future__ import annotations

from os import PathLike
from typing import Any, Self


class StepscopeError(Exception):
    """Any failure stepscope reports to the user as one line (CLI exit status 2)."""


class ProfileFormatError(StepscopeError):
    """A file that is not a profile stepscope can read, or is damaged.

    The message names the file and what is wrong with it, e.g.
    ``trace.json: not JSON (unexpected end of data at byte 120)``.
    """

    def __init__(self, path: str | PathLike[str], problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")

    def __reduce__(self) -> tuple[type[Self], tuple[Any, ...]]:  # pickled across processes (the dashboard's analysis workers)
        return (type(self), (self.path, self.problem))


class ProfileLimitError(ProfileFormatError):
    """A profile that would cost more to read than a limit allows (see ``trace.limits``).

    The message names the file, what was too large, the limit's environment variable and
    its value, e.g. ``x.json.gz: decompresses to more than 2.0 GiB (limit
    STEPSCOPE_MAX_INPUT_BYTES=2147483648); raise it to read larger profiles``.
    """

    def __init__(self, path: str | PathLike[str], problem: str, setting: str = "", limit: int = 0) -> None:
        super().__init__(path, problem)
        self.setting = setting
        self.limit = limit

    def __reduce__(self) -> tuple[type[Self], tuple[Any, ...]]:
        return (type(self), (self.path, self.problem, self.setting, self.limit))


class ProfileInvariantError(StepscopeError):
    """A loaded profile breaks one of the model's invariants (see ``Profile.validate``)."""
