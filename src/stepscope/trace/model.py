"""The in-memory profile: planes of columnar event tables.

A :class:`Profile` mirrors XSpace (planes -> lines -> events, with per-plane event
metadata) but stores events column-wise in numpy arrays, so analyses are vectorised and a
profile of millions of events costs tens of bytes per event, not a Python object each.

Conventions:
- Times are integer picoseconds from the profile's start (``Profile.start_ns``, UNIX epoch
  nanoseconds), so every event starts at or after 0.
- A plane's events are sorted by (line, start, longest first); each line's events are a
  contiguous slice (``Plane.line_slice``). ``depth`` and ``parent`` describe nesting within
  a line and are computed once when the plane is built (see ``builder``).
- Absent ids are ``NO_ID`` (-1).

Instances are immutable once built; readers construct them through ``builder``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.errors import ProfileInvariantError
from stepscope.trace import frames, names
from stepscope.trace.op_names import op_label
from stepscope.trace.stat_types import Stat
from stepscope.trace.stats import StatStore

NO_ID = -1
END_PIECE = 1 << 20  # rows per piece where a whole-column temporary would be 8 bytes a row of fresh pages

# The event table's columns and their dtypes; builder and readers use this one list.
EVENT_COLUMNS: dict[str, type] = {
    "start_ps": np.int64,
    "duration_ps": np.int64,
    "metadata_id": np.int32,
    "line": np.int32,
    "depth": np.int32,
    "parent": np.int64,
    "correlation_id": np.int64,
    "external_id": np.int64,
    "group_id": np.int64,
    "step_num": np.int64,
}


def latest_end(start_ps: np.ndarray, duration_ps: np.ndarray) -> int:
    """The latest ``start + duration`` of one or more events, summed in pieces of a million
    rows: the whole end column of a 10M-event plane is 80 MB of fresh pages for one number."""
    pieces = range(0, len(start_ps), END_PIECE)
    return max(int((start_ps[lo : lo + END_PIECE] + duration_ps[lo : lo + END_PIECE]).max()) for lo in pieces)


def distinct_indices(indices: np.ndarray) -> list[int]:
    """The distinct values of non-negative indices (planes, lines: a few), ascending. By
    counting: ``np.unique`` sorts (or hashes) the whole column, 14 ms for the ops of a
    1M-event profile against 1 ms, and its first call without indices imports
    ``numpy.ma`` (12 ms of a fresh process's first load of a trace)."""
    return np.flatnonzero(np.bincount(indices)).tolist() if len(indices) else []


@dataclass(frozen=True, eq=False)
class EventTable:
    """One plane's events, column-wise; row ``i`` of every column is event ``i``."""

    start_ps: npt.NDArray[np.int64]
    duration_ps: npt.NDArray[np.int64]
    metadata_id: npt.NDArray[np.int32]  # index into the plane's EventMetadata
    line: npt.NDArray[np.int32]  # index into Plane.lines
    depth: npt.NDArray[np.int32]  # 0 for a top-level event of its line
    parent: npt.NDArray[np.int64]  # row of the enclosing event on the same line, or NO_ID
    correlation_id: npt.NDArray[np.int64]  # runtime call <-> device activity (CUPTI correlation)
    external_id: npt.NDArray[np.int64]  # Kineto's "External id": framework op <-> its launches
    group_id: npt.NDArray[np.int64]  # XSpace's group_id: events of one step / one request
    step_num: npt.NDArray[np.int64]  # a step number carried by the event itself (step markers)

    def __len__(self) -> int:
        return len(self.start_ps)

    @property
    def end_ps(self) -> npt.NDArray[np.int64]:
        return self.start_ps + self.duration_ps

    def ends(self, rows: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """``end_ps[rows]`` without the whole end column (8 bytes of fresh pages per event)."""
        ends: npt.NDArray[np.int64] = self.start_ps[rows] + self.duration_ps[rows]
        return ends

    def last_end_ps(self) -> int:
        """The latest end of a table with events (see :func:`latest_end`)."""
        return latest_end(self.start_ps, self.duration_ps)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, column).nbytes for column in EVENT_COLUMNS)


@dataclass(frozen=True, eq=False)
class EventMetadata:
    """The plane's event types: ``names[i]`` is the name of ``metadata_id == i``.

    ``category`` is the source's category (Kineto's ``cat``) where it had one, else "";
    ``stats`` are stats shared by every event of the type (XSpace metadata stats, e.g.
    an XLA op's flops); ``serialized`` is XEventMetadata.metadata, kept for round trips.
    ``kinds`` is each type's ``kinds.EventKind`` as the reader translated the source's
    terms (int8; every type ``OTHER`` where none was given): what analysis reads, never
    the category.
    """

    names: list[str]
    display_names: list[str]
    categories: list[str]
    stats: list[list[Stat]]
    serialized: list[bytes]
    kinds: npt.NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, dtype=np.int8))

    def __post_init__(self) -> None:
        if len(self.kinds) == 0 and len(self.names):  # a source that says nothing: every kind OTHER
            object.__setattr__(self, "kinds", np.zeros(len(self.names), dtype=np.int8))

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def labels(self) -> list[str]:
        """The names tables and the timeline show (``op_names.op_label``): XLA's short
        ``copy-done.2`` for an instruction named by its HLO text."""
        return [op_label(name, display) for name, display in zip(self.names, self.display_names)]

    @cached_property
    def name_array(self) -> npt.NDArray[np.object_]:
        """Names as an object array, to map a metadata_id column to names in one step."""
        return np.asarray(self.names, dtype=object)


@dataclass(frozen=True)
class Line:
    """One timeline of a plane: a thread, a GPU stream, a derived line like ``Steps``."""

    id: int
    name: str
    display_name: str = ""
    # The timeline's own start in epoch ns, as the source declared it (XLine.timestamp_ns);
    # 0 when the source had none. Event times never depend on it once loaded.
    timestamp_ns: int = 0
    duration_ps: int = 0

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True, eq=False, repr=False)
class Plane:
    """One source of timelines: ``/host:CPU``, ``/device:GPU:0``, ``/host:metadata``..."""

    id: int
    name: str
    lines: list[Line]
    metadata: EventMetadata
    events: EventTable
    stats: StatStore
    plane_stats: list[Stat] = field(default_factory=list)

    def __repr__(self) -> str:  # the fields' repr is every event's arrays
        return f"<Plane {self.name!r}: {len(self.lines):,} lines, {len(self.events):,} events>"

    @property
    def is_device(self) -> bool:
        return names.is_device_plane(self.name)

    @cached_property
    def line_offsets(self) -> npt.NDArray[np.intp]:
        """``events[line_offsets[i]:line_offsets[i+1]]`` are line ``i``'s events."""
        return np.searchsorted(self.events.line, np.arange(len(self.lines) + 1), "left")

    def line_slice(self, line: int) -> slice:
        offsets = self.line_offsets
        return slice(int(offsets[line]), int(offsets[line + 1]))

    def line_event_counts(self) -> npt.NDArray[np.intp]:
        return np.diff(self.line_offsets)

    def line_index(self, name: str) -> int | None:
        for index, line in enumerate(self.lines):
            if line.name == name:
                return index
        return None

    def event_name(self, row: int) -> str:
        return self.metadata.names[int(self.events.metadata_id[row])]

    def event_stats(self, row: int) -> list[Stat]:
        """Metadata stats first, then the event's own (which win on a name clash)."""
        metadata_id = int(self.events.metadata_id[row])
        own = self.stats.stats(row, self.metadata.names[metadata_id], self.metadata.categories[metadata_id])
        return [*self.metadata.stats[metadata_id], *own]


@dataclass(frozen=True, eq=False)
class FlowTable:
    """Arrows between events, possibly across planes (host launch -> GPU kernel).

    Row ``i`` goes from event ``src_event[i]`` of plane ``src_plane[i]`` to event
    ``dst_event[i]`` of plane ``dst_plane[i]``; ``category[i]`` indexes ``categories``.
    """

    flow_id: npt.NDArray[np.int64]
    category: npt.NDArray[np.int32]
    src_plane: npt.NDArray[np.int32]
    src_event: npt.NDArray[np.int64]
    dst_plane: npt.NDArray[np.int32]
    dst_event: npt.NDArray[np.int64]
    categories: list[str]

    def __len__(self) -> int:
        return len(self.flow_id)

    @classmethod
    def empty(cls) -> FlowTable:
        ints = np.zeros(0, dtype=np.int64)
        return cls(ints, ints.astype(np.int32), ints.astype(np.int32), ints, ints.astype(np.int32), ints, [])


@dataclass(frozen=True, eq=False, repr=False)
class Profile:
    """One host's profile: what ``<host>.xplane.pb`` or one trace JSON file holds.

    In a notebook it shows itself in a few lines (``repr``, ``_repr_html_``: made by
    ``stepscope.render.display``, the presentation layer, imported when first shown) and
    gives its events as a DataFrame (``to_pandas``, ``to_arrow``: see ``trace.frames``).
    """

    planes: list[Plane]
    start_ns: int  # UNIX epoch ns of time 0
    host: str
    source: str  # where it was read from
    format: str  # the reader's name: "xspace", "kineto", "chrome"
    flows: FlowTable = field(default_factory=FlowTable.empty)
    # Source-level facts: deviceProperties, distributedInfo, XSpace hostnames/errors...
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def event_count(self) -> int:
        return sum(len(plane.events) for plane in self.planes)

    @property
    def span_ps(self) -> int:
        """From time 0 to the end of the last event."""
        return max((plane.events.last_end_ps() for plane in self.planes if len(plane.events)), default=0)

    def __repr__(self) -> str:
        from stepscope.render import display  # presentation sits above the model (tests/test_layers.py)

        return display.profile_text(self)

    def _repr_html_(self) -> str:
        from stepscope.render import display

        return display.profile_html(self)

    def to_pandas(self) -> Any:
        """One row per event, plane by plane (``trace.frames.EVENT_FRAME_COLUMNS``): plane,
        line, name, category, start_ps, duration_ps, depth and the linking ids (missing
        where absent). Needs pandas."""
        return frames.to_pandas(frames.event_columns(self))

    def to_arrow(self) -> Any:
        """The same rows as ``to_pandas`` as a ``pyarrow.Table``. Needs pyarrow."""
        return frames.to_arrow(frames.event_columns(self))

    def plane(self, name: str) -> Plane | None:
        for plane in self.planes:
            if plane.name == name:
                return plane
        return None

    @property
    def device_planes(self) -> list[Plane]:
        return [plane for plane in self.planes if plane.is_device]

    def validate(self) -> None:
        """Checks the model's invariants; raises ProfileInvariantError naming the first broken one.

        - every column of a plane has one row per event, and the stats store too;
        - times are non-negative, events sorted by (line, start) and lines contiguous;
        - metadata ids and line indices are in range;
        - an event nested under a parent starts inside it and ends inside it, and its
          depth is its parent's plus one;
        - flows point at existing events.
        """
        for plane in self.planes:
            _validate_plane(plane)
        flows = self.flows
        for side_plane, side_event in ((flows.src_plane, flows.src_event), (flows.dst_plane, flows.dst_event)):
            if len(side_plane) == 0:
                continue
            if side_plane.min() < 0 or side_plane.max() >= len(self.planes):
                raise ProfileInvariantError(f"{self.source}: a flow points at a missing plane")
            sizes = np.asarray([len(plane.events) for plane in self.planes])
            if side_event.min() < 0 or np.any(side_event >= sizes[side_plane]):
                raise ProfileInvariantError(f"{self.source}: a flow points at a missing event")


def _validate_plane(plane: Plane) -> None:
    events = plane.events
    where = f"plane {plane.name}"
    count = len(events)
    for column in EVENT_COLUMNS:
        if len(getattr(events, column)) != count:
            raise ProfileInvariantError(f"{where}: column {column} has {len(getattr(events, column))} rows, not {count}")
    if len(plane.stats) != count:
        raise ProfileInvariantError(f"{where}: stats have {len(plane.stats)} rows, not {count}")
    if count == 0:
        return
    if events.start_ps.min() < 0:
        raise ProfileInvariantError(f"{where}: an event starts before the profile start")
    if events.duration_ps.min() < 0:
        raise ProfileInvariantError(f"{where}: an event has a negative duration")
    if len(plane.metadata.kinds) != len(plane.metadata):
        raise ProfileInvariantError(f"{where}: {len(plane.metadata.kinds)} event kinds for {len(plane.metadata)} event types")
    if events.metadata_id.min() < 0 or events.metadata_id.max() >= len(plane.metadata):
        raise ProfileInvariantError(f"{where}: an event refers to missing metadata")
    if events.line.min() < 0 or events.line.max() >= len(plane.lines):
        raise ProfileInvariantError(f"{where}: an event refers to a missing line")
    same_line = events.line[1:] == events.line[:-1]
    if np.any(np.diff(events.line) < 0) or np.any(same_line & (np.diff(events.start_ps) < 0)):
        raise ProfileInvariantError(f"{where}: events are not sorted by line and start")
    nested = np.flatnonzero(events.parent != NO_ID)
    if len(nested):
        parents = events.parent[nested]
        if parents.min() < 0 or parents.max() >= count:
            raise ProfileInvariantError(f"{where}: a parent index is out of range")
        bad = (
            (events.line[parents] != events.line[nested])
            | (events.start_ps[parents] > events.start_ps[nested])
            | (events.ends(parents) < events.ends(nested))
            | (events.depth[parents] + 1 != events.depth[nested])
        )
        if np.any(bad):
            child = int(nested[np.argmax(bad)])
            raise ProfileInvariantError(
                f"{where}: event {plane.event_name(child)!r} at {int(events.start_ps[child])} ps "
                f"is not inside its parent {plane.event_name(int(events.parent[child]))!r}"
            )
    roots = events.parent == NO_ID
    if np.any(events.depth[roots] != 0):
        raise ProfileInvariantError(f"{where}: a top-level event has a non-zero depth")
