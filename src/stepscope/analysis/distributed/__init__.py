"""The distributed view: a run of N ranks (hosts, processes) analysed as one unit.

A map over ranks (``rank_tables.rank_tables``: one rank's profile -> its per-step and
per-collective tables) and a reduce (``reduce.reduce_ranks``: the rank x step table,
stragglers, the collective table), both pure; where the map runs, and the loading of each
rank's file, is ``stepscope.engines``. Not a registry tool, whose functions take one
profile; ``stepscope distributed`` renders it through the same renderers (``tool`` is
"distributed").
"""

from __future__ import annotations

from stepscope.analysis.distributed.rank_tables import rank_tables, rank_tables_of
from stepscope.analysis.distributed.reduce import reduce_ranks
from stepscope.analysis.distributed.result import TOOL, DistributedResult
from stepscope.analysis.distributed.stragglers import DEFAULT_RULE, Rule
from stepscope.analysis.distributed.unit_tables import RankTables

__all__ = ["DEFAULT_RULE", "TOOL", "DistributedResult", "RankTables", "Rule", "rank_tables", "rank_tables_of", "reduce_ranks"]
