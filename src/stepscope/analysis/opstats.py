"""What every tool starts from, built once per profile: XProf's OpStats, for stepscope.

A profile's steps, the step-time breakdown (activity unions claimed in priority order),
the steps set aside as warm-up or outliers, the framework ops and each side's op table
rows are needed by several tools: the overview reads all of them, the input pipeline
analyzer the steps and breakdown, framework_op_stats and op_profile the ops, kernel_stats
and the overview the GPU kernels. Each is a
lazily built attribute of one ``OpStats``, so tools never run each other to get them and
nothing is computed twice within one analysis (``run_tool`` takes a profile or an
``OpStats``; the CLI's ``report --tool all`` and the dashboard's workers build one per
profile and hand it to every tool).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from stepscope.analysis.intervals import Union
from stepscope.analysis.ops.kernels import DeviceKernels, find_kernels
from stepscope.analysis.ops.op_table import OpRow, ridge_point, side_idle_ps, side_rows
from stepscope.analysis.ops.ops import Ops, Side, find_ops
from stepscope.analysis.ops.torch_costs import ShapeCosts, find_shape_costs
from stepscope.analysis.paths.schedule import StepGraph, step_graph
from stepscope.analysis.steps.breakdown import IDLE, activity_unions, step_breakdown
from stepscope.analysis.steps.classify import Activity
from stepscope.analysis.steps.step_outliers import SetAside, set_aside
from stepscope.analysis.steps.steps import Steps, find_steps
from stepscope.analysis.xla.hlo_ops import XlaOps, find_xla_ops
from stepscope.trace.model import Profile


class OpStats:
    """The per-profile intermediate; each attribute is computed when first read."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._op_rows: dict[Side, list[OpRow]] = {}
        self._side_idle: dict[Side, int] = {}

    @classmethod
    def of(cls, source: Profile | OpStats) -> OpStats:
        """``source`` itself when it is one, else a new one for the profile."""
        return source if isinstance(source, OpStats) else cls(source)

    @cached_property
    def steps(self) -> Steps:
        return find_steps(self.profile)

    @cached_property
    def unions(self) -> dict[Activity, Union]:
        return activity_unions(self.profile)

    @cached_property
    def breakdown(self) -> dict[str, np.ndarray]:
        """Per step, ps of each breakdown category and idle (``breakdown.step_breakdown``)."""
        return step_breakdown(self.steps, self.unions)

    @cached_property
    def set_aside(self) -> SetAside:
        """Warm-up and outlier steps (``step_outliers``)."""
        return set_aside(self.steps.duration_ps, self.breakdown["compile"], self.breakdown[IDLE])

    @cached_property
    def ops(self) -> Ops:
        return find_ops(self.profile)

    @cached_property
    def xla_ops(self) -> XlaOps:
        """The XLA (HLO) op executions, with device-clock times (hlo_stats, roofline_model)."""
        return find_xla_ops(self.profile, self.ops)

    @cached_property
    def shape_costs(self) -> ShapeCosts:
        """PyTorch ops' kernel time with FLOPs and bytes estimated from their recorded input
        shapes (``torch_costs``), in the XLA ops' columns."""
        return find_shape_costs(self.profile, self.ops)

    @cached_property
    def roofline_ops(self) -> XlaOps:
        """What the roofline plots: the XLA ops where the profile has any, else the PyTorch
        ops' shape estimates."""
        return self.xla_ops if len(self.xla_ops) else self.shape_costs.ops

    @cached_property
    def kernels(self) -> list[DeviceKernels]:
        """Each GPU plane's kernels with their launch configurations (kernel_stats, overview)."""
        return find_kernels(self.profile)

    @cached_property
    def step_graph(self) -> StepGraph | None:
        """The dependency graph of the steps (critical_path, the overview's predicted gains)."""
        return step_graph(self.profile, self.steps)

    @cached_property
    def ridge(self) -> float | None:
        return ridge_point(self.profile)

    def side_idle_ps(self, side: Side) -> int:
        """A side's idle time (op_rows and framework_op_stats both read it), once per side."""
        if side not in self._side_idle:
            self._side_idle[side] = side_idle_ps(self.profile, self.ops, side)
        return self._side_idle[side]

    def op_rows(self, side: Side) -> list[OpRow]:
        """framework_op_stats' rows of one side, ranked by self time."""
        if side not in self._op_rows:
            self._op_rows[side] = side_rows(self.ops, side, self.ridge, self.side_idle_ps(side))
        return self._op_rows[side]
