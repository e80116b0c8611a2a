"""Files done safely: profiles are read from regular files only, and written atomically
(a reader never sees a half-written profile or export)."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from stepscope.errors import ProfileFormatError

# Opening never blocks (a FIFO opened for reading waits for a writer without O_NONBLOCK)
# and never makes a terminal the controlling one; ignored for regular files.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOT_REGULAR = (
    (stat.S_ISDIR, "is a directory, not a profile file"),
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file; profiles are read from regular files only"),
    (stat.S_ISCHR, "is a character device, not a regular file; profiles are read from regular files only"),
    (stat.S_ISBLK, "is a block device, not a regular file; profiles are read from regular files only"),
    (stat.S_ISSOCK, "is a socket, not a regular file; profiles are read from regular files only"),
)


def is_regular_file(path: Path) -> bool:
    """Whether ``path`` (through symbolic links) is a regular file; False if it cannot be
    looked at. What run discovery lists: FIFOs, devices and sockets are skipped."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: Path) -> io.BufferedReader:
    """``path`` opened for reading (buffered), if it is a regular file; otherwise
    ProfileFormatError saying what it is. Checked before opening (opening a FIFO or a
    device can block or act) and again on the open file, so a FIFO swapped in between
    neither blocks (O_NONBLOCK) nor is read."""
    try:
        _check_regular(path, os.stat(path).st_mode)
        handle = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise ProfileFormatError(path, f"cannot be read ({error.strerror or error})") from None
    try:
        _check_regular(path, os.fstat(handle).st_mode)
        return os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise


def _check_regular(path: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    for test, problem in _NOT_REGULAR:
        if test(mode):
            raise ProfileFormatError(path, problem)
    raise ProfileFormatError(path, "is not a regular file; profiles are read from regular files only")


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
