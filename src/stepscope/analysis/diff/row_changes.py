"""Ops, op categories, kernels and memory devices of two runs, matched by name.

The rows come from each run's own tool results (framework_op_stats, kernel_stats,
memory_profile), never from the events again, so a diff says exactly what the two tool
pages say, subtracted:
- an op is (side, type, name): the same ``aten::conv2d`` on the host and, through its
  kernels, on the device are two rows, as in framework_op_stats;
- an op category is (side, type): every op of that type together, so a change spread
  over many small ops (elementwise kernels after a dtype change) still shows;
- a kernel is its name: kernel_stats splits one kernel by launch shape and framework op,
  and a change of batch size changes the grid, so the rows of one name are summed first;
- a memory device is its name (``GPU:0``, an allocator), by its peak.

Each row says whether the thing is in both runs (``changed`` or ``unchanged``, by its
total time or peak), only in the new one (``new``) or only in the base (``vanished``).
Totals are the whole profile's, so when the two runs hold different numbers of steps a
change in total time can point the other way from the step's change (five steps of an op
that got slower sum to less than six steps of it before). Each row therefore also gives
its time per step: the run's total over the run's step count (every step the overview
found, set-aside ones included, as the totals include them), and rows are sorted by the
size of the change per step (largest first, either way), then by name, so what moved the
step is on top. Where a run has no steps, the per-step figures are null and rows sort by
the change in total time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import NamedTuple, TypedDict, TypeVar

from stepscope.analysis.diff.step_change import relative
from stepscope.analysis.tables import ps_to_us
from stepscope.analysis.tools.framework_op_stats import FrameworkOpStatsResult
from stepscope.analysis.tools.kernel_stats import KernelStatsResult
from stepscope.analysis.tools.memory_profile import MemoryProfileResult

CHANGED, UNCHANGED, NEW, VANISHED = "changed", "unchanged", "new", "vanished"


class Totals(TypedDict):
    """What one run says of one matched thing: occurrences and times (exact ps)."""

    occurrences: int
    total_ps: int
    self_ps: int


class TimeChange(TypedDict):
    """A matched thing's total time in both runs (0 where it is absent) and its change."""

    status: str  # "changed" | "unchanged" | "new" | "vanished"
    base_occurrences: int
    new_occurrences: int
    base_total_us: float
    new_total_us: float
    change_us: float
    change_percent: float | None  # null for a new one (no base)
    change_ps: int  # exact: new total - base total
    # Per step: each run's total over its step count (null where a run has no steps).
    base_per_step_us: float | None
    new_per_step_us: float | None
    change_per_step_us: float | None
    change_per_step_percent: float | None  # null also for a new one


class OpChange(TimeChange):
    host_or_device: str
    type: str
    name: str
    base_self_us: float
    new_self_us: float
    change_self_us: float


class OpCategoryChange(TimeChange):
    host_or_device: str
    type: str


class KernelChange(TimeChange):
    name: str


class MemoryDeviceChange(TypedDict):
    device: str
    status: str
    base_peak_bytes: int | None  # null where the run has no such device
    new_peak_bytes: int | None
    change_bytes: int  # absent reads 0
    change_percent: float | None


Key = TypeVar("Key", bound=Hashable)
NONE = Totals(occurrences=0, total_ps=0, self_ps=0)


def _status(base: Totals | None, new: Totals | None) -> str:
    if base is None:
        return NEW
    if new is None:
        return VANISHED
    return UNCHANGED if base["total_ps"] == new["total_ps"] else CHANGED


class StepCounts(NamedTuple):
    """How many steps each run's totals cover (the per-step divisor; 0: no steps)."""

    base: int
    new: int


NO_STEPS = StepCounts(0, 0)


def time_change(base: Totals | None, new: Totals | None, steps: StepCounts = NO_STEPS) -> TimeChange:
    before, after = base or NONE, new or NONE
    change = after["total_ps"] - before["total_ps"]
    per_step = steps.base > 0 and steps.new > 0
    base_per_step = ps_to_us(before["total_ps"]) / steps.base if per_step else None
    new_per_step = ps_to_us(after["total_ps"]) / steps.new if per_step else None
    per_step_change = new_per_step - base_per_step if new_per_step is not None and base_per_step is not None else None
    return TimeChange(
        status=_status(base, new),
        base_occurrences=before["occurrences"],
        new_occurrences=after["occurrences"],
        base_total_us=ps_to_us(before["total_ps"]),
        new_total_us=ps_to_us(after["total_ps"]),
        change_us=ps_to_us(change),
        change_percent=relative(change, before["total_ps"]) if base is not None else None,
        change_ps=change,
        base_per_step_us=base_per_step,
        new_per_step_us=new_per_step,
        change_per_step_us=per_step_change,
        change_per_step_percent=(
            relative(per_step_change, base_per_step) if per_step_change is not None and base_per_step is not None and base is not None else None
        ),
    )


def totals_by(items: Iterable[tuple[Key, Totals]]) -> dict[Key, Totals]:
    """Totals summed per key, in first-seen order."""
    summed: dict[Key, Totals] = {}
    for key, totals in items:
        held = summed.setdefault(key, Totals(occurrences=0, total_ps=0, self_ps=0))
        held["occurrences"] += totals["occurrences"]
        held["total_ps"] += totals["total_ps"]
        held["self_ps"] += totals["self_ps"]
    return summed


def matched(base: dict[Key, Totals], new: dict[Key, Totals]) -> list[tuple[Key, Totals | None, Totals | None]]:
    """Every key of either run with its totals in each (None: absent), base keys first."""
    keys = list(base) + [key for key in new if key not in base]
    return [(key, base.get(key), new.get(key)) for key in keys]


Row = TypeVar("Row", OpChange, OpCategoryChange, KernelChange)


def change_size(row: TimeChange) -> float:
    """How much a row moved the step: its change per step, else in total (us)."""
    per_step = row["change_per_step_us"]
    return abs(per_step if per_step is not None else row["change_us"])


def by_change(rows: list[Row], name: Callable[[Row], str]) -> list[Row]:
    return sorted(rows, key=lambda row: (-change_size(row), name(row)))


def _op_totals(result: FrameworkOpStatsResult) -> dict[tuple[str, str, str], Totals]:
    return totals_by(
        (
            (row["host_or_device"], row["type"], row["name"]),
            Totals(occurrences=row["occurrences"], total_ps=row["total_time_ps"], self_ps=row["total_self_time_ps"]),
        )
        for row in result.rows
    )


def op_changes(base: FrameworkOpStatsResult, new: FrameworkOpStatsResult, steps: StepCounts = NO_STEPS) -> list[OpChange]:
    rows: list[OpChange] = []
    for (side, op_type, name), before, after in matched(_op_totals(base), _op_totals(new)):
        base_self, new_self = (before or NONE)["self_ps"], (after or NONE)["self_ps"]
        rows.append(
            OpChange(
                **time_change(before, after, steps),
                host_or_device=side,
                type=op_type,
                name=name,
                base_self_us=ps_to_us(base_self),
                new_self_us=ps_to_us(new_self),
                change_self_us=ps_to_us(new_self - base_self),
            )
        )
    return by_change(rows, lambda row: f"{row['host_or_device']}/{row['type']}/{row['name']}")


def op_category_changes(base: FrameworkOpStatsResult, new: FrameworkOpStatsResult, steps: StepCounts = NO_STEPS) -> list[OpCategoryChange]:
    def categories(result: FrameworkOpStatsResult) -> dict[tuple[str, str], Totals]:
        return totals_by(((side, op_type), totals) for (side, op_type, _), totals in _op_totals(result).items())

    rows = [
        OpCategoryChange(**time_change(before, after, steps), host_or_device=side, type=op_type)
        for (side, op_type), before, after in matched(categories(base), categories(new))
    ]
    return by_change(rows, lambda row: f"{row['host_or_device']}/{row['type']}")


def kernel_changes(base: KernelStatsResult, new: KernelStatsResult, steps: StepCounts = NO_STEPS) -> list[KernelChange]:
    def kernels(result: KernelStatsResult) -> dict[str, Totals]:
        return totals_by(
            (row["kernel_name"], Totals(occurrences=row["occurrences"], total_ps=row["total_duration_ps"], self_ps=row["total_duration_ps"]))
            for row in result.rows
        )

    rows = [KernelChange(**time_change(before, after, steps), name=name) for name, before, after in matched(kernels(base), kernels(new))]
    return by_change(rows, lambda row: row["name"])


def memory_changes(base: MemoryProfileResult, new: MemoryProfileResult) -> list[MemoryDeviceChange]:
    """Per memory device, the peak allocated bytes of each run (largest change first)."""
    before = {device["device"]: device["peak_allocated_bytes"] for device in base.devices}
    after = {device["device"]: device["peak_allocated_bytes"] for device in new.devices}
    rows: list[MemoryDeviceChange] = []
    for name in list(before) + [name for name in after if name not in before]:
        base_peak, new_peak = before.get(name), after.get(name)
        change = (new_peak or 0) - (base_peak or 0)
        if base_peak is None:
            status = NEW
        elif new_peak is None:
            status = VANISHED
        else:
            status = UNCHANGED if change == 0 else CHANGED
        rows.append(
            MemoryDeviceChange(
                device=name,
                status=status,
                base_peak_bytes=base_peak,
                new_peak_bytes=new_peak,
                change_bytes=change,
                change_percent=relative(change, base_peak) if base_peak is not None else None,
            )
        )
    return sorted(rows, key=lambda row: (-abs(row["change_bytes"]), row["device"]))
