"""A benchmark's goals as data: each figure beside its anchor, the ratio the goal is stated
in, and the bound, so that ``bench/summary.py`` can print every benchmark in one table.

Each benchmark puts a ``goals`` list in its JSON (``goals=[goal(...).to_json(), ...]``).
An entry holds the raw figures and the rule; the ratio and whether it holds are derived
here (``Goal.ratio``, ``Goal.holds``) and written beside them for a reader of the JSON, but
the summary derives them again from the raw figures, so a stale or hand-edited verdict
cannot stand in the table.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass

# How the ratio is formed: the goal says "at most 0.3x XProf's time" (stepscope / anchor)
# or "at least 4x faster than HTA" (anchor / stepscope).
VALUE_OVER_ANCHOR = "stepscope / anchor"
ANCHOR_OVER_VALUE = "anchor / stepscope"
RATIOS: dict[str, Callable[[float, float], float]] = {
    VALUE_OVER_ANCHOR: lambda value, anchor: value / anchor if anchor else math.inf,
    ANCHOR_OVER_VALUE: lambda value, anchor: anchor / value if value else math.inf,
}
# What the bound applies to: the ratio, or (for a goal stated in absolute terms, e.g.
# "full view p95 < 50 ms") stepscope's own figure, the anchor shown beside it.
ON_RATIO = "ratio"
ON_VALUE = "value"
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    "<": operator.lt,
    ">=": operator.ge,
    ">": operator.gt,
}


@dataclass(frozen=True)
class Goal:
    """One figure of one benchmark against its anchor.

    ``value`` and ``anchor_value`` are in ``unit`` (the same for both); the goal reads
    ``ratio <op> target``, e.g. ``stepscope / anchor <= 0.3`` (``on="ratio"``), or
    ``value <op> target`` in ``unit`` (``on="value"``).
    """

    figure: str
    value: float
    unit: str
    anchor: str
    anchor_value: float | None  # None: the anchor did not run (the goal is on the value)
    ratio_of: str
    op: str
    target: float
    on: str = ON_RATIO

    def __post_init__(self) -> None:
        if self.ratio_of not in RATIOS:
            raise ValueError(f"ratio_of must be one of {sorted(RATIOS)}, not {self.ratio_of!r}")
        if self.op not in COMPARISONS:
            raise ValueError(f"op must be one of {sorted(COMPARISONS)}, not {self.op!r}")
        if self.on not in (ON_RATIO, ON_VALUE):
            raise ValueError(f"on must be {ON_RATIO!r} or {ON_VALUE!r}, not {self.on!r}")
        if self.on == ON_RATIO and self.anchor_value is None:
            raise ValueError(f"{self.figure}: a goal on the ratio needs the anchor's value")

    @property
    def ratio(self) -> float | None:
        if self.anchor_value is None:
            return None
        ratio = RATIOS[self.ratio_of](self.value, self.anchor_value)
        return ratio if math.isfinite(ratio) else None

    @property
    def holds(self) -> bool:
        judged = self.ratio if self.on == ON_RATIO else self.value
        return judged is not None and COMPARISONS[self.op](judged, self.target)

    @property
    def goal(self) -> str:
        if self.on == ON_VALUE:
            return f"stepscope {self.op} {self.target:g} {self.unit}"
        return f"{self.ratio_of} {self.op} {self.target:g}"

    def to_json(self) -> dict:
        return {**asdict(self), "ratio": self.ratio, "goal": self.goal, "holds": self.holds}

    @classmethod
    def from_json(cls, data: dict) -> Goal:
        """The raw fields only (the written ratio and verdict are derived again)."""
        try:
            return cls(
                figure=str(data["figure"]),
                value=float(data["value"]),
                unit=str(data["unit"]),
                anchor=str(data["anchor"]),
                anchor_value=None if data["anchor_value"] is None else float(data["anchor_value"]),
                ratio_of=str(data["ratio_of"]),
                op=str(data["op"]),
                target=float(data["target"]),
                on=str(data.get("on", ON_RATIO)),
            )
        except KeyError as missing:
            raise ValueError(f"a goal lacks the field {missing}") from None
        except (TypeError, ValueError) as bad:
            raise ValueError(f"a goal has a bad field: {bad}") from None


def goal(figure: str, value: float, unit: str, anchor: str, anchor_value: float | None, ratio_of: str, op: str, target: float, on: str = ON_RATIO) -> dict:
    """The JSON entry of one goal (what a benchmark appends to its ``goals`` list)."""
    return Goal(figure, value, unit, anchor, anchor_value, ratio_of, op, target, on).to_json()
