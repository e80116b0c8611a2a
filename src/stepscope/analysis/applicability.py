"""Whether a tool has something to show for a profile, and if not, why: the rules a tool's
registry entry names as its ``applies`` (``ToolSpec.why_not``).

A rule reads only what the profile holds at a glance (its planes, their lines and event
types, the metadata plane's stats), never a tool's analysis: the dashboard asks every
rule of every tool when it analyses a profile, and the menu greys out the tools whose
rule gives a reason. A rule returns "" when the tool applies, else its reason in one line
(shown on hover in the menu and in place of the tool's page).
"""

from __future__ import annotations

import numpy as np

from stepscope.trace import names
from stepscope.trace.kinds import MEMORY_KINDS
from stepscope.trace.model import Plane, Profile

NO_GPU_KERNELS = "no GPU kernels in this profile (kernel stats lists the kernels of /device:GPU planes)"
NO_XLA_MODULES = "no XLA modules in this profile (it holds no compiled XLA program: JAX, TensorFlow and PyTorch/XLA record them)"
NO_XLA_OPS = "no XLA ops in this profile (no XLA Ops line and no compiled XLA program)"
NO_ROOFLINE_OPS = "no XLA ops and no GPU kernels in this profile: no op has a device time to place on a roofline"
NO_MEMORY_EVENTS = "no memory events in this profile (PyTorch records them with profile_memory=True)"
ONE_RANK = "one rank: nothing to compare (the run has one host, with fewer than two devices)"


def _gpu_planes(profile: Profile) -> list[Plane]:
    return [plane for plane in profile.planes if plane.name.startswith(names.GPU_PLANE_PREFIX) and len(plane.events)]


def _has_xla_modules(profile: Profile) -> bool:
    plane = profile.plane(names.METADATA_PLANE)
    return plane is not None and any(stat.name == names.HLO_PROTO for stats in plane.metadata.stats for stat in stats)


def _has_xla_ops(profile: Profile) -> bool:
    """A device's XLA Ops line with events, or a compiled program (JAX on the CPU runs its
    XLA ops on host threads, with the program in the metadata)."""
    for plane in profile.device_planes:
        line = plane.line_index(names.XLA_OPS_LINE)
        if line is not None and plane.line_event_counts()[line] > 0:
            return True
    return _has_xla_modules(profile)


def gpu_kernels(profile: Profile) -> str:
    """kernel_stats: a GPU plane with events."""
    return "" if _gpu_planes(profile) else NO_GPU_KERNELS


def xla_modules(profile: Profile) -> str:
    """graph_viewer, memory_viewer: an HLO proto on the metadata plane."""
    return "" if _has_xla_modules(profile) else NO_XLA_MODULES


def xla_ops(profile: Profile) -> str:
    """hlo_stats: XLA ops (``_has_xla_ops``)."""
    return "" if _has_xla_ops(profile) else NO_XLA_OPS


def roofline_ops(profile: Profile) -> str:
    """roofline_model: XLA ops, or GPU kernels (PyTorch ops' shapes give their FLOPs)."""
    return "" if _has_xla_ops(profile) or _gpu_planes(profile) else NO_ROOFLINE_OPS


def memory_events(profile: Profile) -> str:
    """memory_profile: an event type that is an allocation or a free, with events."""
    for plane in profile.planes:
        if len(plane.events) and np.isin(plane.metadata.kinds, list(MEMORY_KINDS)).any():
            return ""
    return NO_MEMORY_EVENTS


def several_devices(profile: Profile) -> str:
    """The distributed view of a run of this one profile: two device planes or more, each
    a unit (``distributed.device_tables``); a run of several hosts has several ranks,
    which the dashboard knows without this rule."""
    return "" if len(profile.device_planes) >= 2 else ONE_RANK
