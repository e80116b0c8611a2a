"""A .pftrace read back with Perfetto's own protos (the `perfetto` package), independent of
stepscope's writer: tracks, slices rebuilt from their begin/end stacks as trace processor
rebuilds them (packets ordered by timestamp, stably), instants, counters and flows."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pp

BEGIN, END, INSTANT, COUNTER = (
    pp.TrackEvent.TYPE_SLICE_BEGIN,
    pp.TrackEvent.TYPE_SLICE_END,
    pp.TrackEvent.TYPE_INSTANT,
    pp.TrackEvent.TYPE_COUNTER,
)


@dataclass
class Slice:
    track: int
    name: str
    start_ns: int
    end_ns: int
    args: dict[str, object]
    flow_ids: list[int]
    terminating_flow_ids: list[int]


@dataclass
class DecodedTrace:
    processes: dict[int, str] = field(default_factory=dict)  # uuid -> process name
    threads: dict[int, str] = field(default_factory=dict)  # uuid -> thread name (or track name)
    track_process: dict[int, int] = field(default_factory=dict)  # uuid -> its process's uuid
    counter_tracks: dict[int, str] = field(default_factory=dict)
    slices: list[Slice] = field(default_factory=list)
    instants: list[Slice] = field(default_factory=list)
    counters: dict[str, list[tuple[int, float]]] = field(default_factory=lambda: defaultdict(list))
    unbalanced: int = 0  # ends with no open slice, or slices never ended


def read_pftrace(path: Path) -> DecodedTrace:
    trace = pp.Trace.FromString(path.read_bytes())
    names: dict[str, dict[int, str]] = {"event_names": {}, "event_categories": {}, "debug_annotation_names": {}}
    decoded = DecodedTrace()
    events = []
    for packet in trace.packet:
        for kind, table in names.items():
            for entry in getattr(packet.interned_data, kind):
                table[entry.iid] = entry.name
        if packet.HasField("track_descriptor"):
            track = packet.track_descriptor
            if track.HasField("process"):
                decoded.processes[track.uuid] = track.process.process_name
            elif track.HasField("counter"):
                decoded.counter_tracks[track.uuid] = track.name
            else:
                decoded.threads[track.uuid] = track.thread.thread_name if track.HasField("thread") else track.name
                decoded.track_process[track.uuid] = track.parent_uuid
        if packet.HasField("track_event"):
            events.append((packet.timestamp, len(events), packet.track_event))
    events.sort(key=lambda item: (item[0], item[1]))
    stacks: dict[int, list[Slice]] = defaultdict(list)
    for timestamp, _, event in events:
        if event.type == COUNTER:
            decoded.counters[decoded.counter_tracks[event.track_uuid]].append((timestamp, event.double_counter_value))
        elif event.type == END:
            stack = stacks[event.track_uuid]
            if not stack:
                decoded.unbalanced += 1
                continue
            opened = stack.pop()
            opened.end_ns = timestamp
            decoded.slices.append(opened)
        else:
            args = {}
            for annotation in event.debug_annotations:
                value_field = annotation.WhichOneof("value")
                args[names["debug_annotation_names"][annotation.name_iid]] = getattr(annotation, value_field) if value_field else None
            item = Slice(
                event.track_uuid,
                names["event_names"][event.name_iid],
                timestamp,
                timestamp,
                args,
                list(event.flow_ids),
                list(event.terminating_flow_ids),
            )
            if event.type == BEGIN:
                stacks[event.track_uuid].append(item)
            else:
                decoded.instants.append(item)
    decoded.unbalanced += sum(len(stack) for stack in stacks.values())
    return decoded
