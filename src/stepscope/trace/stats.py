"""Per-event stats ("args"), kept compact and decoded only when a view asks for them.

The hot columns an analysis needs (correlation ids and the like) are extracted into the
event table at load time; everything else an event carries stays here, in the form its
source had, and is decoded one event at a time for a details pane, an export or the
XSpace writer. Two stores share one small interface:

- :class:`JsonStats` holds each event's JSON ``args`` object as raw bytes (one blob plus
  offsets), as a Kineto or Chrome trace had them. Its stats view renames keys to XSpace's
  well-known names and derives ``kernel_details`` / ``memcpy_details``; ``raw`` returns
  the original bytes, so a Chrome export writes back exactly what was read.
- :class:`TypedStats` holds XSpace stats as sparse typed numpy columns (event, key, kind,
  64-bit value), strings and bytes in one blob decoded when asked for: a few bytes per
  stat, no Python object.

Both are reordered with :meth:`take` (events are sorted after loading) without copying
their payload, and give many events' stats at once as columns with ``entries`` (see
:mod:`stepscope.trace.stat_entries`), which the XSpace writer encodes in bulk.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope import jsonform
from stepscope.trace.stat_entries import EntryBuilder, EventTypes, StatEntries, text_table, xstat_value
from stepscope.trace.stat_types import INT64_MAX, INT64_MIN, UINT64_MAX, Stat, StatKind, StatValue, stat_from_python


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

    def entries(self, rows: np.ndarray, types: EventTypes, skip: frozenset[str] = frozenset()) -> StatEntries:
        return StatEntries.empty()


# Turns one decoded args object (with the event's name and category) into typed stats;
# the Kineto reader supplies one that renames keys and derives kernel_details, the Chrome
# reader a plain one.
ArgsTranslator = Callable[[dict[str, Any], str, str], list[Stat]]


def plain_translator(args: dict[str, Any], name: str = "", category: str = "") -> list[Stat]:
    return [stat_from_python(key, value) for key, value in args.items()]


# The bytes a store slices its payload from: in memory, or a file mapped read-only by
# ``trace.store`` (an mmap slices to ``bytes`` as ``bytes`` does).
Blob = bytes | mmap.mmap

_ARGS_DECODER = msgspec.json.Decoder()
# What a row's args become where decoding or translating them runs past Python's recursion
# limit: args nested just under the reader's limit load (the reader decodes them near the
# bottom of the stack), but a details pane decodes them deeper in it. One stat of this
# text, not the args and not an error, so that the event's other details still show.
ARGS_TOO_DEEP = "args nested too deeply to show"


class JsonStats:
    """Raw JSON ``args`` objects: ``blob[starts[i]:ends[i]]`` is row ``i``'s object."""

    def __init__(
        self,
        blob: Blob,
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
        except RecursionError:
            return {"args": ARGS_TOO_DEEP}
        return value if isinstance(value, dict) else {"args": value}

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        return self._translated(self.decoded(row), name, category)

    def _translated(self, args: dict[str, Any], name: str, category: str) -> list[Stat]:
        """The translator's stats of ``args``; of ARGS_TOO_DEEP where it recurses too deep
        (the JSON text of a nested value is encoded one level deeper than it was decoded)."""
        try:
            return self._translate(args, name, category)
        except RecursionError:
            return self._translate({"args": ARGS_TOO_DEEP}, name, category)

    def value(self, row: int, stat: str, name: str = "", category: str = "") -> StatValue | None:
        # A translator may know how to get one stat from the raw args cheaply (a typed
        # decode of the few keys it needs) instead of translating every arg.
        single = getattr(self._translate, "value", None)
        if single is not None:
            try:
                found: StatValue | None = single(self._blob[self._starts[row] : self._ends[row]], stat, name, category)
                return found
            except RecursionError:
                pass  # what stats() has for args nested too deeply
        return _first(self.stats(row, name, category), stat)

    def take(self, rows: np.ndarray) -> JsonStats:
        return JsonStats(self._blob, self._starts[rows], self._ends[rows], self._translate)

    def parts(self) -> tuple[Blob, np.ndarray, np.ndarray, ArgsTranslator]:
        """What the constructor took (``trace.store`` saves them)."""
        return self._blob, self._starts, self._ends, self._translate

    def entries(self, rows: np.ndarray, types: EventTypes, skip: frozenset[str] = frozenset()) -> StatEntries:
        """Rows with args are translated one by one; a row without args gets what its type
        translates to from no args (Kineto's memcpy_details), worked out once per type."""
        starts, ends = self._starts[rows], self._ends[rows]
        todo = ends > starts
        from_type: dict[int, list[Stat]] = {}
        bare = np.flatnonzero(~todo)
        if len(bare):
            bare_types = types.metadata_id[bare]
            for metadata_id in np.unique(bare_types).tolist():
                stats = self._translate({}, types.names[metadata_id], types.categories[metadata_id])
                if stats:
                    from_type[metadata_id] = stats
            if from_type:
                todo[bare[np.isin(bare_types, list(from_type))]] = True
        builder = EntryBuilder()
        blob, decode, translate = self._blob, _ARGS_DECODER.decode, self._translate
        positions = np.flatnonzero(todo)
        for position, start, end, metadata_id in zip(
            positions.tolist(), starts[positions].tolist(), ends[positions].tolist(), types.metadata_id[positions].tolist()
        ):
            if start == end:
                builder.add_stats(position, from_type[metadata_id], skip)
                continue
            try:
                args = decode(blob[start:end])
            except (msgspec.DecodeError, RecursionError):
                args = self.decoded(rows[position])  # its fallbacks
            if not isinstance(args, dict):
                args = {"args": args}
            name, category = types.names[metadata_id], types.categories[metadata_id]
            try:
                translated = translate(args, name, category)
            except RecursionError:
                translated = translate({"args": ARGS_TOO_DEEP}, name, category)
            builder.add_stats(position, translated, skip)
        return builder.finish()

    def translated(self, translate: ArgsTranslator) -> JsonStats:
        return JsonStats(self._blob, self._starts, self._ends, translate)

    def joined(self, size: int) -> Iterator[tuple[np.ndarray, memoryview | None]]:
        """The rows with args, ``size`` at a time, each batch with its rows' args as one
        text, comma-separated (wrapped in brackets, a JSON array): where the blob holds them
        so, in row order, as the Chrome reader stores them, one decode per batch instead of
        one per row. The text is None where the rows' args are not stored so."""
        starts, ends = self._starts, self._ends
        present = np.flatnonzero(ends > starts)
        blob = memoryview(self._blob)
        data = np.frombuffer(self._blob, dtype=np.uint8)
        for lo in range(0, len(present), size):
            rows = present[lo : lo + size]
            between = ends[rows[:-1]]
            joined = bool(np.all(starts[rows[1:]] == between + 1)) and bool(np.all(data[between] == ord(",")))
            yield rows, (blob[int(starts[rows[0]]) : int(ends[rows[-1]])] if joined else None)

    def views(self) -> Iterator[memoryview]:
        """Every row's raw args, as views into the blob (no copies)."""
        blob = memoryview(self._blob)
        for start, end in zip(self._starts.tolist(), self._ends.tolist()):
            yield blob[start:end]

    @property
    def nbytes(self) -> int:
        return len(self._blob) + self._starts.nbytes + self._ends.nbytes


_KINDS = tuple(StatKind)
_UINT64_MASK = (1 << 64) - 1
_INT64 = struct.Struct("<q")
_DOUBLE = struct.Struct("<d")


class TextValues:
    """The string and bytes values of a :class:`TypedStats`, addressed by number.

    Value ``j`` is ``blob[offsets[j]:offsets[j + 1]]`` (UTF-8 for a string: the reader
    checked it), decoded when asked for, then ``extra[j - len(offsets) + 1]`` (strings
    shared by many entries, such as XSpace's ref_value names).
    """

    def __init__(self, blob: Blob, offsets: np.ndarray, extra: Sequence[StatValue] = ()) -> None:
        self._blob = blob
        self._offsets = offsets
        self._count = len(offsets) - 1
        self._extra = list(extra)

    @classmethod
    def of(cls, values: Sequence[StatValue]) -> TextValues:
        return cls(b"", np.zeros(1, dtype=np.int64), values)

    def with_extra(self, extra: Sequence[StatValue]) -> TextValues:
        """These values, then ``extra``."""
        return TextValues(self._blob, self._offsets, [*self._extra, *extra])

    def parts(self) -> tuple[Blob, np.ndarray, list[StatValue]]:
        """What the constructor took (``trace.store`` saves them)."""
        return self._blob, self._offsets, self._extra

    def get(self, index: int, kind: int) -> StatValue:
        if index >= self._count:
            return self._extra[index - self._count]
        data = self._blob[self._offsets[index] : self._offsets[index + 1]]
        return data.decode("utf-8") if kind == StatKind.STR else data

    def get_many(self, indices: np.ndarray, kind: int) -> list[StatValue]:
        """``[get(index, kind) for index in indices]``, the blob's offsets read in bulk (a
        million texts: a second of ``get`` calls, each indexing the offsets twice)."""
        offsets, count, blob, extra = self._offsets, self._count, self._blob, self._extra
        inside = indices < count
        within = indices[inside]
        starts, ends = offsets[within].tolist(), offsets[within + 1].tolist()
        found: list[StatValue]
        if kind == StatKind.STR:
            found = [blob[start:end].decode("utf-8") for start, end in zip(starts, ends)]
        else:
            found = [blob[start:end] for start, end in zip(starts, ends)]
        if bool(inside.all()):
            return found
        values: list[StatValue] = [b""] * len(indices)  # every place filled below
        for position, value in zip(np.flatnonzero(inside).tolist(), found):
            values[position] = value
        for position, index in zip(np.flatnonzero(~inside).tolist(), indices[~inside].tolist()):
            values[position] = extra[index - count]
        return values

    @property
    def nbytes(self) -> int:
        return len(self._blob) + self._offsets.nbytes


class TypedStats:
    """Sparse typed stats: one entry per (event, stat), sorted by event, in typed columns.

    An entry is its event, its key (an index into ``key_names``), its kind and its value:
    ``bits`` holds an INT64 value, a UINT64's or a DOUBLE's 64 bits, or for STR and BYTES
    the number of the value in a :class:`TextValues`; so a profile's stats cost a few
    bytes each, not a Python object. ``rows`` maps this store's row to the event index the
    entries were recorded under (None: the same index), so :meth:`take` only permutes that map.

    The constructor takes Python values; readers that decode in bulk use :meth:`from_columns`.
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
        kinds = np.asarray(kind, dtype=np.int8)[order]
        bits, texts, boxed = _encode(kinds, [values[i] for i in order.tolist()])
        self._set(np.asarray(event)[order], np.asarray(key)[order], kinds, bits, texts, list(key_names), rows)
        self._boxed = boxed

    @classmethod
    def from_columns(
        cls,
        event: np.ndarray,
        key: np.ndarray,
        kind: np.ndarray,
        bits: np.ndarray,
        texts: TextValues,
        key_names: Sequence[str],
        rows: np.ndarray | int,
        boxed: np.ndarray | None = None,
    ) -> TypedStats:
        """A store from columns already sorted by ``event`` (int64), with ``key`` (int32),
        ``kind`` (int8, StatKind) and ``bits`` (int64) as described above; ``rows`` may be
        the number of events, for a store whose row ``i`` is event ``i``; ``boxed`` marks
        the entries whose value is ``texts``' object (see ``_encode``)."""
        store = object.__new__(cls)
        store._set(event, key, kind, bits, texts, list(key_names), rows)
        store._boxed = boxed
        return store

    def parts(self) -> dict[str, Any]:
        """:meth:`from_columns`' arguments, by name (``trace.store`` saves them)."""
        return {
            "event": self._event,
            "key": self._key,
            "kind": self._kind,
            "bits": self._bits,
            "texts": self._texts,
            "key_names": self._key_names,
            "rows": self._count if self._rows is None else self._rows,
            "boxed": self._boxed,
        }

    def _set(
        self,
        event: npt.NDArray[np.integer[Any]],
        key: npt.NDArray[np.integer[Any]],
        kind: npt.NDArray[np.int8],
        bits: npt.NDArray[np.int64],
        texts: TextValues,
        key_names: list[str],
        rows: npt.NDArray[np.integer[Any]] | int | np.integer[Any],
    ) -> None:
        self._event = event
        self._key = key
        self._kind = kind
        self._bits = bits
        self._texts = texts
        self._key_names = key_names
        if isinstance(rows, (int, np.integer)):
            self._rows: npt.NDArray[np.integer[Any]] | None = None
            self._count = int(rows)
        else:
            self._rows, self._count = rows, len(rows)

    def __len__(self) -> int:
        return self._count

    def _values(self, lo: int, hi: int) -> list[StatValue]:
        """The values of entries ``lo:hi`` (one event's few), as Python objects."""
        values: list[StatValue] = []
        texts = self._texts
        boxed = None if self._boxed is None else self._boxed[lo:hi].tolist()
        for index, (kind, bits) in enumerate(zip(self._kind[lo:hi].tolist(), self._bits[lo:hi].tolist())):
            if boxed is not None and boxed[index]:
                values.append(texts.get(bits, -1))
            elif kind == StatKind.INT64:
                values.append(bits)
            elif kind == StatKind.UINT64:
                values.append(bits & _UINT64_MASK)
            elif kind == StatKind.DOUBLE:
                values.append(_DOUBLE.unpack(_INT64.pack(bits))[0])
            else:
                values.append(texts.get(bits, kind))
        return values

    def _decode(self, entries: np.ndarray) -> list[StatValue]:
        """The values of many entries, decoded a kind at a time."""
        kinds = self._kind[entries]
        bits = self._bits[entries]
        if len(kinds) == 0 or (self._boxed is None and not kinds.any()):
            return bits.tolist()  # type: ignore[no-any-return]  # all INT64: the common case
        present = np.unique(kinds).tolist()
        if len(present) == 1 and self._boxed is None:
            return self._decode_kind(bits, present[0])  # one kind (a column's): nothing to merge
        values: list[StatValue] = bits.tolist()
        for kind in present:
            if kind == StatKind.INT64:
                continue
            where = np.flatnonzero(kinds == kind)
            for position, value in zip(where.tolist(), self._decode_kind(bits[where], kind)):
                values[position] = value
        if self._boxed is not None:
            boxed = self._boxed[entries]
            for position in np.flatnonzero(boxed).tolist():
                values[position] = self._texts.get(int(bits[position]), -1)
        return values

    def _decode_kind(self, bits: np.ndarray, kind: int) -> list[StatValue]:
        """The values of entries of one kind (none boxed) with these bits."""
        if kind == StatKind.UINT64:
            return bits.view(np.uint64).tolist()  # type: ignore[no-any-return]
        if kind == StatKind.DOUBLE:
            return bits.view(np.float64).tolist()  # type: ignore[no-any-return]
        if kind == StatKind.INT64:
            return bits.tolist()  # type: ignore[no-any-return]
        return self._texts.get_many(bits, kind)

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        source = row if self._rows is None else self._rows[row]
        # The array's own method: np.searchsorted's dispatch costs as much as the search
        # itself, and this runs once per row where rows are read one by one.
        event = self._event
        lo = int(event.searchsorted(source, "left"))
        hi = int(event.searchsorted(source, "right"))
        if lo == hi:
            return []
        key_names = self._key_names
        return [
            Stat(key_names[key], _KINDS[kind], value) for key, kind, value in zip(self._key[lo:hi].tolist(), self._kind[lo:hi].tolist(), self._values(lo, hi))
        ]

    def raw(self, row: int) -> bytes:
        return jsonform.encode({s.name: jsonform.trace_value(s.value) for s in self.stats(row)})

    def _spans(self, rows: np.ndarray) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The entries of ``rows``, row after row, and how many each row has: two sorted
        searches for all rows instead of two per row."""
        source = rows if self._rows is None else self._rows[rows]
        lo = np.searchsorted(self._event, source, "left")
        counts = np.searchsorted(self._event, source, "right") - lo
        firsts = np.cumsum(counts) - counts
        index = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(lo - firsts, counts)
        return index, counts

    def stats_of(self, rows: np.ndarray, keys: Collection[str] | None = None) -> list[list[Stat]]:
        """``[stats(row) for row in rows]``, read from the columns in one pass (a per-row
        ``stats`` searches the columns twice: seconds over a few hundred thousand rows);
        only the stats named in ``keys`` where given."""
        index, counts = self._spans(rows)
        key_names = self._key_names
        if keys is not None:
            kept = np.isin(self._key[index], [code for code, name in enumerate(key_names) if name in keys])
            counts = np.bincount(np.repeat(np.arange(len(counts)), counts)[kept], minlength=len(counts))
            index = index[kept]
        flat = [
            Stat(key_names[key], _KINDS[kind], value) for key, kind, value in zip(self._key[index].tolist(), self._kind[index].tolist(), self._decode(index))
        ]
        found: list[list[Stat]] = []
        position = 0
        for count in counts.tolist():
            found.append(flat[position : position + count])
            position += count
        return found

    def raw_array(self, rows: np.ndarray) -> bytes:
        """``[raw(row) for row in rows]`` as one JSON array, read from the columns in one
        pass (a per-row ``raw`` searches the columns and builds a ``Stat`` per entry)."""
        index, counts = self._spans(rows)
        key_names = self._key_names
        keys = [key_names[key] for key in self._key[index].tolist()]
        values = [jsonform.trace_value(value) for value in self._decode(index)]
        documents: list[dict[str, Any]] = []
        position = 0
        for count in counts.tolist():
            documents.append(dict(zip(keys[position : position + count], values[position : position + count])))
            position += count
        return jsonform.encode(documents)

    def value(self, row: int, stat: str, name: str = "", category: str = "") -> StatValue | None:
        return _first(self.stats(row), stat)

    def column(self, name: str) -> tuple[np.ndarray, list[StatValue]]:
        """Rows that carry stat ``name`` and its values there: a whole-plane lookup
        (e.g. every XLA op's ``hlo_op``) without decoding events one by one."""
        codes = [index for index, key in enumerate(self._key_names) if key == name]
        if not codes:
            return np.zeros(0, dtype=np.int64), []
        mask = self._key == codes[0] if len(codes) == 1 else np.isin(self._key, codes)
        entries = np.flatnonzero(mask)
        if self._rows is None:
            return self._event[entries], self._decode(entries)
        position = np.full(int(self._rows.max()) + 1 if len(self._rows) else 0, -1, dtype=np.int64)
        position[self._rows] = np.arange(len(self._rows))
        sources = self._event[entries]
        inside = sources < len(position)
        rows = np.where(inside, position[np.minimum(sources, max(len(position) - 1, 0))], -1)
        keep = np.flatnonzero(rows >= 0)
        return rows[keep], self._decode(entries[keep])

    def entries(self, rows: np.ndarray, types: EventTypes, skip: frozenset[str] = frozenset()) -> StatEntries:
        """Sliced from the typed columns; texts read from a file are passed on as they are
        (the reader checked them), others encoded once each."""
        index, counts = self._spans(rows)
        total = len(index)
        if not total:
            return StatEntries.empty()
        row = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        skipped = [code for code, name in enumerate(self._key_names) if name in skip]
        if skipped:
            kept = np.flatnonzero(~np.isin(self._key[index], skipped))
            index, row, total = index[kept], row[kept], len(kept)
        key = self._key[index].astype(np.int32, copy=False)
        kind = self._kind[index].astype(np.int8)
        bits = self._bits[index].astype(np.int64)
        texts = self._texts
        blob = np.frombuffer(texts._blob, dtype=np.uint8)
        offsets = np.asarray(texts._offsets, dtype=np.int64)
        # Values kept as Python objects: the extra texts, and any value its kind cannot
        # hold (boxed); each distinct one encoded once.
        boxed = self._boxed[index] if self._boxed is not None else np.zeros(total, dtype=bool)
        python = np.flatnonzero(boxed | ((kind >= StatKind.STR) & (bits >= texts._count)))
        if len(python):
            encoded: dict[tuple[int, int, bool], tuple[int, int | bytes]] = {}
            extra: dict[bytes, int] = {}
            for entry, entry_kind, number, is_boxed in zip(python.tolist(), kind[python].tolist(), bits[python].tolist(), boxed[python].tolist()):
                found = encoded.get((entry_kind, number, is_boxed))
                if found is None:
                    found = encoded[entry_kind, number, is_boxed] = xstat_value(entry_kind, texts.get(number, -1 if is_boxed else entry_kind))
                written_kind, value = found
                if isinstance(value, bytes):
                    value = texts._count + extra.setdefault(value, len(extra))
                kind[entry], bits[entry] = written_kind, value
            if extra:  # numbered after the file's texts: appended to their blob
                extra_blob, extra_offsets = text_table(list(extra))
                end = int(offsets[-1])
                offsets = np.concatenate((offsets, extra_offsets[1:] + end))
                blob = np.concatenate((blob[:end], extra_blob))
        return StatEntries(row, key, kind, bits, self._key_names, blob, offsets)

    def take(self, rows: np.ndarray) -> TypedStats:
        clone = object.__new__(TypedStats)
        mapped = np.array(rows, dtype=np.int64) if self._rows is None else self._rows[rows]
        clone._set(self._event, self._key, self._kind, self._bits, self._texts, self._key_names, mapped)
        clone._boxed = self._boxed
        return clone

    @property
    def entry_count(self) -> int:
        return len(self._event)

    @property
    def nbytes(self) -> int:
        columns = (self._event, self._key, self._kind, self._bits, self._rows)
        return sum(column.nbytes for column in columns if column is not None) + self._texts.nbytes


def _encode(kinds: np.ndarray, values: list[StatValue]) -> tuple[np.ndarray, TextValues, np.ndarray | None]:
    """Typed 64-bit columns for Python values. A value its kind cannot hold exactly (a
    caller's mistake) is kept as an object and marked in the returned mask."""
    bits = np.zeros(len(values), dtype=np.int64)
    objects: list[StatValue] = []
    boxed: np.ndarray | None = None
    doubles = bits.view(np.float64)
    for index, (kind, value) in enumerate(zip(kinds.tolist(), values)):
        fits = False
        if kind == StatKind.INT64 or kind == StatKind.UINT64:
            if isinstance(value, int) and not isinstance(value, bool):
                low, high = (INT64_MIN, INT64_MAX) if kind == StatKind.INT64 else (0, UINT64_MAX)
                if low <= value <= high:
                    bits[index] = value if value <= INT64_MAX else value - (1 << 64)
                    fits = True
        elif kind == StatKind.DOUBLE:
            if isinstance(value, float):
                doubles[index] = value
                fits = True
        elif kind == StatKind.STR:
            fits = isinstance(value, str)
        elif kind == StatKind.BYTES:
            fits = isinstance(value, bytes)
        if fits and kind < StatKind.STR:
            continue
        bits[index] = len(objects)
        objects.append(value)
        if not fits:
            if boxed is None:
                boxed = np.zeros(len(values), dtype=bool)
            boxed[index] = True
    return bits, TextValues.of(objects), boxed


def stats_of(store: StatStore, rows: np.ndarray, names: Sequence[str], keys: Collection[str] | None = None) -> list[list[Stat]]:
    """``[store.stats(row, name) for row, name in zip(rows, names)]`` (``names``: the rows'
    event names), only the stats named in ``keys`` where given: in one pass over the
    columns where the store is typed."""
    if isinstance(store, TypedStats):
        return store.stats_of(rows, keys)
    found = [store.stats(row, name) for row, name in zip(rows.tolist(), names)]
    return found if keys is None else [[stat for stat in stats if stat.name in keys] for stats in found]


def _first(stats: list[Stat], name: str) -> StatValue | None:
    return next((stat.value for stat in stats if stat.name == name), None)
