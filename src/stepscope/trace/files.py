"""Writing files atomically: a reader never sees a half-written profile or export."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def atomic_output(path: Path, replace: bool = True) -> Iterator[BinaryIO]:
    """Yields a temporary file beside ``path``; renames it over ``path`` only on success.
    With ``replace=False`` an existing ``path`` is left as it is (``FileExistsError``): the
    file is linked into place, which fails rather than overwrite."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        # mkstemp makes the file private (0600); a profile is shared like any file written
        # with open(): readable by TensorBoard running as another user, per the umask.
        os.chmod(temporary, 0o666 & ~_umask())
        if replace:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)
            os.unlink(temporary)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_write(path: Path, data: bytes, replace: bool = True) -> None:
    with atomic_output(path, replace) as stream:
        stream.write(data)
