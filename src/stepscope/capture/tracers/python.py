"""The Python tracer: every Python (and builtin) function call on every thread.

Uses the profile hook (``sys.setprofile`` / ``threading.setprofile``), which every supported
Python has (3.11 lacks ``sys.monitoring``). Calls shorter than ``MIN_DURATION_NS`` are
dropped as they return, so a long trace stays usable: the tree keeps what took time.
Events go to the ``/host:python-tracer`` plane, one line per thread, named like XProf's
Python events: ``function (file.py:line)``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from operator import itemgetter
from types import FrameType
from typing import Any

from stepscope.capture.options import ProfilerOptions
from stepscope.capture.tracers.host import EpochClock, events_plane
from stepscope.trace import names
from stepscope.trace.model import Profile

MIN_DURATION_NS = 10_000  # 10 us
_CALLS = frozenset({"call", "c_call"})
_RETURNS = frozenset({"return", "c_return", "c_exception"})


def _label(frame: FrameType, event: str, arg: Any) -> str:
    if event == "c_call":
        return f"<built-in {getattr(arg, '__qualname__', repr(arg))}>"
    code = frame.f_code
    return f"{code.co_qualname} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


class PythonTracer:
    """Python calls and returns (python_tracer_level >= 1)."""

    name = "python"
    # sys.setprofile hooks the calling thread only (3.11 cannot hook another running
    # thread), so a remote capture starts this tracer on the training thread.
    thread_affine = True

    def __init__(self, min_duration_ns: int = MIN_DURATION_NS) -> None:
        self.min_duration_ns = min_duration_ns
        self._records: list[tuple[str, int, int, int, None]] = []
        self._stacks: dict[int, list[tuple[str, int]]] = {}
        self._threads: dict[int, str] = {}
        self._clock = EpochClock()
        self._active = False

    def is_available(self) -> bool:
        return True

    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self._active:  # a thread still hooked after the capture unhooks itself
            sys.setprofile(None)
            return
        now = time.perf_counter_ns()
        thread = threading.get_native_id()
        stack = self._stacks.get(thread)
        if stack is None:
            stack = self._stacks[thread] = []
            self._threads[thread] = threading.current_thread().name
        if event in _CALLS:
            stack.append((_label(frame, event, arg), now))
        elif event in _RETURNS and stack:
            label, start = stack.pop()
            if now - start >= self.min_duration_ns:
                self._records.append((label, start, now, thread, None))

    def will_record(self, options: ProfilerOptions) -> bool:
        return options.python_tracer_level >= 1

    def start(self, options: ProfilerOptions) -> None:
        if not self.will_record(options):
            return
        self._clock = EpochClock()
        self._records, self._stacks = [], {}
        self._active = True
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)

    def halt(self) -> None:
        if self._active:
            self._active = False  # threads hooked since the start unhook at their next call
            sys.setprofile(None)
            threading.setprofile(None)

    def stop(self) -> list[Profile]:
        self.halt()
        records, self._records = self._records, []
        self._stacks = {}
        if not records:
            return []
        start_ns = self._clock.epoch(min(map(itemgetter(1), records))) // 1000 * 1000
        plane = events_plane(names.PYTHON_TRACER_PLANE, records, self._clock, start_ns, self._threads)
        return [Profile(planes=[plane], start_ns=start_ns, host="", source="python tracer", format="stepscope")]
