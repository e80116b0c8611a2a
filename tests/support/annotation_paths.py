"""What the child processes of ``tests/capture/test_annotation_paths.py`` run: one fixed
program of annotations (steps, nested and keyword-named traces, args of every type, a block
that raises, the decorator, a data stage, a span made as stepscope.data makes them, two
threads one after the other) recorded by the host tracer, written to a JSON file.

The test runs it twice, once with the compiled annotations and once with
``STEPSCOPE_PURE_PYTHON=1``, and compares the two files. Each block's bounds are read with
``perf_counter_ns`` just outside it, so the test can check that its record lies inside.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import stepscope
import stepscope.data
from stepscope.capture import annotations
from stepscope.capture.tracers.host import HostTracer
from stepscope.trace import names

_now = time.perf_counter_ns
Bounds = dict[str, list[int]]


@stepscope.trace.function(kind="call")
def _decorated(value: int) -> int:
    return value + 1


def _main_thread(bounds: Bounds) -> None:
    bounds["step"] = [_now()]
    with stepscope.step(0, phase="train"):
        bounds["outer"] = [_now()]
        with stepscope.trace("outer", layer=1, rate=0.5, tag="fc", big=2**70, flag=True):
            for index in range(3):
                bounds[f"inner {index}"] = [_now()]
                with stepscope.trace("inner", index=index):
                    pass
                bounds[f"inner {index}"].append(_now())
            with stepscope.trace(name="by keyword"):
                pass
        bounds["outer"].append(_now())
        bounds["raises"] = [_now()]
        try:
            with stepscope.trace("raises"):
                raise ValueError("inside the block")
        except ValueError:
            bounds["raises"].append(_now())
        _decorated(2)
        with stepscope.data.stage("decode", item=7):
            pass
        recording = annotations.current_recording()
        assert recording is not None
        with annotations._Span("made", {"by": "hand"}, recording):
            pass
    bounds["step"].append(_now())


def _worker(index: int, bounds: Bounds, ids: dict[str, int]) -> None:
    name = threading.current_thread().name
    ids[name] = threading.get_native_id()
    bounds[name] = [_now()]
    with stepscope.trace("worker", index=index), stepscope.trace("worker.inner"):
        pass
    bounds[name].append(_now())


def run() -> dict[str, Any]:
    bounds: Bounds = {}
    ids = {threading.current_thread().name: threading.get_native_id()}
    tracer = HostTracer()
    tracer.start(stepscope.ProfilerOptions(host_tracer_level=1))
    recording = annotations.current_recording()
    assert recording is not None
    _main_thread(bounds)
    for index in range(2):  # one after the other: the order of their records is fixed
        thread = threading.Thread(target=_worker, args=(index, bounds, ids), name=f"worker-{index}")
        thread.start()
        thread.join()
    records = [[name, start, end, recording.threads[thread], thread, repr(args)] for name, start, end, thread, args in recording.events]
    (profile,) = tracer.stop()
    host = profile.plane(names.HOST_PLANE)
    events = host.events
    plane = [
        [host.lines[int(events.line[row])].name, host.event_name(row), int(events.depth[row]), sorted((s.name, repr(s.value)) for s in host.event_stats(row))]
        for row in range(len(events))
    ]
    return {"compiled": annotations.COMPILED, "records": records, "plane": plane, "bounds": bounds, "thread_ids": ids}


def child(out: str) -> None:
    with open(out, "w") as stream:
        json.dump(run(), stream)


if __name__ == "__main__":
    child(sys.argv[1])
