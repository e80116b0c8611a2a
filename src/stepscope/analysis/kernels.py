"""The GPU kernels of a profile, per device plane, read once: kernel_stats groups them by
launch configuration and op, the overview's GPU figures (``gpu_metrics``) weigh them by
time, and neither walks the events again.

A kernel is an event of a ``/device:GPU:N`` plane that the classifier calls device compute
or a collective (``classify.Activity``): copies and memsets are device work but not kernels,
as the TensorBoard PyTorch plugin and HTA count them. Launch configuration comes from
XSpace's ``kernel_details`` stat (the Kineto reader derives it from Kineto's own args),
parsed once per distinct string; the SM count from the plane's ``core_count`` device
capability (Kineto's ``deviceProperties[].numSms``).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.classify import Activity, event_activities
from stepscope.trace import names
from stepscope.trace.model import Plane, Profile
from stepscope.trace.stat_types import StatValue
from stepscope.trace.stats import TypedStats

_DETAIL = re.compile(r"(\w+):([^\s]+)")
# Instruction-shape tags cuBLAS / cuDNN / CUTLASS put in the names of kernels that run on
# TensorCores (h884, s1688, i8816, hmma, xmma, gmma...).
TENSOR_CORE_KERNEL = re.compile(r"(?:[hsi](?:884|1688|16816|1684|8816)|hmma|imma|wmma|xmma|tensorop|_tc_|gmma|mma_)", re.IGNORECASE)


@dataclass(frozen=True)
class LaunchConfig:
    registers_per_thread: int = 0
    shared_memory_bytes: int = 0
    block_dim: str = ""
    grid_dim: str = ""
    occupancy_pct: float | None = None

    @property
    def blocks(self) -> int | None:
        """Thread blocks launched: the product of the grid's dimensions (None without a grid)."""
        try:
            dims = [int(part) for part in self.grid_dim.split(",")] if self.grid_dim else []
        except ValueError:
            return None
        return math.prod(dims) if dims else None


@functools.lru_cache(maxsize=4096)
def parse_kernel_details(text: str) -> LaunchConfig:
    """``regs:32 static_shared:0 dynamic_shared:16384 grid:2,1,1 block:32,1,1 occ_pct:100``."""
    fields = dict(_DETAIL.findall(text))

    def number(key: str) -> int:
        try:
            return int(float(fields.get(key, "0")))
        except ValueError:
            return 0

    occupancy = fields.get("occ_pct")
    try:
        occupancy_value = float(occupancy) if occupancy is not None else None
    except ValueError:
        occupancy_value = None
    return LaunchConfig(
        registers_per_thread=number("regs"),
        shared_memory_bytes=number("static_shared") + number("dynamic_shared"),
        block_dim=fields.get("block", ""),
        grid_dim=fields.get("grid", ""),
        occupancy_pct=occupancy_value,
    )


@dataclass(frozen=True, eq=False)
class DeviceKernels:
    """One GPU plane's kernels, in the plane's event order; ``rows`` are its event rows."""

    plane_index: int
    device: str
    sm_count: int | None  # the plane's core_count capability; None where the source has none
    rows: npt.NDArray[np.int64]
    start_ps: npt.NDArray[np.int64]
    duration_ps: npt.NDArray[np.int64]
    names: list[str]
    configs: list[LaunchConfig]

    @property
    def end_ps(self) -> npt.NDArray[np.int64]:
        return self.start_ps + self.duration_ps

    @functools.cached_property
    def uses_tensor_core(self) -> npt.NDArray[np.bool_]:
        """Per kernel, whether its name carries a TensorCore tag (``TENSOR_CORE_KERNEL``)."""
        by_name = {name: bool(TENSOR_CORE_KERNEL.search(name)) for name in set(self.names)}
        return np.asarray([by_name[name] for name in self.names], dtype=bool)


def sm_count(plane: Plane) -> int | None:
    value = next((stat.value for stat in plane.plane_stats if stat.name == names.DEV_CAP_CORE_COUNT), None)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _details(plane: Plane, rows: npt.NDArray[np.int64]) -> list[str]:
    """Each kernel row's ``kernel_details`` text ("" where it has none). An XSpace plane
    answers in one column lookup (a stats lookup per kernel cost seconds on a 1M-event
    profile); JSON sources decode their args per event. Some XSpace writers put the stat on
    the kernel's metadata instead of the event: that is the fallback."""
    meta = plane.metadata
    kinds = plane.events.metadata_id[rows].tolist()
    if isinstance(plane.stats, TypedStats):
        found, column = plane.stats.column(names.KERNEL_DETAILS)
        on_event: dict[int, StatValue] = dict(zip(found.tolist(), column))
        values = [on_event.get(row) for row in rows.tolist()]
    else:
        values = [plane.stats.value(row, names.KERNEL_DETAILS, meta.names[kind], meta.categories[kind]) for row, kind in zip(rows.tolist(), kinds)]
    on_type: dict[int, str] = {}
    for index, value in enumerate(values):
        if value is None:
            kind = kinds[index]
            if kind not in on_type:
                on_type[kind] = str(next((s.value for s in meta.stats[kind] if s.name == names.KERNEL_DETAILS), ""))
            values[index] = on_type[kind]
    return [str(value) for value in values]


def find_kernels(profile: Profile) -> list[DeviceKernels]:
    """Every GPU plane that ran kernels, with its kernels (planes without any are left out)."""
    found: list[DeviceKernels] = []
    for plane_index, plane in enumerate(profile.planes):
        if not plane.name.startswith(names.GPU_PLANE_PREFIX):
            continue
        activity = event_activities(plane)
        rows = np.flatnonzero((activity == Activity.DEVICE_COMPUTE) | (activity == Activity.DEVICE_COLLECTIVES)).astype(np.int64)
        if not len(rows):
            continue
        meta_names = plane.metadata.names
        found.append(
            DeviceKernels(
                plane_index=plane_index,
                device=plane.name,
                sm_count=sm_count(plane),
                rows=rows,
                start_ps=plane.events.start_ps[rows].astype(np.int64),
                duration_ps=plane.events.duration_ps[rows].astype(np.int64),
                names=[meta_names[int(i)] for i in plane.events.metadata_id[rows]],
                configs=[parse_kernel_details(text) for text in _details(plane, rows)],
            )
        )
    return found
