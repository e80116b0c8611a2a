"""What counts as which activity: collectives by name, step markers as no activity."""

from __future__ import annotations

import time

import numpy as np
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.classify import Activity, _device_type_activity


@pytest.mark.parametrize(
    ("name", "activity"),
    [
        ("all-reduce.1", Activity.DEVICE_COLLECTIVES),
        ("all-gather-start.3", Activity.DEVICE_COLLECTIVES),
        ("collective-permute-done", Activity.DEVICE_COLLECTIVES),
        ("ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", Activity.DEVICE_COLLECTIVES),
        ("ncclKernel_AllReduce_RING_LL_Sum_float", Activity.DEVICE_COLLECTIVES),
        # XLA's broadcast is a shape operation on one device, not communication.
        ("broadcast.2", Activity.DEVICE_COMPUTE),
        ("broadcast_add_fusion.1", Activity.DEVICE_COMPUTE),
        ("copy-start.1", Activity.DEVICE_COMPUTE),
    ],
)
def test_collectives_by_name(name, activity):
    assert _device_type_activity(name, "") == activity


def test_a_step_marker_is_not_host_compute(tmp_path):
    """A step of 'work' then a sleep: host compute is the work event, the rest is idle."""
    with stepscope.profile(tmp_path) as session:
        for number in range(2):
            with stepscope.step(number):
                with stepscope.trace("work"):
                    time.sleep(0.02)
                time.sleep(0.02)
    profile = stepscope.load(session.path)
    host = profile.plane("/host:CPU")
    names = host.metadata.name_array[host.events.metadata_id]
    work = np.sort(host.events.start_ps[names == "work"]), host.events.duration_ps[names == "work"][np.argsort(host.events.start_ps[names == "work"])]
    overview = run_tool("overview_page", profile).to_json()
    assert [step["step"] for step in overview["steps"]] == [0, 1]
    for step, duration in zip(overview["steps"], work[1]):
        breakdown = step["breakdown"]
        assert breakdown["host_compute_ps"] == duration
        assert breakdown["idle_ps"] == step["step_time_ps"] - duration
