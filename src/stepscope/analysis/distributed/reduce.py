"""The reduce of the distributed analysis: every rank's tables -> the distributed view.

Ranks are numbered from Kineto's ``distributedInfo.rank`` when every trace has a distinct
one, else from a ``rank<N>`` in every file name, else by host name order (the source is
said in the result). Steps are matched across ranks by step number.

Collective wait: a collective call ends on every rank at about the same time (no rank can
finish an all-reduce before the last one has joined), so a rank that joined early spends
the difference waiting inside the kernel. Matching the same call on every rank (same step,
name and ordinal, ``collectives``), the fastest rank's duration is the transfer itself and
each rank's duration beyond it is its wait. A rank's wait in a step is the sum over that
step's matched calls.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from stepscope.analysis.distributed.rank_tables import COPY_CATEGORIES
from stepscope.analysis.distributed.result import (
    DistributedCollective,
    DistributedRank,
    DistributedResult,
    DistributedStep,
    DistributedStraggler,
    StragglerRule,
)
from stepscope.analysis.distributed.stragglers import DEFAULT_RULE, Rule, late_stage, outliers
from stepscope.analysis.distributed.unit_tables import CATEGORIES, RankStep, RankTables
from stepscope.analysis.steps.breakdown import IDLE
from stepscope.errors import StepscopeError
from stepscope.trace.kinds import CLOCK_RELATIVE, RANK_FROM_FILE

FROM_DISTRIBUTED_INFO = RANK_FROM_FILE
FROM_FILE_NAME = "file name"
FROM_HOST_ORDER = "host order"
# What a unit of the reduce is: a rank (one profile, all its devices) or one device of one.
BY_RANK = "rank"
BY_DEVICE = "device"
# Devices when the run is one profile of several devices (a TPU host, one 8-GPU node): one
# rank has nothing to be compared with; else ranks.
BY_AUTO = "auto"
UNITS = (BY_AUTO, BY_RANK, BY_DEVICE)
_FILE_RANK = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)

COMPUTE = "device_compute"
EXPOSED_COLLECTIVES = "device_collectives"
# Straggler signals: a step row -> the value the rule looks at.
SIGNALS: dict[str, Callable[[DistributedStep], int]] = {
    "step_time": lambda step: step["step_time_ps"],
    "collective_wait": lambda step: step["collective_wait_ps"],
    # The step less its wait for other ranks: in a synchronous job every rank's step ends
    # together, and the late rank is the one that worked longest before the collective.
    "work_time": lambda step: step["step_time_ps"] - step["collective_wait_ps"],
}
# Devices share their host's step windows, so their step times are equal by construction;
# what differs is how much of the window each device was busy (compute, collectives, copies).
DEVICE_SIGNALS: dict[str, Callable[[DistributedStep], int]] = {
    **SIGNALS,
    "busy_time": lambda step: step["step_time_ps"] - step["breakdown"][IDLE],
}


def assign_ranks(tables: Sequence[RankTables]) -> tuple[list[int], str]:
    """Each table's rank number and where the numbers came from (see the module docstring)."""
    given = [table.rank for table in tables]
    if all(rank is not None for rank in given) and len(set(given)) == len(given):
        return [int(rank) for rank in given if rank is not None], FROM_DISTRIBUTED_INFO
    named = [_FILE_RANK.search(table.path.rsplit("/", 1)[-1]) for table in tables]
    numbers = [int(match.group(1)) for match in named if match]
    if len(numbers) == len(tables) and len(set(numbers)) == len(numbers):
        return numbers, FROM_FILE_NAME
    order = sorted(range(len(tables)), key=lambda index: (tables[index].host, tables[index].path))
    ranks = [0] * len(tables)
    for position, index in enumerate(order):
        ranks[index] = position
    return ranks, FROM_HOST_ORDER


def alignment(tables: Sequence[RankTables], unit: str = BY_RANK) -> str:
    """How the hosts' clocks were put on one (``tables``: one per host); the devices of one
    host share its clock, so a run of one host by device needs none."""
    if unit == BY_DEVICE and len(tables) == 1:
        return f"one host's clock ({tables[0].clock}), which its devices share"
    relative = [table.host for table in tables if table.clock == CLOCK_RELATIVE]
    if relative:
        return f"not aligned: {len(relative)} rank(s) have no UNIX clock ({', '.join(relative[:3])}); steps are matched by number and start offsets are each rank's own"
    counts: dict[str, int] = defaultdict(int)
    for table in tables:
        counts[table.clock] += 1
    methods = ", ".join(f"{method} ({count} ranks)" for method, count in sorted(counts.items()))
    return f"on the UNIX epoch, from {methods}"


def device_units(tables: Sequence[RankTables], numbers: list[int]) -> tuple[list[tuple[int, RankTables]], dict[int, int]]:
    """Every host's device units numbered 0.. in (host rank, device ordinal) order, and each
    unit's host rank."""
    # A unit is named as its host is named now (the dashboard names a cached host's tables
    # after the run's name for its file, not the units inside them).
    found = sorted(
        (
            (numbers[index], position, dataclasses.replace(unit, host=table.host, file_host=table.file_host, path=table.path))
            for index, table in enumerate(tables)
            for position, unit in enumerate(table.devices)
        ),
        key=lambda item: item[:2],
    )
    ranked = [(number, unit) for number, (_host, _position, unit) in enumerate(found)]
    return ranked, {number: host for number, (host, _position, _unit) in enumerate(found)}


def chosen_unit(tables: Sequence[RankTables], by: str) -> str:
    """``by`` itself, or for ``auto``: devices where the run is one profile with two device
    planes or more, else ranks."""
    if by not in UNITS:
        raise StepscopeError(f"unknown unit {by!r} (units: {', '.join(UNITS)})")
    if by != BY_AUTO:
        return by
    return BY_DEVICE if len(tables) == 1 and len(tables[0].devices) >= 2 else BY_RANK


def reduce_ranks(run: str, tables: Sequence[RankTables], failures: Sequence[str] = (), rule: Rule = DEFAULT_RULE, by: str = BY_RANK) -> DistributedResult:
    """The view over ranks (``by="rank"``: each table a unit) or over every host's devices
    (``by="device"``: each table's ``devices`` a unit; units are host x device); ``auto``:
    ``chosen_unit``. The result's ``unit`` says which."""
    by = chosen_unit(tables, by)
    if not tables:
        raise StepscopeError(f"{run}: no rank could be analysed" + (f" (first: {failures[0]})" if failures else ""))
    numbers, source = assign_ranks(tables)
    if by == BY_DEVICE:
        ranked, host_ranks = device_units(tables, numbers)
        if not ranked:
            raise StepscopeError(f"{run}: no device planes (/device:GPU:N, /device:TPU:N) in its {len(tables)} profile(s)")
        source = f"host x device (hosts by {source}, devices by ordinal)"
        hosts, tables = tables, [unit for _number, unit in ranked]
    else:
        order = sorted(range(len(tables)), key=lambda index: numbers[index])
        ranked = [(numbers[index], tables[index]) for index in order]
        host_ranks = {number: number for number, _table in ranked}
        hosts = tables
    # Offsets from the earliest rank's time 0 where every clock is the UNIX one; else each
    # rank's from its own (one rank's relative zero says nothing of another's).
    aligned = all(table.clock != CLOCK_RELATIVE for table in tables)
    earliest_ns = min(table.start_ns for table in tables)
    origins = {rank: earliest_ns if aligned else table.start_ns for rank, table in ranked}
    waits = _waits(ranked)
    steps = [_step_row(rank, step, origins[rank], waits.by_step.get((rank, step.number), 0)) for rank, table in ranked for step in table.steps]
    by_rank: dict[int, list[DistributedStep]] = defaultdict(list)
    for row in steps:
        by_rank[row["rank"]].append(row)
    world = [table.world_size for table in tables if table.world_size is not None]
    return DistributedResult(
        run=run,
        unit=by,
        world_size=len(ranked) if by == BY_DEVICE else max(world) if world else len(tables),
        rank_source=source,
        alignment=alignment(hosts, by),
        rule=StragglerRule(k_sigma=rule.k_sigma, min_excess_fraction=rule.min_excess_fraction, min_ranks=rule.min_ranks),
        ranks=[_rank_row(rank, table, origins[rank], by_rank[rank], host_ranks[rank]) for rank, table in ranked],
        steps=steps,
        stragglers=_stragglers(steps, rule, DEVICE_SIGNALS if by == BY_DEVICE else SIGNALS),
        collectives=_collectives(ranked, waits.by_name),
        warnings=[
            *failures,
            *(f"rank {rank}: {warning}" for rank, table in sorted(zip(numbers, hosts, strict=True), key=lambda pair: pair[0]) for warning in table.warnings),
        ],
    )


@dataclasses.dataclass(frozen=True)
class Waits:
    """Each rank's collective wait (ps), over the calls matched on 2+ ranks."""

    by_step: dict[tuple[int, int], int]  # (rank, step number) -> its wait in that step
    by_name: dict[tuple[int, str], int]  # (rank, collective name) -> its wait in those calls


def _waits(ranked: list[tuple[int, RankTables]]) -> Waits:
    """Each rank's wait per step and per collective name (``Waits``)."""
    calls: dict[tuple[int, str, int], list[tuple[int, int]]] = defaultdict(list)
    for rank, table in ranked:
        for call in table.collectives:
            calls[(call.step, call.name, call.ordinal)].append((rank, call.duration_ps))
    by_step: dict[tuple[int, int], int] = defaultdict(int)
    by_name: dict[tuple[int, str], int] = defaultdict(int)
    for (step, name, _ordinal), found in calls.items():
        if len(found) < 2:
            continue
        fastest = min(duration for _rank, duration in found)
        for rank, duration in found:
            by_step[(rank, step)] += duration - fastest
            by_name[(rank, name)] += duration - fastest
    return Waits(by_step=by_step, by_name=by_name)


def _step_row(rank: int, step: RankStep, origin_ns: int, wait_ps: int) -> DistributedStep:
    parts = step.breakdown
    return DistributedStep(
        rank=rank,
        step=step.number,
        start_offset_ps=(step.start_ns - origin_ns) * 1000,
        trace_start_ps=step.start_ps,
        step_time_ps=step.step_time_ps,
        compute_ps=parts[COMPUTE],
        collective_ps=step.collective_ps,
        exposed_collective_ps=parts[EXPOSED_COLLECTIVES],
        overlap_ps=step.collective_ps - parts[EXPOSED_COLLECTIVES],
        memcpy_ps=sum(parts[key] for key in COPY_CATEGORIES),
        collective_wait_ps=wait_ps,
        breakdown=dict(parts),
        set_aside=step.set_aside,
    )


def _rank_row(rank: int, table: RankTables, origin_ns: int, own: list[DistributedStep], host_rank: int) -> DistributedRank:
    return DistributedRank(
        rank=rank,
        host=table.host,
        device=table.device,
        host_rank=host_rank,
        file_host=table.file_host or table.host,
        source=table.path,
        format=table.format,
        clock=table.clock,
        start_offset_ps=(table.start_ns - origin_ns) * 1000,
        steps=len(own),
        step_time_mean_ps=float(np.mean([step["step_time_ps"] for step in own])) if own else 0.0,
        collective_wait_ps=sum(step["collective_wait_ps"] for step in own),
        warnings=list(table.warnings),
    )


def _stragglers(steps: list[DistributedStep], rule: Rule, signals: dict[str, Callable[[DistributedStep], int]]) -> list[DistributedStraggler]:
    by_number: dict[int, list[DistributedStep]] = defaultdict(list)
    for step in steps:
        by_number[step["step"]].append(step)
    found: list[DistributedStraggler] = []
    for number in sorted(by_number):
        rows = by_number[number]
        step_median = float(np.median([row["step_time_ps"] for row in rows]))
        for signal, value_of in signals.items():
            values = np.asarray([value_of(row) for row in rows], dtype=np.int64)
            for outlier in outliers(values, step_median, rule):
                row = rows[outlier.position]
                others = [other["breakdown"] for other in rows if other is not row]
                stage, stage_excess = late_stage(row["breakdown"], others, CATEGORIES)
                excess = float(values[outlier.position]) - outlier.median
                found.append(
                    DistributedStraggler(
                        rank=row["rank"],
                        step=number,
                        signal=signal,
                        value_ps=int(values[outlier.position]),
                        median_ps=outlier.median,
                        excess_ps=excess,
                        threshold_ps=outlier.threshold,
                        excess_percent=100.0 * excess / step_median if step_median > 0 else 0.0,
                        stage=stage,
                        stage_excess_ps=stage_excess,
                    )
                )
    return sorted(found, key=lambda row: (-row["excess_percent"], row["step"], row["rank"], row["signal"]))


def _collectives(ranked: list[tuple[int, RankTables]], waits: dict[tuple[int, str], int]) -> list[DistributedCollective]:
    ranks = [rank for rank, _table in ranked]
    calls: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    sizes: dict[str, list[int]] = defaultdict(list)
    keys: dict[str, dict[tuple[int, int], int]] = defaultdict(lambda: defaultdict(int))
    for rank, table in ranked:
        for call in table.collectives:
            calls[call.name][rank].append(call.duration_ps)
            keys[call.name][(call.step, call.ordinal)] += 1
            if call.bytes is not None:
                sizes[call.name].append(call.bytes)
    rows: list[DistributedCollective] = []
    for name, per_rank in calls.items():
        wait = {rank: waits.get((rank, name), 0) for rank in ranks}
        low = min(ranks, key=lambda rank: (wait[rank], rank))
        high = max(ranks, key=lambda rank: (wait[rank], -rank))
        rows.append(
            DistributedCollective(
                name=name,
                calls=sum(len(durations) for durations in per_rank.values()),
                calls_per_rank_max=max(len(durations) for durations in per_rank.values()),
                bytes=sum(sizes[name]) if sizes[name] else None,
                time_per_rank_ps=sum(sum(durations) for durations in per_rank.values()) / len(ranks),
                matched=sum(1 for count in keys[name].values() if count >= 2),
                wait_mean_ps=float(np.mean(list(wait.values()))),
                wait_min_ps=wait[low],
                wait_min_rank=low,
                wait_max_ps=wait[high],
                wait_max_rank=high,
                wait_skew_ps=wait[high] - wait[low],
            )
        )
    return sorted(rows, key=lambda row: (-row["wait_skew_ps"], row["name"]))
