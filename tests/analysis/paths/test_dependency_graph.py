"""The dependency graph (``paths.dependency_graph``) on the shared traces: where a plane's
span times its line count would overflow the keyed axis of ``_host_lines``, each line is
cut alone, and the graph is the same."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import stepscope
from stepscope.analysis.paths import dependency_graph
from stepscope.analysis.paths.dependency_graph import build_graph
from stepscope.analysis.steps.steps import find_steps
from tests.support.traces import shared


@pytest.mark.parametrize("name", ["xplane/tpu_v_inference_4chips.xplane.pb", "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"])
def test_host_lines_one_at_a_time_give_the_same_graph(name, monkeypatch):
    """Where a plane's span times its line count would overflow the keyed axis of
    ``_host_lines``, each line is cut alone: the same nodes and edges."""
    profile = stepscope.load(shared(name))
    steps = find_steps(profile)
    together = build_graph(profile, steps)
    monkeypatch.setattr(dependency_graph, "KEY_LIMIT", 0)
    apart = build_graph(profile, steps)
    for field in dataclasses.fields(together):
        mine, theirs = getattr(together, field.name), getattr(apart, field.name)
        assert np.array_equal(mine, theirs) if isinstance(mine, np.ndarray) else mine == theirs, field.name
