"""Call stacks from nesting: which stack each thread was in at every instant of a window.

A line's events nest (``parent``, ``depth``: children inside their parents, partial
overlaps made siblings, as XProf does). A sampling profiler sees one stack per thread at a
time; nesting alone does not say which when siblings overlap. The rule here: at time t the
stack's top (the *leaf*) is the event that started last among those open at t (ties: the
later row, i.e. the shorter of two that start together, which nests inside the other), and
the stack is that event and its ancestors. With proper nesting this is simply the deepest
open event; with overlapping siblings the later one covers the earlier, as in a timeline.

So every busy instant of a thread belongs to exactly one stack, and the self times of all
frames add up to the thread's busy time (the union of its events' intervals) in the window,
to the picosecond; events crossing the window's edges count with their part inside it.
``Timeline`` keeps the stack changes in time order (what speedscope's evented format and the
flame graph both read); the sweep is one pass per line (a stack with lazy removal of events
that have ended), so O(events).

Stacks are cut at ``MAX_DEPTH`` frames from the outermost: the time of deeper frames counts
as the self time of the frame at that depth (the flame graph says how much). Real stacks
are far shallower (Python's own recursion limit is 1,000 frames, torch's op stacks a few
dozen); a hostile profile of 200,000 events each nested in the one before would otherwise
hold 200,000 stacks of up to 200,000 frames, and a tree no JSON encoder or page can walk.

Which lines are threads: every line of the host plane, the Python tracer's plane and the
device planes that has an event with a duration, except derived ones (steps, counters).
Host plane lines are named by their label; lines of other planes as ``<plane> / <label>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.errors import StepscopeError
from stepscope.trace import names
from stepscope.trace.model import NO_ID, Plane, Profile

# Lines that are not threads of work but derived from them.
DERIVED_LINES = frozenset({names.STEPS_LINE, names.XPROF_STEPS_LINE, names.COUNTERS_LINE})
THREAD_PLANES = (names.HOST_PLANE, names.PYTHON_TRACER_PLANE)
LABEL_SEPARATOR = " / "
# The deepest stack kept (see the module docstring).
MAX_DEPTH = 128
# Frame categories for events whose source gave none, by where they ran.
HOST_CATEGORY, PYTHON_CATEGORY, DEVICE_CATEGORY = "host", "python", "device"


@dataclass(frozen=True)
class Thread:
    """One line that holds stacks: plane and line indices into the profile, and its name."""

    plane: int
    line: int
    label: str


@dataclass(frozen=True)
class Timeline:
    """A thread's stack through a window, as segments in time order: during
    [start_ps[i], end_ps[i]) the leaf is event ``leaf[i]`` (a row of the thread's plane).
    Instants outside every segment the thread was idle."""

    thread: Thread
    start_ps: npt.NDArray[np.int64]
    end_ps: npt.NDArray[np.int64]
    leaf: npt.NDArray[np.int64]

    @property
    def busy_ps(self) -> int:
        return int((self.end_ps - self.start_ps).sum())


def threads(profile: Profile) -> list[Thread]:
    """The profile's threads, host plane first, then the Python tracer's, then devices."""
    ordered = [i for name in THREAD_PLANES for i, plane in enumerate(profile.planes) if plane.name == name]
    ordered += [i for i, plane in enumerate(profile.planes) if plane.is_device]
    found: list[Thread] = []
    seen: dict[str, int] = {}
    for plane_index in ordered:
        plane = profile.planes[plane_index]
        timed = np.bincount(plane.events.line[plane.events.duration_ps > 0], minlength=len(plane.lines))
        for line_index, line in enumerate(plane.lines):
            if line.name in DERIVED_LINES or not timed[line_index]:
                continue
            label = line.label if plane.name == names.HOST_PLANE else f"{plane.name}{LABEL_SEPARATOR}{line.label}"
            seen[label] = seen.get(label, 0) + 1
            if seen[label] > 1:  # two threads of one name: the second is "name #2"
                label = f"{label} #{seen[label]}"
            found.append(Thread(plane_index, line_index, label))
    return found


def pick_threads(profile: Profile, choice: str) -> list[Thread]:
    """The threads ``choice`` names: "" for every host plane thread, a plane name for all
    of that plane's, else one thread's label."""
    every = threads(profile)
    if not choice:
        choice = names.HOST_PLANE
    by_plane = [thread for thread in every if profile.planes[thread.plane].name == choice]
    if by_plane:
        return by_plane
    for thread in every:
        if thread.label == choice:
            return [thread]
    if choice == names.HOST_PLANE:
        return []
    known = ", ".join(thread.label for thread in every[:10]) + (f" and {len(every) - 10} more" if len(every) > 10 else "")
    raise StepscopeError(f"no thread {choice!r} in this profile (threads: {known or 'none'})")


def timeline(profile: Profile, thread: Thread, start_ps: int, end_ps: int) -> Timeline:
    """The thread's stack through [start_ps, end_ps) (see the module docstring)."""
    plane = profile.planes[thread.plane]
    events = plane.events
    span = plane.line_slice(thread.line)
    starts = events.start_ps[span]
    ends = starts + events.duration_ps[span]
    inside = np.flatnonzero((ends > starts) & (starts < end_ps) & (ends > start_ps))
    rows = inside + span.start
    seg_start, seg_end, leaf = _sweep(np.maximum(starts[inside], start_ps).tolist(), np.minimum(ends[inside], end_ps).tolist())
    return Timeline(
        thread,
        np.asarray(seg_start, dtype=np.int64),
        np.asarray(seg_end, dtype=np.int64),
        rows[np.asarray(leaf, dtype=np.int64)] if leaf else np.zeros(0, dtype=np.int64),
    )


def _sweep(starts: list[int], ends: list[int]) -> tuple[list[int], list[int], list[int]]:
    """Segments (start, end, index of the leaf) of intervals sorted by start, the leaf at
    each instant being the latest-pushed interval still open. Ended intervals leave the
    stack when they reach its top, so each is pushed and popped once."""
    seg_start: list[int] = []
    seg_end: list[int] = []
    leaf: list[int] = []
    stack: list[int] = []
    now = 0
    forever = max(ends, default=0) + 1
    for index in range(len(starts) + 1):
        next_start = starts[index] if index < len(starts) else forever
        while stack and now < next_start:
            top = stack[-1]
            top_end = ends[top]
            if top_end <= now:
                stack.pop()
                continue
            stop = min(top_end, next_start)
            seg_start.append(now)
            seg_end.append(stop)
            leaf.append(top)
            now = stop
        if index < len(starts):
            now = next_start
            stack.append(index)
    return seg_start, seg_end, leaf


class Frames:
    """A plane's events as stack frames: names, categories, and each event's stack."""

    def __init__(self, plane: Plane) -> None:
        meta = plane.metadata
        self.plane = plane
        self.names = meta.labels
        fallback = DEVICE_CATEGORY if plane.is_device else PYTHON_CATEGORY if plane.name == names.PYTHON_TRACER_PLANE else HOST_CATEGORY
        self.categories = [category or fallback for category in meta.categories]
        self._stacks: dict[int, tuple[int, ...]] = {}

    def name(self, row: int) -> str:
        return self.names[int(self.plane.events.metadata_id[row])]

    def category(self, row: int) -> str:
        return self.categories[int(self.plane.events.metadata_id[row])]

    def stack(self, row: int) -> tuple[int, ...]:
        """The rows from the outermost event down to ``row``, the first ``MAX_DEPTH`` of
        them (memoised: leaves share stacks, and rows below the cut share their ancestor's)."""
        chain = []
        while row != NO_ID and row not in self._stacks:
            chain.append(row)
            row = int(self.plane.events.parent[row])
        stack = self._stacks[row] if row != NO_ID else ()
        for at in reversed(chain):  # outermost first, each ancestor's stack kept
            if len(stack) < MAX_DEPTH:
                stack = (*stack, at)
            self._stacks[at] = stack
        return stack

    def cut(self, row: int) -> bool:
        """Whether ``row``'s stack is deeper than ``MAX_DEPTH`` (it was cut there)."""
        return int(self.plane.events.depth[row]) >= MAX_DEPTH
