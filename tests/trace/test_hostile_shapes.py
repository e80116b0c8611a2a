"""Hostile shapes of valid profiles: events nested n deep, args nested just under
the decoder's limit.

- Nesting (``builder.nesting``, ``presorted.nesting``) is compared with a brute-force
  reference written from the definition, on small random lines full of ties (equal starts,
  equal ends, instants, identical events), and must take n log n time when identical events
  nest n deep: the level-by-level search did 100k of them in ~5 s and 1M in minutes.
- Args that load, nested just under the reader's limit, are decoded again deeper in the
  stack by the details pane; there they show as ``ARGS_TOO_DEEP``, never a RecursionError.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stepscope
from stepscope.errors import ProfileFormatError
from stepscope.trace import builder
from stepscope.trace.formats.chrome.kineto import translate_args
from stepscope.trace.presorted import nesting as compiled_nesting
from stepscope.trace.stat_entries import EventTypes, stat_entries
from stepscope.trace.stat_types import Stat, StatKind
from stepscope.trace.stats import ARGS_TOO_DEEP, JsonStats
from stepscope.viewer.details import details
from tests.support import hostile

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


# --- nesting: a brute-force reference --------------------------------------------------------


def reference_nesting(line: list[int], start: list[int], duration: list[int]) -> tuple[list[int], list[int]]:
    """Depth and parent of events sorted by (line, start, longest first), from the definition.

    Depth: the earlier events of the line still open at the event's start (one ending at
    that time is closed unless it is an instant). Parent: the latest earlier event of the
    line one level up. A line where some event outlasts that parent is walked with a stack
    instead: an event is the child of the innermost open event that contains it whole."""
    count = len(start)
    end = [s + d for s, d in zip(start, duration)]
    depth, parent = [0] * count, [-1] * count
    for row in range(count):
        earlier = [j for j in range(row) if line[j] == line[row]]
        depth[row] = sum(1 for j in earlier if end[j] > start[row] or (end[j] == start[row] and duration[j] == 0))
        if depth[row]:
            parent[row] = max(j for j in earlier if depth[j] == depth[row] - 1)
    for this_line in set(line):
        rows = [row for row in range(count) if line[row] == this_line]
        if not any(parent[row] >= 0 and end[parent[row]] < end[row] for row in rows):
            continue
        stack: list[int] = []
        for row in rows:
            while stack and end[stack[-1]] <= start[row] and not (end[stack[-1]] == start[row] == start[stack[-1]]):
                stack.pop()
            while stack and end[stack[-1]] < end[row]:
                stack.pop()
            depth[row], parent[row] = len(stack), (stack[-1] if stack else -1)
            stack.append(row)
    return depth, parent


@st.composite
def tied_lines(draw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Up to 40 events on 1-3 lines, in (line, start, longest first) order, with many ties:
    starts in a small range, instants, runs of identical events."""
    events: list[tuple[int, int, int]] = []
    lines = draw(st.integers(1, 3))
    for _ in range(draw(st.integers(0, 12))):
        event = (draw(st.integers(0, lines - 1)), draw(st.integers(0, 8)), draw(st.sampled_from((0, 0, 1, 2, 3, 4, 8))))
        events.extend([event] * draw(st.sampled_from((1, 1, 1, 2, 3, 8))))
    events = events[:40]
    line = np.asarray([e[0] for e in events], dtype=np.int32)
    start = np.asarray([e[1] for e in events], dtype=np.int64)
    duration = np.asarray([e[2] for e in events], dtype=np.int64)
    order = np.lexsort((-duration, start, line))  # as finish_plane sorts
    return line[order], start[order], duration[order]


@pytest.mark.parametrize("one_by_one", [builder._LEVELS_SEARCHED_ONE_BY_ONE, 0], ids=["levels", "sorted"])
@SETTINGS
@given(events=tied_lines())
def test_nesting_is_the_reference_on_tied_events(events, one_by_one: int):
    line, start, duration = events
    expected = reference_nesting(line.tolist(), start.tolist(), duration.tolist())
    with mock.patch.object(builder, "_LEVELS_SEARCHED_ONE_BY_ONE", one_by_one):
        depth, parent = builder.nesting(line, start, duration)
    assert (depth.dtype, parent.dtype) == (np.int32, np.int64)
    assert (depth.tolist(), parent.tolist()) == expected
    fast_depth, fast_parent = compiled_nesting(line, start, duration)
    assert (fast_depth.tolist(), fast_parent.tolist()) == expected


@pytest.mark.parametrize("count", [1, 2, 17, 18, 100])
def test_identical_events_nest_each_in_the_one_before(count: int):
    line, start, duration = np.zeros(count, np.int32), np.full(count, 5, np.int64), np.full(count, 3, np.int64)
    for nesting in (builder.nesting, compiled_nesting):
        depth, parent = nesting(line, start, duration)
        assert depth.tolist() == list(range(count))
        assert parent.tolist() == [-1, *range(count - 1)]


def test_identical_instants_and_a_partial_overlap_on_deep_lines():
    """Deep runs of ties past the level-by-level threshold, on two lines, one of them
    broken by a partial overlap (the stack walk), against the reference."""
    events = [(0, 0, 10)] * 20 + [(0, 0, 0)] * 20 + [(0, 5, 10)] + [(1, 3, 0)] * 30 + [(1, 3, 4)] * 25 + [(1, 7, 0)]
    line = np.asarray([e[0] for e in events], dtype=np.int32)
    start = np.asarray([e[1] for e in events], dtype=np.int64)
    duration = np.asarray([e[2] for e in events], dtype=np.int64)
    order = np.lexsort((-duration, start, line))
    line, start, duration = line[order], start[order], duration[order]
    expected = reference_nesting(line.tolist(), start.tolist(), duration.tolist())
    assert max(expected[0]) > builder._LEVELS_SEARCHED_ONE_BY_ONE
    assert tuple(a.tolist() for a in builder.nesting(line, start, duration)) == expected
    assert tuple(a.tolist() for a in compiled_nesting(line, start, duration)) == expected


_DEEP_NESTING_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import numpy as np
    import stepscope
    from stepscope.trace.builder import nesting
    from tests.support import hostile

    count = 1_000_000
    began = time.perf_counter()
    depth, parent = nesting(np.zeros(count, np.int32), np.zeros(count, np.int64), np.full(count, 1_000, np.int64))
    assert np.array_equal(depth, np.arange(count)) and np.array_equal(parent, np.arange(-1, count - 1))
    nested = time.perf_counter() - began
    path = hostile.json_of_nested_events(Path(sys.argv[1]) / "nested.json", 100_000)
    began = time.perf_counter()
    events = stepscope.load(path).planes[0].events
    assert int(events.depth.max()) == 99_999 and int(events.parent[-1]) == 99_998
    print(f"1M identical events nested in {nested:.2f} s; 100k loaded from JSON in {time.perf_counter() - began:.2f} s")
    """
)


def test_identical_events_nest_in_n_log_n_time(tmp_path: Path):
    """1M identical events (the level-by-level search took minutes) and a JSON file of 100k
    (~5 s before), in a child with a timeout: ~1 s each now."""
    try:
        result = subprocess.run([sys.executable, "-c", _DEEP_NESTING_CHILD, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("nesting identical events took over 60 s: quadratic in the depth again?")
    assert result.returncode == 0, result.stderr[-2000:]
    print(result.stdout)


# --- args nested just under the decoder's limit ------------------------------------------------


def _loads(path: Path) -> bool:
    try:
        stepscope.load(path)
    except ProfileFormatError as error:
        assert "nested too deeply" in str(error)
        return False
    return True


@pytest.fixture(scope="module")
def deepest_args(tmp_path_factory: pytest.TempPathFactory) -> stepscope.Profile:
    """The trace whose one event has the most deeply nested args that still load here."""
    folder = tmp_path_factory.mktemp("deep")
    low, high = 1, 2 * sys.getrecursionlimit()
    assert _loads(hostile.deep_json(folder / "low.json", low, "args"))
    assert not _loads(hostile.deep_json(folder / "high.json", high, "args"))
    while high - low > 1:
        middle = (low + high) // 2
        if _loads(hostile.deep_json(folder / f"{middle}.json", middle, "args")):
            low = middle
        else:
            high = middle
    assert low > sys.getrecursionlimit() // 2  # deeply nested args do load
    return stepscope.load(hostile.deep_json(folder / "deepest.json", low, "args"))


def _deeper(frames: int, call):
    """``call()`` made ``frames`` Python frames deeper in the stack."""
    return _deeper(frames - 1, call) if frames else call()


def test_the_details_of_deeply_nested_args_show_a_note_never_an_error(deepest_args: stepscope.Profile):
    shown = {_deeper(frames, lambda: details(deepest_args, (0, 0)))["stats"][0]["value"][:5] for frames in range(0, 120, 3)}
    # Near the top of the stack the args show whole; deeper, the note does; nothing raises.
    assert ARGS_TOO_DEEP[:5] in shown and shown <= {'{"a":', ARGS_TOO_DEEP[:5]}
    deep = _deeper(300, lambda: details(deepest_args, (0, 0)))
    assert deep["stats"] == [{"name": "args", "value": ARGS_TOO_DEEP}]
    assert deep["name"] == "op" and deep["duration_ps"] == 1_000_000  # the rest of the details


def test_deeply_nested_args_read_one_by_one_or_in_bulk_deep_in_the_stack(deepest_args: stepscope.Profile):
    plane = deepest_args.planes[0]
    store = plane.stats
    assert isinstance(store, JsonStats)
    types = EventTypes(plane.events.metadata_id, plane.metadata.names, plane.metadata.categories)
    for frames in range(0, 60, 2):  # past where decoding fails, and where only translating does
        stats = _deeper(frames, lambda: store.stats(0, "op", ""))
        assert [stat.name for stat in stats] == (["args"] if stats[0].value == ARGS_TOO_DEEP else ["a"])
        assert _deeper(frames, lambda: store.value(0, "a", "op", "")) in (None, stats[0].value)
        entries = _deeper(frames, lambda: stat_entries(store, np.arange(1), types))
        assert len(entries) == 1
    entries = _deeper(300, lambda: stat_entries(store, np.arange(1), types))
    assert entries.text(int(entries.bits[0])) == ARGS_TOO_DEEP.encode()
    # Kineto's translator (with its one-stat decode) has the same fallback.
    kineto = store.translated(translate_args)
    assert _deeper(300, lambda: kineto.stats(0, "op", "kernel")) == [Stat("args", StatKind.STR, ARGS_TOO_DEEP)]
    assert _deeper(300, lambda: kineto.value(0, "kernel_details", "op", "kernel")) is None
    assert _deeper(300, lambda: kineto.value(0, "args", "op", "cpu_op")) == ARGS_TOO_DEEP
