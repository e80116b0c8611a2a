"""Writing a Profile as Perfetto's protobuf trace (``Trace``/``TracePacket``, .pftrace).

One packet sequence holds everything: track descriptors (a process per plane, a thread per
line, a counter track per counter series), then each plane's events as TrackEvents in time
order, then its counter samples. Event names, categories and arg names are interned (sent
once, then referred to by number), so a large profile costs a few bytes per field.

Mapping (docs/perfetto.md): a slice is a SLICE_BEGIN and a SLICE_END on its line's track;
an event type the source recorded as an instant (the ``instant`` metadata stat) is an
INSTANT; args are debug annotations; a flow is a flow id on its source event and the same
id as a terminating flow id on its destination. Perfetto's flows have no category, so the
category (Kineto's ``ac2g``, ``fwdbwd``...) is kept twice: in the id, bits 48-55 holding
the category's index plus one (each kind its own id space), and by name in the source
slice's ``flow_category`` arg. Timestamps are absolute UNIX-epoch nanoseconds, so traces of several
ranks line up when opened together (picoseconds below a nanosecond are dropped).

Packets are built as protobuf messages, a chunk of events at a time, and the chunk's
serialisation is written at once: the file is streamed, never held whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from stepscope.protos import perfetto_trace_pb2 as pb
from stepscope.trace import names
from stepscope.trace.counters import CounterSeries, counter_series, event_args
from stepscope.trace.files import atomic_output
from stepscope.trace.formats.perfetto.tracks import plane_tracks
from stepscope.trace.model import Plane, Profile

CHUNK_POINTS = 20_000
SEQUENCE_ID = 1
SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2
FLOW_CATEGORY_SHIFT = 48
_FLOW_SERIAL_MASK = (1 << FLOW_CATEGORY_SHIFT) - 1
_INT64 = 1 << 63
# The debug annotation naming the categories of the flows that leave a slice (Perfetto's
# flows have no category of their own; the UI shows it in the slice's args).
FLOW_CATEGORY_ARG = "flow_category"
Progress = Callable[[int], object]  # a progress bar's update(n): what it returns is ignored


def flow_ids(flow_count: int, category: np.ndarray) -> np.ndarray:
    """The Perfetto flow id of each arrow: its category's index plus one in bits 48-55,
    its row plus one below."""
    serial = (np.arange(flow_count, dtype=np.uint64) + np.uint64(1)) & np.uint64(_FLOW_SERIAL_MASK)
    return serial | ((category.astype(np.uint64) + np.uint64(1)) & np.uint64(0xFF)) << np.uint64(FLOW_CATEGORY_SHIFT)


@dataclass
class _Interned:
    """Strings sent so far, by kind (InternedData field), each with its iid (from 1)."""

    tables: dict[str, dict[str, int]] = field(default_factory=lambda: {"event_names": {}, "event_categories": {}, "debug_annotation_names": {}})
    pending: dict[str, list[tuple[int, str]]] = field(default_factory=lambda: {"event_names": [], "event_categories": [], "debug_annotation_names": []})

    def iid(self, kind: str, text: str) -> int:
        table = self.tables[kind]
        found = table.get(text)
        if found is None:
            found = table[text] = len(table) + 1
            self.pending[kind].append((found, text))
        return found

    def flush(self, packet: Any) -> None:
        """Puts the strings not sent yet into ``packet``'s interned data."""
        for kind, entries in self.pending.items():
            for iid, text in entries:
                getattr(packet.interned_data, kind).add(iid=iid, name=text)
            entries.clear()


@dataclass(frozen=True)
class _FlowEnds:
    """One side (sources or destinations) of the flows touching a plane, by event row."""

    rows: np.ndarray  # sorted
    ids: list[int]
    categories: list[str]

    def ranges(self, rows: np.ndarray) -> list[tuple[int, int]]:
        """For each row, the slice of ``ids`` of its flows (empty when none)."""
        return list(zip(np.searchsorted(self.rows, rows, "left").tolist(), np.searchsorted(self.rows, rows, "right").tolist()))


class _Writer:
    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.interned = _Interned()
        self.next_uuid = 0
        self.first = True
        self.counters = counter_series(profile)
        flows = profile.flows
        self.flow_ids = flow_ids(len(flows), flows.category)
        self.flow_categories = np.asarray(flows.categories, dtype=object)[flows.category] if len(flows) else np.zeros(0, dtype=object)

    def uuid(self) -> int:
        self.next_uuid += 1
        return self.next_uuid

    def packet(self, trace: Any) -> Any:
        packet = trace.packet.add()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        packet.sequence_flags = SEQ_INCREMENTAL_STATE_CLEARED if self.first else SEQ_NEEDS_INCREMENTAL_STATE
        self.first = False
        return packet

    def chunks(self, progress: Progress | None) -> Iterator[bytes]:
        for index, plane in enumerate(self.profile.planes):
            yield from self._plane(index, plane, progress)

    def _plane(self, index: int, plane: Plane, progress: Progress | None) -> Iterator[bytes]:
        trace = pb.Trace()
        pid = index + 1
        process = self.uuid()
        self.packet(trace).track_descriptor.CopyFrom(pb.TrackDescriptor(uuid=process, process=pb.ProcessDescriptor(pid=pid, process_name=plane.name)))
        events = plane.events
        meta = plane.metadata
        instant_types = np.asarray([any(s.name == names.INSTANT for s in stats) for stats in meta.stats] or [False], dtype=bool)
        counters_line = plane.line_index(names.COUNTERS_LINE)
        drawn = events.line != (-1 if counters_line is None else counters_line)
        instants = instant_types[events.metadata_id] & drawn
        slices = drawn & ~instants
        tracks = plane_tracks(plane, slices)
        # Track uuids per (line, lane); thread ids are the line ids where they fit an int32.
        first_track = []
        used_tids: set[int] = set()
        for line_index, line in enumerate(plane.lines):
            first_track.append(self.next_uuid + 1)
            if line_index == counters_line:
                self.uuid()
                continue
            tid = line.id if 0 < line.id < 2**31 and line.id not in used_tids else 2**30 + line_index
            used_tids.add(tid)
            for lane in range(tracks.lanes[line_index]):
                uuid = self.uuid()
                if lane == 0:
                    descriptor = pb.TrackDescriptor(uuid=uuid, parent_uuid=process, thread=pb.ThreadDescriptor(pid=pid, tid=tid, thread_name=line.label))
                else:
                    descriptor = pb.TrackDescriptor(uuid=uuid, parent_uuid=process, name=f"{line.label} (overlapping {lane + 1})")
                self.packet(trace).track_descriptor.CopyFrom(descriptor)
        counters = [series for series in self.counters if series.plane == index]
        counter_tracks = []
        for series in counters:
            uuid = self.uuid()
            counter_tracks.append(uuid)
            unit = pb.CounterDescriptor.UNIT_SIZE_BYTES if series.from_memory else pb.CounterDescriptor.UNIT_UNSPECIFIED
            self.packet(trace).track_descriptor.CopyFrom(
                pb.TrackDescriptor(uuid=uuid, parent_uuid=process, name=series.name, counter=pb.CounterDescriptor(unit=unit))
            )
        yield trace.SerializeToString()

        track_of = np.asarray(first_track, dtype=np.int64)[events.line] + tracks.lane if len(events) else np.zeros(0, dtype=np.int64)
        yield from self._events(index, plane, slices, instants, track_of, progress)
        for series, uuid in zip(counters, counter_tracks):
            yield self._counter(series, uuid)

    def _events(self, index: int, plane: Plane, slices: np.ndarray, instants: np.ndarray, track_of: np.ndarray, progress: Progress | None) -> Iterator[bytes]:
        events = plane.events
        slice_rows, instant_rows = np.flatnonzero(slices), np.flatnonzero(instants)
        zero = events.duration_ps[slice_rows] == 0
        # Points: begins (kind 1, by row), ends of slices with a length (kind 0, inner first:
        # rows descending), ends of zero-length slices (kind 2, after the begins at their time).
        rows = np.concatenate((slice_rows, instant_rows, slice_rows))
        is_end = np.concatenate((np.zeros(len(slice_rows) + len(instant_rows), dtype=bool), np.ones(len(slice_rows), dtype=bool)))
        time = np.concatenate((events.start_ps[slice_rows], events.start_ps[instant_rows], events.ends(slice_rows)))
        kind = np.concatenate((np.ones(len(slice_rows) + len(instant_rows), dtype=np.int8), np.where(zero, 2, 0).astype(np.int8)))
        order = np.lexsort((np.where(is_end, -rows, rows), kind, time))
        rows, is_end, time = rows[order], is_end[order], time[order]
        base_ns = self.profile.start_ns
        meta = plane.metadata
        name_iids = [self.interned.iid("event_names", name) for name in meta.names]
        category_iids = [self.interned.iid("event_categories", category) if category else 0 for category in meta.categories]
        is_instant = np.zeros(len(events), dtype=bool)
        is_instant[instant_rows] = True
        outgoing, incoming = (
            self._plane_flows(index, self.profile.flows.src_plane, self.profile.flows.src_event),
            self._plane_flows(index, self.profile.flows.dst_plane, self.profile.flows.dst_event),
        )
        begin_type, end_type, instant_type = pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END, pb.TrackEvent.TYPE_INSTANT
        for lo in range(0, len(rows), CHUNK_POINTS):
            chunk_rows = rows[lo : lo + CHUNK_POINTS]
            chunk_end = is_end[lo : lo + CHUNK_POINTS]
            begins = chunk_rows[~chunk_end]
            args = iter(event_args(plane, begins) if len(begins) else [])
            out_ranges, in_ranges = outgoing.ranges(chunk_rows), incoming.ranges(chunk_rows)
            trace = pb.Trace()
            holder = self.packet(trace)  # carries the strings first used in this chunk
            for row, end, ps, track, metadata_id, (out_lo, out_hi), (in_lo, in_hi) in zip(
                chunk_rows.tolist(),
                chunk_end.tolist(),
                time[lo : lo + CHUNK_POINTS].tolist(),
                track_of[chunk_rows].tolist(),
                events.metadata_id[chunk_rows].tolist(),
                out_ranges,
                in_ranges,
            ):
                packet = trace.packet.add()
                packet.trusted_packet_sequence_id = SEQUENCE_ID
                packet.sequence_flags = SEQ_NEEDS_INCREMENTAL_STATE
                packet.timestamp = base_ns + ps // 1000
                event = packet.track_event
                event.track_uuid = track
                if end:
                    event.type = end_type
                    continue
                event.type = instant_type if is_instant[row] else begin_type
                event.name_iid = name_iids[metadata_id]
                if category_iids[metadata_id]:
                    event.category_iids.append(category_iids[metadata_id])
                self._annotate(event, next(args))
                if out_hi > out_lo:
                    event.flow_ids.extend(outgoing.ids[out_lo:out_hi])
                    annotation = event.debug_annotations.add()
                    annotation.name_iid = self.interned.iid("debug_annotation_names", FLOW_CATEGORY_ARG)
                    annotation.string_value = ",".join(sorted(set(outgoing.categories[out_lo:out_hi])))
                if in_hi > in_lo:
                    event.terminating_flow_ids.extend(incoming.ids[in_lo:in_hi])
            self.interned.flush(holder)
            yield trace.SerializeToString()
            if progress:
                progress(len(begins))

    def _plane_flows(self, index: int, planes: np.ndarray, rows: np.ndarray) -> _FlowEnds:
        mine = np.flatnonzero(planes == index)
        order = mine[np.argsort(rows[mine], kind="stable")]
        return _FlowEnds(rows[order], self.flow_ids[order].tolist(), self.flow_categories[order].tolist())

    def _annotate(self, event: Any, args: dict[str, Any]) -> None:
        for key, value in args.items():
            annotation = event.debug_annotations.add()
            annotation.name_iid = self.interned.iid("debug_annotation_names", key)
            if isinstance(value, bool):
                annotation.bool_value = value
            elif isinstance(value, int):
                if -_INT64 <= value < _INT64:
                    annotation.int_value = value
                elif 0 <= value < 2 * _INT64:
                    annotation.uint_value = value
                else:
                    annotation.string_value = str(value)
            elif isinstance(value, float):
                annotation.double_value = value
            elif isinstance(value, str):
                annotation.string_value = value
            else:
                annotation.legacy_json_value = msgspec.json.encode(value).decode()

    def _counter(self, series: CounterSeries, uuid: int) -> bytes:
        trace = pb.Trace()
        base_ns = self.profile.start_ns
        counter_type = pb.TrackEvent.TYPE_COUNTER
        for ps, value in zip(series.time_ps.tolist(), series.value.tolist()):
            packet = trace.packet.add()
            packet.trusted_packet_sequence_id = SEQUENCE_ID
            packet.sequence_flags = SEQ_NEEDS_INCREMENTAL_STATE
            packet.timestamp = base_ns + ps // 1000
            packet.track_event.type = counter_type
            packet.track_event.track_uuid = uuid
            packet.track_event.double_counter_value = value
        data: bytes = trace.SerializeToString()
        return data


def iter_chunks(profile: Profile, progress: Progress | None = None) -> Iterator[bytes]:
    """The trace as serialised pieces; concatenated, they are one ``Trace`` message."""
    return _Writer(profile).chunks(progress)


def write_perfetto(profile: Profile, path: Path, progress: Progress | None = None) -> None:
    """Writes ``profile`` to ``path`` as a Perfetto trace, atomically."""
    with atomic_output(path) as stream:
        for chunk in iter_chunks(profile, progress):
            stream.write(chunk)
