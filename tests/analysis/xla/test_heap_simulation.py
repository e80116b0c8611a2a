"""The heap replay (``analysis/xla/heap_simulation``) against the replay it replaced, on random
heap traces; its answers to cycles, negative sizes and peaks past int64; and
that it is linear in the events."""

from __future__ import annotations

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from stepscope.analysis.xla.heap_simulation import replay
from stepscope.errors import StepscopeError
from stepscope.protos import hlo_pb2
from tests.support import hostile_hlo
from tests.support.reference import heap_walk
from tests.support.xspaces import SETTINGS

Event = hlo_pb2.HeapSimulatorTrace.Event
BUFFERS = 6
KINDS = (Event.ALLOC, Event.FREE, Event.SHARE_WITH)


def _proto(sizes: list[int], events: list[tuple[int, int, int]]) -> hlo_pb2.HloProto:
    """Buffers 1..len(sizes) of those sizes in one temporary allocation of 0 bytes (so that
    nothing counts beside the trace, even where no trace is chosen), and the trace."""
    proto = hostile_hlo.program(len(sizes), events)
    proto.buffer_assignment.buffer_allocations[0].size = 0
    for buffer, size in zip(proto.buffer_assignment.logical_buffers, sizes):
        buffer.size = size
    return proto


# Events on buffers 1..BUFFERS (and 0 and BUFFERS + 1, which the assignment lacks, rarely),
# ALLOC and FREE most often so that the traces go on past their first events.
BUFFER_IDS = st.integers(1, BUFFERS) | st.sampled_from((0, BUFFERS + 1))
EVENTS = st.lists(st.tuples(st.sampled_from(KINDS * 2 + (Event.ALLOC, Event.FREE)), BUFFER_IDS, BUFFER_IDS), max_size=40)


@settings(SETTINGS, max_examples=500)
@given(sizes=st.lists(st.integers(0, 1_000), min_size=BUFFERS, max_size=BUFFERS), events=EVENTS)
def test_the_replay_is_the_old_one_where_the_old_one_ends(sizes, events):
    # First an ALLOC of a buffer of the assignment: the trace is the one replayed.
    proto = _proto(sizes, [(Event.ALLOC, 1, 0), *events])
    trace = list(proto.buffer_assignment.heap_simulator_traces[0].events)
    try:
        expected = heap_walk.walk(trace, {i + 1: size for i, size in enumerate(sizes)}, 0)
    except heap_walk.Cycle as cycle:  # the old replay would hang from here: now one line
        event("cycle")
        with pytest.raises(StepscopeError, match=rf"^test: heap event {cycle.args[0]} shares .*\(a cycle\)$"):
            replay(proto, 0, "test")
        return
    except StepscopeError as error:
        event("damaged")
        step = str(error).split(" ")[2]
        with pytest.raises(StepscopeError, match=rf"^test: heap event {step} "):
            replay(proto, 0, "test")
        return
    event("replayed")
    heap = replay(proto, 0, "test")
    points, peak, peak_step, live = expected
    note(f"{points=}")
    assert [(p.kind, p.bytes) for p in heap.points] == points
    assert (heap.peak_bytes, heap.peak_step, heap.live_at_peak) == (peak, peak_step, live)


def test_random_traces_reach_every_outcome():
    """The random traces above are not all damaged: a hand-made one of each outcome."""
    A, F, S = KINDS
    # buffer 2 shares 1's 100 bytes; 3 shares 2, i.e. 1; all three freed: 100 until the last.
    heap = replay(_proto([100, 10, 1], [(A, 1, 0), (S, 2, 1), (S, 3, 2), (F, 1, 0), (F, 3, 0), (F, 2, 0)]), 0, "t")
    assert [p.bytes for p in heap.points] == [100, 100, 100, 100, 100, 0]
    assert heap.live_at_peak == [1] and heap.peak_step == 0


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ([(Event.ALLOC, 1, 0), (Event.SHARE_WITH, 1, 1)], "heap event 1 shares logical buffer 1 with itself (a cycle)"),
        (
            [(Event.ALLOC, 1, 0), (Event.SHARE_WITH, 2, 1), (Event.SHARE_WITH, 1, 2)],
            "heap event 2 shares logical buffer 1 with logical buffer 2, which already uses its memory (a cycle)",
        ),
        # 3 -> 2 -> 1, then 1 claims 3's memory: the chain's root is 1 itself.
        ([(Event.ALLOC, 1, 0), (Event.SHARE_WITH, 2, 1), (Event.SHARE_WITH, 3, 2), (Event.SHARE_WITH, 1, 3)], "heap event 3 shares logical buffer 1 with"),
    ],
)
def test_a_share_cycle_is_one_line(events, says):
    with pytest.raises(StepscopeError, match=r"^prog: ") as error:
        replay(_proto([8, 8, 8], events), 0, "prog")
    assert says in str(error.value) and "\n" not in str(error.value)


def test_sizes_past_int64_or_negative_are_one_line():
    two_halves = _proto([2**62, 2**62], [(Event.ALLOC, 1, 0), (Event.ALLOC, 2, 0)])  # 2^63 bytes at event 1
    with pytest.raises(StepscopeError, match=r"^p: its memory in use reaches 9,223,372,036,854,775,808 bytes, more than 9,223,372,036,854,775,807"):
        replay(two_halves, 0, "p")
    with pytest.raises(StepscopeError, match=r"^p: logical buffer 2 has a negative size \(-5 bytes\)$"):
        replay(_proto([1, -5], []), 0, "p")
