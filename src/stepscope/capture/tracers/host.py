"""The host tracer: stepscope's own annotations (``trace``, ``step``) from every thread.

Annotation times are ``perf_counter_ns`` (cheap and monotonic); the tracer pins that clock
to UNIX time once at start, so its events line up with the frameworks' on one clock.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from itertools import chain, repeat
from operator import itemgetter, methodcaller
from typing import Any, cast

import numpy as np

from stepscope.capture.annotations import Record, Recording, read_spools, set_recording
from stepscope.capture.options import ProfilerOptions
from stepscope.trace import names
from stepscope.trace.builder import RawPlane
from stepscope.trace.model import EventMetadata, Line, Plane, Profile
from stepscope.trace.presorted import finish_presorted
from stepscope.trace.stat_types import INT64_MAX, StatKind, stat_from_python
from stepscope.trace.stats import TextValues, TypedStats

_CLOCK_SAMPLES = 9


class EpochClock:
    """perf_counter_ns -> UNIX ns, pinned when made."""

    def __init__(self) -> None:
        # The reading with the smallest gap between its two perf_counter calls: a thread
        # switch in between (frequent while a remote capture shortens the switch interval)
        # would otherwise shift every event by up to the gap.
        samples = []
        for _ in range(_CLOCK_SAMPLES):
            before = time.perf_counter_ns()
            epoch = time.time_ns()
            after = time.perf_counter_ns()
            samples.append((after - before, epoch - (before + after) // 2))
        self.offset = min(samples)[1]

    def epoch(self, perf_ns: int) -> int:
        return perf_ns + self.offset


def events_plane(
    name: str,
    records: Sequence[Record],
    clock: EpochClock,
    start_ns: int,
    thread_names: dict[int, str] | None = None,
) -> Plane:
    """A plane of (name, start perf ns, end perf ns, thread id, args) records: one line per
    thread, times relative to ``start_ns`` (UNIX).

    Built column by column with C-level conversions (a capture holds millions of records);
    only the records with args are visited again, their values typed a type at a time."""
    thread_names = {**{thread.native_id: thread.name for thread in threading.enumerate() if thread.native_id is not None}, **(thread_names or {})}
    count = len(records)
    # A column at a time (zip(*records) would make an iterator per record: GC work).
    labels, threads, args = (tuple(map(itemgetter(field), records)) for field in (0, 3, 4))
    thread_ids = sorted(set(threads))
    line_of = {tid: index for index, tid in enumerate(thread_ids)}
    lines = [Line(id=tid & 0x7FFFFFFF, name=thread_names.get(tid, f"thread {tid}")) for tid in thread_ids]
    metadata_names = dict.fromkeys(labels, 0)  # in order of first use
    for index, label in enumerate(metadata_names):
        metadata_names[label] = index
    offset_ps = (clock.offset - start_ns) * 1000
    starts = np.fromiter(map(itemgetter(1), records), dtype=np.int64, count=count) * 1000 + offset_ps
    stops = np.fromiter(map(itemgetter(2), records), dtype=np.int64, count=count) * 1000 + offset_ps
    stats, step_num = _args_stats(args)
    duration = np.maximum(stops - starts, 0)
    metadata_id = np.fromiter(map(metadata_names.__getitem__, labels), dtype=np.int32, count=count)
    line = np.fromiter(map(line_of.__getitem__, threads), dtype=np.int32, count=count)
    # finish_plane's order (line, start, longest first; ties as recorded), applied here so
    # that the compiled finish keeps it and only nests.
    order = np.lexsort((-duration, starts, line))
    meta_count = len(metadata_names)
    raw = RawPlane(
        id=0,
        name=name,
        lines=lines,
        metadata=EventMetadata(list(metadata_names), [""] * meta_count, [""] * meta_count, [[] for _ in range(meta_count)], [b""] * meta_count),
        start_ps=starts[order],
        duration_ps=duration[order],
        metadata_id=metadata_id[order],
        line=line[order],
        stats=stats.take(order),
        ids={"step_num": step_num[order]},
    )
    return finish_presorted(raw, 0)[0]


# Arg value types typed in bulk: value type -> its StatKind (bool: an int64 0 or 1).
_BULK_KINDS = {int: StatKind.INT64, bool: StatKind.INT64, float: StatKind.DOUBLE, str: StatKind.STR, bytes: StatKind.BYTES}
_OTHER = -1


def _args_stats(args: tuple[dict[str, Any] | None, ...]) -> tuple[TypedStats, np.ndarray]:
    """The records' args as typed stats (as ``stat_from_python`` types them), and their
    ``step_num`` where it is an integer that fits an int64 (else -1)."""
    count = len(args)
    step_num = np.full(count, -1, dtype=np.int64)
    rows = np.flatnonzero(np.fromiter(map(bool, args), dtype=bool, count=count))
    dicts = cast(list[dict[str, Any]], list(map(args.__getitem__, rows.tolist())))  # rows: the records with args
    sizes = np.fromiter(map(len, dicts), dtype=np.int64, count=len(dicts))
    keys = list(chain.from_iterable(dicts))
    values = list(chain.from_iterable(map(methodcaller("values"), dicts)))
    total = len(values)
    event = np.repeat(rows.astype(np.int64), sizes)
    kind = np.fromiter(map(_BULK_KINDS.get, map(type, values), repeat(_OTHER)), dtype=np.int8, count=total)
    bits = np.zeros(total, dtype=np.int64)
    ints = np.flatnonzero(kind == StatKind.INT64)
    try:
        if len(ints) == total:  # only ints (step markers' step_num): no gather
            bits[:] = np.fromiter(values, dtype=np.int64, count=total)
        else:
            bits[ints] = np.fromiter(map(values.__getitem__, ints.tolist()), dtype=np.int64, count=len(ints))
    except OverflowError:  # past int64: typed one by one below
        kind[ints] = _OTHER
    doubles = np.flatnonzero(kind == StatKind.DOUBLE)
    bits[doubles] = np.fromiter(map(values.__getitem__, doubles.tolist()), dtype=np.float64, count=len(doubles)).view(np.int64)
    for entry in np.flatnonzero(kind == _OTHER).tolist():
        stat = stat_from_python(keys[entry], values[entry])
        kind[entry] = stat.kind
        if stat.kind < StatKind.DOUBLE:
            number = int(stat.value)
            bits[entry] = number - (1 << 64) if number > INT64_MAX else number
        elif stat.kind == StatKind.DOUBLE:
            bits[entry] = np.array(stat.value, dtype=np.float64).view(np.int64)
        else:
            values[entry] = stat.value
    textual = np.flatnonzero(kind >= StatKind.STR)
    texts = list(map(values.__getitem__, textual.tolist()))
    bits[textual] = np.arange(len(texts))
    key_names = sorted(set(keys))
    key_index = {key: index for index, key in enumerate(key_names)}
    key = np.fromiter(map(key_index.__getitem__, keys), dtype=np.int32, count=total)
    if names.STEP_NUM in key_index:
        steps = np.flatnonzero((key == key_index[names.STEP_NUM]) & (kind == StatKind.INT64))
        step_num[event[steps]] = bits[steps]
    stats = TypedStats.from_columns(event, key, kind, bits, TextValues.of(texts), key_names, count)
    return stats, step_num


class HostTracer:
    """Records stepscope's annotations (host level >= 1)."""

    name = "host"
    thread_affine = False

    def __init__(self) -> None:
        self._recording: Recording | None = None
        self._spool = ""
        self._clock = EpochClock()

    def is_available(self) -> bool:
        return True

    def start(self, options: ProfilerOptions) -> None:
        if options.host_tracer_level < 1:
            return
        self._clock = EpochClock()
        self._spool = tempfile.mkdtemp(prefix="stepscope-spool-")
        self._recording = Recording(options.host_tracer_level, self._spool)
        set_recording(self._recording)

    def stop(self) -> list[Profile]:
        recording, self._recording = self._recording, None
        set_recording(None)
        if recording is None:
            return []
        records = list(recording.events)
        threads = dict(recording.threads)
        # Worker processes' events: their threads become lines named after the process.
        for pid, worker_records, worker_threads in read_spools(self._spool):
            for thread, name in worker_threads.items():
                threads[_worker_key(pid, thread)] = f"process {pid} / {name}"
            records += [(r[0], r[1], r[2], _worker_key(pid, r[3]), r[4]) for r in worker_records]
        shutil.rmtree(self._spool, ignore_errors=True)
        if not records:
            return []
        start_ns = self._clock.epoch(min(map(itemgetter(1), records))) // 1000 * 1000
        plane = events_plane(names.HOST_PLANE, records, self._clock, start_ns, threads)
        return [Profile(planes=[plane], start_ns=start_ns, host="", source="stepscope annotations", format="stepscope")]


def _worker_key(pid: int, thread: int) -> int:
    """A line key for a worker process's thread, apart from the parent's threads."""
    return (pid << 32) ^ (thread & 0xFFFFFFFF)


def warm_up() -> None:
    """Imports what a capture's stop runs (the nesting, the merge, the XSpace writer and
    protobuf: 0.13-0.20 s of a fresh process, measured), so that the first stop does not
    pay for it. The profiler server runs it when it starts. The profile it encodes has the
    shapes a capture has (a plane with args, one without, merged), so that the stop takes
    no path the warm-up did not."""
    from stepscope.trace.formats.xspace.write import xspace_chunks
    from stepscope.trace.merge import merge_profiles

    clock = EpochClock()
    records: dict[str, list[Record]] = {
        names.HOST_PLANE: [("warm-up", 0, 2, 0, {names.STEP_NUM: 0}), ("inner", 0, 1, 0, {"text": "x"})],
        names.PYTHON_TRACER_PLANE: [("call", 0, 1, 0, None)],
    }
    profiles = [
        Profile(planes=[events_plane(name, found, clock, clock.offset)], start_ns=clock.offset + shift, host="", source="warm-up", format="stepscope")
        for shift, (name, found) in enumerate(records.items())
    ]
    xspace_chunks(merge_profiles(profiles, host="warm-up", source="warm-up"))
