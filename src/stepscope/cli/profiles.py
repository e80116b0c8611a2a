"""Which profile a command is about: the runs a path holds, the one chosen by ``--run`` /
``--host`` (or the only one there is), and each profile loaded with its warnings said."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, overload

from stepscope.cli.errors import warn
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import Discovery, Host, Run, discover, find_profiles
from stepscope.trace.readers import load

if TYPE_CHECKING:
    from stepscope.trace.model import Profile

# A logdir whose profiles fail to load names this many of them, then counts the rest.
SHOWN_FAILURES = 5
# A "choose one with --run/--host" error lists this many names, then counts the rest.
SHOWN_CHOICES = 10


def discover_path(path: str) -> list[Run]:
    """``discover``, but a folder that cannot be listed is said to be so (rather than
    "contains no profiles")."""
    _check_listable(path)
    return discover(path)


def find_path(path: str) -> Discovery:
    """``discover_path``'s runs with the files skipped (at least one run, or the error)."""
    _check_listable(path)
    found = find_profiles(path)
    if not found.runs:
        discover(path)  # raises the error that says so, with what was skipped
    return found


def _check_listable(path: str) -> None:
    folder = Path(path)
    if folder.is_dir():
        try:
            with os.scandir(folder) as entries:
                next(entries, None)
        except OSError as error:
            raise StepscopeError(f"{folder}: cannot be read ({error.strerror or error})") from None


def load_profile(path: Path) -> Profile:
    """The profile at ``path``, each of its reader's warnings said on stderr."""
    profile = load(path)
    for warning in profile.info.get("warnings", []):
        warn(f"{path}: {warning}")
    return profile


def warn_failures(path: str, errors: list[str], loaded: int) -> None:
    """The first few load failures of a logdir, a count of the rest, and one summary line:
    an error (nothing loaded) or a warning (the report covers the profiles that loaded)."""
    for error in errors[:SHOWN_FAILURES]:
        warn(error)
    if len(errors) > SHOWN_FAILURES:
        warn(f"... and {len(errors) - SHOWN_FAILURES:,} more")
    if not loaded:
        raise StepscopeError(f"no profile in {path} could be read ({len(errors):,} failed; first: {errors[0]})")
    total = loaded + len(errors)
    warn(f"{len(errors):,} of {total:,} profiles in {path} could not be read; showing the other {loaded:,}")


def pick_host(path: str, run_name: str | None, host_name: str | None) -> Host:
    """The one profile a report is about: by --run / --host, or the only one there is."""
    run = pick_run(path, run_name)
    if host_name is not None:
        host = run.host(host_name)
        if host is None:
            raise StepscopeError(f"{path}: run {run.name!r} has no host {host_name!r} (hosts: {listed(h.name for h in run.hosts)})")
        return host
    if len(run.hosts) > 1:
        names = listed(host.name for host in run.hosts)
        raise StepscopeError(f"{path}: run {run.name!r} has {len(run.hosts)} hosts; choose one with --host ({names})")
    return run.hosts[0]


class _NamedRun(Protocol):
    """A run of a logdir (``logdir.Run``) or of a URL (``remote.UrlRun``), as pick_run sees it."""

    @property
    def name(self) -> str: ...


_R = TypeVar("_R", bound=_NamedRun)


@overload
def pick_run(path: str, run_name: str | None, find: None = None) -> Run: ...
@overload
def pick_run(path: str, run_name: str | None, find: Callable[[str], Sequence[_R]]) -> _R: ...
def pick_run(path: str, run_name: str | None, find: Callable[[str], Sequence[_NamedRun]] | None = None) -> _NamedRun:
    """The run a command is about: by --run, or the only one there is (runs listed by
    ``find``: ``discover_path``, or ``discover_url`` for a URL)."""
    all_runs = (find or discover_path)(path)
    runs = all_runs
    if run_name is not None:
        runs = [run for run in runs if run.name == run_name]
        if not runs:
            raise StepscopeError(f"{path}: no run named {run_name!r} (runs: {listed(run.name for run in all_runs)})")
    elif len(runs) > 1:
        raise StepscopeError(f"{path}: holds {len(runs)} runs; choose one with --run ({listed(run.name for run in runs)})")
    return runs[0]


def listed(names: Iterable[str]) -> str:
    """``a, b, c``; past SHOWN_CHOICES names, the rest counted (``stepscope info`` lists all)."""
    names = list(names)
    shown = ", ".join(names[:SHOWN_CHOICES])
    return shown if len(names) <= SHOWN_CHOICES else f"{shown}, ... and {len(names) - SHOWN_CHOICES:,} more"
