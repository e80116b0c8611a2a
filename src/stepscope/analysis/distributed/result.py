"""The distributed view's result: ranks, the rank x step table, stragglers and collectives.

Times in the JSON form are integer picoseconds (exact: a rank's step time is the one its
overview shows, to the ps); the text and CSV tables show microseconds. docs/tools/
distributed.md defines every number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, TypedDict

from stepscope.analysis.distributed.job_paths import JobStepPath, StraggleRemovedRow
from stepscope.analysis.registry import ToolResult
from stepscope.analysis.tables import Column, Table, ps_to_us

TOOL = "distributed"


class DistributedRank(TypedDict):
    rank: int  # the unit's number: the rank, or (by device) its place in host x device order
    host: str
    device: str  # by device: the unit's plane (/device:TPU:2); "" for a whole rank
    host_rank: int  # the rank of the unit's host (by rank: the rank itself)
    file_host: str  # the run's name for its file: the dashboard's host (its trace viewer's)
    source: str  # the profile file
    format: str
    clock: str  # how its time 0 was put on the UNIX clock
    start_offset_ps: int  # its time 0 after the earliest rank's
    steps: int
    step_time_mean_ps: float
    collective_wait_ps: int  # over all its steps
    warnings: list[str]


class DistributedStep(TypedDict):
    rank: int
    step: int
    start_offset_ps: int  # the step's start after the earliest rank's time 0
    trace_start_ps: int  # the step's start in its rank's own profile (the trace viewer's time)
    step_time_ps: int
    compute_ps: int  # device compute (the overview's device_compute)
    collective_ps: int  # all collective time in the step
    exposed_collective_ps: int  # collective time not hidden behind compute (the overview's device_collectives)
    overlap_ps: int  # collective time hidden behind compute: collective - exposed
    memcpy_ps: int  # exposed copies and memsets: device_to_device + host_to_device + device_to_host
    collective_wait_ps: int  # its share of matched collectives beyond the fastest rank's
    breakdown: dict[str, int]  # every overview category, ps; sums to step_time_ps
    set_aside: bool  # the rank's overview sets this step aside (warm-up, outlier)


class DistributedStraggler(TypedDict):
    rank: int
    step: int
    signal: str  # "step_time" | "collective_wait" | "work_time"
    value_ps: int
    median_ps: float  # of the signal over the ranks that have the step
    excess_ps: float  # value - median
    threshold_ps: float  # what the excess had to pass (the rule)
    excess_percent: float  # of the step's median step time
    stage: str  # the breakdown category with the largest excess over the other ranks' median
    stage_excess_ps: float


class DistributedCollective(TypedDict):
    name: str
    calls: int  # over all ranks
    calls_per_rank_max: int
    bytes: int | None  # message bytes over all calls that record a size; None: none does
    time_per_rank_ps: float  # mean over ranks of the rank's total time in these calls
    matched: int  # calls found on two or more ranks under the same (step, name, ordinal)
    wait_mean_ps: float  # mean over ranks of each rank's wait in these calls
    wait_min_ps: int
    wait_min_rank: int
    wait_max_ps: int
    wait_max_rank: int
    wait_skew_ps: int  # wait_max - wait_min: how unevenly the ranks wait


class StragglerRule(TypedDict):
    k_sigma: float
    min_excess_fraction: float
    min_ranks: int


RANK_COLUMNS = (
    Column("rank", "rank"),
    Column("host", "host", "string"),
    Column("device", "device", "string"),
    Column("host_rank", "host rank"),
    Column("clock", "clock", "string"),
    Column("start_offset_us", "start offset (us)"),
    Column("steps", "steps"),
    Column("step_time_mean_us", "mean step (us)"),
    Column("collective_wait_us", "collective wait (us)"),
)
STEP_COLUMNS = (
    Column("rank", "rank"),
    Column("step", "step"),
    Column("step_time_us", "step time (us)"),
    Column("compute_us", "compute (us)"),
    Column("collective_us", "collective (us)"),
    Column("overlap_us", "hidden (us)"),
    Column("exposed_collective_us", "exposed (us)"),
    Column("memcpy_us", "memcpy (us)"),
    Column("collective_wait_us", "wait (us)"),
)
STRAGGLER_COLUMNS = (
    Column("rank", "rank"),
    Column("step", "step"),
    Column("signal", "signal", "string"),
    Column("value_us", "value (us)"),
    Column("median_us", "median (us)"),
    Column("excess_us", "excess (us)"),
    Column("excess_percent", "excess % of step"),
    Column("stage", "stage", "string"),
    Column("stage_excess_us", "stage excess (us)"),
)
COLLECTIVE_COLUMNS = (
    Column("name", "collective", "string"),
    Column("calls", "calls"),
    Column("bytes", "bytes"),
    Column("time_per_rank_us", "time/rank (us)"),
    Column("matched", "matched"),
    Column("wait_mean_us", "mean wait (us)"),
    Column("wait_min_us", "min wait (us)"),
    Column("wait_min_rank", "min rank"),
    Column("wait_max_us", "max wait (us)"),
    Column("wait_max_rank", "max rank"),
    Column("wait_skew_us", "wait skew (us)"),
)
JOB_STEP_COLUMNS = (
    Column("step", "step"),
    Column("step_us", "job step (us)"),
    Column("slowest_rank", "slowest rank"),
    Column("setting_rank", "rank setting it"),
    Column("kind", "kind", "string"),
)
STRAGGLE_COLUMNS = (
    Column("rank", "rank"),
    Column("predicted_step_us", "predicted job step (us)"),
)


def _in_us(record: Mapping[str, object]) -> dict[str, object]:
    """A row with each ``*_ps`` value also as ``*_us`` (what the tables show)."""
    row = dict(record)
    for key, value in list(row.items()):
        if key.endswith("_ps") and isinstance(value, (int, float)):
            row[key[:-3] + "_us"] = ps_to_us(value)
    return row


@dataclass(frozen=True)
class DistributedResult(ToolResult):
    tool: ClassVar[str] = TOOL
    run: str
    unit: str  # what a unit ("rank" in every table) is: "rank" (a profile) | "device" (one device plane of one)
    world_size: int  # distributedInfo.world_size where the traces have it, else the ranks found
    rank_source: str  # where the rank numbers came from: "distributedInfo" | "file name" | "host order"
    alignment: str  # how the ranks' clocks were aligned
    rule: StragglerRule
    ranks: list[DistributedRank]  # by rank
    steps: list[DistributedStep]  # by rank, then step
    stragglers: list[DistributedStraggler]  # largest excess (as a share of the step) first
    collectives: list[DistributedCollective]  # largest wait skew first
    warnings: list[str]
    # The job's critical path across ranks (``job_paths``): by rank, on runs of 2 to
    # MAX_JOINED_RANKS ranks; else empty, and ``job_paths_note`` says why.
    job_steps: list[JobStepPath] = field(default_factory=list)
    straggle_removed: list[StraggleRemovedRow] = field(default_factory=list)  # by rank
    job_paths_note: str = ""

    def tables(self) -> list[Table]:
        return [
            Table.of("ranks", RANK_COLUMNS, [_in_us(row) for row in self.ranks]),
            Table.of("stragglers", STRAGGLER_COLUMNS, [_in_us(row) for row in self.stragglers]),
            Table.of("collectives", COLLECTIVE_COLUMNS, [_in_us(row) for row in self.collectives]),
            Table.of("steps", STEP_COLUMNS, [_in_us(row) for row in self.steps]),
            Table.of("job_steps", JOB_STEP_COLUMNS, [_in_us(row) for row in self.job_steps]),
            Table.of("straggle_removed", STRAGGLE_COLUMNS, [_in_us(row) for row in self.straggle_removed]),
        ]

    def unit_label(self, number: int) -> str:
        """``rank 3``, or for a device unit ``device 5 (/device:GPU:1 of host node-b, rank 1)``."""
        if self.unit != "device":
            return f"rank {number}"
        row = next((rank for rank in self.ranks if rank["rank"] == number), None)
        return f"device {number} ({row['device']} of host {row['host']}, rank {row['host_rank']})" if row else f"device {number}"

    def summary(self) -> list[str]:
        found = (
            f"{len(self.ranks)} devices of {len({rank['host_rank'] for rank in self.ranks})} host(s) found"
            if self.unit == "device"
            else f"{len(self.ranks)} ranks found"
        )
        lines = [
            f"run {self.run}: {found} (world size {self.world_size}; {self.unit}s from {self.rank_source})",
            f"clocks: {self.alignment}",
        ]
        if self.stragglers:
            worst = self.stragglers[0]
            lines.append(
                f"stragglers: {len(self.stragglers)}; worst: {self.unit_label(worst['rank'])} at step {worst['step']} "
                f"({worst['signal']} {ps_to_us(worst['excess_ps']):,.1f} us over the median, "
                f"{worst['excess_percent']:.1f}% of the step; stage {worst['stage']})"
            )
        else:
            lines.append(f"stragglers: none (rule: > median + {self.rule['k_sigma']:g} sigma and > {100 * self.rule['min_excess_fraction']:g}% of the step)")
        lines.extend(self._job_lines())
        lines.extend(f"warning: {warning}" for warning in self.warnings)
        return lines

    def _job_lines(self) -> list[str]:
        """The job's critical path: each step's setter, and the largest straggle gain."""
        if not self.job_steps:
            return [f"critical path across ranks: {self.job_paths_note}"] if self.job_paths_note else []
        mean_ps = sum(step["step_ps"] for step in self.job_steps) / len(self.job_steps)
        setters = "; ".join(f"step {step['step']}: rank {step['setting_rank']} ({step['kind']})" for step in self.job_steps)
        lines = [f"critical path across ranks: {setters}"]
        if self.straggle_removed:
            best = min(self.straggle_removed, key=lambda row: row["predicted_step_ps"])
            lines.append(
                f"what if rank {best['rank']}'s straggle were removed: {ps_to_us(mean_ps) / 1000:,.3f} -> {ps_to_us(best['predicted_step_ps']) / 1000:,.3f} ms"
            )
        return lines
