"""The distributed view: a run of N ranks (hosts, processes) analysed as one unit.

A map over ranks (``rank_tables.rank_tables``: one rank's profile -> its per-step and
per-collective tables) and a reduce (``reduce.reduce_ranks``: the rank x step table,
stragglers, the collective table), both pure; where the map runs, and the loading of each
rank's file, is ``stepscope.engines``. Its registry entry (``ENTRY``) is an analysis of a
run (``Inputs.RUN``), not a tool, whose functions take one profile; ``stepscope
distributed`` renders it through the same renderers (``tool`` is "distributed").
"""

from __future__ import annotations

from stepscope.analysis.applicability import several_devices
from stepscope.analysis.distributed.rank_tables import rank_tables, rank_tables_of
from stepscope.analysis.distributed.reduce import BY_AUTO, BY_DEVICE, BY_RANK, reduce_ranks
from stepscope.analysis.distributed.result import TOOL, DistributedResult
from stepscope.analysis.distributed.stragglers import DEFAULT_RULE, Rule
from stepscope.analysis.distributed.unit_tables import RankTables
from stepscope.analysis.registry import AnalysisSpec, Inputs, Option, register_analysis

# The unit option (``stepscope distributed --by``; ``by=`` in the dashboard's requests).
UNIT_OPTION = "by"
ENTRY = register_analysis(
    AnalysisSpec(
        TOOL,
        title="Distributed",
        order=90,  # after the compare view (80)
        inputs=Inputs.RUN,
        description="Every host of the run as one rank, or every device of every host as one unit: "
        "unit x step times, stragglers, collective wait (stepscope distributed).",
        result=DistributedResult,
        result_description="stepscope distributed --format json: a run of many ranks as one (rank x step, stragglers, collectives).",
        options=(
            Option(
                UNIT_OPTION,
                str,
                BY_AUTO,
                "the unit: rank (each host, all its devices together), device (each GPU or TPU chip of each host), "
                "auto (device for one host of several devices, else rank)",
                choices=(BY_RANK, BY_DEVICE),
            ),
        ),
        # A run of several hosts has several ranks, which the dashboard knows from the run;
        # a run of one profile needs two devices or more.
        applies=several_devices,
    )
)

__all__ = ["DEFAULT_RULE", "ENTRY", "TOOL", "UNIT_OPTION", "DistributedResult", "RankTables", "Rule", "rank_tables", "rank_tables_of", "reduce_ranks"]
