"""The PyTorch tracer, with real torch.profiler runs on the CPU in the test process.

torch is imported by a fixture, not at collection, so the other tests of the session see a
process without torch until these run (the tracer's availability depends on that).
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import stepscope
from stepscope.capture.options import ProfilerOptions
from stepscope.capture.tracers import torch as torch_tracer
from stepscope.capture.tracers.torch import TorchTracer
from stepscope.errors import StepscopeError
from stepscope.trace import names
from stepscope.trace.model import NO_ID, Plane, Profile

pytestmark = pytest.mark.framework

# The model: LAYERS Linear layers (with bias) and a ReLU between each pair.
LAYERS = 3
WIDTHS = [6, 8, 5, 2]  # in_features of layer i is WIDTHS[i], out_features WIDTHS[i + 1]
BATCH = 4
STEPS = 3


@pytest.fixture(scope="module")
def torch():
    import torch as module

    module.manual_seed(0)
    return module


@pytest.fixture
def scratch(tmp_path, monkeypatch) -> Path:
    """The folder tempfile hands out, so that the test sees what the tracer leaves behind."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _model(torch):
    layers = []
    for index in range(LAYERS):
        layers.append(torch.nn.Linear(WIDTHS[index], WIDTHS[index + 1]))
        if index < LAYERS - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def _train(torch, model, steps: int = STEPS) -> None:
    x, y = torch.randn(BATCH, WIDTHS[0]), torch.randn(BATCH, WIDTHS[-1])
    for _ in range(steps):
        with torch.profiler.record_function("step"):
            model.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()


def _capture(torch, options: ProfilerOptions) -> tuple[list[Profile], int, int]:
    """Builds the model, then runs STEPS steps under the tracer; returns what stop() gave
    and time.time_ns() taken just before start() and just after stop()."""
    model = _model(torch)
    tracer = TorchTracer()
    before_ns = time.time_ns()
    tracer.start(options)
    _train(torch, model)
    profiles = tracer.stop()
    after_ns = time.time_ns()
    return profiles, before_ns, after_ns


def _rows_named(plane: Plane, name: str) -> list[int]:
    return [row for row in range(len(plane.events)) if plane.event_name(row) == name]


def _root(plane: Plane, row: int) -> int:
    while int(plane.events.parent[row]) != NO_ID:
        row = int(plane.events.parent[row])
    return row


def _stat(plane: Plane, row: int, name: str):
    for stat in plane.event_stats(row):
        if stat.name == name:
            return stat.value
    raise AssertionError(f"{plane.event_name(row)} has no stat {name!r}")


def _left_behind(folder: Path) -> list[Path]:
    """The tracer's temporary folders still in ``folder``."""
    return sorted(folder.glob(torch_tracer.TEMP_PREFIX + "*"))


def _assert_in_window(profile: Profile, before_ns: int, after_ns: int) -> None:
    # Kineto's baseTimeNanoseconds + ts is a UNIX epoch time: time 0 (the first event) and
    # the end of the last event fall between the clock readings around start() and stop().
    assert before_ns <= profile.start_ns <= after_ns, f"start_ns {profile.start_ns} is not inside the capture window [{before_ns}, {after_ns}]"
    assert profile.start_ns + profile.span_ps // 1000 <= after_ns


def test_host_level_2_records_the_model_ops(torch, scratch):
    profiles, before_ns, after_ns = _capture(torch, ProfilerOptions(host_tracer_level=2))

    assert len(profiles) == 1
    profile = profiles[0]
    profile.validate()
    assert profile.format == "kineto"
    assert profile.source == torch_tracer.SOURCE
    _assert_in_window(profile, before_ns, after_ns)
    # No accelerator here: the host plane (and Kineto's own spans), no device plane.
    assert profile.plane(names.HOST_PLANE) is not None
    assert profile.device_planes == []

    host = profile.plane(names.HOST_PLANE)
    counts = collections.Counter(host.event_name(row) for row in range(len(host.events)))
    # One "step" range per step.
    assert counts["step"] == STEPS
    # A Linear with a bias on a 2-D input runs aten::linear -> aten::addmm once per forward;
    # its backward (AddmmBackward0) runs aten::mm and aten::sum, never addmm; mse_loss and
    # ReLU run none. So LAYERS x STEPS = 3 x 3 = 9 addmm, and as many aten::linear.
    assert counts["aten::addmm"] == LAYERS * STEPS
    assert counts["aten::linear"] == LAYERS * STEPS
    # ReLU between layers: LAYERS - 1 per step, forward, and as many threshold_backward.
    assert counts["aten::relu"] == (LAYERS - 1) * STEPS
    assert counts["aten::threshold_backward"] == (LAYERS - 1) * STEPS
    # Level 2 is ops without the verbose extras: no Python stacks, no memory events.
    categories = {host.metadata.categories[int(m)] for m in host.events.metadata_id}
    assert "python_function" not in categories
    assert counts["[memory]"] == 0

    # Each forward addmm nests under a "step" range: LAYERS of them under each step.
    steps = sorted(_rows_named(host, "step"), key=lambda row: int(host.events.start_ps[row]))
    per_step = collections.Counter(_root(host, row) for row in _rows_named(host, "aten::addmm"))
    assert per_step == dict.fromkeys(steps, LAYERS)

    # The trace went through a temporary folder of tempfile's, which is gone now (torch
    # itself may leave its own caches there, e.g. torchinductor_<user>).
    trace_file = Path(profile.info["traceName"])
    assert trace_file.parent.parent == scratch
    assert not trace_file.parent.exists()
    assert _left_behind(scratch) == []


def test_host_level_3_adds_shapes_stacks_and_memory(torch, scratch):
    profiles, before_ns, after_ns = _capture(torch, ProfilerOptions(host_tracer_level=3))

    [profile] = profiles
    profile.validate()
    _assert_in_window(profile, before_ns, after_ns)
    assert profile.info["record_shapes"] == 1 and profile.info["profile_memory"] == 1
    assert profile.info["with_flops"] == 1
    host = profile.plane(names.HOST_PLANE)
    addmm = sorted(_rows_named(host, "aten::addmm"), key=lambda row: int(host.events.start_ps[row]))
    assert len(addmm) == LAYERS * STEPS
    # record_shapes: addmm(bias, input, weight.t()) of the first layer of the first step has
    # bias [8], input [BATCH, 6] and the transposed weight [6, 8] (then two scalars).
    dims = _stat(host, addmm[0], "Input Dims")
    dims = json.loads(dims) if isinstance(dims, str) else dims
    assert dims[:3] == [[WIDTHS[1]], [BATCH, WIDTHS[0]], [WIDTHS[0], WIDTHS[1]]]
    # with_stack: Python frames; profile_memory: allocation events.
    categories = collections.Counter(host.metadata.categories[int(m)] for m in host.events.metadata_id)
    assert categories["python_function"] > 0
    assert _rows_named(host, "[memory]")
    assert _left_behind(scratch) == []


@pytest.mark.parametrize("host_level", [0, 1])
def test_host_levels_below_2_trace_no_torch_ops(torch, scratch, host_level):
    # Level 1 is annotations only (stepscope's own tracer records them) and 0 is off; with
    # no accelerator here the device level asks for nothing either: nothing starts.
    tracer = TorchTracer()
    tracer.start(ProfilerOptions(host_tracer_level=host_level, device_tracer_level=1))
    assert not torch.autograd._profiler_enabled()
    _train(torch, _model(torch))
    assert tracer.stop() == []
    assert _left_behind(scratch) == []


def test_a_host_level_1_session_adds_nothing_to_the_loop_but_its_annotations(torch, tmp_path):
    # What a level-1 capture of a torch program costs per step is the step annotation alone
    # (bench/overhead.py measures it): no torch profiler on, no Python profile or trace hook,
    # no thread of its own (in Python or the OS) while the loop runs.
    model = _model(torch)
    _train(torch, model, steps=1)  # torch's own threads, if any, start before the counts
    os_threads, threads, hooks = len(os.listdir("/proc/self/task")), threading.active_count(), (sys.getprofile(), sys.gettrace())
    with stepscope.profile(tmp_path, ProfilerOptions(host_tracer_level=1)):
        for number in range(STEPS):
            with stepscope.step(number):
                _train(torch, model, steps=1)
        assert not torch.autograd._profiler_enabled()
        assert (sys.getprofile(), sys.gettrace()) == hooks
        assert threading.active_count() == threads
        assert len(os.listdir("/proc/self/task")) == os_threads


def test_stop_without_start_and_twice(torch):
    tracer = TorchTracer()
    assert tracer.stop() == []
    tracer.start(ProfilerOptions())
    _train(torch, _model(torch), steps=1)
    assert len(tracer.stop()) == 1
    assert tracer.stop() == []
    assert not torch.autograd._profiler_enabled()


def test_start_twice_raises_and_keeps_the_first(torch):
    tracer = TorchTracer()
    tracer.start(ProfilerOptions())
    try:
        with pytest.raises(StepscopeError, match="already recording"):
            tracer.start(ProfilerOptions())
        _train(torch, _model(torch), steps=1)
    finally:
        profiles = tracer.stop()
    [profile] = profiles
    assert len(_rows_named(profile.plane(names.HOST_PLANE), "aten::addmm")) == LAYERS


def test_a_program_profiler_already_running_fails_start_and_is_left_alone(torch):
    # torch would start a second profiler inside the program's own without complaint and
    # stop the program's when stopped: the tracer refuses to start instead.
    model = _model(torch)
    tracer = TorchTracer()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as own:
        with pytest.raises(StepscopeError, match="already running"):
            tracer.start(ProfilerOptions())
        assert tracer.stop() == []  # after a failed start: no second error
        _train(torch, model, steps=1)
    # The program's profiler still recorded its step: one addmm per layer.
    assert sum(1 for event in own.events() if event.name == "aten::addmm") == LAYERS


def test_is_available_once_torch_is_imported(torch):
    assert TorchTracer.name == "torch"
    assert TorchTracer().is_available()


def test_is_available_is_false_in_a_program_without_torch():
    # A fresh interpreter that imports only the tracer module: torch must stay unimported.
    script = textwrap.dedent(
        """
        import json, sys
        from stepscope.capture.tracers.torch import TorchTracer
        available = TorchTracer().is_available()
        print(json.dumps({"available": available, "torch_imported": "torch" in sys.modules}))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"available": False, "torch_imported": False}


# --- which activities the options ask for, with a fake torch for the accelerators ------------


def _fake_torch(torch, accelerator: str | None, supported: set, private_use: str = "privateuseone"):
    activity = torch.profiler.ProfilerActivity
    fake_accelerator = SimpleNamespace(
        is_available=lambda: accelerator is not None,
        current_accelerator=lambda: None if accelerator is None else SimpleNamespace(type=accelerator),
    )
    fake_torch = SimpleNamespace(
        accelerator=fake_accelerator,
        _C=SimpleNamespace(_get_privateuse1_backend_name=lambda: private_use),
        cuda=SimpleNamespace(is_available=lambda: accelerator == "cuda"),
    )
    fake_profiler = SimpleNamespace(ProfilerActivity=activity, supported_activities=lambda: supported)
    return fake_torch, fake_profiler


@pytest.mark.parametrize(
    ("accelerator", "host", "device", "expected"),
    [
        (None, 2, 1, ["CPU"]),
        ("cuda", 2, 1, ["CPU", "CUDA"]),
        ("cuda", 3, 0, ["CPU"]),
        ("cuda", 1, 1, ["CUDA"]),  # annotations-only host level still traces the device
        ("cuda", 0, 1, ["CUDA"]),
        ("cuda", 1, 0, []),
        ("xpu", 2, 1, ["CPU", "XPU"]),
        ("mps", 2, 1, ["CPU"]),  # Kineto has no MPS activity
        ("npu", 2, 1, ["CPU", "PrivateUse1"]),  # an out-of-tree backend registered as PrivateUse1
    ],
)
def test_activities(torch, accelerator, host, device, expected):
    activity = torch.profiler.ProfilerActivity
    supported = {activity.CPU, activity.CUDA, activity.XPU, activity.PrivateUse1}
    fake_torch, fake_profiler = _fake_torch(torch, accelerator, supported, private_use="npu")
    options = ProfilerOptions(host_tracer_level=host, device_tracer_level=device)
    assert torch_tracer._activities(fake_torch, fake_profiler, options) == [getattr(activity, n) for n in expected]


def test_activities_kineto_does_not_support_are_left_out(torch):
    activity = torch.profiler.ProfilerActivity
    fake_torch, fake_profiler = _fake_torch(torch, "cuda", {activity.CPU})  # CUDA without CUPTI
    assert torch_tracer._activities(fake_torch, fake_profiler, ProfilerOptions()) == [activity.CPU]
