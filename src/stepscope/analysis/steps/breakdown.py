"""The step-time breakdown: every picosecond of a step's window in exactly one category.

For each activity (``classify.Activity``), the union of its events' intervals over all
planes; the categories then claim each step's window in priority order (device compute
first, then collectives, copies, input, compile, kernel launch, host compute), each taking
only what no earlier one covers, and what none covers is idle. The parts are integer
picoseconds and sum to the step time exactly. The overview shows it; the input pipeline
analyzer's per-step input time is its ``input`` part (``opstats.OpStats.breakdown``).
"""

from __future__ import annotations

import numpy as np

from stepscope.analysis.intervals import Union
from stepscope.analysis.steps.classify import Activity, event_activities
from stepscope.analysis.steps.steps import Steps
from stepscope.trace.model import Profile

# Breakdown keys in priority order (the Activity order), then idle.
BREAKDOWN = {
    Activity.DEVICE_COMPUTE: "device_compute",
    Activity.DEVICE_COLLECTIVES: "device_collectives",
    Activity.DEVICE_TO_DEVICE: "device_to_device",
    Activity.HOST_TO_DEVICE: "host_to_device",
    Activity.DEVICE_TO_HOST: "device_to_host",
    Activity.INPUT: "input",
    Activity.COMPILE: "compile",
    Activity.KERNEL_LAUNCH: "kernel_launch",
    Activity.HOST_COMPUTE: "host_compute",
}
IDLE = "idle"


def activity_unions(profile: Profile) -> dict[Activity, Union]:
    """The union of each activity's intervals across all planes."""
    starts: dict[Activity, list[np.ndarray]] = {activity: [] for activity in BREAKDOWN}
    ends: dict[Activity, list[np.ndarray]] = {activity: [] for activity in BREAKDOWN}
    for plane in profile.planes:
        activity = event_activities(plane)
        # Input work beside the step is host work as far as the step is concerned.
        activity = np.where(activity == Activity.INPUT_PIPELINE, Activity.HOST_COMPUTE, activity)
        events = plane.events
        for kind in BREAKDOWN:
            rows = np.flatnonzero(activity == kind)
            if len(rows):
                start = events.start_ps[rows]
                starts[kind].append(start)
                ends[kind].append(start + events.duration_ps[rows])
    return {kind: Union.of(np.concatenate(starts[kind]), np.concatenate(ends[kind])) if starts[kind] else Union.empty() for kind in BREAKDOWN}


def step_breakdown(steps: Steps, unions: dict[Activity, Union]) -> dict[str, np.ndarray]:
    """Per step, ps of each category; the categories of a step sum to its duration."""
    result: dict[str, np.ndarray] = {}
    claimed = Union.empty()
    previous = np.zeros(len(steps), dtype=np.int64)
    for kind, key in BREAKDOWN.items():
        claimed = claimed | unions[kind]
        covered = claimed.covered(steps.start_ps, steps.end_ps)
        result[key] = covered - previous
        previous = covered
    result[IDLE] = steps.duration_ps - previous
    return result
