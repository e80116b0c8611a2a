"""input_pipeline_analyzer: how long each step waits for input, and where the host's input
time goes, as XProf's input pipeline analyzer shows it.

Device side (per step). A step's input time is the overview's ``input`` part of that step
(``breakdown.step_breakdown``: the time input events cover in the step's window that no
device activity claims), so this page and the overview never disagree about a step. Its
share of the step time is summarised over the steps the overview keeps (warm-up and
one-off steps set aside, ``step_outliers``; mean, population stddev, min, max), and the
mean gives the verdict (the overview's input finding reads the same mean) with XProf's thresholds: under 5% "not", 5% to under 20%
"moderately", 20% or more "highly" input-bound.

Host side. The input events are the host events ``classify`` marks as input: the waits
(``classify.INPUT``: PyTorch DataLoader fetches
``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` /
``_MultiProcessingDataLoaderIter``, tf.data's ``IteratorGetNext*``, stepscope's
``stepscope.data.wait``) and the input work that may run beside the step
(``classify.INPUT_WORK``: tf.data's ``Iterator::...`` stages and producers, stepscope's
``stepscope.data.<stage>`` annotations), and every event nested in one on its line (the
ops and annotations a fetch ran). Markers (``[memory]`` instants, profiler spans) are left
out.

Each input op has a total time (its duration) and a self time: the time it owns on its OS
thread. At each instant a thread's time goes to one input op, of those open then the one
that started last (on equal starts the shorter; on equal spans the later line, then the
later row). On a properly nested line that is the innermost op, so self time is the
duration less the nested input ops; it also settles ops that overlap without nesting (on
one line, or on two lines of one thread): the later start takes the overlap. The lines of
one OS thread are those with the same id or whose ids differ by ``SAME_THREAD_LINE_ID_STEP``
(a stepscope capture puts torch's or TSL's events and stepscope's annotations of one thread
on two such lines; ``line_threads``). So a thread's self times sum to the union of its input
ops: a ``stepscope.data.wait`` and the DataLoader ``__next__`` it waited on count once. The
host's input time is the sum over threads; threads that run at once (tf.data's background
threads, DataLoader workers, several loaders) each count, so it is at most the number of
threads times the profile's span. The breakdown sums self time per category, so the
categories sum to the host's input time:

- ``enqueue_to_device``: host-to-device transfers issued for input: the runtime's copy calls
  (``cudaMemcpy*``, ``hipMemcpy*``, ``cuMemcpy*``) and XLA/TPU infeed enqueues found inside
  input events. A ``batch.to(device)`` in the training loop, outside the fetch, is not a
  host input op; its device copy is the overview's ``host_to_device``;
- ``demanded_file_read``: reads done when the consumer asks: ``stepscope.data.read``,
  tf.data file readers (``TFRecord``, ``TextLine``, ``FixedLengthRecord``, ``SSTable``,
  ``RecordIO``, ``ArrayRecord``) with no read-ahead stage above them in the iterator's name
  (XProf's rule), annotations named ``open``, ``read``, ``FileRead``, ``ReadFile``, and
  Python's ``<built-in function open>`` / ``<built-in method read ...>`` frames (recorded
  with ``with_stack=True``);
- ``advanced_file_read``: reads done ahead: ``stepscope.data.prefetch`` (the read-ahead
  work a user marks) and tf.data file readers below a read-ahead stage (``Prefetch``,
  ``Interleave``/``ParallelInterleave``, ``ParallelMap``, ``Cache``/``MemoryCache``,
  ``MemoryReader``/``MemoryWriter``, ``Snapshot``). Only readers are file reads (XProf's
  rule): the read-ahead stages themselves are preprocessing;
- ``preprocessing``: ``stepscope.data.decode/transform/collate``, every tf.data stage that
  is not a file reader (``Prefetch``, ``Interleave``, ``Cache``, ``Map``,
  ``ParallelMapV2``, ``BatchV2``, ``Shuffle``...), and what runs inside a fetch with no rule
  of its own: framework ops (collate's ``aten::stack``, transforms) and, when Python stacks
  are recorded (``with_stack=True``), the dataset's Python frames;
- ``other``: the fetch wrappers' own time (a DataLoader ``__next__`` running the dataset's
  unannotated Python code, or waiting for its workers; ``IteratorGetNext`` waiting for the
  iterator), and ``stepscope.data.*`` stages not named above.

The rules are the table ``RULES`` (first match wins). An event no rule names takes the
category its nearest input ancestor hands down: a stage hands down its own category, a
fetch wrapper hands down ``preprocessing``.

The input-ops table has one row per (name, category): count, total and self time in ms,
and both as a share of all input-op self time (XProf's denominator), sorted by self time.

The JSON form is ``InputPipelineResult``'s fields (their types are its schema).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np

from stepscope.analysis.findings.rules import NOT, input_bound_verdict
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import ToolResult, tool
from stepscope.analysis.steps.classify import Activity, event_activities
from stepscope.analysis.steps.step_outliers import set_aside_note, set_aside_rows
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.trace import names
from stepscope.trace.merge import SAME_THREAD_LINE_ID_STEP
from stepscope.trace.model import NO_ID, Plane, Profile

TOOL = "input_pipeline_analyzer"

# Host input categories, in XProf's order, then what none of them is.
ENQUEUE = "enqueue_to_device"
DEMANDED_READ = "demanded_file_read"
ADVANCED_READ = "advanced_file_read"
PREPROCESSING = "preprocessing"
OTHER = "other"
CATEGORIES = (ENQUEUE, DEMANDED_READ, ADVANCED_READ, PREPROCESSING, OTHER)

_READER = r"(?:TFRecord|TextLine|FixedLengthRecord|SSTable|RecordIO|ArrayRecord)\w*(?:\[\d+\])?$"
# Stages that make the reads below them happen ahead of the consumer (XProf: "::MemoryReader",
# "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap"; stepscope adds the
# parallel and legacy interleaves, the cache's newer names and snapshot).
_AHEAD_STAGE = r"(?:Prefetch|(?:Legacy)?(?:Parallel)?Interleave|Memory(?:Reader|Writer|Cache)|Cache|Snapshot|ParallelMap)"
_TF_LAST = r"^Iterator::(?:.*::)?"  # tf.data names are the iterator's path: Iterator::Root::Prefetch::Map

# (pattern, the event's own category, the category it hands down to nested events that no
# rule names). First match wins; matched with re.search against the event's name.
RULES: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(pattern), own, nested)
    for pattern, own, nested in (
        # stepscope's own input-pipeline annotations: stepscope.data.<stage>
        (r"^stepscope\.data\.read\b", DEMANDED_READ, DEMANDED_READ),
        (r"^stepscope\.data\.prefetch\b", ADVANCED_READ, ADVANCED_READ),  # the read-ahead work itself
        (r"^stepscope\.data\.(?:decode|transform|collate)\b", PREPROCESSING, PREPROCESSING),
        (r"^stepscope\.data", OTHER, OTHER),
        # host-to-device transfers issued inside a fetch
        (r"^(?:cuda|hip|cu)Memcpy|^MemcpyHtoD|InfeedEnqueue|^TransferToInfeed|^TransferLiteralToInfeed", ENQUEUE, ENQUEUE),
        # tf.data (XProf's rules): only file readers are file reads, advanced when a
        # read-ahead stage is above them in the iterator's path, else demanded; every other
        # stage (Prefetch, Interleave, Cache and Map included) is preprocessing
        (r"^Iterator(?=.*::" + _AHEAD_STAGE + r").*::" + _READER, ADVANCED_READ, ADVANCED_READ),
        (_TF_LAST + _READER, DEMANDED_READ, DEMANDED_READ),
        (r"^Iterator::", PREPROCESSING, PREPROCESSING),
        # fetch wrappers: their own time is unexplained, what runs inside them prepares the batch
        (r"DataLoader|IteratorGetNext|^MultiDeviceIteratorGetNextFromShard", OTHER, PREPROCESSING),
        # plain file access: annotations, and Python's own calls when stacks are recorded
        (r"(?i)^(?:file_?read|read_?file|open|read)$", DEMANDED_READ, DEMANDED_READ),
        (r"^<built-in (?:function|method) (?:open|read|readinto|readline|readlines)\b", DEMANDED_READ, DEMANDED_READ),
        (r"(?i)collate|transform|decode|augment|preprocess", PREPROCESSING, PREPROCESSING),
    )
)

# Where the input events came from, for the note (matched against the outermost ones).
SOURCES = (
    ("PyTorch DataLoader fetch(es)", re.compile(r"DataLoader")),
    ("tf.data iterator call(s)", re.compile(r"^Iterator|IteratorGetNext|^MultiDeviceIterator")),
    ("stepscope.data annotation(s)", re.compile(r"^stepscope\.data")),
)

STEP_COLUMNS = (
    Column("step", "Step"),
    Column("step_time_us", "Step time (us)"),
    Column("input_us", "Input (us)"),
    Column("input_percent", "Input %"),
)
BREAKDOWN_COLUMNS = (
    Column("category", "Category", "string"),
    Column("time_us", "Self time (us)"),
    Column("percent", "% of input op time"),
)
OP_COLUMNS = (
    Column("name", "Input op", "string"),
    Column("count", "Count"),
    Column("total_ms", "Total time (ms)"),
    Column("total_percent", "Total %"),
    Column("self_ms", "Self time (ms)"),
    Column("self_percent", "Self %"),
    Column("category", "Category", "string"),
)


class InputStep(TypedDict):
    step: int
    input_us: float
    step_time_us: float
    input_percent: float
    input_ps: int
    step_time_ps: int
    set_aside: str | None  # "compile" | "outlier" (the overview's warm-up rule), else null


class InputShare(TypedDict):
    """The input share of step time (percent), over the steps not set aside."""

    mean: float
    stddev: float
    min: float
    max: float


class InputOp(TypedDict):
    name: str
    count: int
    total_ms: float
    total_percent: float
    self_ms: float
    self_percent: float
    category: str
    total_ps: int
    self_ps: int


@dataclass
class InputPipelineResult(ToolResult):
    step_source: str = ""
    steps_inferred: bool = False
    steps: list[InputStep] = field(default_factory=list)
    input_percent: InputShare = field(default_factory=lambda: InputShare(mean=0.0, stddev=0.0, min=0.0, max=0.0))
    verdict: str = NOT  # "highly" | "moderately" | "not" input-bound
    host_breakdown_us: dict[str, float] = field(default_factory=dict)
    input_ops: list[InputOp] = field(default_factory=list)
    note: str = ""

    def tables(self) -> list[Table]:
        host_total = sum(self.host_breakdown_us.values())
        return [
            Table.of("steps", STEP_COLUMNS, self.steps),
            Table(
                "host_breakdown",
                BREAKDOWN_COLUMNS,
                [(category, us, percent(us, host_total)) for category, us in self.host_breakdown_us.items()],
            ),
            Table.of("input_ops", OP_COLUMNS, self.input_ops),
        ]

    def summary(self) -> list[str]:
        share = self.input_percent
        lines = [
            f"Your program is {self.verdict} input-bound: on average {share['mean']:.1f}% of the step time "
            f"is spent waiting for input ({len(self.steps)} step(s) from {self.step_source}).",
            f"input share of step time: mean {share['mean']:.1f}%, stddev {share['stddev']:.1f}, min {share['min']:.1f}%, max {share['max']:.1f}%",
        ]
        host_total = sum(self.host_breakdown_us.values())
        if host_total > 0:
            lines.append("host input time: " + ", ".join(f"{key} {percent(us, host_total):.1f}%" for key, us in self.host_breakdown_us.items() if us > 0))
        if self.input_ops:
            top = self.input_ops[0]
            lines.append(f"most input self time: {top['name']} ({top['self_percent']:.1f}%, {top['category']})")
        lines.append(self.note)
        return lines


def rule_for(name: str) -> tuple[str, str] | None:
    """(own category, category handed down) of the first rule naming ``name``; None if none does."""
    for pattern, category, handed_down in RULES:
        if pattern.search(name):
            return category, handed_down
    return None


def _type_rules(plane: Plane) -> tuple[np.ndarray, np.ndarray]:
    """Per event type: (own category index or -1 when no rule names it, category handed down)."""
    own = np.full(len(plane.metadata), -1, dtype=np.int64)
    nested = np.full(len(plane.metadata), -1, dtype=np.int64)
    for type_id, name in enumerate(plane.metadata.names):
        rule = rule_for(name)
        if rule is not None:
            own[type_id], nested[type_id] = CATEGORIES.index(rule[0]), CATEGORIES.index(rule[1])
    return own, nested


def _input_categories(plane: Plane, activities: np.ndarray) -> np.ndarray:
    """Category index of every event inside an input event (itself included); -1 elsewhere."""
    events = plane.events
    count = len(events)
    category = np.full(count, -1, dtype=np.int64)
    if not count:
        return category
    is_root = (activities == Activity.INPUT) | (activities == Activity.INPUT_PIPELINE)
    own_by_type, nested_by_type = _type_rules(plane)
    own = own_by_type[events.metadata_id]
    nested = nested_by_type[events.metadata_id]
    handed = np.full(count, -1, dtype=np.int64)  # what each input event hands to its children
    other = CATEGORIES.index(OTHER)
    # Parents are one level up, so one pass per depth settles every event after its parent.
    order = np.argsort(events.depth, kind="stable")
    bounds = np.searchsorted(events.depth[order], np.arange(int(events.depth.max()) + 2))
    for depth in range(len(bounds) - 1):
        rows = order[bounds[depth] : bounds[depth + 1]]
        parents = events.parent[rows]
        from_parent = np.where(parents != NO_ID, handed[np.maximum(parents, 0)], -1)
        inside = is_root[rows] | (from_parent >= 0)
        rows, from_parent = rows[inside], from_parent[inside]
        matched = own[rows] >= 0
        inherited = np.where(from_parent >= 0, from_parent, other)
        category[rows] = np.where(matched, own[rows], inherited)
        handed[rows] = np.where(matched, nested[rows], inherited)
    return category


def _sum_by(codes: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct codes, counts, int64 sums of values per code), exactly (no float weights)."""
    order = np.argsort(codes, kind="stable")
    codes, values = codes[order], values[order]
    distinct, starts, counts = np.unique(codes, return_index=True, return_counts=True)
    sums = np.add.reduceat(values, starts) if len(values) else np.zeros(0, dtype=np.int64)
    return distinct, counts, sums


def line_threads(plane: Plane) -> np.ndarray:
    """Per line of ``plane``: the index of the first line standing for the same OS thread.

    Lines with the same id, and a line whose id is another's plus ``SAME_THREAD_LINE_ID_STEP``
    (again and again: a thread traced by three tracers), stand for one thread (the ids
    trace/merge.py gives a thread traced by several tracers). A loop over lines, not events."""
    first: dict[int, int] = {}
    for index, line in enumerate(plane.lines):
        first.setdefault(line.id, index)
    thread = np.arange(len(plane.lines), dtype=np.int64)
    for index, line in enumerate(plane.lines):
        base = line.id
        while base - SAME_THREAD_LINE_ID_STEP in first:
            base -= SAME_THREAD_LINE_ID_STEP
        thread[index] = first[base]
    return thread


def _latest_cover(lo: np.ndarray, hi: np.ndarray, size: int) -> np.ndarray:
    """For each slot k of ``range(size)``: the largest i with lo[i] <= k < hi[i], or -1.

    Each interval paints two power-of-two blocks that together cover it exactly; blocks are
    handed down a level at a time (a block of 2w slots is two of w), keeping the larger
    index, so the work is O((n + size) log size) with two arrays of ``size``."""
    current = np.full(size, -1, dtype=np.int64)
    index = np.flatnonzero(hi > lo)
    if not len(index):
        return current
    lo, hi = lo[index], hi[index]
    level = np.frexp((hi - lo).astype(np.float64))[1].astype(np.int64) - 1  # floor(log2(length))
    for step in range(int(level.max()), -1, -1):
        width = 1 << step
        at = level == step
        np.maximum.at(current, lo[at], index[at])
        np.maximum.at(current, hi[at] - width, index[at])
        if step:
            half = width >> 1
            lower = current.copy()  # [x, x + width) -> [x, x + half) and [x + half, x + width)
            np.maximum(lower[half:], current[:-half], out=lower[half:])
            current = lower
    return current


def _owned_ps(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each event (rows of one plane, in the plane's order): the picoseconds in which it
    is the input op that owns its thread's time, int64 and exact. At each instant the owner
    is, of the thread's events open then, the one that started last; on equal starts the
    shorter; on equal spans the one on the later line, then the later row (a child, on its
    parent's line). On a properly nested line that is the innermost event: its duration
    less its children's. Each thread's owned times sum to the measure of its events' union."""
    count = len(start)
    owned = np.zeros(count, dtype=np.int64)
    if not count:
        return owned
    # Every distinct (thread, time) of a start or an end, numbered in (thread, time) order;
    # slot k is the stretch from point k to point k + 1.
    point_thread = np.concatenate((thread, thread))
    point_time = np.concatenate((start, end))
    by_point = np.argsort(point_time, kind="stable")
    by_point = by_point[np.argsort(point_thread[by_point], kind="stable")]
    sorted_thread, sorted_time = point_thread[by_point], point_time[by_point]
    distinct = np.ones(len(by_point), dtype=bool)
    distinct[1:] = (sorted_time[1:] != sorted_time[:-1]) | (sorted_thread[1:] != sorted_thread[:-1])
    rank = np.empty(len(by_point), dtype=np.int64)
    rank[by_point] = np.cumsum(distinct) - 1
    times = sorted_time[distinct]
    first, last = rank[:count], rank[count:]
    # Positions: by thread and start, longest first, then the plane's (line, row) order (a
    # stable sort); a later position is more specific. Only one thread's events ever cover a
    # slot, so positions of different threads never compete.
    order = np.argsort(first * (len(times) + 1) + (len(times) - last), kind="stable")
    owner = _latest_cover(first[order], last[order], len(times) - 1)
    slots = np.flatnonzero(owner >= 0)
    by_position = np.zeros(count, dtype=np.int64)
    np.add.at(by_position, owner[slots], times[slots + 1] - times[slots])
    owned[order] = by_position
    return owned


def _host_input(profile: Profile) -> tuple[list[InputOp], dict[str, int], str]:
    """The input ops table, self ps per category, and the note naming the sources found."""
    host = profile.plane(names.HOST_PLANE)
    if host is None or not len(host.events):
        return [], dict.fromkeys(CATEGORIES, 0), ""
    events = host.events
    activities = event_activities(host)
    category = _input_categories(host, activities)
    is_op = (category >= 0) & (activities != Activity.NONE)
    rows = np.flatnonzero(is_op)
    # Self time: the time each op owns on its OS thread (_owned_ps), so one thread's ops
    # never count a picosecond twice, on one line or on the lines of one thread.
    self_ps = np.zeros(len(events), dtype=np.int64)
    self_ps[rows] = _owned_ps(line_threads(host)[events.line[rows]], events.start_ps[rows], events.ends(rows))

    codes = events.metadata_id[rows].astype(np.int64) * len(CATEGORIES) + category[rows]
    distinct, counts, totals = _sum_by(codes, events.duration_ps[rows])
    _, _, selves = _sum_by(codes, self_ps[rows])
    all_self = int(selves.sum())
    by_category = dict.fromkeys(CATEGORIES, 0)
    ops: list[InputOp] = []
    for code, count, total, own in zip(distinct.tolist(), counts.tolist(), totals.tolist(), selves.tolist()):
        type_id, category_index = divmod(code, len(CATEGORIES))
        by_category[CATEGORIES[category_index]] += own
        ops.append(
            {
                "name": host.metadata.names[type_id],
                "count": count,
                "total_ms": total / 1e9,
                "total_percent": percent(total, all_self),
                "self_ms": own / 1e9,
                "self_percent": percent(own, all_self),
                "category": CATEGORIES[category_index],
                "total_ps": total,
                "self_ps": own,
            }
        )
    ops.sort(key=lambda op: (-op["self_ps"], -op["total_ps"], op["name"], op["category"]))

    outermost = rows[(events.parent[rows] == NO_ID) | ~is_op[np.maximum(events.parent[rows], 0)]]
    per_type = np.bincount(events.metadata_id[outermost], minlength=len(host.metadata))
    found = []
    for label, pattern in SOURCES:
        n = sum(int(per_type[t]) for t in np.flatnonzero(per_type).tolist() if pattern.search(host.metadata.names[t]))
        if n:
            found.append(f"{n} {label}")
    note = "Input events: " + ", ".join(found) + "." if found else ""
    return ops, by_category, note


@tool(
    TOOL,
    title="Input pipeline analyzer",
    order=20,
    description="Is the job waiting for data, in which steps, and which input work (read, decode, transform) costs most?",
)
def input_pipeline_analyzer(stats: OpStats) -> InputPipelineResult:
    profile, steps, parts, aside = stats.profile, stats.steps, stats.breakdown, stats.set_aside
    input_ps = parts["input"]
    step_ps = steps.duration_ps
    result = InputPipelineResult(step_source=steps.source, steps_inferred=steps.inferred)
    shares = np.asarray([percent(int(i), int(s)) for i, s in zip(input_ps, step_ps)], dtype=np.float64)
    for index in range(len(steps)):
        result.steps.append(
            {
                "step": int(steps.number[index]),
                "input_us": ps_to_us(int(input_ps[index])),
                "step_time_us": ps_to_us(int(step_ps[index])),
                "input_percent": float(shares[index]),
                "input_ps": int(input_ps[index]),
                "step_time_ps": int(step_ps[index]),
                "set_aside": str(aside.reason[index]) or None,
            }
        )
    # Over the steps the overview keeps (warm-up and one-off steps set aside), so the
    # verdict here and the overview's input finding are the same number.
    kept = shares[aside.kept]
    result.input_percent = InputShare(
        mean=float(kept.mean()) if len(kept) else 0.0,
        stddev=float(kept.std()) if len(kept) else 0.0,
        min=float(kept.min()) if len(kept) else 0.0,
        max=float(kept.max()) if len(kept) else 0.0,
    )
    result.verdict = input_bound_verdict(result.input_percent["mean"])
    ops, by_category, note = _host_input(profile)
    result.input_ops = ops
    result.host_breakdown_us = {key: ps_to_us(ps) for key, ps in by_category.items()}
    if not ops:
        note = (
            "No input-pipeline events in this profile (PyTorch DataLoader fetches, tf.data iterators, stepscope.data.* annotations): no input time to analyse."
        )
    if steps.inferred:
        note += " No step marker was found: the whole profiled window is one step."
    aside_note = set_aside_note(set_aside_rows(steps, aside, parts))
    result.note = f"{note} {aside_note}" if aside_note else note
    return result
