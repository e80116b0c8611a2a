"""Importing Chrome trace JSON (the Trace Event Format) into a Profile.

Handles the phases real profilers write: complete events (X), begin/end pairs (B/E),
instants (i/I/n/R), counters (C, on each process's ``_counters_`` line as XSpace keeps
them), metadata (M: process and thread names, labels), flows (s/t/f, see ``flows``) and
nestable async spans (b/e, one line per category). Other phases are counted and reported.

Processes map to planes and threads to lines. A process named like an XSpace plane
(``/device:TPU:0``, ``/host:CPU``, as in JAX's trace.json) becomes that plane; otherwise
every process's threads are lines of ``/host:CPU``. The Kineto reader is this importer
with a :class:`Dialect` that knows PyTorch's conventions. Where a dialect knows which
categories run on a device, a thread of a device process holding none of them is a host
thread (Kineto records Python stacks under the GPU's pid) and goes to ``/host:CPU``.

The importer works on the decoded columns (``columns.EventColumns``): codes, floats and
the packed args. Only begin/end pairing walks events one by one, and only those events.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.errors import ProfileFormatError
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, finish_plane
from stepscope.trace.categories import event_kinds
from stepscope.trace.formats.chrome.columns import EventColumns, as_text, factorize, unique_codes
from stepscope.trace.formats.chrome.document import TraceDocument, id_columns_reader
from stepscope.trace.formats.chrome.flows import FlowPoints, build_flows
from stepscope.trace.kinds import RELATIVE_CLOCK_INFO, kind_array
from stepscope.trace.model import EventMetadata, Line, Plane, Profile
from stepscope.trace.stat_types import INT64_MAX, Stat, StatKind, is_int64
from stepscope.trace.stats import ArgsTranslator, JsonStats, plain_translator

INSTANT_PHASES = ("i", "I", "n", "R")
FLOW_PHASES = ("s", "t", "f")
HANDLED_PHASES = frozenset({"X", *INSTANT_PHASES, *FLOW_PHASES, "M", "C", "B", "E", "b", "e"})
# Chrome timestamps are microseconds; a value this large is a UNIX-epoch time (1973+).
EPOCH_US_THRESHOLD = 1e14
MAX_SPAN_US = INT64_MAX / 1e6


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
    return LinePlacement(tid if is_int64(tid) else None, label)


def device_host_thread(pid: Any, tid: Any, process: ProcessInfo) -> LinePlacement:
    """A thread of a device process that ran no device work, as a line of ``/host:CPU``.

    Named after the process (its label, ``GPU 0``, else its name) so the viewer shows where
    it came from, and numbered by the importer so it never takes a host thread's id.
    """
    thread = process.threads.get(tid) or f"thread {as_text(tid)}"
    return LinePlacement(None, f"{process.labels or process.name or 'process'} ({pid}) / {thread}")


@dataclass(frozen=True)
class Dialect:
    """What differs between producers of Chrome trace JSON."""

    format: str
    translator: ArgsTranslator = plain_translator
    # (pid, process info, device ordinal seen in its device-category events) -> plane name
    place_process: Callable[[Any, ProcessInfo, int | None], str] = generic_place_process
    # (plane name, pid, tid, process info) -> the thread's line
    place_thread: Callable[[str, Any, Any, ProcessInfo], LinePlacement] = generic_place_thread
    # Categories of events that run on a device; their args name it ("device": N). A thread
    # of a device plane holding none of them is a host thread.
    device_categories: frozenset[str] = frozenset()
    # Derives hot id columns (correlation_id...) from the records' raw args, or from the
    # integers the scanner read (``EventColumns.arg_ints``) where it read them all.
    id_columns: Callable[[JsonStats, dict[str, np.ndarray | None] | None], tuple[dict[str, np.ndarray], np.ndarray]] | None = None
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
    id_columns=id_columns_reader(_XSpaceNamedIds, {name: (name,) for name in ("correlation_id", "group_id", "step_num", "external_id")}),
)


def import_document(path: Path, document: TraceDocument, dialect: Dialect) -> Profile:
    """Builds a Profile from a decoded trace document."""
    events = document.events
    warnings = list(document.warnings)
    phase_rows = _PhaseRows(events)
    records = _collect_records(path, events, phase_rows, warnings)
    clock, start_ps, dur_ps, zero_ps = _record_times(path, events, records)
    layout = _Layout.build(events, records, _read_metadata(events, phase_rows("M")), dialect)
    flow_rows = phase_rows(*FLOW_PHASES)
    del phase_rows
    start_ps -= zero_ps  # (in place: a rebased copy, held through the planes' build, was 8 bytes a record)
    planes = _build_planes(document, dialect, records, layout, start_ps, dur_ps, warnings)
    # The flows need none of the records' columns (~40 bytes a record, and the rows of
    # every phase 8 bytes an event, were held through build_flows: the peak at 10M events).
    del records, start_ps, dur_ps
    flow_points = layout.flow_points(events, flow_rows, clock, zero_ps)
    flow_table, unbound = build_flows(flow_points, planes)
    if unbound:
        warnings.append(f"{unbound} flow events on threads with no slice at their time were skipped")

    header = document.header
    info: dict[str, Any] = {key: header[key] for key in dialect.info_keys if key in header}
    epoch_ns = header.get(dialect.epoch_base_key) if dialect.epoch_base_key else None
    epoch_ns = epoch_ns if is_int64(epoch_ns) else 0
    if not epoch_ns and clock.base_us < EPOCH_US_THRESHOLD:
        info[RELATIVE_CLOCK_INFO] = "relative: the trace's timestamps are not UNIX epoch times"
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


class _PhaseRows:
    """Document rows by phase: ``rows("B", "E")`` is every begin and end, in file order."""

    def __init__(self, events: EventColumns) -> None:
        phases = events.phase
        self.by_phase = {value: np.flatnonzero(phases.codes == code) for code, value in enumerate(phases.values)}

    def __call__(self, *wanted: str) -> np.ndarray:
        found = [self.by_phase[p] for p in wanted if p in self.by_phase]
        return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)


def _collect_records(path: Path, events: EventColumns, rows: _PhaseRows, warnings: list[str]) -> _Records:
    """The events that become slices, with a warning for everything skipped."""
    if events.skipped:
        warnings.append(f"{events.skipped} trace events that are not JSON objects were skipped")
    if events.oversized_ids():
        warnings.append("ids past the 64-bit integer range (pid, tid or flow id) were kept as they are")
    records = _Records(events)
    records.add(rows("X"), _Kind.SLICE)
    records.add(rows(*INSTANT_PHASES), _Kind.INSTANT)
    records.add(rows("C"), _Kind.COUNTER)
    unmatched = records.add_pairs(rows("B", "E"), "B", _Kind.SLICE, (events.pid.codes, events.tid.codes))
    async_keys = (events.pid.codes, events.category.codes, events.flow_id.codes)
    unmatched += records.add_pairs(rows("b", "e"), "b", _Kind.ASYNC, async_keys)
    if unmatched:
        warnings.append(f"{unmatched} begin/end events without a partner were skipped")
    # Events with no phase at all (XProf ends its traceEvents with an empty {}) say nothing.
    other = {phase: len(r) for phase, r in rows.by_phase.items() if phase not in HANDLED_PHASES and phase}
    if other:
        listed = ", ".join(f"{count} '{phase}'" for phase, count in sorted(other.items()))
        warnings.append(f"events of unsupported phases were skipped: {listed}")
    records.finish()
    if not len(records.source):
        detail = "the trace has no events" if not len(events) else "no trace events with a time and a thread"
        raise ProfileFormatError(path, f"is not a profile: {detail}")
    _check_times(path, events, records)
    return records


def _record_times(path: Path, events: EventColumns, records: _Records) -> tuple[_Clock, np.ndarray, np.ndarray, int]:
    """The clock, each record's start and duration in ps, and time zero (a whole ns)."""
    clock = _Clock.for_records(events, records)
    start_units = clock.units(records.source)
    dur_units = np.rint(records.dur_us * clock.scale)
    paired = records.end >= 0
    if paired.any():  # begin/end pairs: end minus begin, each converted exactly
        dur_units[paired] = clock.units(records.end[paired]) - start_units[paired]
    if float(np.max(start_units + dur_units)) / clock.scale > MAX_SPAN_US:
        raise ProfileFormatError(path, "event times span more than 106 days; timestamps are out of range")
    start_ps = start_units.astype(np.int64) * clock.ps_per_unit
    dur_ps = dur_units.astype(np.int64) * clock.ps_per_unit
    return clock, start_ps, dur_ps, int(start_ps.min()) // 1000 * 1000


def _build_planes(
    document: TraceDocument,
    dialect: Dialect,
    records: _Records,
    layout: _Layout,
    start_ps: np.ndarray,
    dur_ps: np.ndarray,
    warnings: list[str],
) -> list[Plane]:
    events = document.events
    categories = max(len(events.category.values), 1)
    # Event types: (name, category, whether an instant): instants get types of their own.
    is_instant = (records.kind == _Kind.INSTANT).astype(np.int64)
    pair_codes = (events.name.codes[records.source] * categories + events.category.codes[records.source]) * 2 + is_instant
    record_args = events.args.translated(dialect.translator).take(records.source)
    id_columns: dict[str, np.ndarray] = {}
    if dialect.id_columns:  # read in file order, where the args lie joined, then taken
        in_file, oversized = dialect.id_columns(events.args, events.arg_ints)
        id_columns = {column: values[records.source] for column, values in in_file.items()}
        past_int64 = int(oversized[records.source].sum())
        del in_file, oversized
        if past_int64:
            warnings.append(f"{past_int64} id values in args are integers past int64: kept in the args, not as ids")
    # Every plane's raw columns first, then the records' columns let go, then each plane
    # finished and its raw columns let go: the records' columns (~70 bytes a record) were
    # held while the largest plane was sorted, the peak of a JSON load.
    raws: list[RawPlane | None] = []
    for plane_index, plane_name in enumerate(layout.plane_names):
        plane_rows = np.flatnonzero(layout.record_plane == plane_index)
        pairs, _, local_ids = unique_codes(pair_codes[plane_rows], len(events.name.values) * categories * 2)
        raw_plane = RawPlane(
            id=plane_index,
            name=plane_name,
            lines=layout.lines[plane_index],
            metadata=_metadata(
                [as_text(events.name.values[p // 2 // categories]) for p in pairs.tolist()],
                [as_text(events.category.values[p // 2 % categories]) for p in pairs.tolist()],
                [p % 2 == 1 for p in pairs.tolist()],
            ),
            start_ps=start_ps[plane_rows],
            duration_ps=dur_ps[plane_rows],
            metadata_id=local_ids.astype(np.int32),
            line=layout.record_line[plane_rows],
            stats=record_args.take(plane_rows),
            ids={column: values[plane_rows] for column, values in id_columns.items()},
            plane_stats=dialect.plane_stats(plane_name, document.header) if dialect.plane_stats else [],
        )
        raws.append(raw_plane)
        del raw_plane
    del pair_codes, record_args, id_columns
    planes = []
    for plane_index in range(len(raws)):
        taken, raws[plane_index] = raws[plane_index], None
        assert taken is not None
        planes.append(finish_plane(taken, 0)[0])
        del taken
    return planes


def time_scale(relative_us: np.ndarray, dur_us: np.ndarray, tolerance_ns: float) -> int:
    """Units per microsecond to round times to.

    1000 (ns) when every value is a whole number of nanoseconds up to ``tolerance_ns`` (the
    precision the file's doubles allow), as Kineto writes them: rounding then recovers the
    file's decimal text exactly. Else 1e6 (ps), as stepscope's own export writes sub-ns times.
    """
    for values in (relative_us, dur_us):
        ns = values * 1000.0
        if len(ns) and float(np.max(np.abs(ns - np.rint(ns)))) > tolerance_ns:
            return 1_000_000
    return 1000


@dataclass(frozen=True)
class _Clock:
    """Converts event timestamps (us) to integer units of 1/scale us after ``base_us``.

    Where the reader re-read a timestamp from its decimal text (fractional epoch
    microseconds such as 1712195495519689.047, past what a double resolves to the
    nanosecond), that exact value is used.
    """

    base_us: int
    scale: int
    events: EventColumns

    @classmethod
    def for_records(cls, events: EventColumns, records: _Records) -> _Clock:
        ts_us = events.ts_us[records.source]
        base_us = math.floor(float(ts_us.min()))
        if events.exact.any():
            return cls(base_us, 1000, events)
        # A double is within half its spacing of the text it came from.
        tolerance_ns = max(1e-3, 0.5 * float(np.spacing(np.max(np.abs(ts_us)))) * 1000.0)
        return cls(base_us, time_scale(ts_us - base_us, records.dur_us, tolerance_ns), events)

    def units(self, rows: np.ndarray) -> np.ndarray:
        """Times of document rows ``rows``, as float64 holding integers."""
        values: npt.NDArray[np.float64] = np.rint((self.events.ts_us[rows] - self.base_us) * self.scale)
        exact = self.events.exact[rows]
        if exact.any():
            values[exact] = (self.events.exact_ns[rows][exact] - self.base_us * 1000).astype(np.float64)
        return values

    @property
    def ps_per_unit(self) -> int:
        return 1_000_000 // self.scale


_INSTANT_STAT = Stat(names.INSTANT, StatKind.INT64, 1)


def _metadata(event_names: list[str], categories: list[str], instants: list[bool]) -> EventMetadata:
    count = len(event_names)
    stats = [[_INSTANT_STAT] if instant else [] for instant in instants]
    kinds = kind_array(event_kinds(event_names, categories))
    return EventMetadata(event_names, [""] * count, categories, stats, [b""] * count, kinds)


def _host_name(path: Path, header: dict[str, Any]) -> str:
    own = header.get("stepscope")
    host = (own.get("host") if isinstance(own, dict) else None) or header.get("host_name") or header.get("hostname")
    if isinstance(host, str) and host:
        return host
    name = path.name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name or "host"


def _decoded_args(events: EventColumns, row: int) -> dict[str, Any]:
    try:
        args = msgspec.json.decode(events.args.raw(row))
    except msgspec.DecodeError:
        return {}
    return args if isinstance(args, dict) else {}


def _read_metadata(events: EventColumns, rows: np.ndarray) -> dict[Any, ProcessInfo]:
    processes: dict[Any, ProcessInfo] = {}
    for row in rows.tolist():
        process = processes.setdefault(events.pid[row], ProcessInfo())
        args = _decoded_args(events, row)
        kind = as_text(events.name[row])
        if kind == names.PROCESS_NAME:
            process.name = as_text(args.get("name"))
        elif kind == names.PROCESS_LABELS:
            process.labels = as_text(args.get("labels"))
        elif kind == names.THREAD_NAME:
            process.threads[events.tid[row]] = as_text(args.get("name")).strip()
    return processes


class _Records:
    """The events that become slices, in record order: their document rows, their kind,
    and for begin/end pairs the row of the end."""

    def __init__(self, events: EventColumns) -> None:
        self._events = events
        self._parts: list[tuple[np.ndarray, np.ndarray, int]] = []
        self.source = self.end = self.kind = self.dur_us = np.zeros(0)

    def add(self, rows: np.ndarray, kind: int, ends: np.ndarray | None = None) -> None:
        ends = np.full(len(rows), -1, dtype=np.int64) if ends is None else ends
        self._parts.append((rows.astype(np.int64), ends.astype(np.int64), kind))

    def add_pairs(self, rows: np.ndarray, begin: str, kind: int, keys: tuple[np.ndarray, ...]) -> int:
        """Matches each end to the latest open begin with the same key, in time order.

        Returns how many events found no partner."""
        events = self._events
        begin_code = events.phase.values.index(begin) if begin in events.phase.values else -1
        ordered = rows[np.argsort(events.ts_us[rows], kind="stable")]
        key_rows = list(zip(*(column[ordered].tolist() for column in keys))) if len(ordered) else []
        is_begin = (events.phase.codes[ordered] == begin_code).tolist()
        open_by_key: dict[tuple[int, ...], list[int]] = {}
        starts: list[int] = []
        ends: list[int] = []
        unmatched = 0
        for row, key, opening in zip(ordered.tolist(), key_rows, is_begin):
            stack = open_by_key.setdefault(key, [])
            if opening:
                stack.append(row)
            elif stack:
                starts.append(stack.pop())
                ends.append(row)
            else:
                unmatched += 1
        unmatched += sum(len(stack) for stack in open_by_key.values())
        self.add(np.asarray(starts, dtype=np.int64), kind, np.asarray(ends, dtype=np.int64))
        return unmatched

    def finish(self) -> None:
        events = self._events
        self.source = np.concatenate([part[0] for part in self._parts])
        self.end = np.concatenate([part[1] for part in self._parts])
        self.kind = np.concatenate([np.full(len(part[0]), part[2], dtype=np.int8) for part in self._parts])
        dur = events.dur_us[self.source].copy()
        paired = self.end >= 0
        dur[paired] = events.ts_us[self.end[paired]] - events.ts_us[self.source[paired]]
        dur[(self.kind == _Kind.INSTANT) | (self.kind == _Kind.COUNTER)] = 0.0
        # An X event without "dur" is a zero-length slice; a "dur" that is there but not a
        # number (NaN, a string) is an error, caught by _check_times.
        absent = events.dur_absent[self.source] & (self.kind == _Kind.SLICE) & ~paired
        dur[absent] = 0.0
        self.dur_us = dur


def _check_times(path: Path, events: EventColumns, records: _Records) -> None:
    ts_us = events.ts_us[records.source]
    for values, what in ((ts_us, "timestamp"), (records.dur_us, "duration")):
        bad = ~np.isfinite(values)
        if bad.any():
            index = int(np.argmax(bad))
            row = int(records.source[index])
            raise ProfileFormatError(path, f"event {row} ({as_text(events.name[row])!r}) has no valid {what}")
    negative = records.dur_us < 0
    if negative.any():
        index = int(np.argmax(negative))
        row = int(records.source[index])
        raise ProfileFormatError(
            path,
            f"event {row} ({as_text(events.name[row])!r}) has a negative duration ({float(records.dur_us[index])} us)",
        )


# Line keys: (pid code, tid code) for a thread; counters and async spans get lines apart.
_THREAD, _COUNTERS, _ASYNC = 0, 1, 2


@dataclass
class _Layout:
    """Which plane and line each record goes to, and the planes' lines."""

    plane_names: list[str]
    lines: list[list[Line]]
    record_plane: np.ndarray
    record_line: np.ndarray
    sorted_keys: np.ndarray  # line keys, sorted, for lookups of flow points
    sorted_plane: np.ndarray
    sorted_line: np.ndarray
    width: int

    @staticmethod
    def _keys(pid: np.ndarray, second: np.ndarray, flag: np.ndarray, width: int) -> npt.NDArray[np.int64]:
        keys: npt.NDArray[np.int64] = (pid * width + second) * 3 + flag
        return keys

    @classmethod
    def build(cls, events: EventColumns, records: _Records, processes: dict[Any, ProcessInfo], dialect: Dialect) -> _Layout:
        source, kind = records.source, records.kind
        width = max(len(events.tid.values), len(events.category.values), 1)
        flag = np.where(kind == _Kind.COUNTER, _COUNTERS, np.where(kind == _Kind.ASYNC, _ASYNC, _THREAD))
        second = np.where(flag == _THREAD, events.tid.codes[source], np.where(flag == _ASYNC, events.category.codes[source], 0))
        pid_codes = events.pid.codes[source]
        combined = cls._keys(pid_codes, second, flag, width)
        keys, first, record_key = unique_codes(combined, len(events.pid.values) * width * 3)
        # Lines in the order their threads first appear in the file.
        appearance = np.argsort(source[first], kind="stable")
        device_record = events.category.matches(lambda c: as_text(c) in dialect.device_categories)[source]
        devices = _device_ordinals(events, source[device_record])
        # Threads holding no device-category record: on a device plane, host threads. A
        # dialect that knows no device categories leaves every thread where its process is.
        host_thread = (keys % 3 == _THREAD) & bool(dialect.device_categories)
        host_thread[record_key[device_record]] = False

        plane_names: list[str] = []
        placements: list[list[LinePlacement]] = []
        key_plane = np.zeros(len(keys), dtype=np.int64)
        key_line = np.zeros(len(keys), dtype=np.int64)
        for code in appearance.tolist():
            pid_code, rest = divmod(int(keys[code]) // 3, width)
            key_flag = int(keys[code]) % 3
            pid = events.pid.values[pid_code]
            process = processes.get(pid, ProcessInfo())
            plane = dialect.place_process(pid, process, devices.get(pid))
            moved = bool(host_thread[code]) and names.is_device_plane(plane)
            if moved:
                plane = names.HOST_PLANE
            if plane not in plane_names:
                plane_names.append(plane)
                placements.append([])
            plane_index = plane_names.index(plane)
            if key_flag == _COUNTERS:
                placement = LinePlacement(None, names.COUNTERS_LINE)
            elif key_flag == _ASYNC:
                placement = LinePlacement(None, f"async {as_text(events.category.values[rest])}")
            elif moved:
                placement = device_host_thread(pid, events.tid.values[rest], process)
            else:
                placement = dialect.place_thread(plane, pid, events.tid.values[rest], process)
            key_plane[code] = plane_index
            key_line[code] = len(placements[plane_index])
            placements[plane_index].append(placement)
        return cls(
            plane_names=plane_names,
            lines=[_number_lines(p) for p in placements],
            record_plane=key_plane[record_key],
            record_line=key_line[record_key],
            sorted_keys=keys,
            sorted_plane=key_plane,
            sorted_line=key_line,
            width=width,
        )

    def flow_points(self, events: EventColumns, rows: np.ndarray, clock: _Clock, zero_ps: int) -> FlowPoints:
        tid = events.tid.codes[rows]
        combined = self._keys(events.pid.codes[rows], tid, np.zeros(len(rows), dtype=np.int64), self.width)
        position = np.clip(np.searchsorted(self.sorted_keys, combined), 0, max(len(self.sorted_keys) - 1, 0))
        known = (tid < self.width) & (self.sorted_keys[position] == combined) if len(self.sorted_keys) else np.zeros(len(rows), bool)
        phase = events.phase.codes[rows]
        # Category values of one text (None and "") are one flow category.
        category_text, categories = factorize([as_text(value) for value in events.category.values])
        return FlowPoints(
            starts=phase == _code(events, "s"),
            steps=phase == _code(events, "t"),
            category=category_text[events.category.codes[rows]] if len(categories) else np.zeros(len(rows), dtype=np.int64),
            categories=categories,
            flow_key=events.flow_id.codes[rows],
            flow_keys=events.flow_id.values,
            plane=np.where(known, self.sorted_plane[position], -1),
            line=np.where(known, self.sorted_line[position], -1),
            time_ps=clock.units(rows) * clock.ps_per_unit - zero_ps,
            binds_enclosing=(phase != _code(events, "f")) | events.binds_enclosing[rows],
        )


def _code(events: EventColumns, phase: str) -> int:
    return events.phase.values.index(phase) if phase in events.phase.values else -1


def _device_ordinals(events: EventColumns, device_rows: np.ndarray) -> dict[Any, int]:
    """For each pid holding device-category events (document rows ``device_rows``): the
    device its args name (else the pid)."""
    ordinals: dict[Any, int] = {}
    _, first = np.unique(events.pid.codes[device_rows], return_index=True)
    for row in device_rows[first].tolist():
        pid = events.pid[row]
        device = _decoded_args(events, row).get("device")
        ordinals[pid] = device if is_int64(device) else (pid if is_int64(pid) else len(ordinals))
    return ordinals


def _number_lines(placements: list[LinePlacement]) -> list[Line]:
    """Line ids: the source's thread/stream id where unique in the plane, else the next free number."""
    wanted = Counter(p.line_id for p in placements if p.line_id is not None)
    used = {line_id for line_id, count in wanted.items() if count == 1}
    next_free = max(used, default=-1) + 1
    lines: list[Line] = []
    for placement in placements:
        line_id = placement.line_id
        if line_id is None or wanted[line_id] != 1 or not is_int64(line_id):
            while next_free in used:
                next_free += 1
            line_id = next_free
            used.add(line_id)
        lines.append(Line(id=line_id, name=placement.name))
    return lines
