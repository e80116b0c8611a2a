"""How much reading one profile file may cost: the readers' limits.

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
STEPSCOPE_MAX_MEMORY       (available)  a trace JSON load's estimated peak memory; unset:
                                        the memory available (``memory_budget``), and
                                        always what RLIMIT_AS leaves
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
from stepscope.sizes import NO_LIMIT, parse_size, size_text

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
# No fixed default: unset, a load may take what the machine has available (memory_budget).
MEMORY = Limit("STEPSCOPE_MAX_MEMORY", 0, "bytes")

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


# --- memory ----------------------------------------------------------------------------------

MEMINFO = Path("/proc/meminfo")
PROC_STATUS = Path("/proc/self/status")
CGROUP_MEMORY = Path("/sys/fs/cgroup")
# What this process's address-space limit (RLIMIT_AS) is called in messages: a dashboard
# worker's is STEPSCOPE_WORKER_MEMORY (``name_address_space_limit``), anyone else's the shell's.
_address_space = {"what": "the address-space limit leaves", "remedy": "limit ulimit -v; raise it to read larger profiles"}


@dataclass(frozen=True)
class MemoryBudget:
    """What a load may still allocate, what bounds it and how to raise it."""

    bytes: int
    what: str  # "the machine has available", ...: "more memory than <what>"
    remedy: str  # "limit STEPSCOPE_MAX_MEMORY=...; raise it to read larger profiles"

    def check(self, path: str | os.PathLike[str] | Path, events: int, estimate: int) -> None:
        """Raises ProfileLimitError when ``estimate`` bytes (for ``events`` events) exceed it:
        ``x.json.gz: loading it needs more memory than the machine has available, 3.1 GiB
        (6,000,000 events need about 3.2 GiB) (set STEPSCOPE_MAX_MEMORY to load it anyway)``."""
        if estimate > self.bytes:
            problem = f"loading it needs more memory than {self.what}, {size_text(self.bytes)} ({events:,} events need about {size_text(estimate)})"
            raise ProfileLimitError(path, f"{problem} ({self.remedy})", MEMORY.env, self.bytes)


def name_address_space_limit(what: str, remedy: str) -> None:
    """Names this process's address-space limit in messages (a dashboard worker's pool
    calls it where it sets the limit)."""
    _address_space.update(what=what, remedy=remedy)


def memory_budget() -> MemoryBudget | None:
    """The smallest of: ``STEPSCOPE_MAX_MEMORY`` when set (``none``: no such bound), else the
    memory the machine (or its container) has available now; and what this process's
    address-space limit leaves. None when nothing bounds it (or it cannot be read)."""
    bounds: list[MemoryBudget] = []
    text = os.environ.get(MEMORY.env, "").strip()
    if MEMORY.env in _set or (text and text.lower() not in NO_LIMIT):
        value = MEMORY.get()
        bounds.append(MemoryBudget(value, "the limit allows", f"limit {MEMORY.env}={value}; raise it to read larger profiles"))
    elif not text:
        available = _available_memory()
        if available is not None:
            bounds.append(MemoryBudget(available, "the machine has available", f"set {MEMORY.env} to load it anyway"))
    room = _address_space_room()
    if room is not None:
        bounds.append(MemoryBudget(room, _address_space["what"], _address_space["remedy"]))
    return min(bounds, key=lambda bound: bound.bytes, default=None)


def _kib_field(path: Path, name: str) -> int | None:
    """``Name:  123 kB`` of a /proc file, in bytes."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _available_memory() -> int | None:
    """MemAvailable (Linux), or less where a cgroup (v2) caps this process's container."""
    available = _kib_field(MEMINFO, "MemAvailable")
    with contextlib.suppress(OSError, ValueError):  # "max" or no cgroup v2: no cap
        cap = int((CGROUP_MEMORY / "memory.max").read_text()) - int((CGROUP_MEMORY / "memory.current").read_text())
        available = cap if available is None else min(available, cap)
    return available


def _address_space_room() -> int | None:
    """RLIMIT_AS's soft limit less the address space in use; None when unlimited."""
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    return max(soft - (_kib_field(PROC_STATUS, "VmSize") or 0), 0)
