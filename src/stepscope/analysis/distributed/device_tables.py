"""The map for device units: one profile -> a ``RankTables`` per device plane.

A host with several accelerators (the chips of a TPU host, the GPUs of a node) is a
distributed run of its own: its devices run the same program in lock step, and one chip
that is slow in a step holds the others in the next collective as a slow rank would. So
each ``/device:TPU:N`` or ``/device:GPU:N`` plane becomes a unit with the tables of a rank,
and the reduce (which does not care what a unit is) gives the same heat map, stragglers
and collective wait skew over devices.

Steps are the host's steps (``OpStats.steps``: a device has no step of its own; a profile
without step markers is one window over the whole profile, as for its overview). Inside
each step window, a device's time is its own plane's events, classified as the breakdown
classifies them (``classify.event_activities``) and claimed in the breakdown's priority
order: compute, then collectives not under compute (the exposed part), then copies; the
rest of the window is the device's idle. Host categories (input, compile, launch, host
compute) are host time, not a device's, and are 0 here. Collective calls are the plane's
own, numbered per device (``collectives.RankCollectives.by_device``, found once with the
rank's own).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from stepscope.analysis.distributed.collectives import CollectiveCall
from stepscope.analysis.distributed.unit_tables import RankTables, step_rows
from stepscope.analysis.intervals import Union
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.steps.breakdown import BREAKDOWN, step_breakdown
from stepscope.analysis.steps.classify import DEVICE_ACTIVITIES, Activity, event_activities
from stepscope.trace.model import Plane

_ORDINAL = re.compile(r":(\d+)$")


def device_ordinal(plane_name: str) -> int:
    """N of ``/device:GPU:N``; -1 where the name has none (it sorts first)."""
    match = _ORDINAL.search(plane_name)
    return int(match.group(1)) if match else -1


def device_unions(plane: Plane) -> dict[Activity, Union]:
    """The union of each device activity's intervals on one plane."""
    activity = event_activities(plane)
    events = plane.events
    unions = {}
    for kind in BREAKDOWN:
        rows = activity == kind if kind in DEVICE_ACTIVITIES else np.zeros(len(activity), dtype=bool)
        unions[kind] = Union.of(events.start_ps[rows], events.ends(rows)) if rows.any() else Union.empty()
    return unions


def device_tables(stats: OpStats, host_tables: RankTables, calls: dict[str, list[CollectiveCall]]) -> list[RankTables]:
    """One unit per device plane, by device ordinal; each carries the host's identity
    (path, host, rank, clock), ``device`` set to its plane's name and its collective calls
    from ``calls`` (plane name -> calls: ``RankCollectives.by_device``)."""
    steps = stats.steps
    kept = stats.set_aside.kept
    units = []
    for plane in sorted(stats.profile.device_planes, key=lambda plane: (device_ordinal(plane.name), plane.name)):
        unions = device_unions(plane)
        breakdown = step_breakdown(stats.steps, unions)  # the host's steps, this device's unions
        collective = unions[Activity.DEVICE_COLLECTIVES].covered(steps.start_ps, steps.end_ps)
        rows = step_rows(stats.profile.start_ns, steps, breakdown, collective, kept)
        units.append(dataclasses.replace(host_tables, steps=rows, collectives=calls.get(plane.name, []), device=plane.name, devices=[]))
    return units
