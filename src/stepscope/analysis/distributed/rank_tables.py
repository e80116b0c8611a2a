"""The map of the distributed analysis: one rank's profile -> its small per-step tables.

A rank's tables are read from that profile's ``OpStats`` (steps, activity unions, the
step-time breakdown), the intermediate the overview reads, so a rank's step time and
breakdown here are the ones its overview page shows. What comes back is a few numbers per
step and per collective call (``RankTables``, picklable), never the events: a worker
process (or a Ray task) sends back kilobytes, and the driver never holds a rank's events.
Loading the rank's file and running this on a worker is ``stepscope.engines``' part
(analysis never reads files).
"""

from __future__ import annotations

import dataclasses

from stepscope.analysis.distributed.collectives import rank_collectives
from stepscope.analysis.distributed.device_tables import device_tables
from stepscope.analysis.distributed.unit_tables import RankTables, step_rows
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.steps.breakdown import BREAKDOWN
from stepscope.analysis.steps.classify import Activity
from stepscope.trace.kinds import distributed_rank, names_its_host, time_base
from stepscope.trace.model import Profile

COPY_CATEGORIES = (BREAKDOWN[Activity.DEVICE_TO_DEVICE], BREAKDOWN[Activity.HOST_TO_DEVICE], BREAKDOWN[Activity.DEVICE_TO_HOST])


def rank_tables(profile: Profile, host: str) -> RankTables:
    return rank_tables_of(OpStats(profile), host)


def rank_tables_of(stats: OpStats, host: str) -> RankTables:
    """The tables from an ``OpStats`` already built (the dashboard's analysis worker builds
    one for all its tools). ``host``: the run's name for the file."""
    profile = stats.profile
    steps, breakdown = stats.steps, stats.breakdown
    collective = stats.unions[Activity.DEVICE_COLLECTIVES].covered(steps.start_ps, steps.end_ps)
    kept = stats.set_aside.kept
    rows = step_rows(profile.start_ns, steps, breakdown, collective, kept)
    rank, world_size = distributed_rank(profile.info)
    collectives = rank_collectives(stats)  # found once for the rank's units and its devices'
    tables = RankTables(
        path=profile.source,
        host=profile.host if names_its_host(profile.format, profile.info) else host,
        rank=rank,
        world_size=world_size,
        format=profile.format,
        start_ns=profile.start_ns,
        clock=clock_method(profile),
        step_source=steps.source,
        steps=rows,
        collectives=collectives.calls,
        warnings=[str(warning) for warning in profile.info.get("warnings", [])],
        file_host=host,
    )
    return dataclasses.replace(tables, devices=device_tables(stats, tables, collectives.by_device))


def clock_method(profile: Profile) -> str:
    """How the profile's ``start_ns`` was found (``trace.kinds``' CLOCK_* texts)."""
    return time_base(profile.format, profile.info)
