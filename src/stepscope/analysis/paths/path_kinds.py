"""What a piece of a critical path is: the kinds of the dependency graph's nodes and gaps
(``dependency_graph``, ``cross_edges``) and the keys of ``critical_path``'s ``by_kind_ps``."""

from __future__ import annotations

import enum


class Kind(enum.IntEnum):
    """What a piece of the critical path is (the ``by_kind_ps`` keys, ``KIND_NAMES``)."""

    HOST_COMPUTE = 0
    LAUNCH = 1
    KERNEL = 2
    COPY = 3
    COLLECTIVE = 4
    INPUT = 5
    SYNC = 6
    IDLE = 7


KIND_NAMES: dict[Kind, str] = {kind: kind.name.lower() for kind in Kind}
