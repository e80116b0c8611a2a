"""flame_graph: where threads spend a window's time, as the tree of their call stacks.

What it shows
    The stacks of host threads (PyTorch ops, Python functions where the profile was
    captured with them, annotations), of the Python tracer's threads, or of a device
    line (XLA ops inside modules), merged by call path: a node is a frame name under its
    parent's path. One thread (``thread=LABEL``), every thread of a plane
    (``thread=/host:python-tracer``), or by default every thread of ``/host:CPU``.

Window
    A step (``step=N``, a number from ``steps``), a selection (``start_ps``/``end_ps``,
    profile time in ps; ``end_ps`` 0 is the end of the profile), or by default the whole
    profile. Events crossing its edges count with their part inside it.

Numbers (exact integers, ps)
    self_ps   the time the frame was the top of its thread's stack (``stacks``: at every
              instant one stack per thread; overlapping siblings go to the later one).
    total_ps  self_ps plus its children's total_ps: the time the path was on the stack.
    A thread node is the thread's share of the window: total_ps = the window's length,
    self_ps = the thread's idle time in it; the root is that thread, or, for several, their
    plane (``/host:CPU``...) over one node per thread that ran in the window. So the frames' self
    times add up to ``busy_ps``, the union of each thread's events in the window, summed.

Stacks deeper than ``stacks.MAX_DEPTH`` (128) frames are cut there: ``cut_ps`` is the time
spent below the cut, counted as the self time of the frame at the cut.

Children are ordered by total time, then name (the "left heavy" order of speedscope).
``stepscope flame`` writes the same stacks as collapsed-stack text or a speedscope file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stepscope.analysis.ops.stacks import MAX_DEPTH, Frames, Thread, Timeline, pick_threads, threads, timeline
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.registry import Option, ToolResult, tool
from stepscope.analysis.tables import Column, Table, percent, ps_to_us
from stepscope.errors import StepscopeError
from stepscope.trace import names
from stepscope.trace.model import Profile

TOOL = "flame_graph"
THREAD_CATEGORY = "thread"
STACK_SEPARATOR = ";"
TOP_FRAMES = 3

COLUMNS = (
    Column("stack", "Stack", "string"),
    Column("name", "Frame", "string"),
    Column("category", "Category", "string"),
    Column("depth", "Depth"),
    Column("self_us", "Self (us)"),
    Column("total_us", "Total (us)"),
    Column("self_ps", "Self (ps)"),
    Column("total_ps", "Total (ps)"),
)


@dataclass
class FlameNode:
    """A call path (a frame under its parent's path), a thread, or the root; its fields
    are its JSON form."""

    name: str
    category: str
    self_ps: int = 0
    total_ps: int = 0
    self_us: float = 0.0
    total_us: float = 0.0
    children: list[FlameNode] = field(default_factory=list)

    def walk(self, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], FlameNode]]:
        """(path from the root, node) for this node and every node under it, depth first."""
        here = (*path, self.name)
        found = [(here, self)]
        for child in self.children:
            found += child.walk(here)
        return found


@dataclass
class FlameGraphResult(ToolResult):
    thread: str = ""  # the option as given ("": every host thread)
    threads: list[str] = field(default_factory=list)  # every choice: thread labels and planes
    step: str = ""
    steps: list[str] = field(default_factory=list)
    start_ps: int = 0
    end_ps: int = 0
    busy_ps: int = 0
    busy_us: float = 0.0
    cut_ps: int = 0  # time below the stacks' cut at MAX_DEPTH frames (see the docstring)
    root: FlameNode = field(default_factory=lambda: FlameNode("", THREAD_CATEGORY))

    def tables(self) -> list[Table]:
        rows = [
            (STACK_SEPARATOR.join(path), node.name, node.category, len(path) - 1, node.self_us, node.total_us, node.self_ps, node.total_ps)
            for path, node in self.root.walk()
        ]
        return [Table("frames", COLUMNS, rows)]

    def summary(self) -> list[str]:
        window = f"{ps_to_us(self.start_ps):,.1f}..{ps_to_us(self.end_ps):,.1f} us" + (f" (step {self.step})" if self.step else "")
        if not self.busy_ps:
            return [f"Nothing ran on {self.root.name} in {window}."]
        lines = [f"{self.root.name}, {window}: busy {self.busy_us:,.1f} us of {self.root.total_us:,.1f} us"]
        frames: dict[str, int] = {}
        for _, node in self.root.walk():
            if node.category != THREAD_CATEGORY:
                frames[node.name] = frames.get(node.name, 0) + node.self_ps
        top = sorted(frames.items(), key=lambda item: (-item[1], item[0]))[:TOP_FRAMES]
        if top:
            lines.append("Most self time: " + ", ".join(f"{name} ({percent(ps, self.busy_ps):.1f}%)" for name, ps in top))
        if self.cut_ps:
            lines.append(f"Stacks deeper than {MAX_DEPTH} frames: {ps_to_us(self.cut_ps):,.1f} us counted at their frame {MAX_DEPTH}.")
        return lines


def thread_choices(profile: Profile) -> list[str]:
    """What ``thread`` takes: each thread, and each plane other than the host's (for all of
    its threads; the host's are the default)."""
    every = threads(profile)
    planes = dict.fromkeys(profile.planes[thread.plane].name for thread in every)
    return [thread.label for thread in every] + [plane for plane in planes if plane != names.HOST_PLANE]


@dataclass(frozen=True)
class Window:
    """What a flame graph covers: threads and [start_ps, end_ps), and the step it is."""

    threads: list[Thread]
    label: str  # what the root is named when there are several threads: their plane
    start_ps: int
    end_ps: int
    step: str


def window(stats: OpStats, thread: str = "", step: str = "", start_ps: int = 0, end_ps: int = 0) -> Window:
    """The options' threads and window; one line naming the bad option otherwise."""
    profile, steps = stats.profile, stats.steps
    if step and (start_ps or end_ps):
        raise StepscopeError(f"{TOOL}: give a step or a start/end, not both")
    if step:
        numbers = [str(number) for number in steps.number.tolist()]
        if step not in numbers:
            raise StepscopeError(f"{TOOL}: no step {step!r} (steps: {', '.join(numbers[:10])}{' ...' if len(numbers) > 10 else ''})")
        at = numbers.index(step)
        start_ps, end_ps = int(steps.start_ps[at]), int(steps.end_ps[at])
    elif not end_ps:
        end_ps = profile.span_ps
    if start_ps < 0 or end_ps < start_ps:
        raise StepscopeError(f"{TOOL}: the window must have 0 <= start_ps <= end_ps, not {start_ps}..{end_ps}")
    return Window(pick_threads(profile, thread), thread or names.HOST_PLANE, start_ps, end_ps, step)


def timelines(profile: Profile, chosen: Window) -> list[Timeline]:
    """Each chosen thread's stack through the window."""
    return [timeline(profile, thread, chosen.start_ps, chosen.end_ps) for thread in chosen.threads]


class _Path:
    """A node while the tree is built: children by name."""

    def __init__(self, name: str, category: str, self_ps: int = 0) -> None:
        self.name, self.category, self.self_ps = name, category, self_ps
        self.children: dict[str, _Path] = {}

    def child(self, name: str, category: str) -> _Path:
        found = self.children.get(name)
        if found is None:
            found = self.children[name] = _Path(name, category)
        return found

    def finished(self) -> FlameNode:
        """The FlameNode, with totals from self times and children in "left heavy" order."""
        children = sorted((child.finished() for child in self.children.values()), key=lambda child: (-child.total_ps, child.name))
        total = self.self_ps + sum(child.total_ps for child in children)
        return FlameNode(self.name, self.category, self.self_ps, total, ps_to_us(self.self_ps), ps_to_us(total), children)


@dataclass(frozen=True)
class StackTree:
    """The merged call-path tree (see the module docstring), the busy time under it, and
    the time below the stacks' cut."""

    root: FlameNode
    busy_ps: int
    cut_ps: int


def stack_tree(profile: Profile, chosen: Window) -> StackTree:
    length = chosen.end_ps - chosen.start_ps
    thread_paths = []
    busy = cut = 0
    for line in timelines(profile, chosen):
        if len(chosen.threads) > 1 and not len(line.leaf):
            continue  # "all threads": the threads that ran in the window
        busy += line.busy_ps
        node = _Path(line.thread.label, THREAD_CATEGORY, length - line.busy_ps)
        frames = Frames(profile.planes[line.thread.plane])
        leaves, at = np.unique(line.leaf, return_inverse=True)
        self_ps = np.zeros(len(leaves), dtype=np.int64)
        np.add.at(self_ps, at.reshape(-1), line.end_ps - line.start_ps)
        for row, spent in zip(leaves.tolist(), self_ps.tolist()):
            frame = node
            for at_row in frames.stack(row):
                frame = frame.child(frames.name(at_row), frames.category(at_row))
            frame.self_ps += spent
            cut += spent if frames.cut(row) else 0
        thread_paths.append(node)
    if len(chosen.threads) == 1:
        return StackTree(thread_paths[0].finished(), busy, cut)
    root = _Path(chosen.label, THREAD_CATEGORY)
    root.children = {path.name: path for path in thread_paths}
    return StackTree(root.finished(), busy, cut)


@tool(
    TOOL,
    title="Flame graph",
    order=68,  # after the XProf tools (memory_viewer, 67): XProf has no flame graph
    description="Which call stacks does a thread spend a step's time in (self and total time per frame)?",
    options=(
        Option("thread", str, "", "a thread, or a plane for all its threads (default: every /host:CPU thread)", choices_from="threads"),
        Option("step", str, "", "a step number (default: the whole profile)", choices_from="steps", resets=("start_ps", "end_ps")),
        Option("start_ps", int, 0, "the window's start, ps from the profile's start (with end_ps; not with step)", minimum=0),
        Option("end_ps", int, 0, "the window's end, ps (0: the profile's end)", minimum=0),
    ),
)
def flame_graph(stats: OpStats, thread: str = "", step: str = "", start_ps: int = 0, end_ps: int = 0) -> FlameGraphResult:
    chosen = window(stats, thread, step, start_ps, end_ps)
    tree = stack_tree(stats.profile, chosen) if chosen.threads else StackTree(FlameNode(chosen.label, THREAD_CATEGORY), 0, 0)
    return FlameGraphResult(
        thread=thread,
        threads=thread_choices(stats.profile),
        step=chosen.step,
        steps=[str(number) for number in stats.steps.number.tolist()],
        start_ps=chosen.start_ps,
        end_ps=chosen.end_ps,
        busy_ps=tree.busy_ps,
        busy_us=ps_to_us(tree.busy_ps),
        cut_ps=tree.cut_ps,
        root=tree.root,
    )
