"""Merging profiles recorded by different tracers of one capture into one Profile.

Each source is aligned on the UNIX clock (its ``start_ns``); planes with the same name
(every tracer has a ``/host:CPU``) become one plane whose lines are the sources' lines, so
the tools see one host. Events are never merged across sources on one line: a thread
traced by two tracers shows as two lines, each properly nested.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from stepscope.trace.builder import RawPlane, finish_plane
from stepscope.trace.model import EVENT_COLUMNS, EventMetadata, FlowTable, Line, Plane, Profile
from stepscope.trace.stat_entries import EventTypes, StatEntries, stat_entries
from stepscope.trace.stat_types import Stat, StatValue
from stepscope.trace.stats import StatStore


class ConcatStats:
    """Rows of several stores, one after another; ``take`` only permutes the row map."""

    def __init__(self, stores: list[StatStore], store_of_row: np.ndarray, local_row: np.ndarray) -> None:
        self._stores = stores
        self._store = store_of_row
        self._local = local_row

    @classmethod
    def of(cls, stores: list[StatStore]) -> ConcatStats:
        sizes = [len(store) for store in stores]
        store_of_row = np.repeat(np.arange(len(stores)), sizes)
        local_row = np.concatenate([np.arange(size) for size in sizes]) if sizes else np.zeros(0, dtype=np.int64)
        return cls(stores, store_of_row, local_row.astype(np.int64))

    def __len__(self) -> int:
        return len(self._store)

    def _at(self, row: int) -> tuple[StatStore, int]:
        return self._stores[int(self._store[row])], int(self._local[row])

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        store, local = self._at(row)
        return store.stats(local, name, category)

    def raw(self, row: int) -> bytes:
        store, local = self._at(row)
        return store.raw(local)

    def value(self, row: int, stat: str, name: str = "", category: str = "") -> StatValue | None:
        store, local = self._at(row)
        return store.value(local, stat, name, category)

    def take(self, rows: np.ndarray) -> ConcatStats:
        return ConcatStats(self._stores, self._store[rows], self._local[rows])

    def parts(self) -> tuple[list[StatStore], np.ndarray, np.ndarray]:
        """What the constructor took (``trace.store`` saves them)."""
        return self._stores, self._store, self._local

    def entries(self, rows: np.ndarray, types: EventTypes, skip: frozenset[str] = frozenset()) -> StatEntries:
        """Each store's rows asked of it at once, the answers interleaved back."""
        store_of, local = self._store[rows], self._local[rows]
        parts = []
        for index, store in enumerate(self._stores):
            positions = np.flatnonzero(store_of == index)
            if len(positions):
                part = stat_entries(store, local[positions], types.take(positions), skip)
                parts.append(dataclasses.replace(part, row=positions[part.row]))
        return StatEntries.merge(parts)


def merge_profiles(profiles: list[Profile], host: str, source: str) -> Profile:
    """One profile holding every plane of ``profiles``, on a common clock."""
    if not profiles:
        raise ValueError("nothing to merge")
    start_ns = min(profile.start_ns for profile in profiles)
    by_name: dict[str, list[tuple[int, int, Plane]]] = {}
    for profile_index, profile in enumerate(profiles):
        for plane_index, plane in enumerate(profile.planes):
            by_name.setdefault(plane.name, []).append((profile_index, plane_index, plane))
    planes: list[Plane] = []
    # (profile, plane) -> (merged plane index, source row -> merged row)
    placement: dict[tuple[int, int], tuple[int, np.ndarray]] = {}
    for merged_index, (name, parts) in enumerate(by_name.items()):
        shifts = [(profiles[p].start_ns - start_ns) * 1000 for p, _, _ in parts]
        plane, row_maps = _merge_planes(merged_index, name, [plane for _, _, plane in parts], shifts)
        planes.append(plane)
        for (profile_index, plane_index, _), row_map in zip(parts, row_maps):
            placement[(profile_index, plane_index)] = (merged_index, row_map)
    flows = _merge_flows(profiles, placement)
    info: dict[str, Any] = {}
    for profile in profiles:
        for key, value in profile.info.items():
            if key == "warnings":
                info.setdefault("warnings", []).extend(value)
            else:
                info.setdefault(key, value)
    info["sources"] = [profile.format for profile in profiles]
    return Profile(planes=planes, start_ns=start_ns, host=host, source=source, format="xspace", flows=flows, info=info)


# A thread traced by two tracers (torch's or TSL's, and stepscope's own annotations) is two
# lines of one plane: the second keeps the thread id plus this (plus it again while taken),
# so analyses can tell the lines of one OS thread (input_pipeline.line_threads).
SAME_THREAD_LINE_ID_STEP = 1_000_000


def _merge_planes(index: int, name: str, parts: list[Plane], shifts: list[int]) -> tuple[Plane, list[np.ndarray]]:
    if len(parts) == 1 and shifts[0] == 0:
        plane = parts[0]
        return Plane(plane.id if plane.id else index, name, plane.lines, plane.metadata, plane.events, plane.stats, plane.plane_stats), [
            np.arange(len(plane.events))
        ]
    lines: list[Line] = []
    used_ids: set[int] = set()
    names: list[str] = []
    display: list[str] = []
    categories: list[str] = []
    meta_stats: list[list[Stat]] = []
    serialized: list[bytes] = []
    kinds: list[np.ndarray] = []
    columns: dict[str, list[np.ndarray]] = {column: [] for column in EVENT_COLUMNS}
    plane_stats: list[Stat] = []
    for plane, shift in zip(parts, shifts):
        line_offset, meta_offset = len(lines), len(names)
        for line in plane.lines:
            line_id = line.id
            while line_id in used_ids:  # the same thread traced by two tracers: two lines
                line_id += SAME_THREAD_LINE_ID_STEP
            used_ids.add(line_id)
            lines.append(Line(line_id, line.name, line.display_name, line.timestamp_ns, line.duration_ps))
        meta = plane.metadata
        names += meta.names
        display += meta.display_names
        categories += meta.categories
        meta_stats += meta.stats
        serialized += meta.serialized
        kinds.append(meta.kinds)
        events = plane.events
        for column in EVENT_COLUMNS:
            columns[column].append(getattr(events, column))
        columns["start_ps"][-1] = events.start_ps + shift
        columns["line"][-1] = events.line + line_offset
        columns["metadata_id"][-1] = events.metadata_id + meta_offset
        plane_stats += [stat for stat in plane.plane_stats if stat.name not in {s.name for s in plane_stats}]
    joined = {column: np.concatenate(values) for column, values in columns.items()}
    raw = RawPlane(
        id=index,
        name=name,
        lines=lines,
        metadata=EventMetadata(names, display, categories, meta_stats, serialized, np.concatenate(kinds)),
        start_ps=joined["start_ps"],
        duration_ps=joined["duration_ps"],
        metadata_id=joined["metadata_id"],
        line=joined["line"],
        stats=ConcatStats.of([plane.stats for plane in parts]),
        ids={column: joined[column] for column in ("correlation_id", "external_id", "group_id", "step_num")},
        plane_stats=plane_stats,
    )
    plane, order = finish_plane(raw, 0)
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    offsets = np.cumsum([0] + [len(part.events) for part in parts])
    return plane, [position[offsets[i] : offsets[i + 1]] for i in range(len(parts))]


def _merge_flows(profiles: list[Profile], placement: dict[tuple[int, int], tuple[int, np.ndarray]]) -> FlowTable:
    tables = []
    categories: list[str] = []
    for profile_index, profile in enumerate(profiles):
        flows = profile.flows
        if not len(flows):
            continue
        columns: dict[str, tuple[list[int], list[int]]] = {"src": ([], []), "dst": ([], [])}  # plane, row
        for side, planes_column, events_column in (("src", flows.src_plane, flows.src_event), ("dst", flows.dst_plane, flows.dst_event)):
            for plane_index, row in zip(planes_column.tolist(), events_column.tolist()):
                merged, row_map = placement[(profile_index, plane_index)]
                columns[side][0].append(merged)
                columns[side][1].append(int(row_map[row]))
        remap = np.asarray([_index(categories, name) for name in flows.categories], dtype=np.int32)
        tables.append((flows.flow_id, remap[flows.category] if len(remap) else flows.category, columns))
    if not tables:
        return FlowTable.empty()
    return FlowTable(
        flow_id=np.concatenate([t[0] for t in tables]),
        category=np.concatenate([t[1] for t in tables]).astype(np.int32),
        src_plane=np.concatenate([np.asarray(t[2]["src"][0], dtype=np.int32) for t in tables]),
        src_event=np.concatenate([np.asarray(t[2]["src"][1], dtype=np.int64) for t in tables]),
        dst_plane=np.concatenate([np.asarray(t[2]["dst"][0], dtype=np.int32) for t in tables]),
        dst_event=np.concatenate([np.asarray(t[2]["dst"][1], dtype=np.int64) for t in tables]),
        categories=categories,
    )


def _index(values: list[str], value: str) -> int:
    if value not in values:
        values.append(value)
    return values.index(value)
