"""Work that must run on the training thread itself, handed to it at its next step boundary.

Two tracers only work when the thread they record starts them:

* torch's profiler records the ops of the thread that enabled it: its RecordFunction
  callbacks are thread-local (torch's global "on-demand" mode exists in C++ but is not
  reachable from Python). Started on the profiler server's gRPC thread it records nothing
  of the training loop (measured: zero ops, and Kineto prints "External init callback must
  run in same thread as registerClient").
* the Python tracer's profile hook (``sys.setprofile``) is per thread, and Python 3.11 has
  no way to set it for another running thread.

So a capture started by the profiler server posts their start (and later their stop) here,
and the training thread runs it when it next reaches a *step boundary*: ``stepscope.step``,
``StepHook.step``, or a PyTorch optimizer's ``step()`` (a global pre-hook, see
``tracers/torch.py``). The training thread pays one list check per boundary; tasks run
there and never raise into the job.

A task may be addressed to one thread (a stop must run where its start ran) or to whichever
thread reaches a boundary first. Forked children start with no tasks.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(eq=False)
class Task:
    """One piece of work for a training thread."""

    run: Callable[[], None]
    thread: int | None = None  # native id of the thread that must run it; None: the first one
    done: threading.Event = field(default_factory=threading.Event)
    ran_on: int | None = None  # native id of the thread that ran it
    error: BaseException | None = None

    def wait(self, timeout: float | None) -> bool:
        return self.done.wait(timeout)


# Shared with ``annotations.step`` (which checks it on every step): mutated in place, never
# rebound, so the check is one global lookup and one truth test.
pending: list[Task] = []
_lock = threading.Lock()


def post(run: Callable[[], None], thread: int | None = None) -> Task:
    """Queues ``run`` for the next step boundary (of ``thread``, when given)."""
    task = Task(run, thread)
    with _lock:
        pending.append(task)
    return task


def cancel(task: Task) -> bool:
    """Withdraws a task that has not started; False when it already ran (or is running)."""
    with _lock:
        if task in pending:
            pending.remove(task)
            return True
    return False


def run_pending() -> None:
    """Runs the tasks addressed to this thread (or to any): called at step boundaries."""
    me = threading.get_native_id()
    with _lock:
        mine = [task for task in pending if task.thread in (None, me)]
        for task in mine:
            pending.remove(task)
    for task in mine:
        task.ran_on = me
        try:
            task.run()
        except Exception as error:
            task.error = error
            warnings.warn(f"stepscope: a profiler task failed on the training thread ({error})", RuntimeWarning, stacklevel=2)
        finally:
            task.done.set()


def thread_alive(native_id: int) -> bool:
    return any(thread.native_id == native_id for thread in threading.enumerate())


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    pending.clear()  # the parent's capture is not the child's


os.register_at_fork(after_in_child=_after_fork_in_child)
