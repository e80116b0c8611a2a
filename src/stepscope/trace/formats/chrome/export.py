"""Exporting a Profile as Chrome trace JSON, which Perfetto and chrome://tracing open.

The output is written in chunks of events straight into the (optionally gzip) file, never
built as one string, so a profile of millions of events exports in bounded memory.

Mapping: each plane is a process (named after the plane), each line a thread (its id and
name), each event a complete ("X") event with its stats as ``args`` (for an imported JSON
trace, exactly the args it had), or an instant ("i", thread scope) where its type has the
``instant`` metadata stat (the source recorded it as one, e.g. Kineto's ``[memory]``);
counter lines (``_counters_``) as "C" events, the memory totals of memory events as "C"
events too (``trace.counters``: one counter per device, a series per figure), and flows as
"s"/"f" pairs bound to their events, under the category they were read with (Kineto's
``ac2g``, ``fwdbwd``). Timestamps are absolute: UNIX-epoch microseconds with picosecond
digits kept, so the traces of several ranks line up when opened together (no
``baseTimeNanoseconds``, which would shift them again on import).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from stepscope.trace import names
from stepscope.trace.counters import counter_series
from stepscope.trace.files import atomic_output
from stepscope.trace.model import Plane, Profile

CHUNK_EVENTS = 20_000
BASE_TIME_KEY = "baseTimeNanoseconds"  # Kineto's header key; not written (times are absolute)
_encode = msgspec.json.encode


def _micros(ps: int) -> str:
    """Picoseconds as a decimal microsecond literal, exact (no float rounding)."""
    whole, fraction = divmod(ps, 1_000_000)
    if not fraction:
        return str(whole)
    return f"{whole}.{fraction:06d}".rstrip("0")


def iter_chunks(profile: Profile, progress: Callable[[int], object] | None = None) -> Iterator[bytes]:
    """The export as a sequence of byte chunks; ``progress`` is told how many events each held."""
    header = {key: value for key, value in profile.info.items() if key not in ("warnings", "clock", BASE_TIME_KEY)}
    header.update(
        displayTimeUnit="ns",
        stepscope={"source": profile.source, "format": profile.format, "host": profile.host},
    )
    base_ps = profile.start_ns * 1000
    yield _encode(header)[:-1] + b',"traceEvents":[\n'
    first = True
    for pid, plane in enumerate(profile.planes):
        meta = [
            _metadata_event("process_name", pid, 0, {"name": plane.name}),
            _metadata_event("process_sort_index", pid, 0, {"sort_index": pid}),
            *(_metadata_event("thread_name", pid, line.id, {"name": line.label}) for line in plane.lines),
        ]
        chunk = b",\n".join(meta)
        yield chunk if first else b",\n" + chunk
        first = False
        for chunk_bytes, count in _plane_events(pid, plane, base_ps):
            yield b",\n" + chunk_bytes
            if progress:
                progress(count)
    flows = _flow_events(profile, base_ps)
    if flows:
        yield b",\n" + flows
    counters = _memory_counter_events(profile, base_ps)
    if counters:
        yield b",\n" + counters
    yield b"\n]}\n"


def _metadata_event(kind: str, pid: int, tid: int, args: dict[str, str | int]) -> bytes:
    return _encode({"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": args})


def _plane_events(pid: int, plane: Plane, base_ps: int) -> Iterator[tuple[bytes, int]]:
    events = plane.events
    meta = plane.metadata
    instant_types = {index for index, stats in enumerate(meta.stats) if any(stat.name == names.INSTANT for stat in stats)}
    name_json = [_encode(name) for name in meta.names]
    cat_json = [_encode(category) for category in meta.categories]
    tids = [line.id for line in plane.lines]
    counter_lines = {i for i, line in enumerate(plane.lines) if line.name == names.COUNTERS_LINE}
    stats = plane.stats
    count = len(events)
    for lo in range(0, count, CHUNK_EVENTS):
        hi = min(lo + CHUNK_EVENTS, count)
        starts = events.start_ps[lo:hi].tolist()
        durations = events.duration_ps[lo:hi].tolist()
        metadata_ids = events.metadata_id[lo:hi].tolist()
        lines = events.line[lo:hi].tolist()
        parts = []
        for offset, (start, duration, metadata_id, line) in enumerate(zip(starts, durations, metadata_ids, lines)):
            row = lo + offset
            args = stats.raw(row)
            category = meta.categories[metadata_id]
            cat = b',"cat":' + cat_json[metadata_id] if category else b""
            if line in counter_lines:
                parts.append(
                    b'{"ph":"C","pid":%d,"tid":%d,"ts":%s,"name":%s%s,"args":%s}'
                    % (pid, tids[line], _micros(base_ps + start).encode(), name_json[metadata_id], cat, args)
                )
            elif metadata_id in instant_types:
                parts.append(
                    b'{"ph":"i","s":"t","pid":%d,"tid":%d,"ts":%s,"name":%s%s,"args":%s}'
                    % (pid, tids[line], _micros(base_ps + start).encode(), name_json[metadata_id], cat, args)
                )
            else:
                parts.append(
                    b'{"ph":"X","pid":%d,"tid":%d,"ts":%s,"dur":%s,"name":%s%s,"args":%s}'
                    % (pid, tids[line], _micros(base_ps + start).encode(), _micros(duration).encode(), name_json[metadata_id], cat, args)
                )
        yield b",\n".join(parts), hi - lo


def _memory_counter_events(profile: Profile, base_ps: int) -> bytes:
    """The memory series of ``trace.counters`` as "C" events: one counter per device, its
    figure (``Total Allocated``...) the arg. Counter lines are written with their planes."""
    parts = []
    for series in counter_series(profile):
        if not series.from_memory:
            continue
        head = b'{"ph":"C","pid":%d,"tid":0,"name":%s,"ts":' % (series.plane, _encode(series.group))
        key = _encode(series.key)
        for time_ps, value in zip(series.time_ps.tolist(), series.value.tolist()):
            number = int(value) if value.is_integer() else value
            parts.append(head + _micros(base_ps + time_ps).encode() + b',"args":{' + key + b":" + _encode(number) + b"}}")
    return b",\n".join(parts)


def _flow_events(profile: Profile, base_ps: int) -> bytes:
    """Each flow as an "s" event at its source's start and an "f" (binding to the enclosing
    slice) at its destination's start."""
    flows = profile.flows
    parts = []
    for index in range(len(flows)):
        category = _encode(flows.categories[int(flows.category[index])])
        for phase, plane_index, row in (
            (b's"', int(flows.src_plane[index]), int(flows.src_event[index])),
            (b'f","bp":"e"', int(flows.dst_plane[index]), int(flows.dst_event[index])),
        ):
            plane = profile.planes[plane_index]
            tid = plane.lines[int(plane.events.line[row])].id
            start = _micros(base_ps + int(plane.events.start_ps[row])).encode()
            parts.append(
                b'{"ph":"%s,"id":%d,"cat":%s,"name":%s,"pid":%d,"tid":%d,"ts":%s}'
                % (phase, int(flows.flow_id[index]), category, category, plane_index, tid, start)
            )
    return b",\n".join(parts)


def write_chrome_trace(profile: Profile, path: Path, progress: Callable[[int], object] | None = None) -> None:
    """Writes the export to ``path`` (gzip when it ends in .gz), atomically."""
    with atomic_output(path) as raw:
        stream: BinaryIO = raw
        if path.name.endswith(".gz"):
            stream = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6)  # type: ignore[assignment]
        try:
            for chunk in iter_chunks(profile, progress):
                stream.write(chunk)
        finally:
            if stream is not raw:
                stream.close()
