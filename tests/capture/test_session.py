"""Capture sessions, annotations, the Python tracer and the step hook, on real runs."""

from __future__ import annotations

import json
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.capture import annotations
from stepscope.capture.session import RECORDING, CaptureSession
from stepscope.capture.tracers.host import HostTracer
from stepscope.capture.tracers.python import PythonTracer
from stepscope.trace import names
from stepscope.trace.logdir import parse_path


def _events(profile: stepscope.Profile, plane_name: str) -> list[tuple[str, int, int, int]]:
    """(name, start ps, end ps, depth) of every event of a plane."""
    plane = profile.plane(plane_name)
    events = plane.events
    return [(plane.event_name(r), int(events.start_ps[r]), int(events.end_ps[r]), int(events.depth[r])) for r in range(len(events))]


def test_profile_writes_the_tensorboard_layout_with_steps_and_threads(tmp_path: Path):
    def worker() -> None:
        with stepscope.trace("worker.load", batch=3):
            time.sleep(0.003)

    with stepscope.profile(tmp_path, stepscope.ProfilerOptions(host_tracer_level=1)) as session:
        for number in range(3):
            with stepscope.step(number):
                with stepscope.trace("forward", layers=2):
                    time.sleep(0.002)
                thread = threading.Thread(target=worker, name="loader")
                thread.start()
                thread.join()
    path = session.path
    assert path is not None and path.exists()
    parsed = parse_path(tmp_path, path)
    assert parsed.run == session.session and parsed.host
    (run,) = stepscope.discover(tmp_path)
    profile = stepscope.load(run.hosts[0].path)
    profile.validate()
    host = profile.plane(names.HOST_PLANE)
    # 3 steps x (step + forward) on the main thread; 3 short-lived threads named "loader",
    # one load each, each its own line (a new thread is a new timeline).
    by_line = sorted((line.name, int(count)) for line, count in zip(host.lines, host.line_event_counts()))
    assert by_line == [(threading.main_thread().name, 6), ("loader", 1), ("loader", 1), ("loader", 1)]
    forwards = [e for e in _events(profile, names.HOST_PLANE) if e[0] == "forward"]
    assert len(forwards) == 3 and all(depth == 1 for *_, depth in forwards)  # inside their step
    assert all(end - start >= 2_000_000_000 for _, start, end, _ in forwards)  # slept >= 2 ms
    row = next(r for r in range(len(host.events)) if host.event_name(r) == "worker.load")
    assert {(s.name, s.value) for s in host.event_stats(row)} == {("batch", 3)}
    overview = run_tool("overview_page", profile).to_json()
    assert overview["step_source"] == "step_num"
    assert [step["step"] for step in overview["steps"]] == [0, 1, 2]


def test_annotations_cost_nothing_when_idle():
    assert annotations.current_recording() is None
    first, second = stepscope.trace("a"), stepscope.trace("b", x=1)
    assert first is second  # one shared do-nothing object, nothing recorded
    assert stepscope.step(1) is first


def test_one_session_at_a_time(tmp_path: Path):
    # Only stepscope's own tracer: whether a framework tracer records anything in an empty
    # capture depends on what earlier tests imported.
    session = CaptureSession(tmp_path, tracers=[HostTracer()])
    session.start()
    try:
        with pytest.raises(stepscope.StepscopeError, match="already running"):
            CaptureSession(tmp_path, tracers=[HostTracer()]).start()
        # The job-facing calls never raise: the second capture warns and records nothing,
        # and the first goes on recording.
        with (
            pytest.warns(stepscope.ProfilerWarning, match="records nothing.*already running"),
            stepscope.profile(tmp_path / "inner") as inner,
            stepscope.trace("work"),
        ):
            pass
        assert inner.path is None and not (tmp_path / "inner").exists()
        with pytest.warns(stepscope.ProfilerWarning, match="records nothing"):
            stepscope.start(tmp_path / "inner")
        assert stepscope.stop() is None
    finally:
        path = session.stop()
    # The first capture kept recording through all that: it holds the one "work" span.
    profile = stepscope.load(path)
    host = profile.plane(names.HOST_PLANE)
    assert [host.metadata.names[i] for i in host.events.metadata_id] == ["work"]
    with pytest.raises(stepscope.StepscopeError, match="no stepscope capture is running"):
        stepscope.stop()


class _Broken:
    name = "broken"

    def is_available(self) -> bool:
        return True

    def start(self, options) -> None:
        raise RuntimeError("no device")

    def stop(self):
        raise AssertionError("never started, never stopped")


def test_a_failing_tracer_warns_and_the_others_go_on(tmp_path: Path):
    session = CaptureSession(tmp_path, tracers=[_Broken(), HostTracer()])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.start()
        with stepscope.trace("kept"):
            pass
        path = session.stop()
    assert any("broken tracer did not start (no device)" in str(w.message) for w in caught)
    assert [e[0] for e in _events(stepscope.load(path), names.HOST_PLANE)] == ["kept"]


def test_delay_ms_starts_the_trace_later(tmp_path: Path):
    # 2 s: "before" comes microseconds after start(), far inside it on any machine; "after"
    # comes once the session says it records (its phase), not after a guess of the delay.
    session = CaptureSession(tmp_path, stepscope.ProfilerOptions(delay_ms=2000), tracers=[HostTracer()])
    session.start()
    with stepscope.trace("before"):
        pass
    deadline = time.monotonic() + 60
    while session.phase != RECORDING:
        assert time.monotonic() < deadline, "the delayed start never came"
        time.sleep(0.01)
    with stepscope.trace("after"):
        pass
    path = session.stop()
    assert [e[0] for e in _events(stepscope.load(path), names.HOST_PLANE)] == ["after"]


def _inner() -> None:
    time.sleep(0.002)


def _outer() -> None:
    _inner()
    _inner()


def test_python_tracer_nests_calls(tmp_path: Path):
    options = stepscope.ProfilerOptions(host_tracer_level=0, python_tracer_level=1)
    session = CaptureSession(tmp_path, options, tracers=[PythonTracer()])
    session.start()
    _outer()
    path = session.stop()
    profile = stepscope.load(path)
    profile.validate()
    plane = profile.plane(names.PYTHON_TRACER_PLANE)
    labels = [plane.event_name(r) for r in range(len(plane.events))]
    outer = next(r for r, label in enumerate(labels) if label.startswith("_outer (test_session.py:"))
    inners = [r for r, label in enumerate(labels) if label.startswith("_inner (test_session.py:")]
    assert len(inners) == 2
    assert all(plane.events.parent[r] == outer for r in inners)
    # Each _inner sleeps 2 ms, so _outer lasts at least 4 ms.
    assert plane.events.duration_ps[outer] >= 4_000_000_000


def test_step_hook_captures_every_n_steps(tmp_path: Path):
    hook = stepscope.StepHook(tmp_path, save_steps=3, options=stepscope.ProfilerOptions(host_tracer_level=1))
    for _ in range(8):
        with stepscope.trace("train_step"):
            time.sleep(0.001)
        hook.step()
    hook.close()
    # Due at step 3 and 6; each capture covers the next step (4 and 7).
    assert len(hook.paths) == 2 and len({p.parent for p in hook.paths}) == 2
    captured = [stepscope.load(p) for p in hook.paths]
    assert [run_tool("overview_page", p).to_json()["steps"][0]["step"] for p in captured] == [4, 7]
    for profile in captured:
        assert [e[0] for e in _events(profile, names.HOST_PLANE)].count("train_step") == 1


def test_options_are_checked():
    with pytest.raises(stepscope.StepscopeError, match="host_tracer_level"):
        stepscope.ProfilerOptions(host_tracer_level=7)
    with pytest.raises(stepscope.StepscopeError, match="delay_ms"):
        stepscope.ProfilerOptions(delay_ms=-1)


def test_xprof_opens_a_capture(tmp_path: Path):
    with stepscope.profile(tmp_path, stepscope.ProfilerOptions(host_tracer_level=1)) as session, stepscope.step(0), stepscope.trace("compute"):
        time.sleep(0.001)
    from xprof.convert import raw_to_tool_data

    data, _ = raw_to_tool_data.xspace_to_tool_data([str(session.path)], "trace_viewer", {"use_saved_result": False})
    events = json.loads(data)["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    shown: dict[str, list[str]] = {}
    for event in (e for e in events if e.get("ph") in ("X", "i")):
        shown.setdefault(threads[event["tid"]], []).append(event["name"])
    # The recorded thread's annotations, and the step's root the writer adds for XProf on a
    # line of its own (XProf names a step's root "<name> <step_num>").
    assert shown == {"MainThread": [names.STEPSCOPE_STEP, "compute"], names.XPROF_STEPS_LINE: [f"{names.STEPSCOPE_STEP} 0"]}


def _forked_worker() -> None:
    with stepscope.trace("worker.decode", item=1):
        time.sleep(0.002)


def test_forked_worker_events_reach_the_profile(tmp_path: Path):
    import multiprocessing

    context = multiprocessing.get_context("fork")
    with stepscope.profile(tmp_path, stepscope.ProfilerOptions(host_tracer_level=1)) as session, stepscope.trace("main.wait"):
        worker = context.Process(target=_forked_worker)
        worker.start()
        worker.join()
    profile = stepscope.load(session.path)
    profile.validate()
    host = profile.plane(names.HOST_PLANE)
    row = next(r for r in range(len(host.events)) if host.event_name(r) == "worker.decode")
    line = host.lines[int(host.events.line[row])].name
    assert line.startswith(f"process {worker.pid} / ")
    wait = next(r for r in range(len(host.events)) if host.event_name(r) == "main.wait")
    # The worker ran inside main.wait: its event lies within the wait on the shared clock.
    assert host.events.start_ps[wait] <= host.events.start_ps[row] <= host.events.end_ps[row] <= host.events.end_ps[wait]


def test_the_wait_before_a_step_is_its_input_time(tmp_path: Path):
    """``for batch in instrument(loader): with step(n): ...`` waits outside the marker."""
    import stepscope.data

    def batches():
        for item in range(3):
            time.sleep(0.003)
            yield item

    with stepscope.profile(tmp_path, stepscope.ProfilerOptions(host_tracer_level=1)) as session:
        for number, _ in enumerate(stepscope.data.instrument(batches())):
            with stepscope.step(number):
                time.sleep(0.001)
    profile = stepscope.load(session.path)
    events = _events(profile, names.HOST_PLANE)
    waits = sorted((start, end) for name, start, end, _ in events if name == names.STEPSCOPE_INPUT_WAIT)
    steps = sorted((start, end) for name, start, end, _ in events if name == names.STEPSCOPE_STEP)
    overview = run_tool("overview_page", profile).to_json()
    # Each step's window runs from the start of the wait for its batch to the end of its
    # marker; the wait is its input time, and nothing else claims it.
    assert [s["step_time_ps"] for s in overview["steps"]] == [end - wait_start for (wait_start, _), (_, end) in zip(waits, steps)]
    assert [s["breakdown"]["input_ps"] for s in overview["steps"]] == [end - start for start, end in waits]


def test_threads_annotate_concurrently(tmp_path: Path):
    # 8 threads x 500 nested pairs: every annotation is recorded, on its own thread's line.
    def work(index: int) -> None:
        for _ in range(500):
            with stepscope.trace("outer", worker=index), stepscope.trace("inner"):
                pass

    with stepscope.profile(tmp_path, stepscope.ProfilerOptions(host_tracer_level=1)) as session:
        threads = [threading.Thread(target=work, args=(i,), name=f"annotator-{i}") for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    profile = stepscope.load(session.path)
    profile.validate()
    host = profile.plane(names.HOST_PLANE)
    counts = {line.name: int(count) for line, count in zip(host.lines, host.line_event_counts())}
    assert counts == {f"annotator-{i}": 1000 for i in range(8)}
    inner = np.asarray([host.event_name(r) == "inner" for r in range(len(host.events))])
    assert np.all(host.events.depth[inner] == 1) and np.all(host.events.depth[~inner] == 0)


@stepscope.trace.function()
def _decorated(value: int) -> int:
    return value + 1


def test_trace_function_decorator(tmp_path: Path):
    assert _decorated(1) == 2  # idle: just calls through
    session = CaptureSession(tmp_path, tracers=[HostTracer()])
    session.start()
    assert _decorated(2) == 3
    path = session.stop()
    assert [e[0] for e in _events(stepscope.load(path), names.HOST_PLANE)] == ["_decorated"]
