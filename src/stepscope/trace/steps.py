"""Finding the training steps of a profile: every tool reports per step, and the XSpace
writer writes them for XProf (``formats/xspace/xprof_hints.py``), so both find the same steps.

Sources of step markers, tried in order:
1. PyTorch's ``ProfilerStep#N`` annotations on host threads;
2. host events that carry a ``step_num`` stat: JAX's ``StepTraceAnnotation``, TF's
   ``Trace(..., step_num=N, _r=1)``, Keras' train function, stepscope's own step markers;
3. the ``Steps`` line of a device plane (XSpace from TPU / GPU runs);
4. none: the whole profiled window is one step, and the result says so (never an empty page).

A step's window is [first start, last end) of its markers. Only stepscope's own
``stepscope.step`` markers reach back over an input wait (a DataLoader fetch,
``stepscope.data.wait``) that ends just before them: ``for batch in loader: with
stepscope.step(n)`` leaves the wait for step n's batch outside its marker, and that wait
is step n's input time. Framework markers are XProf's step windows as they are. Work is
assigned to a step by time: whatever runs inside the window (on any thread or device) is
that step's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.trace import names
from stepscope.trace.model import NO_ID, Plane, Profile

# PyTorch's step annotation (``torch.profiler.profile.step()``), numbered.
PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_NUMBER = re.compile(r"(\d+)")
# The training loop waiting for the next batch: PyTorch DataLoader iteration, tf.data's
# GetNext, stepscope's instrumented iterables (the analyses' input time, ``classify.INPUT``).
INPUT_WAIT = re.compile(
    r"^enumerate\(DataLoader\)|DataLoaderIter\.__next__|^IteratorGetNext|"
    r"^MultiDeviceIteratorGetNextFromShard|^" + re.escape(names.STEPSCOPE_INPUT_WAIT) + "$",
)
# How each finder found its steps (``Steps.source``).
PROFILER_STEP_SOURCE, STEP_NUM_SOURCE, STEPS_LINE_SOURCE = "ProfilerStep", "step_num", "Steps line"


@dataclass(frozen=True)
class Steps:
    """Step windows in profile time (ps), sorted by start."""

    number: npt.NDArray[np.int64]
    start_ps: npt.NDArray[np.int64]
    end_ps: npt.NDArray[np.int64]
    source: str  # how they were found: "ProfilerStep", "step_num", "Steps line", "profiled window"

    @property
    def inferred(self) -> bool:
        """True when no step marker was found and the whole window is one step."""
        return self.source == WHOLE_WINDOW

    @property
    def duration_ps(self) -> npt.NDArray[np.int64]:
        return self.end_ps - self.start_ps

    def __len__(self) -> int:
        return len(self.number)


WHOLE_WINDOW = "profiled window"


def find_steps(profile: Profile) -> Steps:
    host = profile.plane(names.HOST_PLANE)
    for finder in (_profiler_steps, _step_num_steps):
        found = finder(host) if host is not None else None
        if found is not None:
            return found
    for plane in profile.device_planes:
        found = _steps_line(plane)
        if found is not None:
            return found
    return Steps(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.asarray([profile.span_ps], dtype=np.int64), WHOLE_WINDOW)


def _windows(numbers: np.ndarray, starts: np.ndarray, ends: np.ndarray, source: str) -> Steps | None:
    """One window per step number: the span of all its markers."""
    if not len(numbers):
        return None
    unique, inverse = np.unique(numbers, return_inverse=True)
    lo = np.full(len(unique), np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(len(unique), np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(lo, inverse, starts)
    np.maximum.at(hi, inverse, ends)
    order = np.argsort(lo, kind="stable")
    return Steps(unique[order], lo[order], hi[order], source)


def _profiler_steps(host: Plane) -> Steps | None:
    numbers = np.full(len(host.metadata), -1, dtype=np.int64)
    for index, name in enumerate(host.metadata.names):
        match = PROFILER_STEP.match(name)
        if match:
            numbers[index] = int(match.group(1))
    events = host.events
    rows = np.flatnonzero((numbers >= 0)[events.metadata_id])
    return _windows(numbers[events.metadata_id[rows]], events.start_ps[rows], events.ends(rows), PROFILER_STEP_SOURCE)


def _step_num_steps(host: Plane) -> Steps | None:
    events = host.events
    rows = np.flatnonzero((events.step_num != NO_ID) & (events.duration_ps > 0))
    # stepscope's own markers win over a framework's step annotations in the same profile
    # (Keras 2 numbers its train-function steps per epoch; stepscope numbers them globally).
    own = [index for index, name in enumerate(host.metadata.names) if name == names.STEPSCOPE_STEP]
    mine = rows[np.isin(events.metadata_id[rows], own)] if own else rows[:0]
    if len(mine):
        steps = _windows(events.step_num[mine], events.start_ps[mine], events.ends(mine), STEP_NUM_SOURCE)
        return _with_input_waits(host, steps) if steps is not None else None
    # A framework's step annotation is used as it is, as XProf uses it: TensorFlow's and
    # JAX's steps hold the input wait that happens inside them, and a wait before one
    # belongs to no step (reaching back made TF steps 6-10% longer than XProf's).
    return _windows(events.step_num[rows], events.start_ps[rows], events.ends(rows), STEP_NUM_SOURCE)


def _with_input_waits(host: Plane, steps: Steps) -> Steps:
    """A step marked around its body (``for batch in loader: with step(n): ...``) leaves
    the wait for its batch just before it; that wait is the step's input time, so the
    step's window reaches back to the start of input waits that end in the gap before it."""
    is_wait = np.asarray([bool(INPUT_WAIT.search(name)) for name in host.metadata.names], dtype=bool)
    events = host.events
    waits = np.flatnonzero(is_wait[events.metadata_id]) if len(is_wait) else np.zeros(0, dtype=np.int64)
    if not len(waits):
        return steps
    wait_ends = events.ends(waits)
    order = np.argsort(wait_ends, kind="stable")
    wait_ends, wait_starts = wait_ends[order], events.start_ps[waits][order]
    previous_end = np.concatenate(([np.iinfo(np.int64).min], steps.end_ps[:-1]))
    lo = np.searchsorted(wait_ends, previous_end, "right")
    hi = np.searchsorted(wait_ends, steps.start_ps, "right")
    starts = steps.start_ps.copy()
    for index in np.flatnonzero(hi > lo).tolist():
        starts[index] = min(int(starts[index]), int(wait_starts[lo[index] : hi[index]].min()))
    return Steps(steps.number, starts, steps.end_ps, steps.source)


def _steps_line(plane: Plane) -> Steps | None:
    line = plane.line_index(names.STEPS_LINE)
    if line is None:
        return None
    rows = np.arange(*plane.line_slice(line).indices(len(plane.events)))
    events = plane.events
    numbers = events.step_num[rows].copy()
    unnumbered = numbers == NO_ID
    for position in np.flatnonzero(unnumbered).tolist():
        match = _NUMBER.search(plane.event_name(int(rows[position])))
        numbers[position] = int(match.group(1)) if match else position
    return _windows(numbers, events.start_ps[rows], events.ends(rows), STEPS_LINE_SOURCE)
