"""A benchmark's goals as data: each figure beside its anchor, the ratio the goal is stated
in, and the bound, so that ``bench/summary.py`` can print every benchmark in one table.

Each benchmark puts a ``goals`` list in its JSON (``goals=[goal(...).to_json(), ...]``).
An entry holds the raw figures and the rule; the ratio and whether it holds are derived
here (``Goal.ratio``, ``Goal.holds``) and written beside them for a reader of the JSON, but
the summary derives them again from the raw figures, so a stale or hand-edited verdict
cannot stand in the table.

A goal may carry the evidence of its own noise: ``value_range`` and ``anchor_range``, the
interval each figure spread over (e.g. its quartiles over interleaved rounds). Where they
are given, the verdict is judged at both ends of the ratio's interval as well as at the
point: a ratio whose divisor's interval reaches zero, or whose interval reaches across the
bound, is "within noise" rather than a "yes" or "NO" a rerun could turn over (a ratio of
two overheads, one of them indistinguishable from zero, is no figure). A JSON without them
is judged on the point figures, as before.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass

# How the ratio is formed: the goal says "at most 0.3x XProf's time" (stepscope / anchor)
# or "at least 4x faster than HTA" (anchor / stepscope); or, for what stepscope adds to a
# figure of the anchor's ("at most 40 MB over torch.profiler's peak"), the difference, in
# the figures' unit.
VALUE_OVER_ANCHOR = "stepscope / anchor"
ANCHOR_OVER_VALUE = "anchor / stepscope"
VALUE_MINUS_ANCHOR = "stepscope - anchor"
RATIOS: dict[str, Callable[[float, float], float]] = {
    VALUE_OVER_ANCHOR: lambda value, anchor: value / anchor if anchor else math.inf,
    ANCHOR_OVER_VALUE: lambda value, anchor: anchor / value if value else math.inf,
    VALUE_MINUS_ANCHOR: lambda value, anchor: value - anchor,
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
# The verdicts: the goal holds, it is missed, or the figures' spread does not resolve which.
HOLDS = "yes"
MISSED = "NO"
WITHIN_NOISE = "within noise"
Interval = tuple[float, float]


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
    value_range: Interval | None = None  # the spread of ``value`` (e.g. its quartiles); None: not known
    anchor_range: Interval | None = None  # the spread of ``anchor_value``

    def __post_init__(self) -> None:
        if self.ratio_of not in RATIOS:
            raise ValueError(f"ratio_of must be one of {sorted(RATIOS)}, not {self.ratio_of!r}")
        if self.op not in COMPARISONS:
            raise ValueError(f"op must be one of {sorted(COMPARISONS)}, not {self.op!r}")
        if self.on not in (ON_RATIO, ON_VALUE):
            raise ValueError(f"on must be {ON_RATIO!r} or {ON_VALUE!r}, not {self.on!r}")
        if self.on == ON_RATIO and self.anchor_value is None:
            raise ValueError(f"{self.figure}: a goal on the ratio needs the anchor's value")
        for name, spread in (("value_range", self.value_range), ("anchor_range", self.anchor_range)):
            if spread is not None and not spread[0] <= spread[1]:
                raise ValueError(f"{self.figure}: {name} must be [low, high], not {list(spread)}")
        if self.anchor_range is not None and self.anchor_value is None:
            raise ValueError(f"{self.figure}: an anchor_range needs the anchor's value")

    @property
    def ratio(self) -> float | None:
        if self.anchor_value is None:
            return None
        ratio = RATIOS[self.ratio_of](self.value, self.anchor_value)
        return ratio if math.isfinite(ratio) else None

    @property
    def holds(self) -> bool:
        """The verdict on the point figures alone (what a JSON without ranges is judged on)."""
        judged = self.ratio if self.on == ON_RATIO else self.value
        return judged is not None and COMPARISONS[self.op](judged, self.target)

    @property
    def judged_range(self) -> Interval | None:
        """The interval of what the bound applies to, from the figures' ranges (each widened
        to take in its point figure); None where no range was given or the ratio's divisor
        may be zero (then no interval of the ratio exists)."""
        if self.value_range is None and self.anchor_range is None:
            return None
        value = hull(self.value, self.value_range)
        if self.on == ON_VALUE:
            return value
        assert self.anchor_value is not None  # checked in __post_init__
        anchor = hull(self.anchor_value, self.anchor_range)
        if self.ratio_of == VALUE_MINUS_ANCHOR:
            return value[0] - anchor[1], value[1] - anchor[0]
        dividend, divisor = (value, anchor) if self.ratio_of == VALUE_OVER_ANCHOR else (anchor, value)
        if divisor[0] <= 0 <= divisor[1]:
            return None
        corners = [top / bottom for top in dividend for bottom in divisor]
        return min(corners), max(corners)

    @property
    def verdict(self) -> str:
        """The verdict: "yes" or "NO" where the ranges (if any) agree with the point, "within
        noise" where the ratio's divisor may be zero or its interval reaches across the bound."""
        point = HOLDS if self.holds else MISSED
        if self.value_range is None and self.anchor_range is None:
            return point
        judged = self.judged_range
        if judged is None:
            return WITHIN_NOISE
        ends = {COMPARISONS[self.op](end, self.target) for end in judged}
        return point if ends == {self.holds} else WITHIN_NOISE

    @property
    def goal(self) -> str:
        if self.on == ON_VALUE:
            return f"stepscope {self.op} {self.target:g} {self.unit}"
        if self.ratio_of == VALUE_MINUS_ANCHOR:
            return f"{self.ratio_of} {self.op} {self.target:+g} {self.unit}"
        return f"{self.ratio_of} {self.op} {self.target:g}"

    def to_json(self) -> dict:
        return {**asdict(self), "ratio": self.ratio, "goal": self.goal, "holds": self.holds, "verdict": self.verdict}

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
                value_range=interval(data.get("value_range")),
                anchor_range=interval(data.get("anchor_range")),
            )
        except KeyError as missing:
            raise ValueError(f"a goal lacks the field {missing}") from None
        except (TypeError, ValueError) as bad:
            raise ValueError(f"a goal has a bad field: {bad}") from None


def hull(point: float, spread: Interval | None) -> Interval:
    """The smallest interval holding the point and its spread."""
    if spread is None:
        return point, point
    return min(point, spread[0]), max(point, spread[1])


def interval(data: object) -> Interval | None:
    """A range as the JSON writes it (``[low, high]``), or None where the field is absent."""
    if data is None:
        return None
    if not isinstance(data, list | tuple) or len(data) != 2:
        raise ValueError(f"a range must be [low, high], not {data!r}")
    return float(data[0]), float(data[1])


def goal(
    figure: str,
    value: float,
    unit: str,
    anchor: str,
    anchor_value: float | None,
    ratio_of: str,
    op: str,
    target: float,
    on: str = ON_RATIO,
    value_range: Interval | None = None,
    anchor_range: Interval | None = None,
) -> dict:
    """The JSON entry of one goal (what a benchmark appends to its ``goals`` list)."""
    return Goal(figure, value, unit, anchor, anchor_value, ratio_of, op, target, on, value_range, anchor_range).to_json()
