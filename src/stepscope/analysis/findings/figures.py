"""What the verdict rules read: the per-step shares of the kept steps, the ops the findings
point at, and the DataLoader's settings.

Every share is of the steady-state steps (``step_outliers``: warm-up and one-off steps set
aside), so one slow first step cannot decide the verdict: a single 6.6 ms first
``hipLaunchKernel`` (a code-object load) made a ROCm toy run "kernel-launch bound 71%"
when its steady step launches nothing slow. Input is the mean of the per-step shares, as
XProf's input-bound verdict does (and the input pipeline analyzer, so the two pages agree);
the other shares are the median of the per-step shares, robust to the odd step the rule
above did not catch.
"""

from __future__ import annotations

from dataclasses import dataclass

from stepscope.analysis.findings.loader_settings import LoaderSettings
from stepscope.analysis.steps.classify import COLLECTIVE


@dataclass(frozen=True)
class Shares:
    """Per-step shares of the step time (percent) the rules read, over the kept steps."""

    input: float  # mean
    kernel_launch: float  # median
    collectives: float  # median
    host: float  # median of host compute + idle
    host_compute: float  # median
    idle: float  # median
    device_compute: float  # of the kept steps' summed time: the breakdown's figure
    steps: int  # how many steps the shares are over
    has_device: bool
    steps_known: bool = True  # False: no step marker, the whole profile is one window


@dataclass(frozen=True)
class Leads:
    """The framework_op_stats rows (op names) the findings point at, None where the profile
    has none: the op with the most self time on each side, and the collective op with the
    most self time on either side."""

    top_host_op: str | None = None
    top_device_op: str | None = None
    top_collective_op: str | None = None

    @classmethod
    def of(cls, host: list[tuple[str, str]], device: list[tuple[str, str]]) -> Leads:
        """From each side's (type, name) rows ranked by self time, biggest first; a
        collective is one whose name or type says so, the device side's first (that is
        where collective time is measured)."""
        collectives = [name for kind, name in [*device, *host] if COLLECTIVE.search(name) or COLLECTIVE.search(kind)]
        return cls(
            top_host_op=host[0][1] if host else None,
            top_device_op=device[0][1] if device else None,
            top_collective_op=collectives[0] if collectives else None,
        )


@dataclass(frozen=True)
class Figures:
    """Everything a rule reads; ``loader`` is None where the profile records no DataLoader."""

    shares: Shares
    leads: Leads
    loader: LoaderSettings | None

    @property
    def over(self) -> str:
        """How many steps the shares are over, as the evidence says it."""
        return f"over {self.shares.steps} step(s)"
