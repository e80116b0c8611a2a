"""A trace's events as compact columns, built batch by batch.

A Chrome/Kineto trace of a million events decodes into a million Python objects of a few
hundred bytes each, several of them per event (the struct, its name string, its numbers).
Holding them all at once would cost more memory than the file. The importer instead
decodes a batch of events at a time and keeps only what the model needs: small integer
codes into tables of distinct values (names, categories, pids...), float64 times, and the
``args`` packed into one blob. Every later step works on these arrays.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from stepscope.trace.formats.chrome.scanned import ARG_INT_KEYS, FIELD_INDEX, FLAG_ARGS_ODD, FLAG_DUR_ABSENT, FLAG_EXACT, FLAG_ID_INT, ScannedEvents
from stepscope.trace.stat_types import INT64_MAX, is_int64
from stepscope.trace.stats import JsonStats

# Events decoded into msgspec structs at a time: each struct is a Python object (~700 bytes
# with its fields), so the batch sets the transient peak. 8,192 takes 24-27 MiB off the
# peak RSS of loading the shared V100 traces (~70k events; 109 -> 85 MiB, 145 -> 118 MiB)
# against 65,536, at the same CPU time (measured 2026-12-02).
BATCH_EVENTS = 8_192
# Epoch-microsecond timestamps at or past 2**43 us are spaced >= 1 ns apart as doubles,
# so they are re-read from their text to stay exact.
EXACT_TS_THRESHOLD_US = float(2**43)


class ChromeEvent(msgspec.Struct, gc=False):
    """One trace event; fields are untyped so that drifted files still decode.

    In the order Kineto writes a complete event's keys: msgspec looks for a key first at
    the field after the last one found (12-16% off decoding the V100 ns trace)."""

    ph: Any = ""
    cat: Any = None
    name: Any = ""
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    # Raw JSON text of the args object; empty when the event has none.
    args: msgspec.Raw = msgspec.Raw()
    id: Any = None
    bp: Any = None


class _TimedEvent(ChromeEvent, gc=False):
    """A ChromeEvent as the reader decodes it from the file: ``ts`` kept as its JSON text
    (``null`` when absent), so that the text is at hand for the exact decimal decode and
    the numbers are decoded for a whole batch in one call (this replaced
    decoding every timestamp as a float and then each event again for its text)."""

    ts: msgspec.Raw = msgspec.Raw(b"null")


_EVENT = msgspec.json.Decoder(ChromeEvent)
_TIMED_EVENT = msgspec.json.Decoder(_TimedEvent)
# A batch of events, as one JSON array (the stream reader's decode: one call per batch).
TIMED_EVENTS = msgspec.json.Decoder(list[_TimedEvent])
_VALUES = msgspec.json.Decoder(list[Any])
_ANY = msgspec.json.Decoder()
# The fields coded together into tables of distinct values (the flow id, nearly unique
# per flow event, is coded apart). "bp" rides along: it has one or two values, and a pass
# of its own was 5% of loading the V100 ns trace.
_KEY_FIELDS = ("ph", "name", "cat", "pid", "tid", "bp")
_ID = attrgetter("id")
# Value types canonical_id leaves as they are.
_CANONICAL_TYPES = {int, type(None)}
_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_ARGS = attrgetter("args")


def _binds_enclosing(bp: Any) -> bool:
    return isinstance(bp, str) and bp == "e"


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return str(value)


def canonical_id(value: Any) -> Any:
    """A pid/tid/flow id as one key: 7, 7.0 and "7" alike (the 2021 Kineto schema writes a
    thread's id as a string in some events and an int in others)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value == int(value) and abs(value) < 2**63:
        return int(value)
    return value


def _hashable(value: Any) -> Any:
    return msgspec.json.encode(value).decode() if isinstance(value, (list, dict)) else value


@dataclass
class Coded:
    """A column of values as codes into ``values`` (distinct values, first-seen order)."""

    codes: np.ndarray
    values: list[Any]

    def __getitem__(self, row: int) -> Any:
        return self.values[int(self.codes[row])]

    def matches(self, predicate: Callable[[Any], bool]) -> np.ndarray:
        """Rows whose value satisfies ``predicate`` (evaluated once per distinct value)."""
        wanted = [code for code, value in enumerate(self.values) if predicate(value)]
        return np.isin(self.codes, wanted)


class _Index(dict[Any, int]):
    """Value -> code, a new value given the next code as it is looked up: one C-level pass
    per batch (``map(index.__getitem__, values)``), where finding the distinct values first
    takes two; for values that repeat (a new one costs a Python call)."""

    def __init__(self) -> None:
        super().__init__()
        self.new: list[Any] = []  # values added since the caller last cleared it

    def __missing__(self, value: Any) -> int:
        code = self[value] = len(self)
        self.new.append(value)
        return code

    def codes(self, values: Iterable[Any], count: int) -> np.ndarray:
        return np.fromiter(map(self.__getitem__, values), dtype=np.int64, count=count)

    def codes_of_distinct(self, values: list[Any]) -> np.ndarray:
        """``codes`` of values that mostly differ (the distinct texts of a scanned batch,
        which may still decode equal: 7 and 7.0): the new ones added at once, without a
        Python call each (Kineto's correlation ids, each new, were a fifth of a scanned
        load one by one)."""
        new = dict.fromkeys(itertools.filterfalse(self.__contains__, values))  # first-seen order, equal values once
        self.update(zip(new, itertools.count(len(self))))
        self.new.extend(new)
        return self.codes(values, len(values))


class _Coder:
    """Assigns codes to values batch by batch, keeping only the distinct values."""

    def __init__(self) -> None:
        self._index = _Index()
        self._codes: list[np.ndarray] = []

    def code(self, values: list[Any], distinct: bool = False) -> np.ndarray:
        """The values' codes, new values coded in first-seen order, in one C-level pass
        (``_Index``). On Kineto's flow ids (None on two events in three, the rest each
        twice) that is 25% faster than finding the batch's new values first, as this did,
        and 17% slower where every value is new (measured 2026-12-03);
        ``distinct``: values that mostly differ, coded by ``_Index.codes_of_distinct``."""
        try:
            codes = self._index.codes_of_distinct(values) if distinct else self._index.codes(values, len(values))
        except TypeError:  # lists or dicts where scalars belong (the values before them keep their codes)
            codes = self._index.codes([_hashable(v) for v in values], len(values))
        self._index.new.clear()
        return codes

    def add(self, values: list[Any]) -> None:
        self._codes.append(self.code(values))

    def add_codes(self, codes: np.ndarray) -> None:
        self._codes.append(codes)

    def finish(self, normalise: Callable[[Any], Any] | None = None, codes: np.ndarray | None = None) -> Coded:
        """The column (of ``codes`` where given, not of the values added)."""
        if codes is None:
            codes = np.concatenate(self._codes) if self._codes else np.zeros(0, dtype=np.int64)
        values = list(self._index)
        if normalise is None or (normalise is canonical_id and set(map(type, values)) <= _CANONICAL_TYPES):
            return Coded(codes, values)
        canonical: dict[Any, int] = {}
        remap = np.asarray([canonical.setdefault(normalise(v), len(canonical)) for v in values], dtype=np.int64)
        return Coded(remap[codes] if len(codes) else codes, list(canonical))


class _KeyCoder:
    """Codes for the fields that repeat together (phase, name, category, pid, tid): each
    event's fields coded as one key, each new key's fields then coded field by field. A
    trace has few such keys (264 in the V100 ns trace's 69k events), so this is one pass
    per batch instead of one per field (18 ms against 46). A field's values
    are coded in the order they first appear, as their own coder would."""

    def __init__(self, fields: tuple[str, ...]) -> None:
        self.fields = fields
        self._key = attrgetter(*fields)
        self._keys = _Index()
        self._coders = [_Coder() for _ in fields]
        self._key_fields: list[list[np.ndarray]] = [[] for _ in fields]  # field codes of each key
        self._codes: list[np.ndarray] = []

    def add(self, events: list[Any]) -> None:
        self._codes.append(self.code(list(map(self._key, events))))

    def code(self, keys: list[tuple[Any, ...]], distinct: bool = False) -> np.ndarray:
        """The codes of keys (tuples of the fields' values), new ones coded field by field;
        ``distinct``: keys that mostly differ (``_Index.codes_of_distinct``)."""
        try:
            codes = self._keys.codes_of_distinct(keys) if distinct else self._keys.codes(keys, len(keys))
        except TypeError:  # lists or dicts where scalars belong: as _Coder.code
            keys = [tuple(map(_hashable, key)) for key in keys]
            codes = self._keys.codes(keys, len(keys))
        new = self._keys.new
        if new:
            for coder, codes_of_keys, values in zip(self._coders, self._key_fields, zip(*new)):
                codes_of_keys.append(coder.code(list(values)))
            new.clear()
        return codes

    def add_codes(self, codes: np.ndarray) -> None:
        self._codes.append(codes)

    def finish(self, normalise: dict[str, Callable[[Any], Any]]) -> dict[str, Coded]:
        codes = np.concatenate(self._codes) if self._codes else np.zeros(0, dtype=np.int64)
        columns = {}
        for name, coder, codes_of_keys in zip(self.fields, self._coders, self._key_fields):
            table = np.concatenate(codes_of_keys) if codes_of_keys else np.zeros(0, dtype=np.int64)
            columns[name] = coder.finish(normalise.get(name), table[codes])
        return columns


def factorize(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes and distinct values (first-seen order) of one list."""
    coder = _Coder()
    coder.add(values)
    coded = coder.finish()
    return coded.codes, coded.values


# unique_codes counts where its codes' range is at most this many per code (plus a floor),
# and sorts (np.unique) beyond.
_COUNTED_RANGE_PER_CODE = 4
_COUNTED_RANGE_FLOOR = 1 << 16


def unique_codes(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(codes, return_index=True, return_inverse=True)`` (the inverse flat) of
    codes in ``[0, size)``: by marking and counting where the range is small against the
    codes (a trace's threads, event types, flow keys), n + size steps; np.unique's stable
    sort of every record was 1.3 s of loading the 10M-event JSON of bench/scale.py."""
    count = len(codes)
    if not count or size > _COUNTED_RANGE_PER_CODE * count + _COUNTED_RANGE_FLOOR:
        used, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return used, first, inverse.reshape(-1)
    present = np.zeros(size, dtype=bool)
    present[codes] = True
    used = np.flatnonzero(present)
    lookup = np.zeros(size, dtype=np.int64)
    lookup[used] = np.arange(len(used))
    inverse = lookup[codes]
    first = np.full(len(used), count, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(count, dtype=np.int64))
    return used.astype(codes.dtype), first, inverse


def first_seen(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes renumbered from 0 in the order they first appear, and the codes they were
    (what ``factorize`` makes of the values the codes stand for, where those are distinct).
    ``codes``: non-negative."""
    used, first, inverse = unique_codes(codes, int(codes.max()) + 1 if len(codes) else 0)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse], used[order]


@dataclass
class EventColumns:
    """Every event of a trace, in file order, as columns."""

    phase: Coded  # text
    name: Coded
    category: Coded
    pid: Coded  # canonical ids
    tid: Coded
    flow_id: Coded  # canonical ids; None where absent
    ts_us: np.ndarray  # float64, NaN where absent or not a number
    dur_us: np.ndarray  # float64, NaN where absent or not a number
    dur_absent: np.ndarray  # bool: no "dur" key (a zero-length slice), unlike a bad value
    binds_enclosing: np.ndarray  # bool: "bp": "e"
    # Absolute ns computed from the timestamp's decimal text where a double cannot hold it
    # to the nanosecond (see EXACT_TS_THRESHOLD_US); valid where `exact` is set.
    exact_ns: np.ndarray
    exact: np.ndarray
    args: JsonStats
    skipped: int = 0  # array elements that were not event objects
    # Integer values of ``scanned.ARG_INT_KEYS`` in each event's args (-1 where absent; a
    # key in no event: None), where the scanner read every event and every such value was
    # an integer; else None.
    arg_ints: dict[str, np.ndarray | None] | None = None

    def oversized_ids(self) -> int:
        """How many distinct pid / tid / flow id values are integers past int64 (kept as
        they are, but they cannot be numeric ids)."""
        ints = [value for column in (self.pid, self.tid, self.flow_id) for value in column.values if type(value) is int]
        return int(np.count_nonzero(~int64_mask(ints)))

    def __len__(self) -> int:
        return len(self.ts_us)


@dataclass
class ColumnBuilder:
    """Accumulates batches of decoded events into EventColumns."""

    _keys: _KeyCoder = field(default_factory=lambda: _KeyCoder(_KEY_FIELDS))
    _flow_ids: _Coder = field(default_factory=_Coder)
    _ts: list[np.ndarray] = field(default_factory=list)
    _dur: list[np.ndarray] = field(default_factory=list)
    _dur_absent: list[np.ndarray] = field(default_factory=list)
    _exact_ns: list[np.ndarray] = field(default_factory=list)
    _exact: list[np.ndarray] = field(default_factory=list)
    _args: ArgsBlob = field(default_factory=lambda: ArgsBlob())
    # Per key of ARG_INT_KEYS, each batch's values, or its length where the key is in
    # none of its events (Kineto's traces hold 2 of the 7 keys); None: not all known.
    _arg_ints: list[list[np.ndarray | int]] | None = field(default_factory=lambda: _empty_arg_ints())
    skipped: int = 0

    def add_raw(self, raws: list[msgspec.Raw]) -> None:
        """A batch of events given as the raw JSON text of each."""
        events: list[_TimedEvent] = []
        for raw in raws:
            try:
                events.append(_TIMED_EVENT.decode(raw))
            except msgspec.ValidationError:
                self.skipped += 1  # an array element that is not an event object
            # A DecodeError (bad UTF-8 inside a string) propagates: the reader repairs it.
        self.add_timed(events)

    def add_timed(self, events: list[_TimedEvent]) -> None:
        """A batch of events decoded as the reader decodes them (``TIMED_EVENTS``)."""
        texts: list[msgspec.Raw] = list(map(_TS, events))
        try:
            values = _VALUES.decode(b"[" + b",".join(texts) + b"]")
        except msgspec.ValidationError:
            # A number past the double's range, which makes its event no event (decoded
            # with its "ts" as a value, it fails as any element that is not an object).
            kept = [i for i, text in enumerate(texts) if _in_range(text)]
            self.skipped += len(events) - len(kept)
            events, texts = [events[i] for i in kept], [texts[i] for i in kept]
            values = _VALUES.decode(b"[" + b",".join(texts) + b"]")
        self._add(events, numbers(values), texts, values)

    def add_scanned(self, scanned: ScannedEvents) -> int:
        """A batch of events as the compiled scanner wrote them (``scanned``): the keys and
        flow ids of only its distinct texts decoded, here, and coded as ``_add`` codes every
        event's; the numbers and args as ``_add`` makes them. Returns how many are
        metadata events (phase "M")."""
        keys = _decoded_fields(scanned, _KEY_FIELDS, scanned.key_first)
        self._keys.add_codes(self._keys.code(list(zip(*keys)), distinct=True)[scanned.key_codes])
        metadata = np.asarray([phase == "M" for phase in keys[0]], dtype=bool)
        self._flow_ids.add_codes(self._flow_ids.code(_decoded_ids(scanned), distinct=True)[scanned.id_codes])
        self._ts.append(scanned.ts)
        self._dur.append(scanned.dur)
        self._dur_absent.append((scanned.flags & FLAG_DUR_ABSENT) != 0)
        exact = (scanned.flags & FLAG_EXACT) != 0
        self._exact_ns.append(np.where(exact, scanned.exact_ns, 0))
        self._exact.append(exact)
        self._args.add_joined(scanned.args_length, scanned.args)
        if self._arg_ints is not None and np.any(scanned.flags & FLAG_ARGS_ODD):
            self._arg_ints = None
        elif self._arg_ints is not None:
            for batches, values in zip(self._arg_ints, scanned.arg_ints):
                batches.append(values.copy() if np.any(values != -1) else len(values))
        return int(np.count_nonzero(metadata[scanned.key_codes])) if len(metadata) else 0

    def add(self, events: list[ChromeEvent]) -> None:
        """A batch of events decoded elsewhere (the lenient parser): no timestamp text to
        re-read exactly."""
        self._add(events, numbers(list(map(_TS, events))), None, None)

    def _add(self, events: list[Any], ts: np.ndarray, texts: list[msgspec.Raw] | None, values: list[Any] | None) -> None:
        count = len(events)
        self._arg_ints = None  # (decoded by msgspec: its args are read later)
        self._keys.add(events)
        self._flow_ids.add(list(map(_ID, events)))
        self._ts.append(ts)
        durations = list(map(_DUR, events))
        dur = numbers(durations)
        self._dur.append(dur)
        self._dur_absent.append(_none_where_nan(durations, dur))
        exact_ns = np.zeros(count, dtype=np.int64)
        exact = np.zeros(count, dtype=bool)
        # Past the threshold a double cannot show whether the text had fractional digits
        # at all (1712195495519689.047 parses to ...689.0), so every such value is re-read.
        imprecise = np.flatnonzero(np.isfinite(ts) & (np.abs(ts) >= EXACT_TS_THRESHOLD_US))
        if texts is not None and values is not None and len(imprecise):
            units, valid = _exact_units(values, texts, imprecise)
            exact_ns[imprecise[valid]] = units[valid]
            exact[imprecise[valid]] = True
        self._exact_ns.append(exact_ns)
        self._exact.append(exact)
        self._args.add(list(map(_ARGS, events)))

    def finish(self) -> EventColumns:
        coded = self._keys.finish({"ph": as_text, "pid": canonical_id, "tid": canonical_id})
        empty_f = np.zeros(0)
        return EventColumns(
            phase=coded["ph"],
            name=coded["name"],
            category=coded["cat"],
            pid=coded["pid"],
            tid=coded["tid"],
            flow_id=self._flow_ids.finish(canonical_id),
            ts_us=np.concatenate(self._ts) if self._ts else empty_f,
            dur_us=np.concatenate(self._dur) if self._dur else empty_f,
            dur_absent=np.concatenate(self._dur_absent) if self._dur_absent else np.zeros(0, dtype=bool),
            binds_enclosing=coded["bp"].matches(_binds_enclosing),
            exact_ns=np.concatenate(self._exact_ns) if self._exact_ns else np.zeros(0, dtype=np.int64),
            exact=np.concatenate(self._exact) if self._exact else np.zeros(0, dtype=bool),
            args=self._args.finish(),
            skipped=self.skipped,
            arg_ints=self._finish_arg_ints(),
        )

    def _finish_arg_ints(self) -> dict[str, np.ndarray | None] | None:
        if self._arg_ints is None:
            return None
        known: dict[str, np.ndarray | None] = {}
        for key, batches in zip(ARG_INT_KEYS, self._arg_ints):
            present = any(isinstance(batch, np.ndarray) for batch in batches)
            known[key] = np.concatenate([np.full(b, -1, dtype=np.int64) if isinstance(b, int) else b for b in batches]) if present else None
        self._arg_ints = None
        return known


def _empty_arg_ints() -> list[list[np.ndarray | int]]:
    return [[] for _ in ARG_INT_KEYS]


# What msgspec gives a field that is absent (ChromeEvent's defaults).
_ABSENT = {"ph": "", "name": "", "cat": None, "pid": None, "tid": None, "bp": None, "id": None}


def _decoded_fields(scanned: ScannedEvents, fields: tuple[str, ...], rows: np.ndarray) -> list[list[Any]]:
    """Each field's values at ``rows``, decoded from their texts in one msgspec call."""
    texts = [scanned.texts(name, rows) for name in fields]
    present = [text for column in texts for text in column if text is not None]
    decoded = iter(_VALUES.decode(b"[" + b",".join(present) + b"]")) if present else iter(())
    return [[_ABSENT[name] if text is None else next(decoded) for text in column] for name, column in zip(fields, texts)]


def _decoded_ids(scanned: ScannedEvents) -> list[Any]:
    """The flow id at each of ``scanned.id_first``'s rows: the integers the scanner read
    where every id there is one (Kineto's correlation ids) or absent, else decoded."""
    rows = scanned.id_first
    flags = scanned.flags[rows]
    absent = scanned.spans[rows, 2 * FIELD_INDEX["id"]] < 0
    if not np.all(absent | ((flags & FLAG_ID_INT) != 0)):
        return _decoded_fields(scanned, ("id",), rows)[0]
    ids: list[Any] = scanned.id_int[rows].tolist()
    for row in np.flatnonzero(absent).tolist():
        ids[row] = None
    return ids


def _none_where_nan(values: list[Any], as_numbers: np.ndarray) -> np.ndarray:
    """Which values are None, looked at only where ``numbers`` made them NaN (it makes
    None NaN): in a Kineto trace only flow and metadata events, a third, lack a duration."""
    absent = np.zeros(len(values), dtype=bool)
    nan = np.flatnonzero(np.isnan(as_numbers))
    if len(nan):
        absent[nan] = [values[i] is None for i in nan.tolist()]
    return absent


def _exact_units(values: list[Any], texts: list[msgspec.Raw], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``decimal_units(texts at rows, 0, 1000)`` (timestamps in exact ns, and which are):
    where every value is a JSON integer (the 2021 Kineto schema's epoch microseconds) the
    integers themselves, as ``decimal_units`` would read them from their digits (a plain
    decimal: not negative, and within its int64 bound), without reading them."""
    if values and type(values[0]) is int and _all_ints(values):
        with contextlib.suppress(OverflowError):
            whole = np.asarray(values, dtype=np.int64)[rows]
            valid = (whole >= 0) & (whole <= (INT64_MAX - 1000) // 1000)
            return np.where(valid, whole * 1000, 0), valid
    return decimal_units(texts if len(rows) == len(texts) else [texts[i] for i in rows.tolist()], 0, 1000)


class ArgsBlob:
    """Every event's args back to back, a comma between two (``JsonStats.joined``: the id
    columns are then decoded a batch of events per call); rows without args are empty.

    Copied out a batch at a time, so that the text they were decoded from can go as soon
    as its batch is read (the stream reader never holds the whole trace), into one growing
    buffer whose bytes ``finish`` hands over without a copy (``BytesIO.getvalue`` of an
    unshared buffer): joining the batches at the end would hold the args twice.
    """

    def __init__(self) -> None:
        self._out = io.BytesIO()
        self._lengths: list[np.ndarray] = []

    def add(self, args: list[msgspec.Raw]) -> None:
        self._lengths.append(np.fromiter(map(len, args), dtype=np.int64, count=len(args)))
        present = b",".join(filter(None, args))
        if present:
            if self._out.tell():
                self._out.write(b",")
            self._out.write(present)

    def add_joined(self, lengths: np.ndarray, present: np.ndarray) -> None:
        """A batch's args already joined (``present``, bytes as uint8, a comma between
        two), and each event's length (0: none)."""
        self._lengths.append(lengths)
        if len(present):
            if self._out.tell():
                self._out.write(b",")
            self._out.write(present.data)

    def finish(self) -> JsonStats:
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64)
        step = np.where(lengths > 0, lengths + 1, 0)
        ends = np.cumsum(step) - (lengths > 0)
        blob, self._out = self._out.getvalue(), io.BytesIO()
        return JsonStats(blob, ends - lengths, ends)


def _in_range(text: msgspec.Raw) -> bool:
    try:
        _ANY.decode(text)
    except msgspec.ValidationError:
        return False
    return True


def columns_from_raw(raws: list[Any]) -> EventColumns:
    """The columns of events given as their texts; ``raws`` is emptied as it is read (each
    text freed once decoded, so that the args read later reuse their memory)."""
    builder = ColumnBuilder()
    for lo in range(0, len(raws), BATCH_EVENTS):
        builder.add_raw(raws[lo : lo + BATCH_EVENTS])
        raws[lo : lo + BATCH_EVENTS] = [None] * len(raws[lo : lo + BATCH_EVENTS])
    return builder.finish()


def columns_from_events(events: Iterable[ChromeEvent]) -> EventColumns:
    builder = ColumnBuilder()
    batch: list[ChromeEvent] = []
    for event in events:
        batch.append(event)
        if len(batch) == BATCH_EVENTS:
            builder.add(batch)
            batch = []
    builder.add(batch)
    return builder.finish()


# --- scalar conversions ---------------------------------------------------------------------------


def numbers(values: list[Any]) -> np.ndarray:
    """Numeric JSON values as float64; None, non-numeric strings, booleans etc. become NaN.

    At once where numpy converts them as ``_number`` does: not where a boolean is among
    them (numpy makes true 1.0, so a time of ``true`` was 1.0 or NaN by what else its
    batch held)."""
    if bool not in set(map(type, values)):
        try:
            array = np.asarray(values, dtype=np.float64)
            if array.ndim == 1:
                return array
        except (TypeError, ValueError, OverflowError):
            pass
    return np.asarray([_number(v) for v in values], dtype=np.float64)


def _number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


def int_ids(values: list[Any], absent: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids (ints, numeric strings, "0x.." strings) as int64, others -> ``absent``;
    and which values are integers past int64 (which become ``absent`` too).

    Where every value is an int (Kineto's ids, absent ones given as an int) they convert at
    once, and then none is past int64 (testing them one by one was a fifth of loading the
    V100 traces). Not otherwise: numpy would make true 1, 1.5 1 and "012" 12."""
    if _all_ints(values):
        with contextlib.suppress(OverflowError):
            return np.asarray(values, dtype=np.int64), np.zeros(len(values), dtype=bool)
    oversized = np.fromiter((isinstance(v, int) and not isinstance(v, bool) and not is_int64(v) for v in values), dtype=bool, count=len(values))
    return np.asarray([_int_id(v, absent) for v in values], dtype=np.int64), oversized


def _all_ints(values: Sequence[Any]) -> bool:
    return set(map(type, values)) <= {int}


def int64_mask(values: Sequence[Any]) -> np.ndarray:
    """``is_int64`` of each value, as a bool array: at once where every value is an int or
    None (a trace's flow ids, by the ten thousand, None the id of events without one; one
    by one they cost ~10% of loading the V100 traces), else one by one."""
    kinds = set(map(type, values))
    if kinds <= _CANONICAL_TYPES:
        present = np.ones(len(values), dtype=bool)
        ints = values
        if type(None) in kinds:
            present = np.fromiter(map(operator.is_not, values, itertools.repeat(None)), dtype=bool, count=len(values))
            ints = list(itertools.compress(values, present.tolist()))
        with contextlib.suppress(OverflowError):
            np.asarray(ints, dtype=np.int64)
            return present
    return np.fromiter(map(is_int64, values), dtype=bool, count=len(values))


def int64_or(values: Sequence[Any], default: np.ndarray | int) -> np.ndarray:
    """Each value where it ``is_int64``, else ``default`` (one number, or one per value)."""
    mask = int64_mask(values)
    kept = np.zeros(len(values), dtype=np.int64)
    kept[mask] = np.asarray(list(itertools.compress(values, mask.tolist())), dtype=np.int64)
    return np.where(mask, kept, default)


def _int_id(value: Any, absent: int) -> int:
    if isinstance(value, bool) or value is None:
        return absent
    if isinstance(value, int):
        return value if is_int64(value) else absent
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value == int(value) and abs(value) < 2**63 else absent
    if isinstance(value, str):
        try:
            parsed = int(value, 0)
        except ValueError:
            return absent
        return parsed if is_int64(parsed) else absent
    return absent


def decimal_units(texts: Sequence[bytes | msgspec.Raw], base: int, scale: int) -> tuple[np.ndarray, np.ndarray]:
    """Decimal number texts (e.g. b"1712195495519689.047") as integer ``(value - base) *
    scale``, rounded half up, computed exactly from the digits; and which texts were plain
    decimals (no sign, no exponent) whose value fits int64. Vectorised over the texts as a byte matrix: one
    pass per digit where the texts are aligned (``_aligned_units``), else one pass per
    character column."""
    count = len(texts)
    values = np.zeros(count, dtype=np.int64)
    width = max(map(len, texts), default=0)
    if not count or width > 40:
        return values, np.zeros(count, dtype=bool)
    digits_after = len(str(scale)) - 1  # scale is a power of ten
    joined = b"".join(texts)
    if len(joined) == count * width:  # texts of one length, as Kineto's are
        aligned = _aligned_units(np.frombuffer(joined, dtype=np.uint8).reshape(count, width), base, scale, digits_after)
        if aligned is not None:
            return aligned
    else:
        joined = b"".join(bytes(t).ljust(width, b" ") for t in texts)
    matrix = np.frombuffer(joined, dtype=np.uint8).reshape(count, width)
    is_digit = (matrix >= ord("0")) & (matrix <= ord("9"))
    is_dot = matrix == ord(".")
    plain = np.all(is_digit | is_dot | (matrix == ord(" ")), axis=1) & (is_dot.sum(axis=1) <= 1) & is_digit[:, 0]
    dot = np.where(is_dot.any(axis=1), is_dot.argmax(axis=1), width)
    whole, fraction, shown, round_up = _column_digits(matrix, is_digit, dot, digits_after)
    # "1.5" at scale 1000 is 1500: pad the fraction to `digits_after` digits.
    fraction *= 10 ** (digits_after - shown)
    # A value past int64 would wrap around (a time past the year 2262 in epoch ns): not
    # plain, so it keeps its double.
    whole_digits = np.sum(is_digit & (np.arange(width) < dot[:, None]), axis=1)
    plain &= (whole_digits <= 18) & (whole - base <= (INT64_MAX - scale) // scale)
    values = (whole - base) * scale + fraction + round_up
    return np.where(plain, values, 0), plain


_Digits = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # whole, fraction, fraction digits shown, round up


def _aligned_units(matrix: np.ndarray, base: int, scale: int, digits_after: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``decimal_units`` where every text is all digits around a dot at one column, or all
    digits (Kineto's epoch timestamps, all of one length); None otherwise. The digits are
    read one column at a time into int64, never as an int64 matrix: the matrix products
    this replaced cost a tenth of loading the V100 ns-resolution trace."""
    count, width = matrix.shape
    at = matrix[0].tobytes().find(b".")
    at = width if at < 0 else at
    digits = matrix - np.uint8(ord("0"))  # bytes below "0" wrap past 9
    if at < width:
        if not np.all(matrix[:, at] == ord(".")):
            return None
        digits[:, at] = 0
    if at == 0 or not np.all(digits < 10):
        return None
    if at > 18:  # past int64 whatever the digits
        return np.zeros(count, dtype=np.int64), np.zeros(count, dtype=bool)
    whole = np.zeros(count, dtype=np.int64)
    for column in range(at):
        whole = whole * 10 + digits[:, column]
    shown = min(digits_after, max(width - at - 1, 0))
    fraction = np.zeros(count, dtype=np.int64)
    for column in range(at + 1, at + 1 + shown):
        fraction = fraction * 10 + digits[:, column]
    fraction *= 10 ** (digits_after - shown)
    next_column = at + 1 + digits_after
    round_up = digits[:, next_column] >= 5 if next_column < width else np.zeros(count, dtype=bool)
    plain = whole - base <= (INT64_MAX - scale) // scale
    values = (whole - base) * scale + fraction + round_up
    return np.where(plain, values, 0), plain


def _column_digits(matrix: np.ndarray, is_digit: np.ndarray, dot: np.ndarray, digits_after: int) -> _Digits:
    """Any plain decimals: the digits read one character column at a time."""
    count, width = matrix.shape
    whole = np.zeros(count, dtype=np.int64)
    fraction = np.zeros(count, dtype=np.int64)
    shown = np.zeros(count, dtype=np.int64)
    round_up = np.zeros(count, dtype=bool)
    for column in range(width):
        digit = matrix[:, column].astype(np.int64) - ord("0")
        valid = is_digit[:, column]
        whole = np.where(valid & (column < dot), whole * 10 + digit, whole)
        place = column - dot  # 1 for the first digit after the dot
        in_fraction = valid & (place >= 1) & (place <= digits_after)
        fraction = np.where(in_fraction, fraction * 10 + digit, fraction)
        shown += in_fraction
        round_up |= valid & (place == digits_after + 1) & (digit >= 5)
    return whole, fraction, shown, round_up
