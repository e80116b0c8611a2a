"""A flame graph's stacks in the files flame graph tools open: Brendan Gregg's collapsed
stacks (``flamegraph.pl``, speedscope, Perfetto's importers) and speedscope's own format.

Collapsed: one line per call path with self time, ``thread;frame;frame <ns>``, the value
the path's self time in integer nanoseconds (rounded per line; the tree's exact picoseconds
are in ``stepscope report --tool flame_graph``). The thread is the first frame, so several
threads stay apart. A ``;`` inside a frame name is written as ``:`` and a line break as a
space, since both are the format's separators.

Speedscope (the file format speedscope documents at speedscope.app/file-format-schema.json):
``shared.frames`` (one per distinct frame name) and one ``evented`` profile per thread, unit
nanoseconds, times in the profile's time (``startValue``/``endValue`` the window), each
opening (``O``) and closing (``C``) a frame when the thread's stack changes. The events
follow ``analysis.ops.stacks``' one-stack-per-instant timeline, so they nest properly even
where the trace's siblings overlap (speedscope rejects a close that is not the top frame).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stepscope.analysis.ops.stacks import Frames, Timeline
from stepscope.analysis.tools.flame_graph import Window, stack_tree, timelines
from stepscope.trace.model import Profile

COLLAPSED, SPEEDSCOPE = "collapsed", "speedscope"
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
SPEEDSCOPE_UNIT = "nanoseconds"
PS_PER_NS = 1000


def collapsed(profile: Profile, chosen: Window, title: str) -> bytes:
    root = stack_tree(profile, chosen).root
    thread_nodes = root.children if len(chosen.threads) > 1 else [root]
    lines = []
    for thread in thread_nodes:
        for path, node in thread.walk():
            if node is not thread and node.self_ps:
                lines.append(f"{';'.join(map(_frame_name, path))} {round(node.self_ps / PS_PER_NS)}\n")
    return "".join(lines).encode()


def _frame_name(name: str) -> str:
    return name.replace(";", ":").replace("\r", " ").replace("\n", " ")


def _ns(ps: int) -> int | float:
    """Picoseconds as nanoseconds: an integer where exact."""
    whole, rest = divmod(ps, PS_PER_NS)
    return whole if not rest else ps / PS_PER_NS


def speedscope_document(profile: Profile, chosen: Window, title: str) -> dict[str, Any]:
    frame_index: dict[str, int] = {}
    profiles = []
    for line in timelines(profile, chosen):
        if len(chosen.threads) > 1 and not len(line.leaf):
            continue
        profiles.append(
            {
                "type": "evented",
                "name": line.thread.label,
                "unit": SPEEDSCOPE_UNIT,
                "startValue": _ns(chosen.start_ps),
                "endValue": _ns(chosen.end_ps),
                "events": _events(line, Frames(profile.planes[line.thread.plane]), frame_index),
            }
        )
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": [{"name": name} for name in frame_index]},
        "profiles": profiles,
        "name": title,
        "activeProfileIndex": 0,
        "exporter": "stepscope",
    }


def _events(line: Timeline, frames: Frames, frame_index: dict[str, int]) -> list[dict[str, Any]]:
    """The thread's open and close events, in time order; new frame names join ``frame_index``."""
    events: list[dict[str, Any]] = []

    def move(stack: tuple[int, ...], to: tuple[int, ...], at: int) -> None:
        common = 0
        while common < min(len(stack), len(to)) and stack[common] == to[common]:
            common += 1
        for row in reversed(stack[common:]):
            events.append({"type": "C", "frame": frame_index[frames.name(row)], "at": _ns(at)})
        for row in to[common:]:
            index = frame_index.setdefault(frames.name(row), len(frame_index))
            events.append({"type": "O", "frame": index, "at": _ns(at)})

    stack: tuple[int, ...] = ()
    last_end = 0
    for start, end, leaf in zip(line.start_ps.tolist(), line.end_ps.tolist(), line.leaf.tolist()):
        if start != last_end:  # idle in between: everything closes
            move(stack, (), last_end)
            stack = ()
        new = frames.stack(leaf)
        move(stack, new, start)
        stack, last_end = new, end
    move(stack, (), last_end)
    return events


def speedscope(profile: Profile, chosen: Window, title: str) -> bytes:
    return json.dumps(speedscope_document(profile, chosen, title), separators=(",", ":")).encode()


# Format name -> writer(profile, window, title) -> the file's bytes.
FLAME_FORMATS: dict[str, Callable[[Profile, Window, str], bytes]] = {COLLAPSED: collapsed, SPEEDSCOPE: speedscope}
# Format name -> the suffix a downloaded file gets (the names the tools' docs use).
FLAME_SUFFIXES = {COLLAPSED: ".folded", SPEEDSCOPE: ".speedscope.json"}
