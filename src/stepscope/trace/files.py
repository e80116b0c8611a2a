"""Files done safely: profiles are read from regular files only, within the input limit
(gzip inflated in bounded pieces), and written atomically (a reader never sees a
half-written profile or export).

A process that serves a log directory (the dashboard's workers) confines its reads to it
(``confine_reads``): the file actually opened must lie inside, checked on the open file
itself, so a profile swapped for a link to a file elsewhere between the listing and the
read is refused, not served."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import queue
import stat
import threading
import zlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from stepscope.errors import ProfileFormatError
from stepscope.sizes import size_text
from stepscope.trace import limits

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


# The folder every profile opened must lie in (None: anywhere), set by ``confine_reads``.
_confined_to: Path | None = None
OUTSIDE = "lies outside the log directory (through a link); it is not read"


def confine_reads(root: str | os.PathLike[str] | None) -> None:
    """From now on this process opens profiles inside ``root`` only (None: anywhere)."""
    global _confined_to
    _confined_to = None if root is None else Path(os.path.realpath(root))


def _opened_path(handle: int, path: Path) -> Path | None:
    """The real path of the open file ``handle``: the kernel's name for it (Linux), else
    ``path`` resolved, if that is still the same file (None when it is not: it changed)."""
    with contextlib.suppress(OSError):
        return Path(os.readlink(f"/proc/self/fd/{handle}"))
    try:
        real = Path(os.path.realpath(path))
        opened, named = os.fstat(handle), os.stat(real)
    except OSError:
        return None
    return real if (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino) else None


def real_path(stream: io.BufferedReader, path: Path) -> Path | None:
    """The real path of the file ``stream`` opened as ``path`` (None where it changed since)."""
    return _opened_path(stream.fileno(), path)


def _check_inside(path: Path, handle: int) -> None:
    if _confined_to is None:
        return
    real = _opened_path(handle, path)
    if real is None or not real.is_relative_to(_confined_to):
        raise ProfileFormatError(path, OUTSIDE)


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
    neither blocks (O_NONBLOCK) nor is read; where reads are confined (``confine_reads``),
    the open file must lie inside the folder."""
    try:
        _check_regular(path, os.stat(path).st_mode)
        handle = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise ProfileFormatError(path, f"cannot be read ({error.strerror or error})") from None
    try:
        _check_regular(path, os.fstat(handle).st_mode)
        _check_inside(path, handle)
        return os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise


def open_cache_file(path: Path) -> io.BufferedReader:
    """A file stepscope wrote into its cache, opened for reading: a regular file, not
    reached through a link, opened without blocking (a FIFO put there is refused, not
    waited on); OSError otherwise, for the caller to rebuild what the file held."""
    handle = os.open(path, _OPEN_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    if not stat.S_ISREG(os.fstat(handle).st_mode):
        os.close(handle)
        raise OSError(errno.EINVAL, f"{path} is not a regular file")
    return os.fdopen(handle, "rb")


def read_cache_file(path: Path) -> bytes:
    """The bytes of a cache file (:func:`open_cache_file`'s checks)."""
    with open_cache_file(path) as stream:
        return stream.read()


def _check_regular(path: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    for test, problem in _NOT_REGULAR:
        if test(mode):
            raise ProfileFormatError(path, problem)
    raise ProfileFormatError(path, "is not a regular file; profiles are read from regular files only")


# Gzip reading: compressed bytes read at a time, and the most decompressed at a time.
_READ_CHUNK = 1 << 20
_INFLATE_CHUNK = 1 << 20  # (measured: 16 MiB pieces took 1.8x as long to gunzip a 30 MB trace, their buffers never reused)
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip member: header, deflate data, CRC-32 and size checked by zlib
GZIP_MAGIC = b"\x1f\x8b"
# What inflates: ISA-L's zlib-compatible module (the same streams, checks and
# ``decompressobj`` interface) takes half zlib's time, a twentieth of loading the V100
# traces; zlib itself where isal is not installed.
INFLATER: Any
try:
    from isal import isal_zlib as INFLATER
except ImportError:  # a platform without isal's wheels
    INFLATER = zlib


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[tuple[io.BufferedReader, int, int]]:
    """``path`` opened (:func:`open_regular`), with its size on disk and the input limit,
    once it is known to be within the limit; an OSError while it is read is a
    ProfileFormatError. What the whole-file and the piece-by-piece readers share."""
    limit = limits.INPUT_BYTES.get()
    with open_regular(path) as stream:
        try:
            size = os.fstat(stream.fileno()).st_size
            if size > limit:
                raise limits.INPUT_BYTES.error(path, f"is {size_text(size)} on disk, more than {size_text(limit)}")
            yield stream, size, limit
        except OSError as error:
            raise ProfileFormatError(path, f"cannot be read ({error.strerror or error})") from None


def read_bytes(path: Path, check_head: Callable[[bytes], None] | None = None) -> bytes | bytearray:
    """The file's bytes, gunzipped if it is gzip (by content, not by name).

    Only regular files are read (:func:`open_regular`), and at most
    ``limits.INPUT_BYTES`` of them, on disk and once decompressed: a bigger file, or a gzip
    bomb, raises ProfileLimitError after reading no more than the limit. Gzip is
    decompressed in pieces straight into one growing buffer, so the peak is the
    decompressed size, not twice it (a ``bytearray``: every reader takes any buffer).
    ``check_head`` sees the first decompressed piece (up to 1 MiB) and may raise, so that
    a file that is not a profile fails before it is all decompressed.
    """
    with _opened(path) as (stream, size, limit):
        if stream.peek(2)[:2] == GZIP_MAGIC:
            return gunzip_stream(path, stream, limit, check_head)
        data = stream.read(size + 1)  # one allocation; one byte more: did it grow?
        if len(data) > size:
            data += stream.read(limit + 1 - len(data))
            if len(data) > limit:
                raise limits.INPUT_BYTES.error(path, f"grew past {size_text(limit)} while being read")
    return data


def read_pieces(path: Path, check_head: Callable[[bytes], None] | None = None) -> Generator[bytes, None, None]:
    """The bytes :func:`read_bytes` returns, as pieces of up to 1 MiB, read (and
    gunzipped) as they are asked for, within the same limits and with the same errors: a
    reader that decodes as it goes never holds the whole file. Gzip is inflated by a
    thread up to ``AHEAD_PIECES`` pieces ahead of the reader (:func:`ahead`)."""
    with _opened(path) as (stream, _size, limit):
        if stream.peek(2)[:2] == GZIP_MAGIC:
            yield from ahead(inflate_pieces(path, stream, limit, check_head), AHEAD_PIECES)
            return
        total = 0
        while piece := stream.read(_READ_CHUNK):
            total += len(piece)
            if total > limit:
                raise limits.INPUT_BYTES.error(path, f"grew past {size_text(limit)} while being read")
            yield piece


# Pieces inflated ahead of the reader: zlib (and ISA-L) inflate with the GIL released, as
# the JSON scanner scans, so the two run side by side; a few MiB in flight at most.
AHEAD_PIECES = 4
_QUEUE_WAIT_S = 0.1


def ahead(pieces: Iterator[bytes], depth: int) -> Iterator[bytes]:
    """``pieces``, made by a thread of their own up to ``depth`` ahead of the caller, in
    order; what making them raises is raised here, where it would have been. A caller
    that stops early (closes this generator) stops the thread at its next piece."""
    out: queue.Queue[tuple[bool, Any]] = queue.Queue(depth)
    stop = threading.Event()

    def give(item: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            try:
                out.put(item, timeout=_QUEUE_WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def make() -> None:
        try:
            for piece in pieces:
                if not give((True, piece)):
                    return
        except BaseException as error:  # handed to the caller, raised there
            give((False, error))
            return
        give((False, None))

    worker = threading.Thread(target=make, name="stepscope-inflate", daemon=True)
    worker.start()
    try:
        while True:
            is_piece, item = out.get()
            if not is_piece:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        stop.set()
        worker.join()


def gunzip_stream(path: Path, stream: BinaryIO, limit: int, check_head: Callable[[bytes], None] | None) -> bytearray:
    """Decompresses the gzip ``stream`` (concatenated members and zero padding between
    them allowed, as ``gzip.decompress``), at most ``limit`` bytes of it (``path`` names it
    in errors). Any binary stream: a local file, or a URL's bytes (``trace.remote``)."""
    out = bytearray()
    for piece in inflate_pieces(path, stream, limit, check_head):
        out += piece
    return out


def inflate_pieces(path: Path, stream: BinaryIO, limit: int, check_head: Callable[[bytes], None] | None) -> Iterator[bytes]:
    """:func:`gunzip_stream`'s output, a piece (up to 1 MiB) at a time."""
    total = 0
    unpacker = INFLATER.decompressobj(_GZIP_WBITS)
    data = stream.read(_READ_CHUNK)
    try:
        while True:
            piece = unpacker.decompress(data, min(_INFLATE_CHUNK, limit + 1 - total))
            total += len(piece)
            if total > limit:
                raise limits.INPUT_BYTES.error(path, f"decompresses to more than {size_text(limit)}")
            if check_head is not None and piece:
                check_head(piece)
                check_head = None
            if piece:
                yield piece
            if unpacker.eof:  # a member ended: another may follow, after zero padding
                data = unpacker.unused_data.lstrip(b"\0")
                while not data:
                    more = stream.read(_READ_CHUNK)
                    if not more:
                        return
                    data = more.lstrip(b"\0")
                unpacker = INFLATER.decompressobj(_GZIP_WBITS)
                continue
            data = unpacker.unconsumed_tail
            if not data and len(piece) < _INFLATE_CHUNK:  # (a full piece may leave output pending)
                data = stream.read(_READ_CHUNK)
                if not data:
                    raise ProfileFormatError(path, "gzip data is truncated or corrupt (Compressed file ended before the end-of-stream marker was reached)")
    except INFLATER.error as error:
        raise ProfileFormatError(path, f"gzip data is truncated or corrupt ({error})") from None


@contextlib.contextmanager
def atomic_output(path: Path, replace: bool = True) -> Iterator[BinaryIO]:
    """Yields a temporary file beside ``path``; renames it over ``path`` only on success.
    With ``replace=False`` an existing ``path`` is left as it is (``FileExistsError``): the
    file is linked into place, which fails rather than overwrite."""
    import tempfile  # here: loading a profile writes nothing, and tempfile costs ~1 MB of RSS

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
