"""Host events recorded under a Kineto GPU process are host work, not device work.

Kineto labels pid 0 ``GPU 0``; a trace recorded with Python stacks also puts
``python_function`` events (a tqdm monitor thread's ``threading.py(1032): _bootstrap``)
under pid 0 / tid 0. Every expected number below is derived in the comments from these
events (times in us):

Host (pid 100, tid 1):
  ProfilerStep#1 [0,100)
    aten::mm [10,40)  (External id 7)
      cudaLaunchKernel [15,20) (correlation 1) -> sgemm_kernel
      cudaLaunchKernel [25,30) (correlation 2) -> add_kernel
    cudaMemcpyAsync [40,50) (correlation 3)
  ProfilerStep#2 [100,200)
    aten::relu [100,110)  (External id 8)
      cudaLaunchKernel [105,108) (correlation 4) -> relu_kernel
GPU 0 (pid 0):
  tid 0, python_function: threading.py(1032): _bootstrap [0,1000)
                            tqdm/_monitor.py(60): run [1,999)
  stream 7:  sgemm_kernel [20,50) (External id 7); Memcpy HtoD [50,60); relu_kernel [110,130) (External id 8)
  stream 20: add_kernel [40,55) (External id 7)
Flows (ac2g): launch correlation 1 -> sgemm_kernel, correlation 4 -> relu_kernel.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.steps.classify import Activity, event_activities

US = 1_000_000
BOOTSTRAP = "threading.py(1032): _bootstrap"
MONITOR = "tqdm/_monitor.py(60): run"
PYTHON_LINE = "GPU 0 (0) / thread 0"


def _x(name, cat, pid, tid, ts, dur, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _flow(phase, flow_id, pid, tid, ts):
    event = {"ph": phase, "id": flow_id, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"}
    return event | ({"bp": "e"} if phase == "f" else {})


EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python3.10"}},
    {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
    {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python3.10"}},
    # The Python thread first, as it starts first: it must not take the plane or line order.
    _x(BOOTSTRAP, "python_function", 0, 0, 0, 1000, **{"Python id": 1}),
    _x(MONITOR, "python_function", 0, 0, 1, 998, **{"Python id": 2, "Python parent id": 1}),
    _x("ProfilerStep#1", "user_annotation", 100, 1, 0, 100),
    _x("aten::mm", "cpu_op", 100, 1, 10, 30, **{"External id": 7}),
    _x("cudaLaunchKernel", "cuda_runtime", 100, 1, 15, 5, correlation=1, **{"External id": 7}),
    _x("cudaLaunchKernel", "cuda_runtime", 100, 1, 25, 5, correlation=2, **{"External id": 7}),
    _x("cudaMemcpyAsync", "cuda_runtime", 100, 1, 40, 10, correlation=3),
    _x("ProfilerStep#2", "user_annotation", 100, 1, 100, 100),
    _x("aten::relu", "cpu_op", 100, 1, 100, 10, **{"External id": 8}),
    _x("cudaLaunchKernel", "cuda_runtime", 100, 1, 105, 3, correlation=4, **{"External id": 8}),
    _x("sgemm_kernel", "kernel", 0, 7, 20, 30, correlation=1, device=0, stream=7, **{"External id": 7}),
    _x("add_kernel", "kernel", 0, 20, 40, 15, correlation=2, device=0, stream=20, **{"External id": 7}),
    _x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 0, 7, 50, 10, correlation=3, device=0, stream=7, bytes=1024),
    _x("relu_kernel", "kernel", 0, 7, 110, 20, correlation=4, device=0, stream=7, **{"External id": 8}),
    _flow("s", 1, 100, 1, 15),
    _flow("f", 1, 0, 7, 20),
    _flow("s", 4, 100, 1, 105),
    _flow("f", 4, 0, 7, 110),
]


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> stepscope.Profile:
    path = tmp_path_factory.mktemp("python_on_gpu") / "python_on_gpu.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": EVENTS}))
    loaded = stepscope.load(path)
    loaded.validate()
    return loaded


def _line_events(plane, line_name: str) -> list[str]:
    rows = plane.line_slice(plane.line_index(line_name))
    return plane.metadata.name_array[plane.events.metadata_id[rows]].tolist()


def test_python_thread_of_the_gpu_process_is_a_host_line(profile):
    assert [plane.name for plane in profile.planes] == ["/host:CPU", "/device:GPU:0"]
    host, gpu = profile.planes
    # pid 100's thread keeps Kineto's name; pid 0's tid 0 is named after the GPU process.
    assert sorted(line.name for line in host.lines) == sorted(["thread 1", PYTHON_LINE])
    assert _line_events(host, PYTHON_LINE) == [BOOTSTRAP, MONITOR]
    # Only the streams stay on the GPU plane, with their stream ids.
    assert [(line.id, line.name) for line in gpu.lines] == [(7, "stream 7"), (20, "stream 20")]
    assert sorted(gpu.metadata.name_array[gpu.events.metadata_id]) == sorted(["sgemm_kernel", "add_kernel", "Memcpy HtoD (Pageable -> Device)", "relu_kernel"])


def test_launch_flows_still_reach_the_streams(profile):
    flows = profile.flows
    _host, gpu = profile.planes
    arrows = sorted(
        (profile.planes[int(s)].event_name(int(se)), profile.planes[int(d)].name, profile.planes[int(d)].event_name(int(de)))
        for s, se, d, de in zip(flows.src_plane, flows.src_event, flows.dst_plane, flows.dst_event)
    )
    assert arrows == [("cudaLaunchKernel", gpu.name, "relu_kernel"), ("cudaLaunchKernel", gpu.name, "sgemm_kernel")]
    lines = {gpu.event_name(int(de)): gpu.lines[int(gpu.events.line[int(de)])].name for de in flows.dst_event}
    assert lines == {"sgemm_kernel": "stream 7", "relu_kernel": "stream 7"}


def test_overview_device_busy_is_the_kernel_and_copy_union(profile):
    result = run_tool("overview_page", profile).to_json()
    # Device intervals [20,50) [40,55) [50,60) [110,130): union [20,60) + [110,130) = 40 + 20
    # = 60 us. With the Python thread on the GPU it was the whole 1000 us of _bootstrap.
    assert result["device"]["busy_time_us"] == 60.0
    assert [(d["device"], d["busy_time_us"]) for d in result["devices"]] == [("/device:GPU:0", 60.0)]


def test_step_device_compute_is_the_kernels_union(profile):
    step1, step2 = run_tool("overview_page", profile).to_json()["steps"]
    # Step 1 [0,100): kernels sgemm [20,50) and add [40,55): union [20,55) = 35; the H2D copy
    # [50,60) less [50,55) already claimed = 5. Step 2 [100,200): relu [110,130) = 20.
    # (With the Python thread on the GPU each step was all device compute: 100 and 100.)
    assert (step1["breakdown"]["device_compute_us"], step1["breakdown"]["host_to_device_us"]) == (35.0, 5.0)
    assert (step2["breakdown"]["device_compute_us"], step2["breakdown"]["host_to_device_us"]) == (20.0, 0.0)
    for step in (step1, step2):
        assert step["breakdown"]["device_collectives_us"] == 0.0
        assert sum(v for k, v in step["breakdown"].items() if k.endswith("_ps")) == step["step_time_ps"]


def test_kernel_stats_lists_the_kernels_only(profile):
    result = run_tool("kernel_stats", profile).to_json()
    rows = [(r["kernel_name"], r["op_name"], r["occurrences"], r["total_duration_us"]) for r in result["rows"]]
    # By total time: sgemm 30, relu 20, add 15; ops by External id (7 aten::mm, 8 aten::relu).
    # No copy, no Python function.
    assert rows == [("sgemm_kernel", "aten::mm", 1, 30.0), ("relu_kernel", "aten::relu", 1, 20.0), ("add_kernel", "aten::mm", 1, 15.0)]
    # 30 + 20 + 15.
    assert (result["total_kernel_time_ps"], result["devices"]) == (65 * US, ["/device:GPU:0"])


def test_framework_op_stats_device_rows_are_device_work(profile):
    rows = run_tool("framework_op_stats", profile).to_json()["rows"]
    device = {r["name"]: (r["occurrences"], r["total_time_us"]) for r in rows if r["host_or_device"] == "Device"}
    # sgemm 30 + add 15 under aten::mm; relu 20 under aten::relu; the copy (no External id)
    # under its own name.
    assert device == {"aten::mm": (2, 45.0), "aten::relu": (1, 20.0), "Memcpy HtoD (Pageable -> Device)": (1, 10.0)}
    assert not {BOOTSTRAP, MONITOR} & {r["name"] for r in rows}


@pytest.fixture
def old_style_profile(tmp_path: Path) -> stepscope.Profile:
    """What an older version made of the trace: the Python thread on the GPU plane, saved
    as XSpace. Built from a plain Chrome trace (no Kineto header), where a process named like
    a plane is that plane whatever its threads hold."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "/device:GPU:0"}},
        _x(BOOTSTRAP, "python_function", 1, 0, 0, 1000),
        _x("sgemm_kernel", "kernel", 1, 7, 20, 30),
        _x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 1, 7, 50, 10),
    ]
    json_path = tmp_path / "old.json"
    json_path.write_text(json.dumps({"traceEvents": events}))
    xspace_path = tmp_path / "old.xplane.pb"
    stepscope.save(stepscope.load(json_path), xspace_path)
    return stepscope.load(xspace_path)


def test_host_category_on_a_device_plane_is_not_device_work(old_style_profile):
    gpu = old_style_profile.plane("/device:GPU:0")
    activity = event_activities(gpu)
    by_name = dict(zip(gpu.metadata.name_array[gpu.events.metadata_id].tolist(), activity.tolist()))
    assert by_name == {BOOTSTRAP: Activity.NONE, "sgemm_kernel": Activity.DEVICE_COMPUTE, "Memcpy HtoD (Pageable -> Device)": Activity.HOST_TO_DEVICE}
    # Busy time is the kernel and the copy: [20,50) + [50,60) = 40 us, not _bootstrap's 1000.
    assert run_tool("overview_page", old_style_profile).to_json()["device"]["busy_time_us"] == 40.0
    assert [r["kernel_name"] for r in run_tool("kernel_stats", old_style_profile).to_json()["rows"]] == ["sgemm_kernel"]
