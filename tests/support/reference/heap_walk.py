"""The heap replay as it was before it was made linear (``heap_simulation._walk``): one pass that
copies the live buffers at every new peak (quadratic), and a ``root`` that follows shares
without shortening them (endless on a cycle).

Kept as the reference the linear replay is compared with on random heap traces
(tests/analysis/xla/test_heap_simulation.py). The one change: a share that would make a buffer
its own canonical buffer raises ``Cycle`` (the old replay stored it, and its ``root``
looped forever at the next event on that buffer).
"""

from __future__ import annotations

from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2

Event = hlo_pb2.HeapSimulatorTrace.Event


class Cycle(Exception):
    """The old replay would have looped forever from here on (its argument: the event)."""


def walk(events: list[Event], sizes: dict[int, int], base: int) -> tuple[list[tuple[str, int]], int, int | None, list[int]]:
    """((kind, bytes) after each event, the peak, its event, the live buffers at the peak)."""
    canonical: dict[int, int] = {}
    refs: dict[int, int] = {}
    live: dict[int, None] = {}
    in_use = 0
    points: list[tuple[str, int]] = []
    peak, peak_step, live_at_peak = base, None, []

    def root(buffer: int) -> int:
        while buffer in canonical:
            buffer = canonical[buffer]
        return buffer

    for step, event in enumerate(events):
        buffer = event.buffer_id
        if buffer not in sizes:
            raise StepscopeError(f"heap event {step} refers to logical buffer {buffer}")
        if event.kind == Event.ALLOC:
            refs[buffer] = refs.get(buffer, 0) + 1
            live[buffer] = None
            in_use += sizes[buffer]
            kind = "alloc"
        elif event.kind == Event.FREE:
            owner = root(buffer)
            refs[owner] = refs.get(owner, 0) - 1
            if refs[owner] < 0:
                raise StepscopeError(f"heap event {step} frees logical buffer {buffer} more often than it was allocated")
            if refs[owner] == 0:
                live.pop(owner, None)
                in_use -= sizes[owner]
            kind = "free"
        else:
            owner = root(event.share_with_canonical_id)
            if owner not in sizes:
                raise StepscopeError(f"heap event {step} shares logical buffer {owner}")
            if owner == buffer:
                raise Cycle(step)
            canonical[buffer] = owner
            refs[owner] = refs.get(owner, 0) + 1
            if refs[owner] == 1:
                live[owner] = None
                in_use += sizes[owner]
            kind = "share"
        total = in_use + base
        points.append((kind, total))
        if total > peak:
            peak, peak_step, live_at_peak = total, step, list(live)
    return points, peak, peak_step, live_at_peak
