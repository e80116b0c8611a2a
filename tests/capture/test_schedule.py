"""``stepscope.schedule``: torch.profiler's schedule, on ``StepHook`` and ``stepscope.profile``.

The step -> action table is checked against torch.profiler.schedule itself (an independent
implementation of the same rule) and, for one schedule, by hand; the captures against what
the loop did: which steps each profile holds, that warm-up steps are cropped away, and that
``on_trace_ready`` gets every profile in order.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.trace import names

HOST_ONLY = stepscope.ProfilerOptions(host_tracer_level=1)


def test_a_schedule_by_hand():
    # skip 1; then cycles of wait 1, warmup 1, active 2; two cycles.
    plan = stepscope.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    expected = ["none", "none", "warmup", "record", "record_and_save", "none", "warmup", "record", "record_and_save", "none", "none", "none"]
    assert [plan.action(step).value for step in range(12)] == expected


@pytest.mark.framework
@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")  # torch's, for warmup=0
@pytest.mark.parametrize(
    "arguments",
    [
        dict(wait=1, warmup=1, active=3, repeat=2),
        dict(wait=0, warmup=0, active=1),
        dict(wait=2, warmup=0, active=2, repeat=1, skip_first=3),
        dict(wait=0, warmup=2, active=1, repeat=3, skip_first=1),
    ],
)
def test_the_actions_are_torch_profilers(arguments):
    from torch.profiler import schedule as torch_schedule

    theirs = torch_schedule(**arguments)
    ours = stepscope.schedule(**arguments)
    assert [ours.action(step).name for step in range(40)] == [theirs(step).name for step in range(40)]


def test_bad_schedules_are_refused():
    with pytest.raises(stepscope.StepscopeError, match="active >= 1"):
        stepscope.schedule(wait=0, warmup=0, active=0)
    with pytest.raises(stepscope.StepscopeError, match="wait"):
        stepscope.schedule(wait=-1, warmup=0, active=1)
    with pytest.raises(stepscope.StepscopeError, match="exactly one of save_steps, save_secs or schedule"):
        stepscope.StepHook("logs", save_steps=2, schedule=stepscope.schedule(wait=0, warmup=0, active=1))


def _loop(step_function, steps: int) -> None:
    for number in range(steps):
        with stepscope.trace("work", index=number):
            time.sleep(0.002)
        step_function()


def _held(path: Path) -> tuple[list[int], list[int]]:
    """(the step markers' numbers, the ``index`` arg of every "work" event) in a profile."""
    profile = stepscope.load(path)
    profile.validate()
    host = profile.plane(names.HOST_PLANE)
    markers = sorted(host.events.step_num[host.events.step_num >= 0].tolist())
    work = [row for row in range(len(host.events)) if host.event_name(row) == "work"]
    indexes = sorted(next(stat.value for stat in host.event_stats(row) if stat.name == "index") for row in work)
    return markers, indexes


def test_step_hook_on_a_schedule_writes_each_cycles_active_steps(tmp_path: Path):
    ready: list[Path] = []
    plan = stepscope.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    hook = stepscope.StepHook(tmp_path, options=HOST_ONLY, schedule=plan, on_trace_ready=ready.append)
    _loop(hook.step, 12)
    hook.close()
    # By the table above: cycle 1 records steps 3 and 4 (warm-up 2 cropped away), cycle 2
    # steps 7 and 8 (warm-up 6 cropped away); steps 9-11 are past the two cycles.
    assert ready == hook.paths and len(ready) == 2
    assert [_held(path) for path in ready] == [([3, 4], [3, 4]), ([7, 8], [7, 8])]


def test_profile_with_a_schedule_yields_a_hook_whose_step_the_loop_calls(tmp_path: Path):
    ready: list[Path] = []
    with stepscope.profile(tmp_path, HOST_ONLY, schedule=stepscope.schedule(wait=0, warmup=0, active=3), on_trace_ready=ready.append) as profiler:
        _loop(profiler.step, 7)
    # No wait or warm-up: steps 0-2 and 3-5 are two profiles; step 6 starts a third cycle,
    # which the block's end writes with what it recorded (as torch.profiler's exit does).
    assert [_held(path) for path in ready] == [([0, 1, 2], [0, 1, 2]), ([3, 4, 5], [3, 4, 5]), ([6], [6])]


def test_profile_without_a_schedule_calls_on_trace_ready_once(tmp_path: Path):
    ready: list[Path] = []
    with stepscope.profile(tmp_path, HOST_ONLY, on_trace_ready=ready.append) as session, stepscope.step(0):
        time.sleep(0.001)
    assert ready == [session.path]


def test_a_warm_up_crop_keeps_what_overlaps_the_first_active_step(tmp_path: Path):
    """An event that starts in the warm-up and runs into the active steps is kept whole."""
    plan = stepscope.schedule(wait=0, warmup=1, active=1, repeat=1)
    hook = stepscope.StepHook(tmp_path, options=HOST_ONLY, schedule=plan)
    with stepscope.trace("long"):
        time.sleep(0.002)
        hook.step()  # the warm-up step (0) ends inside "long"
        time.sleep(0.002)
    hook.step()  # step 1, the active one, ends: the profile is written
    hook.close()
    (path,) = hook.paths
    profile = stepscope.load(path)
    host = profile.plane(names.HOST_PLANE)
    rows = {host.event_name(row): row for row in range(len(host.events))}
    assert set(rows) == {"long", names.STEPSCOPE_STEP}
    step_row = rows[names.STEPSCOPE_STEP]
    assert host.events.step_num[step_row] == 1
    # "long" began 2 ms before the step and is kept with its whole duration (>= 4 ms).
    assert host.events.start_ps[rows["long"]] < host.events.start_ps[step_row]
    assert host.events.duration_ps[rows["long"]] >= 4_000_000_000
    assert np.all(host.events.start_ps >= 0)
