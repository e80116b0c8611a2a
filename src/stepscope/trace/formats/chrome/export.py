"""Exporting a Profile as Chrome trace JSON, which Perfetto and chrome://tracing open.

The output is written in chunks of events straight into the (optionally gzip) file, never
built as one string, so a profile of millions of events exports in bounded memory.

Mapping: each plane is a process (named after the plane), each line a thread (its id and
name), each event a complete ("X") event with its stats as ``args`` (for an imported JSON
trace, exactly the args it had), counter lines (``_counters_``) as "C" events, and flows
as "s"/"f" pairs bound to their events. Timestamps are microseconds from the profile start
with picosecond digits kept; ``baseTimeNanoseconds`` gives the start as a UNIX time, as
Kineto writes it.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from stepscope.trace import names
from stepscope.trace.files import atomic_output
from stepscope.trace.model import Plane, Profile

CHUNK_EVENTS = 20_000
_encode = msgspec.json.encode


def _micros(ps: int) -> str:
    """Picoseconds as a decimal microsecond literal, exact (no float rounding)."""
    whole, fraction = divmod(ps, 1_000_000)
    if not fraction:
        return str(whole)
    return f"{whole}.{fraction:06d}".rstrip("0")


def iter_chunks(profile: Profile, progress: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """The export as a sequence of byte chunks; ``progress`` is told how many events each held."""
    header = {key: value for key, value in profile.info.items() if key not in ("warnings", "clock")}
    header.update(
        displayTimeUnit="ns",
        baseTimeNanoseconds=profile.start_ns,
        stepscope={"source": profile.source, "format": profile.format, "host": profile.host},
    )
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
        for chunk_bytes, count in _plane_events(pid, plane):
            yield b",\n" + chunk_bytes
            if progress:
                progress(count)
    flows = _flow_events(profile)
    if flows:
        yield b",\n" + flows
    yield b"\n]}\n"


def _metadata_event(kind: str, pid: int, tid: int, args: dict[str, str | int]) -> bytes:
    return _encode({"name": kind, "ph": "M", "pid": pid, "tid": tid, "args": args})


def _plane_events(pid: int, plane: Plane) -> Iterator[tuple[bytes, int]]:
    events = plane.events
    meta = plane.metadata
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
                    % (pid, tids[line], _micros(start).encode(), name_json[metadata_id], cat, args)
                )
            else:
                parts.append(
                    b'{"ph":"X","pid":%d,"tid":%d,"ts":%s,"dur":%s,"name":%s%s,"args":%s}'
                    % (pid, tids[line], _micros(start).encode(), _micros(duration).encode(), name_json[metadata_id], cat, args)
                )
        yield b",\n".join(parts), hi - lo


def _flow_events(profile: Profile) -> bytes:
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
            start = _micros(int(plane.events.start_ps[row])).encode()
            parts.append(
                b'{"ph":"%s,"id":%d,"cat":%s,"name":%s,"pid":%d,"tid":%d,"ts":%s}'
                % (phase, int(flows.flow_id[index]), category, category, plane_index, tid, start)
            )
    return b",\n".join(parts)


def write_chrome_trace(profile: Profile, path: Path, progress: Callable[[int], None] | None = None) -> None:
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
