"""The stats of many events at once, as columns: what the XSpace writer encodes in bulk.

A store's ``stats(row)`` builds Python objects for one event; a writer of millions of
events asks instead for :class:`StatEntries`, one entry per (event, stat) in typed numpy
columns, with the values already as XSpace stores them (a string as its UTF-8 bytes, a
double as its 64 bits). Each store answers in the way its storage allows
(``entries(rows, types, skip)``):

- :class:`~stepscope.trace.stats.TypedStats` slices its typed columns; only string values
  kept as Python objects (not read from a file) are encoded one by one, once per value;
- :class:`~stepscope.trace.stats.JsonStats` translates the args of the events that have
  any, one event at a time (the translation is Python), and the stats that events without
  args get from their type once per type;
- ``ConcatStats`` (merge.py) asks each of its stores and interleaves the answers;
- any other store is asked ``stats(row)`` for every row (:func:`stat_entries`).

The values follow what the per-event writer did with a :class:`~stepscope.trace.stats.Stat`:
a DOUBLE is ``float(value)``, an INT64 or UINT64 ``int(value)`` (out of range: ValueError,
as protobuf raises), BYTES ``bytes(value)``, anything else ``str(value)`` as UTF-8 (lone
surrogates replaced, as protobuf requires valid UTF-8).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.trace.stat_types import INT64_MAX, INT64_MIN, UINT64_MAX, Stat, StatKind, StatValue

_INT64 = struct.Struct("<q")
_DOUBLE = struct.Struct("<d")


@dataclass(frozen=True, eq=False)
class EventTypes:
    """The type of each of many events (``names[metadata_id[i]]``, ``categories[...]``):
    what a translating store derives stats from."""

    metadata_id: np.ndarray
    names: Sequence[str]
    categories: Sequence[str]

    def at(self, position: int) -> tuple[str, str]:
        metadata_id = int(self.metadata_id[position])
        return self.names[metadata_id], self.categories[metadata_id]

    def take(self, positions: np.ndarray) -> EventTypes:
        return EventTypes(self.metadata_id[positions], self.names, self.categories)


@dataclass(frozen=True, eq=False)
class StatEntries:
    """Entry ``i`` is stat ``names[key[i]]`` of event ``row[i]`` (a position in the rows
    asked for), of kind ``kind[i]`` (StatKind); ``bits`` holds an INT64 value, a UINT64's
    or a DOUBLE's 64 bits, or for STR and BYTES the number ``j`` of the value's bytes,
    ``text_blob[text_offsets[j]:text_offsets[j + 1]]``. Sorted by row; an event's entries
    in the order its store's ``stats()`` lists them."""

    row: np.ndarray  # int64
    key: np.ndarray  # int32
    kind: np.ndarray  # int8
    bits: np.ndarray  # int64
    names: list[str]
    text_blob: np.ndarray  # uint8
    text_offsets: np.ndarray  # int64, one more than there are texts

    def __len__(self) -> int:
        return len(self.row)

    @classmethod
    def empty(cls) -> StatEntries:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, none.astype(np.int32), none.astype(np.int8), none, [], np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64))

    def text(self, number: int) -> bytes:
        return self.text_blob[self.text_offsets[number] : self.text_offsets[number + 1]].tobytes()

    @classmethod
    def merge(cls, parts: list[StatEntries]) -> StatEntries:
        """Entries of disjoint sets of rows (each row's entries in one part), as one."""
        parts = [part for part in parts if len(part)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        key_index: dict[str, int] = {}
        keys, bits, blobs, offsets = [], [], [], []
        text_base = blob_base = 0
        for part in parts:
            codes = np.asarray([key_index.setdefault(name, len(key_index)) for name in part.names], dtype=np.int32)
            keys.append(codes[part.key])
            text = part.kind >= StatKind.STR
            bits.append(np.where(text, part.bits + text_base, part.bits))
            blobs.append(part.text_blob)
            offsets.append(part.text_offsets[:-1] + blob_base)
            text_base += len(part.text_offsets) - 1
            blob_base += len(part.text_blob)
        row = np.concatenate([part.row for part in parts])
        order = np.argsort(row, kind="stable")
        return cls(
            row[order],
            np.concatenate(keys)[order],
            np.concatenate([part.kind for part in parts])[order],
            np.concatenate(bits)[order],
            list(key_index),
            np.concatenate(blobs),
            np.concatenate([*offsets, [blob_base]]).astype(np.int64),
        )


def utf8(text: str) -> bytes:
    """``text`` as UTF-8, lone surrogates (from JSON escapes) replaced, as protobuf needs."""
    return text.encode("utf-8", "replace")


def xstat_value(kind: int, value: Any) -> tuple[StatKind, int | bytes]:
    """A stat's kind as written and its 64 bits, or its bytes for STR and BYTES."""
    if kind == StatKind.DOUBLE:
        return StatKind.DOUBLE, _INT64.unpack(_DOUBLE.pack(float(value)))[0]
    if kind == StatKind.UINT64 or kind == StatKind.INT64:
        number = int(value)
        low, high = (0, UINT64_MAX) if kind == StatKind.UINT64 else (INT64_MIN, INT64_MAX)
        if not low <= number <= high:
            raise ValueError(f"value out of range for a {StatKind(kind).name} stat: {number}")
        return StatKind(kind), number - (1 << 64) if number > INT64_MAX else number
    if kind == StatKind.BYTES:
        return StatKind.BYTES, bytes(value)
    return StatKind.STR, utf8(str(value))


class EntryBuilder:
    """Collects entries from Python values, row by row (rows ascending); texts shared by value."""

    def __init__(self) -> None:
        self._rows: list[int] = []
        self._keys: list[int] = []
        self._kinds: list[int] = []
        self._bits: list[int] = []
        self._names: dict[str, int] = {}
        self._texts: dict[bytes, int] = {}
        self._strings: dict[str, int] = {}  # str values seen: their text's number

    def add(self, row: int, name: str, kind: int, value: StatValue) -> None:
        if kind is _INT and type(value) is int and INT64_MIN <= value <= INT64_MAX:
            bits: int = value  # the common cases first, without a call
        elif kind is _STR and type(value) is str:
            bits = self._strings.get(value, -1)
            if bits < 0:
                bits = self._strings[value] = self._texts.setdefault(utf8(value), len(self._texts))
        else:
            kind, written = xstat_value(kind, value)
            bits = self._texts.setdefault(written, len(self._texts)) if isinstance(written, bytes) else written
        self._rows.append(row)
        names = self._names
        key = names.get(name)
        self._keys.append(key if key is not None else names.setdefault(name, len(names)))
        self._kinds.append(kind)
        self._bits.append(bits)

    def add_stats(self, row: int, stats: Iterable[Stat], skip: frozenset[str] = frozenset()) -> None:
        add = self.add
        for stat in stats:
            if stat.name not in skip:
                add(row, stat.name, stat.kind, stat.value)

    def finish(self) -> StatEntries:
        blob, offsets = text_table(list(self._texts))
        return StatEntries(
            np.asarray(self._rows, dtype=np.int64),
            np.asarray(self._keys, dtype=np.int32),
            np.asarray(self._kinds, dtype=np.int8),
            np.asarray(self._bits, dtype=np.int64),
            list(self._names),
            blob,
            offsets,
        )


_INT, _STR = StatKind.INT64, StatKind.STR


def text_table(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """One blob of ``texts`` and their offsets."""
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if texts:
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
    return np.frombuffer(b"".join(texts), dtype=np.uint8), offsets


def stat_entries(store: Any, rows: np.ndarray, types: EventTypes, skip: frozenset[str] = frozenset()) -> StatEntries:
    """The stats of ``store``'s ``rows`` (entry rows are positions in ``rows``) but those
    named in ``skip`` (not even converted); ``types`` are those events' types."""
    bulk = getattr(store, "entries", None)
    if bulk is not None:
        entries: StatEntries = bulk(rows, types, skip)
        return entries
    builder = EntryBuilder()
    for position, row in enumerate(rows.tolist()):
        builder.add_stats(position, store.stats(row, *types.at(position)), skip)
    return builder.finish()
