"""Where a command's output goes: checked before any work (an output that can never be
written fails first), written whole or not at all, and its write failure said in one line."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from stepscope.errors import StepscopeError


def check_output(path: Path) -> None:
    """Fails early, before any work, on an output that can never be written: a folder, or a
    name under a plain file. (Permissions are found when writing; the write is atomic.)"""
    if path.is_dir():
        raise StepscopeError(f"{path}: is a directory; give a file name for the output")
    blocked = file_in_the_way(path.parent)
    if blocked:
        raise StepscopeError(f"{path}: not written ({blocked})")


def file_in_the_way(folder: Path) -> str | None:
    """Why ``folder`` can never be created: it, or the nearest existing folder above it, is a file."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else f"{candidate} is a file, not a directory"
    return None


def cannot_write(path: Path, error: OSError) -> StepscopeError:
    """The one line for an output that could not be written; the old file, if any, is untouched."""
    reason = error.strerror or str(error)
    where = Path(error.filename) if isinstance(error.filename, str) else None
    if where is not None and where.name.startswith(f".{path.name}.") and where.name.endswith(".tmp"):
        # atomic_output's temporary file beside the output: the folder is the problem.
        reason = f"cannot create a file in {path.parent}: {reason}"
    elif where is not None and where != path:
        reason = f"{where}: {reason}"
    return StepscopeError(f"{path}: not written ({reason})")


def write_output(output: str | None, text: str) -> None:
    """``text`` to the file ``--output`` names (whole or not at all), else to stdout."""
    if not output:
        sys.stdout.write(text)
        return
    from stepscope.trace.files import atomic_write

    try:
        atomic_write(Path(output), text.encode())
    except OSError as error:
        raise cannot_write(Path(output), error) from error
    print(f"wrote {output}", file=sys.stderr)


STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"  # the file a GitHub Actions step appends Markdown to


def append_step_summary(markdown: str) -> None:
    """``markdown`` appended to the job summary file GitHub Actions names in
    ``$GITHUB_STEP_SUMMARY`` (appended, as the runner expects: earlier steps' summaries stay);
    nothing outside Actions, where it is not set."""
    target = os.environ.get(STEP_SUMMARY_ENV)
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as summary:
            summary.write(markdown)
    except OSError as error:
        raise StepscopeError(f"{target} (${STEP_SUMMARY_ENV}): not written ({error.strerror or error})") from None


def check_writable_folder(folder: Path, role: str, hint: str = "") -> None:
    """``folder`` can be created and written into, or one line saying why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = file_in_the_way(folder) or error.strerror or str(error)
        raise StepscopeError(f"{folder}: cannot be used as {role} ({reason}){hint}") from None
