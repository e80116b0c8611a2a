"""flame_graph: call-path trees whose self and total times are derived by hand from a
small trace (tests/support/flame.py), and, on a real Kineto trace, frames whose self times
add up to each thread's busy time in each step as computed from the JSON itself."""

from __future__ import annotations

import json
import re

import pytest

from stepscope.analysis import run_tool
from stepscope.analysis.ops.stacks import MAX_DEPTH
from stepscope.analysis.tools.flame_graph import FlameGraphResult
from stepscope.errors import StepscopeError
from stepscope.trace.readers import load
from tests.support.flame import A100, A100_PID, MAIN, MARKERS, US, WORKER, kineto_ns, write_stacks_trace
from tests.support.intervals import union_length
from tests.support.traces import read_json, shared


@pytest.fixture(scope="module")
def stacks(tmp_path_factory):
    return load(write_stacks_trace(tmp_path_factory.mktemp("flame")))


def times(result: FlameGraphResult) -> dict[tuple[str, ...], tuple[int, int]]:
    """Path -> (self, total) in microseconds (the fixture's times are whole microseconds)."""
    found = {}
    for path, node in result.root.walk():
        assert node.self_ps % US == 0 and node.total_ps % US == 0
        found[path] = (node.self_ps // US, node.total_ps // US)
    return found


def test_whole_profile_every_host_thread(stacks):
    result = run_tool("flame_graph", stacks)
    assert (result.start_ps, result.end_ps) == (0, 200 * US)
    assert result.steps == ["1", "2"]
    assert result.threads == [MAIN, WORKER, MARKERS]
    root = "/host:CPU"
    assert times(result) == {
        (root,): (0, 600),  # three threads x the 200 us window
        # main: busy [0, 100) + [120, 170) = 150, idle 50.
        (root, MAIN): (50, 200),
        (root, MAIN, "A"): (30, 100),  # 100 - B 30 - C 40
        (root, MAIN, "A", "B"): (20, 30),  # 30 - D 10
        (root, MAIN, "A", "B", "D"): (10, 10),
        (root, MAIN, "A", "C"): (40, 40),
        # E [120, 150) and F [140, 170): the overlap [140, 150) is F's, which started later.
        (root, MAIN, "E"): (20, 20),
        (root, MAIN, "F"): (30, 30),
        (root, WORKER): (130, 200),
        (root, WORKER, "G"): (60, 70),
        (root, WORKER, "G", "H"): (10, 10),
        (root, MARKERS): (0, 200),
        (root, MARKERS, "ProfilerStep#1"): (110, 110),
        (root, MARKERS, "ProfilerStep#2"): (90, 90),
    }
    assert result.busy_ps == (150 + 70 + 200) * US
    # Children in "left heavy" order; categories from the source, a thread's is "thread".
    main = result.root.children[1]
    assert [child.name for child in main.children] == ["A", "F", "E"]
    assert [child.category for child in main.children] == ["cpu_op", "python_function", "cpu_op"]
    assert main.category == "thread"


def test_a_step(stacks):
    result = run_tool("flame_graph", stacks, step="2")
    assert (result.start_ps, result.end_ps) == (110 * US, 200 * US)
    root = "/host:CPU"
    assert times(result) == {
        (root,): (0, 270),
        (root, MAIN): (40, 90),  # E 20 + F 30 busy
        (root, MAIN, "E"): (20, 20),
        (root, MAIN, "F"): (30, 30),
        (root, WORKER): (70, 90),
        (root, WORKER, "G"): (20, 20),  # [110, 130) of G; H is in step 1
        (root, MARKERS): (0, 90),
        (root, MARKERS, "ProfilerStep#2"): (90, 90),
    }


def test_a_selection_crossing_events_on_one_thread(stacks):
    result = run_tool("flame_graph", stacks, thread=MAIN, start_ps=25 * US, end_ps=125 * US)
    # The window [25, 125) cuts A, B and D at 25, and E at 125.
    assert times(result) == {
        (MAIN,): (20, 100),  # busy [25, 100) + [120, 125) = 80
        (MAIN, "A"): (20, 75),  # 75 - B 15 - C 40
        (MAIN, "A", "B"): (10, 15),  # [25, 40) - D [25, 30)
        (MAIN, "A", "B", "D"): (5, 5),
        (MAIN, "A", "C"): (40, 40),
        (MAIN, "E"): (5, 5),
    }
    assert result.busy_ps == 80 * US


def test_an_empty_window_and_bad_options(stacks):
    empty = run_tool("flame_graph", stacks, thread=WORKER, start_ps=180 * US, end_ps=190 * US)
    assert times(empty) == {(WORKER,): (10, 10)}
    assert empty.summary()[0].startswith(f"Nothing ran on {WORKER}")
    for options, message in (
        (dict(thread="nope"), "no thread 'nope'"),
        (dict(step="7"), "no step '7' (steps: 1, 2)"),
        (dict(step="1", start_ps=1), "not both"),
        (dict(start_ps=5, end_ps=4), "0 <= start_ps <= end_ps"),
    ):
        with pytest.raises(StepscopeError, match=re.escape(message)):
            run_tool("flame_graph", stacks, **options)


def test_table_and_summary(stacks):
    result = run_tool("flame_graph", stacks, thread=MAIN)
    (table,) = result.tables()
    records = {record["stack"]: record for record in table.records()}
    assert records[f"{MAIN};A;B;D"]["self_us"] == 10.0 and records[f"{MAIN};A;B;D"]["depth"] == 3
    assert result.summary() == [
        f"{MAIN}, 0.0..200.0 us: busy 150.0 us of 200.0 us",
        "Most self time: C (26.7%), A (20.0%), F (20.0%)",
    ]  # 40, 30, 30 of 150; ties by name


def test_kineto_frames_add_up_to_each_threads_busy_time_per_step():
    """For each step (ProfilerStep#N) and each thread of the trace's process: the union of
    the thread's timed events clipped to the step, from the JSON, is the sum of the self
    times under the thread (and its node's total minus its idle)."""
    path = shared(A100)
    events = [e for e in read_json(path)["traceEvents"] if e.get("ph") == "X" and e.get("pid") == A100_PID and e.get("dur", 0) > 0]
    steps = {e["name"].split("#")[1]: (kineto_ns(e["ts"]), kineto_ns(e["ts"]) + kineto_ns(e["dur"])) for e in events if e["name"].startswith("ProfilerStep#")}
    assert sorted(steps) == ["4", "5", "6"]
    profile = load(path)
    checked = 0
    for step, (low, high) in steps.items():
        result = run_tool("flame_graph", profile, step=step)
        assert result.end_ps - result.start_ps == (high - low) * 1000
        for thread in result.root.children:
            tid = int(thread.name.split()[1])
            spans = [(kineto_ns(e["ts"]), kineto_ns(e["ts"]) + kineto_ns(e["dur"])) for e in events if e["tid"] == tid]
            busy_ns = union_length([(max(s, low), min(e, high)) for s, e in spans if s < high and e > low])
            frames = sum(node.self_ps for _, node in thread.walk()[1:])
            assert frames == thread.total_ps - thread.self_ps == busy_ns * 1000
            checked += busy_ns > 0
    assert checked >= 6  # the main thread and the autograd thread in every step


def test_stacks_deeper_than_the_cut_count_at_their_frame_there(tmp_path):
    """1,000 events, event i over [i, 2000 - i) us, each nested in the one before: the
    stack at t is event k for t in [k, k+1) or [1999-k, 2000-k), so events 0..127 (the 128
    frames kept) are the leaf for 2 us each, and the 2000 - 256 = 1744 us below them count
    as event 127's self time, said in cut_ps. (Uncut, this tree took 200,000 events past the
    dashboard worker's 2 GiB.)"""
    depth, cut = 1000, MAX_DEPTH
    events = [{"ph": "X", "name": f"f{i}", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": i, "dur": 2 * (depth - i)} for i in range(depth)]
    path = tmp_path / "deep.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    result = run_tool("flame_graph", load(path))
    assert result.busy_ps == 2 * depth * US and result.cut_ps == (2 * depth - 2 * cut) * US
    nodes = [(path, node) for path, node in result.root.walk() if node.category != "thread"]
    assert len(nodes) == cut and max(len(path) for path, _ in nodes) == cut + 1  # the thread, then 128 frames
    self_times = {node.name: node.self_ps for _, node in nodes}
    assert self_times == {f"f{i}": 2 * US for i in range(cut - 1)} | {f"f{cut - 1}": (2 + 2 * depth - 2 * cut) * US}
    assert f"Stacks deeper than {MAX_DEPTH} frames: {2 * depth - 2 * cut:,.1f} us" in "\n".join(result.summary())
    assert json.dumps(result.to_json())  # a tree the JSON encoder walks
