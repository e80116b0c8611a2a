"""Importing Chrome trace JSON (the Trace Event Format) into a Profile.

Handles the phases real profilers write: complete events (X), begin/end pairs (B/E),
instants (i/I/n/R), counters (C, on each process's ``_counters_`` line as XSpace keeps
them), metadata (M: process and thread names, labels), flows (s/t/f, see ``flows``) and
nestable async spans (b/e, one line per category). Other phases are counted and reported.

Processes map to planes and threads to lines. A process named like an XSpace plane
(``/device:TPU:0``, ``/host:CPU``, as in JAX's trace.json) becomes that plane; otherwise
every process's threads are lines of ``/host:CPU``. The Kineto reader is this importer
with a :class:`Dialect` that knows PyTorch's conventions.

Per-event Python work is limited to moving fields from the decoded structs into lists;
distinct values (pids, names...) are normalised once each, and sorting, nesting, time
conversion and flow binding are whole-array operations.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from stepscope.errors import ProfileFormatError
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, finish_plane
from stepscope.trace.flows import FlowPoints, build_flows
from stepscope.trace.model import EventMetadata, Line, Profile
from stepscope.trace.stats import ArgsTranslator, JsonStats, Stat, plain_translator
from stepscope.trace.tracejson import ChromeEvent, TraceDocument, as_text, factorize, id_columns_reader, numbers

INSTANT_PHASES = ("i", "I", "n", "R")
FLOW_PHASES = ("s", "t", "f")
HANDLED_PHASES = frozenset({"X", *INSTANT_PHASES, *FLOW_PHASES, "M", "C", "B", "E", "b", "e"})
# Chrome timestamps are microseconds; a value this large is a UNIX-epoch time (1973+).
EPOCH_US_THRESHOLD = 1e14
MAX_SPAN_US = (2**63 - 1) / 1e6


def time_scale(ts_us: np.ndarray, relative_us: np.ndarray, dur_us: np.ndarray) -> int:
    """Units per microsecond to round times to.

    1000 (ns) when every value is a whole number of nanoseconds up to the precision the
    file's float timestamps allow, as Kineto writes them: rounding then recovers the
    file's decimal text exactly. Else 1e6 (ps), as stepscope's own export writes sub-ns
    times.
    """
    # A double holding e.g. 4458676522690.655 us is off by up to half its spacing.
    tolerance_ns = max(1e-3, 0.5 * float(np.spacing(np.max(np.abs(ts_us)))) * 1000.0)
    for values in (relative_us, dur_us):
        ns = values * 1000.0
        if len(ns) and float(np.max(np.abs(ns - np.rint(ns)))) > tolerance_ns:
            return 1_000_000
    return 1000


class _Kind:
    """What a record became: a slice, an instant, a counter sample, an async span."""

    SLICE, INSTANT, COUNTER, ASYNC = 0, 1, 2, 3


@dataclass
class ProcessInfo:
    name: str = ""
    labels: str = ""
    threads: dict[Any, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LinePlacement:
    line_id: int | None  # None: numbered by the importer
    name: str


def plane_named(process: ProcessInfo) -> str | None:
    """The plane a process stands for when it is named like one (JAX's and stepscope's exports)."""
    if process.name.startswith((names.DEVICE_PLANE_PREFIX, names.HOST_PLANE_PREFIX)):
        return process.name
    return None


def generic_place_process(pid: Any, process: ProcessInfo, device: int | None) -> str:
    return plane_named(process) or names.HOST_PLANE


def generic_place_thread(plane: str, pid: Any, tid: Any, process: ProcessInfo) -> LinePlacement:
    thread = process.threads.get(tid) or as_text(tid)
    if plane == names.HOST_PLANE and not process.name.startswith(names.HOST_PLANE_PREFIX):
        label = f"{process.name or 'process'} ({pid}) / {thread}"
    else:
        label = thread
    return LinePlacement(tid if _is_int(tid) else None, label)


@dataclass(frozen=True)
class Dialect:
    """What differs between producers of Chrome trace JSON."""

    format: str
    translator: ArgsTranslator = plain_translator
    # (pid, process info, device ordinal seen in its device-category events) -> plane name
    place_process: Callable[[Any, ProcessInfo, int | None], str] = generic_place_process
    # (plane name, pid, tid, process info) -> the thread's line
    place_thread: Callable[[str, Any, Any, ProcessInfo], LinePlacement] = generic_place_thread
    # Categories of events that run on a device; their args name it ("device": N).
    device_categories: frozenset[str] = frozenset()
    # Derives hot id columns (correlation_id...) from every record's raw args.
    id_columns: Callable[[list[msgspec.Raw]], dict[str, np.ndarray]] | None = None
    # Header keys kept in Profile.info.
    info_keys: tuple[str, ...] = ()
    # Header key holding the epoch ns that timestamps are relative to.
    epoch_base_key: str | None = None
    # (plane name, header) -> the plane's own stats (device capabilities...).
    plane_stats: Callable[[str, dict[str, Any]], list[Stat]] | None = None


class _XSpaceNamedIds(msgspec.Struct, gc=False):
    """Id stats under XSpace's names, as XProf's trace JSON (JAX's trace.json.gz) has them."""

    correlation_id: Any = -1
    group_id: Any = -1
    step_num: Any = -1
    external_id: Any = -1


CHROME_DIALECT = Dialect(
    format="chrome",
    epoch_base_key="baseTimeNanoseconds",
    id_columns=id_columns_reader(
        _XSpaceNamedIds, {name: (name,) for name in ("correlation_id", "group_id", "step_num", "external_id")}
    ),
)


def import_document(path: Path, document: TraceDocument, dialect: Dialect) -> Profile:
    """Builds a Profile from a decoded trace document."""
    events = document.events
    warnings = list(document.warnings)
    phase_codes, phase_values = factorize([e.ph for e in events], as_text)
    rows_of = {phase: np.flatnonzero(phase_codes == code) for code, phase in enumerate(phase_values)}
    empty = np.zeros(0, dtype=np.int64)

    def rows(*phases: str) -> np.ndarray:
        found = [rows_of[p] for p in phases if p in rows_of]
        return np.sort(np.concatenate(found)) if found else empty

    processes = _read_metadata(events, rows("M"))
    records = _Records(events)
    records.add(rows("X"), _Kind.SLICE)
    records.add(rows(*INSTANT_PHASES), _Kind.INSTANT)
    records.add(rows("C"), _Kind.COUNTER)
    unmatched = records.add_pairs(rows("B", "E"), "B", _Kind.SLICE, lambda e: (e.pid, e.tid))
    unmatched += records.add_pairs(rows("b", "e"), "b", _Kind.ASYNC, lambda e: (e.pid, as_text(e.cat), e.id))
    if unmatched:
        warnings.append(f"{unmatched} begin/end events without a partner were skipped")
    # Events with no phase at all (XProf ends its traceEvents with an empty {}) say nothing.
    other = {phase: len(r) for phase, r in rows_of.items() if phase not in HANDLED_PHASES and phase}
    if other:
        listed = ", ".join(f"{count} '{phase}'" for phase, count in sorted(other.items()))
        warnings.append(f"events of unsupported phases were skipped: {listed}")
    if not len(records.source):
        detail = "the trace has no events" if not events else "no trace events with a time and a thread"
        raise ProfileFormatError(path, f"is not a profile: {detail}")

    fields = records.fields()
    _check_times(path, fields)
    clock = _Clock.for_trace(document, fields.ts_us, fields.dur_us)
    start_units = clock.units(fields.source, fields.ts_us)
    if float((start_units + fields.dur_us * clock.scale).max()) / clock.scale > MAX_SPAN_US:
        raise ProfileFormatError(path, "event times span more than 106 days; timestamps are out of range")
    dur_units = np.rint(fields.dur_us * clock.scale)
    paired = fields.end >= 0
    if paired.any():  # B/E pairs: end minus begin, each converted exactly
        end_ts = numbers([events[r].ts for r in fields.end[paired].tolist()])
        dur_units[paired] = clock.units(fields.end[paired], end_ts) - start_units[paired]
    start_ps = start_units.astype(np.int64) * clock.ps_per_unit
    dur_ps = dur_units.astype(np.int64) * clock.ps_per_unit
    zero_ps = int(start_ps.min()) // 1000 * 1000

    layout = _Layout.build(fields, processes, dialect)
    name_codes, name_values = factorize(fields.name, as_text)
    cat_codes, cat_values = factorize(fields.cat, as_text)
    pair_codes = name_codes * max(len(cat_values), 1) + cat_codes
    id_columns = dialect.id_columns(fields.args) if dialect.id_columns else {}

    planes = []
    for plane_index, plane_name in enumerate(layout.plane_names):
        plane_rows = np.flatnonzero(layout.record_plane == plane_index)
        pairs, local_ids = np.unique(pair_codes[plane_rows], return_inverse=True)
        raw = RawPlane(
            id=plane_index,
            name=plane_name,
            lines=layout.lines[plane_index],
            metadata=_metadata(
                [name_values[p // max(len(cat_values), 1)] for p in pairs.tolist()],
                [cat_values[p % max(len(cat_values), 1)] for p in pairs.tolist()],
            ),
            start_ps=start_ps[plane_rows] - zero_ps,
            duration_ps=dur_ps[plane_rows],
            metadata_id=local_ids.astype(np.int32),
            line=layout.record_line[plane_rows],
            stats=JsonStats.from_chunks([fields.args[r] for r in plane_rows.tolist()], dialect.translator),
            ids={column: values[plane_rows] for column, values in id_columns.items()},
            plane_stats=dialect.plane_stats(plane_name, document.header) if dialect.plane_stats else [],
        )
        planes.append(finish_plane(raw, 0)[0])

    flow_table, unbound = build_flows(layout.flow_points(events, rows(*FLOW_PHASES), clock, zero_ps), planes)
    if unbound:
        warnings.append(f"{unbound} flow events on threads with no slice at their time were skipped")

    header = document.header
    info: dict[str, Any] = {key: header[key] for key in dialect.info_keys if key in header}
    epoch_ns = header.get(dialect.epoch_base_key) if dialect.epoch_base_key else None
    epoch_ns = epoch_ns if _is_int(epoch_ns) else 0
    if not epoch_ns and clock.base_us < EPOCH_US_THRESHOLD:
        info["clock"] = "relative: the trace's timestamps are not UNIX epoch times"
    if warnings:
        info["warnings"] = warnings
    return Profile(
        planes=planes,
        start_ns=epoch_ns + clock.base_us * 1000 + zero_ps // 1000,
        host=_host_name(path, header),
        source=str(path),
        format=dialect.format,
        flows=flow_table,
        info=info,
    )


@dataclass(frozen=True)
class _Clock:
    """Converts trace timestamps (us) to integer units of 1/scale us after ``base_us``.

    Fractional epoch-microsecond timestamps (e.g. 1712195495519689.047) are past what a
    double resolves to the nanosecond; for such files ``texts`` holds every event's ``ts``
    as written and times are computed from the decimal text, exactly.
    """

    base_us: int
    scale: int
    texts: list[bytes] | None = None

    @classmethod
    def for_trace(cls, document: TraceDocument, ts_us: np.ndarray, dur_us: np.ndarray) -> _Clock:
        base_us = math.floor(float(ts_us.min()))
        scale = time_scale(ts_us, ts_us - base_us, dur_us)
        imprecise = float(np.spacing(np.max(np.abs(ts_us)))) * scale >= 0.5
        if imprecise and np.any(ts_us != np.rint(ts_us)):
            return cls(base_us, scale, document.timestamp_texts())
        return cls(base_us, scale)

    def units(self, rows: np.ndarray, ts_us: np.ndarray) -> np.ndarray:
        """Times of document rows ``rows`` whose float timestamps are ``ts_us``."""
        values = np.rint((ts_us - self.base_us) * self.scale)
        if self.texts is not None:
            for index, row in enumerate(rows.tolist()):
                try:
                    exact = (Decimal(self.texts[row].decode()) - self.base_us) * self.scale
                    values[index] = float(int(exact.to_integral_value()))
                except (InvalidOperation, ValueError, UnicodeDecodeError):
                    pass  # not a number: the float path already made it NaN
        return values

    @property
    def ps_per_unit(self) -> int:
        return 1_000_000 // self.scale


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def canonical_id(value: Any) -> Any:
    """A pid/tid as one key: 7, 7.0 and "7" alike (the 2021 Kineto schema writes a thread's
    id as a string in some events and an int in others)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    return value


def _metadata(event_names: list[str], categories: list[str]) -> EventMetadata:
    count = len(event_names)
    return EventMetadata(event_names, [""] * count, categories, [[] for _ in range(count)], [b""] * count)


def _host_name(path: Path, header: dict[str, Any]) -> str:
    own = header.get("stepscope")
    host = (own.get("host") if isinstance(own, dict) else None) or header.get("host_name") or header.get("hostname")
    if isinstance(host, str) and host:
        return host
    name = path.name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name or "host"


def _read_metadata(events: list[ChromeEvent], rows: np.ndarray) -> dict[Any, ProcessInfo]:
    processes: dict[Any, ProcessInfo] = {}
    for row in rows.tolist():
        event = events[row]
        process = processes.setdefault(canonical_id(event.pid), ProcessInfo())
        try:
            args = msgspec.json.decode(event.args) if len(event.args) else {}
        except msgspec.DecodeError:
            continue
        if not isinstance(args, dict):
            continue
        kind = as_text(event.name)
        if kind == names.PROCESS_NAME:
            process.name = as_text(args.get("name"))
        elif kind == names.PROCESS_LABELS:
            process.labels = as_text(args.get("labels"))
        elif kind == names.THREAD_NAME:
            process.threads[canonical_id(event.tid)] = as_text(args.get("name")).strip()
    return processes


@dataclass
class _Fields:
    """Per-record fields, in record order."""

    kind: np.ndarray
    ts_us: np.ndarray
    dur_us: np.ndarray
    pid: list[Any]
    tid: list[Any]
    name: list[Any]
    cat: list[Any]
    args: list[msgspec.Raw]
    source: np.ndarray  # row in the document
    end: np.ndarray  # row of the begin/end partner, or -1


class _Records:
    """Events that become slices: their source rows, and the end partner of B/E pairs."""

    def __init__(self, events: list[ChromeEvent]) -> None:
        self._events = events
        self._source: list[np.ndarray] = []
        self._end: list[np.ndarray] = []
        self._kind: list[np.ndarray] = []

    def add(self, rows: np.ndarray, kind: int, ends: np.ndarray | None = None) -> None:
        self._source.append(rows.astype(np.int64))
        self._end.append(np.full(len(rows), -1, dtype=np.int64) if ends is None else ends)
        self._kind.append(np.full(len(rows), kind, dtype=np.int8))

    def add_pairs(self, rows: np.ndarray, begin: str, kind: int, key: Callable[[ChromeEvent], Any]) -> int:
        """Matches each end to the latest open begin with the same key, in time order.

        Returns how many events found no partner."""
        events = self._events
        open_by_key: dict[Any, list[int]] = {}
        starts: list[int] = []
        ends: list[int] = []
        unmatched = 0
        times = numbers([events[r].ts for r in rows.tolist()])
        for row in rows[np.argsort(times, kind="stable")].tolist():
            event = events[row]
            stack = open_by_key.setdefault(msgspec.json.encode(key(event)), [])
            if event.ph == begin:
                stack.append(row)
            elif stack:
                starts.append(stack.pop())
                ends.append(row)
            else:
                unmatched += 1
        unmatched += sum(len(stack) for stack in open_by_key.values())
        self.add(np.asarray(starts, dtype=np.int64), kind, np.asarray(ends, dtype=np.int64))
        return unmatched

    @property
    def source(self) -> np.ndarray:
        return np.concatenate(self._source) if self._source else np.zeros(0, dtype=np.int64)

    def fields(self) -> _Fields:
        source = self.source
        kind = np.concatenate(self._kind)
        end = np.concatenate(self._end)
        selected = [self._events[r] for r in source.tolist()]
        ts = numbers([e.ts for e in selected])
        dur = numbers([e.dur for e in selected])
        paired = end >= 0
        if paired.any():  # in us for validation; import_document recomputes it exactly
            dur[paired] = numbers([self._events[r].ts for r in end[paired].tolist()]) - ts[paired]
        dur[(kind == _Kind.INSTANT) | (kind == _Kind.COUNTER)] = 0.0
        dur[(kind == _Kind.SLICE) & ~paired & np.isnan(dur)] = 0.0  # an X without "dur"
        return _Fields(
            kind=kind,
            ts_us=ts,
            dur_us=dur,
            pid=[e.pid for e in selected],
            tid=[e.tid for e in selected],
            name=[e.name for e in selected],
            cat=[e.cat for e in selected],
            args=[e.args for e in selected],
            source=source,
            end=end,
        )


def _check_times(path: Path, fields: _Fields) -> None:
    for values, what in ((fields.ts_us, "timestamp"), (fields.dur_us, "duration")):
        bad = ~np.isfinite(values)
        if bad.any():
            index = int(np.argmax(bad))
            raise ProfileFormatError(
                path, f"event {int(fields.source[index])} ({as_text(fields.name[index])!r}) has no valid {what}"
            )
    negative = fields.dur_us < 0
    if negative.any():
        index = int(np.argmax(negative))
        raise ProfileFormatError(
            path,
            f"event {int(fields.source[index])} ({as_text(fields.name[index])!r}) has a negative duration "
            f"({float(fields.dur_us[index])} us)",
        )


@dataclass
class _Layout:
    """Which plane and line each record goes to, and the planes' lines."""

    plane_names: list[str]
    lines: list[list[Line]]
    record_plane: np.ndarray
    record_line: np.ndarray
    key_codes: dict[tuple[Any, Any], int]  # canonical (pid, tid) -> line key code
    key_plane: np.ndarray
    key_line: np.ndarray

    @classmethod
    def build(cls, fields: _Fields, processes: dict[Any, ProcessInfo], dialect: Dialect) -> _Layout:
        pid_codes, pids = factorize(fields.pid, canonical_id)
        # Counter samples and async spans get lines of their own, keyed apart from threads.
        tids: list[Any] = list(fields.tid)
        for index in np.flatnonzero(fields.kind >= _Kind.COUNTER).tolist():
            tids[index] = (
                (names.COUNTERS_LINE,)
                if fields.kind[index] == _Kind.COUNTER
                else ("async", as_text(fields.cat[index]) or as_text(fields.name[index]))
            )
        tid_codes, tid_values = factorize(tids, canonical_id)
        combined = pid_codes * max(len(tid_values), 1) + tid_codes
        keys, first, record_key = np.unique(combined, return_index=True, return_inverse=True)
        # Lines in the order their threads first appear in the file.
        appearance = np.argsort(fields.source[first], kind="stable")
        rank = np.empty_like(appearance)
        rank[appearance] = np.arange(len(appearance))
        keys, record_key = keys[appearance], rank[record_key]
        devices = _device_ordinals(fields, pid_codes, pids, dialect)

        plane_names: list[str] = []
        lines: list[list[LinePlacement]] = []
        key_codes: dict[tuple[Any, Any], int] = {}
        key_plane = np.zeros(len(keys), dtype=np.int64)
        key_line = np.zeros(len(keys), dtype=np.int64)
        for code, key in enumerate(keys.tolist()):
            pid = pids[key // max(len(tid_values), 1)]
            tid = tid_values[key % max(len(tid_values), 1)]
            process = processes.get(pid, ProcessInfo())
            plane = dialect.place_process(pid, process, devices.get(pid))
            if plane not in plane_names:
                plane_names.append(plane)
                lines.append([])
            plane_index = plane_names.index(plane)
            if isinstance(tid, tuple):
                placement = LinePlacement(None, " ".join(tid))
            else:
                placement = dialect.place_thread(plane, pid, tid, process)
            key_codes[(pid, tid)] = code
            key_plane[code] = plane_index
            key_line[code] = len(lines[plane_index])
            lines[plane_index].append(placement)
        return cls(
            plane_names=plane_names,
            lines=[_number_lines(placements) for placements in lines],
            record_plane=key_plane[record_key],
            record_line=key_line[record_key],
            key_codes=key_codes,
            key_plane=key_plane,
            key_line=key_line,
        )

    def flow_points(self, events: list[ChromeEvent], rows: np.ndarray, clock: _Clock, zero_ps: int) -> FlowPoints:
        selected = [events[r] for r in rows.tolist()]
        codes = np.asarray(
            [self.key_codes.get((canonical_id(e.pid), canonical_id(e.tid)), -1) for e in selected], dtype=np.int64
        )
        known = codes >= 0
        safe = np.maximum(codes, 0)
        times = numbers([e.ts for e in selected])
        return FlowPoints(
            phase=[as_text(e.ph) for e in selected],
            category=[as_text(e.cat) for e in selected],
            flow_key=[canonical_id(e.id) if not isinstance(e.id, (list, dict)) else str(e.id) for e in selected],
            plane=np.where(known, self.key_plane[safe], -1),
            line=np.where(known, self.key_line[safe], -1),
            time_ps=clock.units(rows, times) * clock.ps_per_unit - zero_ps,
            binds_enclosing=np.asarray([e.ph != "f" or e.bp == "e" for e in selected], dtype=bool),
        )


def _device_ordinals(fields: _Fields, pid_codes: np.ndarray, pids: list[Any], dialect: Dialect) -> dict[Any, int]:
    """For each pid holding device-category events: the device its args name (else the pid)."""
    if not dialect.device_categories:
        return {}
    cat_codes, cats = factorize(fields.cat, as_text)
    device_cats = [code for code, cat in enumerate(cats) if cat in dialect.device_categories]
    device_rows = np.flatnonzero(np.isin(cat_codes, device_cats))
    ordinals: dict[Any, int] = {}
    first_rows = np.unique(pid_codes[device_rows], return_index=True)[1]
    for row in device_rows[first_rows].tolist():
        pid = pids[int(pid_codes[row])]
        ordinal = pid if _is_int(pid) else len(ordinals)
        try:
            device = msgspec.json.decode(fields.args[row]).get("device") if len(fields.args[row]) else None
        except (msgspec.DecodeError, AttributeError):
            device = None
        ordinals[pid] = device if _is_int(device) else ordinal
    return ordinals


def _number_lines(placements: list[LinePlacement]) -> list[Line]:
    """Line ids: the source's thread/stream id where unique in the plane, else the next free number."""
    wanted = Counter(p.line_id for p in placements if p.line_id is not None)
    used = {line_id for line_id, count in wanted.items() if count == 1}
    next_free = max(used, default=-1) + 1
    lines: list[Line] = []
    for placement in placements:
        line_id = placement.line_id
        if line_id is None or wanted[line_id] != 1:
            while next_free in used:
                next_free += 1
            line_id = next_free
            used.add(line_id)
        lines.append(Line(id=line_id, name=placement.name))
    return lines
