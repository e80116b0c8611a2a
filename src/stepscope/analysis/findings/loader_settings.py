"""What the profile says about the training loop's data loader, for the input advice.

Two sources, the first that says anything wins:
- ``stepscope.data.instrument`` records a PyTorch ``DataLoader``'s ``num_workers``,
  ``prefetch_factor``, ``pin_memory`` and ``persistent_workers`` on the first recorded
  wait of each pass (``names.LOADER_SETTINGS``); the last pass recorded is the loader the
  steps used.
- torch.profiler names each batch fetch after the loader's iterator class:
  ``enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`` has worker processes
  (how many it does not say), ``_SingleProcessDataLoaderIter`` has none.

Without either (tf.data, a generator, a loop that fetches unannotated) nothing is known
and the advice is the general one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.trace import names
from stepscope.trace.model import Profile

RECORDED, TORCH_FETCH_NAMES = "its recorded settings", "torch.profiler's fetch names"
# torch.profiler's name for one DataLoader fetch, by the iterator class.
_TORCH_FETCH = re.compile(r"^enumerate\(DataLoader\)#_(MultiProcessing|SingleProcess)DataLoaderIter\.__next__$")


@dataclass(frozen=True)
class LoaderSettings:
    """A DataLoader's settings; None where the profile does not record one."""

    num_workers: int | None = None  # None with ``parallel`` True: some, count unknown
    parallel: bool = False  # loads in worker processes
    prefetch_factor: int | None = None
    pin_memory: bool | None = None
    persistent_workers: bool | None = None
    source: str = ""  # where the settings were read: ``RECORDED`` or ``TORCH_FETCH_NAMES``
    passes: int = 0  # passes over the loader the profile saw begin (stepscope.data); 0: unknown

    def described(self) -> str:
        """The settings in the DataLoader's own words: ``num_workers=2, prefetch_factor=4``."""
        parts = [f"num_workers={self.num_workers}" if self.num_workers is not None else "num_workers > 0"]
        for key in ("prefetch_factor", "pin_memory", "persistent_workers"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key}={value}")
        return ", ".join(parts)


def _recorded(profile: Profile) -> LoaderSettings | None:
    """The settings on the last ``stepscope.data.wait`` that carries them; ``passes``: how
    many waits carry them (one per pass begun while recording)."""
    host = profile.plane(names.HOST_PLANE)
    if host is None or names.STEPSCOPE_INPUT_WAIT not in host.metadata.names:
        return None
    ids = [i for i, name in enumerate(host.metadata.names) if name == names.STEPSCOPE_INPUT_WAIT]
    rows = np.flatnonzero(np.isin(host.events.metadata_id, ids))
    recorded = [
        {key: host.stats.value(row, key, names.STEPSCOPE_INPUT_WAIT) for key in names.LOADER_SETTINGS}
        for row in rows[np.argsort(host.events.start_ps[rows], kind="stable")].tolist()
    ]
    recorded = [values for values in recorded if isinstance(values[names.LOADER_NUM_WORKERS], int)]
    if not recorded:
        return None
    last = recorded[-1]
    workers = int(last[names.LOADER_NUM_WORKERS] or 0)

    def setting(key: str) -> int | None:
        value = last[key]
        return int(value) if isinstance(value, int) and workers > 0 else None

    pin = last[names.LOADER_PIN_MEMORY]
    prefetch, persistent = setting(names.LOADER_PREFETCH_FACTOR), setting(names.LOADER_PERSISTENT_WORKERS)
    return LoaderSettings(
        num_workers=workers,
        parallel=workers > 0,
        prefetch_factor=prefetch,
        pin_memory=bool(pin) if isinstance(pin, int) else None,
        persistent_workers=None if persistent is None else bool(persistent),
        source=RECORDED,
        passes=len(recorded),
    )


def _torch_fetches(profile: Profile) -> LoaderSettings | None:
    kinds = {match.group(1) for plane in profile.planes if not plane.is_device for name in plane.metadata.names if (match := _TORCH_FETCH.match(name))}
    if not kinds:
        return None
    parallel = "MultiProcessing" in kinds
    return LoaderSettings(num_workers=None if parallel else 0, parallel=parallel, source=TORCH_FETCH_NAMES)


def loader_settings(profile: Profile) -> LoaderSettings | None:
    return _recorded(profile) or _torch_fetches(profile)
