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
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.grouping import factorize
from stepscope.analysis.steps.classify import Activity, event_activities
from stepscope.trace import names
from stepscope.trace.model import Plane, Profile
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


@dataclass(frozen=True)
class KernelTables:
    """The strings and launch configurations the kernels of all GPU planes of a profile
    share, each once: ``DeviceKernels.name_code`` indexes ``names``, ``config_code`` indexes
    ``configs``. Equal names (or equal parsed configurations) share a code across planes, so
    kernel_stats groups all devices' kernels by codes alone."""

    names: list[str]
    configs: list[LaunchConfig]

    @functools.cached_property
    def name_uses_tensor_core(self) -> npt.NDArray[np.bool_]:
        """Per name code, whether the name carries a TensorCore tag (``TENSOR_CORE_KERNEL``)."""
        return np.asarray([bool(TENSOR_CORE_KERNEL.search(name)) for name in self.names], dtype=bool)

    @functools.cached_property
    def config_blocks(self) -> npt.NDArray[np.float64]:
        """Per config code, its thread blocks (``LaunchConfig.blocks``), -1 where unknown."""
        return np.asarray([b if (b := config.blocks) is not None else -1 for config in self.configs], dtype=np.float64)

    @functools.cached_property
    def config_occupancy(self) -> npt.NDArray[np.float64]:
        """Per config code, its occupancy %, NaN where the kernel records none."""
        return np.asarray([c.occupancy_pct if c.occupancy_pct is not None else np.nan for c in self.configs], dtype=np.float64)


@dataclass(frozen=True, eq=False)
class DeviceKernels:
    """One GPU plane's kernels, in the plane's event order; ``rows`` are its event rows.
    Names and launch configurations are codes into ``tables`` (one per profile), so no
    per-kernel Python object is made."""

    plane_index: int
    device: str
    sm_count: int | None  # the plane's core_count capability; None where the source has none
    rows: npt.NDArray[np.int64]
    start_ps: npt.NDArray[np.int64]
    duration_ps: npt.NDArray[np.int64]
    name_code: npt.NDArray[np.int64]
    config_code: npt.NDArray[np.int64]
    tables: KernelTables

    @property
    def end_ps(self) -> npt.NDArray[np.int64]:
        return self.start_ps + self.duration_ps

    @functools.cached_property
    def uses_tensor_core(self) -> npt.NDArray[np.bool_]:
        """Per kernel, whether its name carries a TensorCore tag (``TENSOR_CORE_KERNEL``)."""
        return self.tables.name_uses_tensor_core[self.name_code]

    @property
    def blocks(self) -> npt.NDArray[np.float64]:
        """Per kernel, its thread blocks, -1 where its launch records no grid."""
        return self.tables.config_blocks[self.config_code]

    @property
    def occupancy_pct(self) -> npt.NDArray[np.float64]:
        """Per kernel, its recorded occupancy %, NaN where none."""
        return self.tables.config_occupancy[self.config_code]


def sm_count(plane: Plane) -> int | None:
    value = next((stat.value for stat in plane.plane_stats if stat.name == names.DEV_CAP_CORE_COUNT), None)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _details(plane: Plane, rows: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Each kernel row's ``kernel_details`` text ("" where it has none), as a code into the
    returned distinct texts. An XSpace plane answers in one column lookup (a stats lookup
    per kernel cost seconds on a 1M-event profile); JSON sources decode their args per
    event. Some XSpace writers put the stat on the kernel's metadata instead of the event:
    that is the fallback, read once per event type."""
    meta = plane.metadata
    kinds = plane.events.metadata_id[rows]
    texts: dict[Hashable, int] = {}
    codes = np.full(len(rows), -1, dtype=np.int64)
    if isinstance(plane.stats, TypedStats):
        found, column = plane.stats.column(names.KERNEL_DETAILS)
        if len(found):
            # A row carrying the stat twice keeps the last value (as a dict built in order would).
            last = len(found) - 1 - np.unique(found[::-1], return_index=True)[1]
            found_codes, texts = factorize([str(column[i]) for i in last.tolist()], texts)
            position = np.searchsorted(rows, found[last])
            inside = position < len(rows)
            hit = inside & (rows[np.minimum(position, len(rows) - 1)] == found[last])
            codes[position[hit]] = found_codes[hit]
    else:
        values = [plane.stats.value(row, names.KERNEL_DETAILS, meta.names[kind], meta.categories[kind]) for row, kind in zip(rows.tolist(), kinds.tolist())]
        present = np.asarray([value is not None for value in values], dtype=bool)
        if present.any():
            where = np.flatnonzero(present)
            codes[where] = factorize([str(values[i]) for i in where.tolist()], texts)[0]
    missing = np.flatnonzero(codes < 0)
    if len(missing):
        missing_kinds, inverse = np.unique(kinds[missing], return_inverse=True)
        on_type = [str(next((s.value for s in meta.stats[kind] if s.name == names.KERNEL_DETAILS), "")) for kind in missing_kinds.tolist()]
        codes[missing] = factorize(on_type, texts)[0][inverse.reshape(-1)]
    return codes, [str(text) for text in texts]


def find_kernels(profile: Profile) -> list[DeviceKernels]:
    """Every GPU plane that ran kernels, with its kernels (planes without any are left out)."""
    found: list[DeviceKernels] = []
    tables = KernelTables(names=[], configs=[])
    name_codes: dict[Hashable, int] = {}
    config_codes: dict[Hashable, int] = {}
    for plane_index, plane in enumerate(profile.planes):
        if not plane.name.startswith(names.GPU_PLANE_PREFIX):
            continue
        activity = event_activities(plane)
        rows = np.flatnonzero((activity == Activity.DEVICE_COMPUTE) | (activity == Activity.DEVICE_COLLECTIVES)).astype(np.int64)
        if not len(rows):
            continue
        kind_name, name_codes = factorize(plane.metadata.names, name_codes)
        detail_code, detail_texts = _details(plane, rows)
        detail_config, config_codes = factorize([parse_kernel_details(text) for text in detail_texts], config_codes)
        found.append(
            DeviceKernels(
                plane_index=plane_index,
                device=plane.name,
                sm_count=sm_count(plane),
                rows=rows,
                start_ps=plane.events.start_ps[rows].astype(np.int64),
                duration_ps=plane.events.duration_ps[rows].astype(np.int64),
                name_code=kind_name[plane.events.metadata_id[rows]],
                config_code=detail_config[detail_code],
                tables=tables,
            )
        )
    tables.names.extend(str(name) for name in name_codes)
    tables.configs.extend(config for config in config_codes if isinstance(config, LaunchConfig))
    return found
