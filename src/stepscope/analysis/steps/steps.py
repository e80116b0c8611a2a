"""Training steps: found by :mod:`stepscope.trace.steps` (the XSpace writer needs them too,
to write them for XProf), and the step that launched each device event.

Work is assigned to a step by time: whatever runs inside the window (on any thread or
device) is that step's; a device event by the time of the host call that launched it.
"""

from __future__ import annotations

import numpy as np

from stepscope.trace import names
from stepscope.trace.model import NO_ID, Plane, Profile
from stepscope.trace.steps import WHOLE_WINDOW, Steps, find_steps

__all__ = ["WHOLE_WINDOW", "Steps", "find_steps", "launching_steps"]


def launching_steps(profile: Profile, steps: Steps) -> list[tuple[Plane, np.ndarray]]:
    """For each device plane, the index of the step that launched each event (-1: none).

    A device event launched by a host runtime call (same ``correlation_id``) belongs to
    the step whose window holds that call, even when the GPU runs it later, inside the
    next step's window. Events without a launching call fall back to the step whose
    window holds their own start.
    """
    host = profile.plane(names.HOST_PLANE)
    launch_ids = np.zeros(0, dtype=np.int64)
    launch_starts = np.zeros(0, dtype=np.int64)
    if host is not None:
        rows = np.flatnonzero(host.events.correlation_id != NO_ID)
        order = np.argsort(host.events.correlation_id[rows], kind="stable")
        launch_ids = host.events.correlation_id[rows][order]
        launch_starts = host.events.start_ps[rows][order]
    result = []
    for plane in profile.device_planes:
        events = plane.events
        when = events.start_ps.copy()
        if len(launch_ids):
            position = np.clip(np.searchsorted(launch_ids, events.correlation_id), 0, len(launch_ids) - 1)
            linked = (events.correlation_id != NO_ID) & (launch_ids[position] == events.correlation_id)
            when[linked] = launch_starts[position[linked]]
        index = np.searchsorted(steps.start_ps, when, "right") - 1
        inside = (index >= 0) & (when < steps.end_ps[np.maximum(index, 0)])
        result.append((plane, np.where(inside, index, -1)))
    return result
