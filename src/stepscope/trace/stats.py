"""Per-event stats ("args"), kept compact and decoded only when a view asks for them.

The hot columns an analysis needs (correlation ids and the like) are extracted into the
event table at load time; everything else an event carries stays here, in the form its
source had, and is decoded one event at a time for a details pane, an export or the
XSpace writer. Two stores share one small interface:

- :class:`JsonStats` holds each event's JSON ``args`` object as raw bytes (one blob plus
  offsets), as a Kineto or Chrome trace had them. Its stats view renames keys to XSpace's
  well-known names and derives ``kernel_details`` / ``memcpy_details``; ``raw`` returns
  the original bytes, so a Chrome export writes back exactly what was read.
- :class:`TypedStats` holds XSpace stats as sparse typed columns (event, key, kind, value).

Both are reordered with :meth:`take` (events are sorted after loading) without copying
their payload.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
import numpy as np

StatValue = int | float | str | bytes


class StatKind(enum.IntEnum):
    """The XStat value types (ref_value is resolved to STR when read)."""

    INT64 = 0
    UINT64 = 1
    DOUBLE = 2
    STR = 3
    BYTES = 4


INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1


def is_int64(value: Any) -> bool:
    """An int (not a bool) that fits a signed 64-bit id or time."""
    return isinstance(value, int) and not isinstance(value, bool) and INT64_MIN <= value <= INT64_MAX


@dataclass(frozen=True, slots=True)
class Stat:
    name: str
    kind: StatKind
    value: StatValue


def stat_from_python(name: str, value: Any) -> Stat:
    """Types a decoded JSON value as XSpace would store it.

    Integers past uint64 and containers have no XStat type and become their JSON text.
    """
    if isinstance(value, bool):
        return Stat(name, StatKind.INT64, int(value))
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return Stat(name, StatKind.INT64, value)
        if 0 <= value <= UINT64_MAX:
            return Stat(name, StatKind.UINT64, value)
        return Stat(name, StatKind.STR, str(value))
    if isinstance(value, float):
        return Stat(name, StatKind.DOUBLE, value)
    if isinstance(value, str):
        return Stat(name, StatKind.STR, value)
    if isinstance(value, bytes):
        return Stat(name, StatKind.BYTES, value)
    return Stat(name, StatKind.STR, _json_text(value))


def _json_text(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, ValueError, OverflowError):
        return str(value)


class StatStore(Protocol):
    """Stats of every event of one plane, addressed by event row."""

    def __len__(self) -> int: ...

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        """The event's stats, typed, with XSpace's names.

        ``name`` and ``category`` are the event's (from its metadata); a translating store
        uses them to derive stats such as ``memcpy_details``.
        """
        ...

    def raw(self, row: int) -> bytes:
        """The event's stats as a JSON object, as the source wrote them where it was JSON."""
        ...

    def value(self, row: int, stat: str, name: str = "", category: str = "") -> StatValue | None:
        """One stat of the event (None if it has none), without building the others."""
        ...

    def take(self, rows: np.ndarray) -> StatStore:
        """A store whose row ``i`` is this store's row ``rows[i]``."""
        ...


class EmptyStats:
    """A store for events that carry no stats."""

    def __init__(self, count: int) -> None:
        self._count = count

    def __len__(self) -> int:
        return self._count

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        return []

    def raw(self, row: int) -> bytes:
        return b"{}"

    def value(self, row: int, stat: str, name: str = "", category: str = "") -> StatValue | None:
        return None

    def take(self, rows: np.ndarray) -> EmptyStats:
        return EmptyStats(len(rows))


# Turns one decoded args object (with the event's name and category) into typed stats;
# the Kineto reader supplies one that renames keys and derives kernel_details, the Chrome
# reader a plain one.
ArgsTranslator = Callable[[dict[str, Any], str, str], list[Stat]]


def plain_translator(args: dict[str, Any], name: str = "", category: str = "") -> list[Stat]:
    return [stat_from_python(key, value) for key, value in args.items()]


_ARGS_DECODER = msgspec.json.Decoder()


class JsonStats:
    """Raw JSON ``args`` objects: ``blob[starts[i]:ends[i]]`` is row ``i``'s object."""

    def __init__(
        self,
        blob: bytes,
        starts: np.ndarray,
        ends: np.ndarray,
        translate: ArgsTranslator = plain_translator,
    ) -> None:
        self._blob = blob
        self._starts = starts
        self._ends = ends
        self._translate = translate

    def __len__(self) -> int:
        return len(self._starts)

    def raw(self, row: int) -> bytes:
        data = self._blob[self._starts[row] : self._ends[row]]
        return data or b"{}"

    def decoded(self, row: int) -> dict[str, Any]:
        data = self._blob[self._starts[row] : self._ends[row]]
        if not data:
            return {}
        try:
            value = _ARGS_DECODER.decode(data)
        except msgspec.DecodeError:
            # Stored by the tolerant reader path, which re-encodes what it read, so
            # this only happens for hand-made stores; fall back to the text.
            return {"args": data.decode("utf-8", "replace")}
        return value if isinstance(value, dict) else {"args": value}

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        return self._translate(self.decoded(row), name, category)

    def value(self, row: int, stat: str, name: str = "", category: str = "") -> StatValue | None:
        # A translator may know how to get one stat from the raw args cheaply (a typed
        # decode of the few keys it needs) instead of translating every arg.
        single = getattr(self._translate, "value", None)
        if single is not None:
            return single(self._blob[self._starts[row] : self._ends[row]], stat, name, category)
        return _first(self.stats(row, name, category), stat)

    def take(self, rows: np.ndarray) -> JsonStats:
        return JsonStats(self._blob, self._starts[rows], self._ends[rows], self._translate)

    def translated(self, translate: ArgsTranslator) -> JsonStats:
        return JsonStats(self._blob, self._starts, self._ends, translate)

    def views(self) -> Iterator[memoryview]:
        """Every row's raw args, as views into the blob (no copies)."""
        blob = memoryview(self._blob)
        for start, end in zip(self._starts.tolist(), self._ends.tolist()):
            yield blob[start:end]

    @property
    def nbytes(self) -> int:
        return len(self._blob) + self._starts.nbytes + self._ends.nbytes


class TypedStats:
    """Sparse typed stats: one entry per (event, stat), sorted by event.

    ``rows`` maps this store's row to the event index the entries were recorded under, so
    :meth:`take` only permutes that map.
    """

    def __init__(
        self,
        event: np.ndarray,
        key: np.ndarray,
        kind: np.ndarray,
        values: Sequence[StatValue],
        key_names: Sequence[str],
        rows: np.ndarray,
    ) -> None:
        order = np.argsort(event, kind="stable")
        self._event = event[order]
        self._key = key[order]
        self._kind = kind[order]
        self._values = [values[i] for i in order.tolist()]
        self._key_names = list(key_names)
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        source = self._rows[row]
        lo = int(np.searchsorted(self._event, source, "left"))
        hi = int(np.searchsorted(self._event, source, "right"))
        return [
            Stat(self._key_names[self._key[i]], StatKind(int(self._kind[i])), self._values[i])
            for i in range(lo, hi)
        ]

    def raw(self, row: int) -> bytes:
        return msgspec.json.encode({s.name: _jsonable(s.value) for s in self.stats(row)})

    def value(self, row: int, stat: str, name: str = "", category: str = "") -> StatValue | None:
        return _first(self.stats(row), stat)

    def column(self, name: str) -> tuple[np.ndarray, list[StatValue]]:
        """Rows that carry stat ``name`` and its values there: a whole-plane lookup
        (e.g. every XLA op's ``hlo_op``) without decoding events one by one."""
        if name not in self._key_names:
            return np.zeros(0, dtype=np.int64), []
        entries = np.flatnonzero(self._key == self._key_names.index(name))
        position = np.full(int(self._rows.max()) + 1 if len(self._rows) else 0, -1, dtype=np.int64)
        position[self._rows] = np.arange(len(self._rows))
        sources = self._event[entries]
        inside = sources < len(position)
        rows = np.where(inside, position[np.minimum(sources, max(len(position) - 1, 0))], -1)
        keep = np.flatnonzero(rows >= 0)
        return rows[keep], [self._values[int(entries[i])] for i in keep.tolist()]

    def take(self, rows: np.ndarray) -> TypedStats:
        clone = object.__new__(TypedStats)
        clone._event, clone._key, clone._kind = self._event, self._key, self._kind
        clone._values, clone._key_names = self._values, self._key_names
        clone._rows = self._rows[rows]
        return clone


def _first(stats: list[Stat], name: str) -> StatValue | None:
    return next((stat.value for stat in stats if stat.name == name), None)


def _jsonable(value: StatValue) -> Any:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
