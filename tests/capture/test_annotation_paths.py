"""The annotations' two implementations (``capture/_spans.c`` and the pure-Python classes of
``capture/annotations.py``) record exactly the same events.

The whole public API is compared through child processes (``tests.support.annotation_paths``,
once compiled and once with ``STEPSCOPE_PURE_PYTHON=1``): the records (names, args, thread,
order), the plane the host tracer exports from them, and each path on its own: every
record inside the block that made it, nested blocks inside their parents, ends in order.
The corners (argument errors, a recording that is not a plain ``Recording``, the thread id
after a fork) run in this process against both ``trace`` objects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

import pytest

from stepscope.capture import annotations
from stepscope.trace.kernels import PURE_PYTHON_ENV
from tests.support.traces import ROOT

PATHS = ("compiled", "python")

# The records in the order they are appended (at each block's end), by hand from
# tests/support/annotation_paths.py: (name, thread, args repr).
STAGE = "stepscope.data.decode"
BIG = 2**70  # 1180591620717411303424
EXPECTED_RECORDS = [
    ["inner", "MainThread", "{'index': 0}"],
    ["inner", "MainThread", "{'index': 1}"],
    ["inner", "MainThread", "{'index': 2}"],
    ["by keyword", "MainThread", "None"],
    ["outer", "MainThread", f"{{'layer': 1, 'rate': 0.5, 'tag': 'fc', 'big': {BIG}, 'flag': True}}"],
    ["raises", "MainThread", "None"],
    ["_decorated", "MainThread", "{'kind': 'call'}"],
    [STAGE, "MainThread", "{'item': 7}"],
    ["made", "MainThread", "{'by': 'hand'}"],
    ["stepscope.step", "MainThread", "{'step_num': 0, 'phase': 'train'}"],
    ["worker.inner", "worker-0", "None"],
    ["worker", "worker-0", "{'index': 0}"],
    ["worker.inner", "worker-1", "None"],
    ["worker", "worker-1", "{'index': 1}"],
]
# Each record's parent (index into EXPECTED_RECORDS, None at top level), by hand.
EXPECTED_PARENTS = [4, 4, 4, 4, 9, 9, 9, 9, 9, None, 11, None, 13, None]
# The blocks the child timed from outside: label -> index of its record.
TIMED = {"inner 0": 0, "inner 1": 1, "inner 2": 2, "outer": 4, "raises": 5, "step": 9, "worker-0": 11, "worker-1": 13}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("annotation-paths")
    found = {}
    for path in PATHS:
        out = folder / f"{path}.json"
        env = {**os.environ, PURE_PYTHON_ENV: "1" if path == "python" else ""}
        script = f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom tests.support.annotation_paths import child\nchild({str(out)!r})\n"
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        found[path] = json.loads(out.read_text())
    return found


def _compiled_trace() -> Any:
    if not annotations.COMPILED:
        pytest.fail("stepscope.capture._spans is not built: `pip install -e .` builds it (make venv)")
    from stepscope.capture import _spans

    return _spans.trace


def _trace(path: str) -> Any:
    return _compiled_trace() if path == "compiled" else annotations._py_trace


def test_each_child_used_the_path_it_was_given(runs: dict[str, dict[str, Any]]):
    assert runs["compiled"]["compiled"] is True, "the compiled annotations were not built or failed to import"
    assert runs["python"]["compiled"] is False


def test_both_paths_record_the_same_events(runs: dict[str, dict[str, Any]]):
    for path in PATHS:
        records = runs[path]["records"]
        assert [[name, thread, args] for name, _, _, thread, _, args in records] == EXPECTED_RECORDS, path
        ids = runs[path]["thread_ids"]
        assert [tid for *_, tid, _ in records] == [ids[thread] for _, _, _, thread, _, _ in records], path  # each thread's own native id


def test_both_paths_export_the_same_plane(runs: dict[str, dict[str, Any]]):
    compiled, python = runs["compiled"]["plane"], runs["python"]["plane"]
    assert compiled == python
    # By start time per line: the step, then outer in it with its three inners and the
    # keyword-named one, then the step's other children; each worker's pair after.
    assert [(line, name, depth) for line, name, depth, _ in compiled] == [
        ("MainThread", "stepscope.step", 0),
        ("MainThread", "outer", 1),
        ("MainThread", "inner", 2),
        ("MainThread", "inner", 2),
        ("MainThread", "inner", 2),
        ("MainThread", "by keyword", 2),
        ("MainThread", "raises", 1),
        ("MainThread", "_decorated", 1),
        ("MainThread", STAGE, 1),
        ("MainThread", "made", 1),
        ("worker-0", "worker", 0),
        ("worker-0", "worker.inner", 1),
        ("worker-1", "worker", 0),
        ("worker-1", "worker.inner", 1),
    ]
    # The int past int64 becomes text, the bool an int (stat_from_python's typing).
    assert compiled[1][3] == [["big", repr(str(BIG))], ["flag", "1"], ["layer", "1"], ["rate", "0.5"], ["tag", "'fc'"]]


@pytest.mark.parametrize("path", PATHS)
def test_timestamps_are_ordered_and_inside_their_blocks(runs: dict[str, dict[str, Any]], path: str):
    records, bounds = runs[path]["records"], runs[path]["bounds"]
    assert all(start <= end for _, start, end, *_ in records)
    for label, index in TIMED.items():
        before, after = bounds[label]
        _, start, end, *_ = records[index]
        assert before <= start <= end <= after, (label, before, start, end, after)
    # Records are appended as blocks end: per thread, ends never go back.
    for thread in {record[3] for record in records}:
        ends = [end for _, _, end, name, *_ in records if name == thread]
        assert ends == sorted(ends)
    # Each record's parent is the innermost record of its thread that contains it.
    parents = []
    for index, (_, start, end, thread, *_) in enumerate(records):
        around = [other for other, (_, s, e, t, *_) in enumerate(records) if other != index and t == thread and s <= start and end <= e]
        parents.append(min(around, key=lambda other: records[other][2] - records[other][1]) if around else None)
    assert parents == EXPECTED_PARENTS


@pytest.mark.parametrize("path", PATHS)
def test_bad_calls_fail_as_a_python_function_would(path: str):
    trace = _trace(path)
    for bad in ((), ("a", "b")):
        with pytest.raises(TypeError):
            trace(*bad)
    with pytest.raises(TypeError):
        trace("a", name="b")
    assert trace(name="idle") is trace("idle")  # idle: the shared object, name by keyword too


@pytest.mark.parametrize("path", PATHS)
def test_a_recording_of_another_kind_gets_add_calls(path: str):
    # A forked worker's SpooledRecording is not a plain Recording: its add() is called.
    class Collecting(annotations.Recording):
        def __init__(self) -> None:
            super().__init__(level=1)
            self.added: list[tuple[Any, ...]] = []

        def add(self, name: str, start: int, end: int, args: dict[str, Any] | None) -> None:
            self.added.append((name, start <= end, args))

    recording = Collecting()
    annotations.set_recording(recording)
    try:
        with _trace(path)("x", n=1), _trace(path)("y"):
            pass
    finally:
        annotations.set_recording(None)
    assert recording.added == [("y", True, None), ("x", True, {"n": 1})]
    assert recording.events == []


@pytest.mark.parametrize("path", PATHS)
def test_a_forked_child_records_its_own_thread_id(path: str):
    # The parent's thread records first (its id is then kept); the child's one thread has a
    # new id (its pid), which the child must record, not the parent's.
    trace, parent = _trace(path), annotations.Recording(level=1)
    annotations.set_recording(parent)
    try:
        with trace("parent"):
            pass
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: a recording of its own, then its thread id to the pipe
            try:
                child = annotations.Recording(level=1)
                annotations.set_recording(child)
                with trace("child"):
                    pass
                os.write(write, json.dumps([child.events[0][3], threading.get_native_id()]).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as stream:
            recorded, native = json.loads(stream.read())
        os.waitpid(pid, 0)
    finally:
        annotations.set_recording(None)
    assert parent.events[0][3] == threading.get_native_id()
    assert recorded == native == pid


def test_a_span_in_a_reference_cycle_is_collected():
    # The compiled span takes part in garbage collection: a block that stores its span in its
    # own args (a cycle) is freed by the collector.
    import gc
    import weakref

    class Holder:
        pass

    trace, recording = _compiled_trace(), annotations.Recording(level=1)
    annotations.set_recording(recording)
    try:
        holder = Holder()
        with trace("cycle", holder=holder) as span:
            holder.span = span  # type: ignore[attr-defined]
        probe = weakref.ref(holder)
        del holder, span
        recording.events.clear()
        gc.collect()
    finally:
        annotations.set_recording(None)
    assert probe() is None
