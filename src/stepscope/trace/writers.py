"""Writing a Profile: the registry of writers, chosen by the output file's suffix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from stepscope.errors import StepscopeError
from stepscope.trace.formats.chrome.export import write_chrome_trace
from stepscope.trace.formats.perfetto.write import write_perfetto
from stepscope.trace.formats.xspace.write import write_xspace
from stepscope.trace.model import Profile

Progress = Callable[[int], object]  # a progress bar's update(n): what it returns is ignored


def _xspace(profile: Profile, path: Path, progress: Progress | None) -> None:
    write_xspace(profile, path)
    if progress:
        progress(profile.event_count)


# Suffix -> writer; the longest matching suffix wins.
WRITERS: dict[str, Callable[[Profile, Path, Progress | None], None]] = {
    ".xplane.pb": _xspace,
    ".xplane.pb.gz": _xspace,
    ".json": write_chrome_trace,
    ".json.gz": write_chrome_trace,
    ".pftrace": write_perfetto,
}


def writer_suffix(path: Path) -> str:
    matches = [suffix for suffix in WRITERS if path.name.endswith(suffix)]
    if not matches:
        known = ", ".join(sorted(WRITERS))
        raise StepscopeError(f"{path}: unknown output format (the name must end in one of {known})")
    return max(matches, key=len)


def save(profile: Profile, path: str | Path, progress: Progress | None = None) -> None:
    """Writes ``profile`` in the format its suffix names, atomically."""
    path = Path(path)
    WRITERS[writer_suffix(path)](profile, path, progress)
