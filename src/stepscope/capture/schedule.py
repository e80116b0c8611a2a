"""``stepscope.schedule``: which steps of a loop to capture, with torch.profiler's controls.

``schedule(wait=1, warmup=1, active=3, repeat=2, skip_first=0)`` means what
``torch.profiler.schedule`` means, so a torch user's schedule carries over unchanged: after
``skip_first`` steps, cycles of ``wait`` steps unrecorded, ``warmup`` steps with the
tracers running but their events dropped (the tracers' start-up cost stays out of the
profile), then ``active`` steps recorded and written as one profile; ``repeat`` cycles
(0: until the loop ends). Steps are counted by ``StepHook.step()`` (or the ``step()`` of
``stepscope.profile(..., schedule=...)``), called once at the end of each iteration.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from stepscope.errors import StepscopeError


class Action(enum.Enum):
    """What a step does, as torch.profiler's ``ProfilerAction`` names it."""

    NONE = "none"
    WARMUP = "warmup"
    RECORD = "record"
    RECORD_AND_SAVE = "record_and_save"


@dataclass(frozen=True)
class Schedule:
    """``wait``, ``warmup`` and ``active`` steps per cycle, ``repeat`` cycles (0: no end), after ``skip_first`` steps."""

    wait: int
    warmup: int
    active: int
    repeat: int = 0
    skip_first: int = 0

    def __post_init__(self) -> None:
        if min(self.wait, self.warmup, self.repeat, self.skip_first) < 0 or self.active < 1:
            raise StepscopeError(f"schedule: wait, warmup, repeat and skip_first must be >= 0 and active >= 1, not {self}")

    def action(self, step: int) -> Action:
        """What step ``step`` (counted from 0) does."""
        if step < self.skip_first:
            return Action.NONE
        cycle_length = self.wait + self.warmup + self.active
        cycle, at = divmod(step - self.skip_first, cycle_length)
        if self.repeat and cycle >= self.repeat:
            return Action.NONE
        if at < self.wait:
            return Action.NONE
        if at < self.wait + self.warmup:
            return Action.WARMUP
        return Action.RECORD_AND_SAVE if at == cycle_length - 1 else Action.RECORD


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0) -> Schedule:
    """torch.profiler.schedule's signature (keyword-only, as torch's)."""
    return Schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)
