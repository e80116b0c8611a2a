"""Remote capture across implementations, with real processes on a private loopback.

Both ways round:

* ``stepscope capture`` captures a job running JAX's profiler server
  (``jax.profiler.start_server``) and one running TensorFlow's
  (``tf.profiler.experimental.server.start``);
* TensorFlow's client (``tf.profiler.experimental.client.trace``) and XProf's
  (``xprof.convert._pywrap_profiler_plugin.trace``, what XProf's "Capture profile" button
  calls, without any web server) capture a job running ``stepscope.start_server``.

JAX's and TensorFlow's servers listen on every interface, so each scenario (job and client)
runs in a network namespace of its own (``unshare -n``) where only loopback exists: nothing
is exposed, and a fixed port is always free. A driver script, run inside the namespace,
starts the job, waits until it is stepping and its port answers, runs the client, tells the
job to stop and writes a manifest; the test reads the files the capture wrote (the
filesystem is shared) with stepscope and checks them against what the job did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from tests.support.frameworks import find_files
from tests.support.namespaces import NAMESPACE_PROBLEM

pytestmark = pytest.mark.framework

PORT = 9012  # free in every fresh namespace
CAPTURE_MS = 800
# How far a step event may lie outside the job's own record of that step.
CLOCK_SLACK_NS = 2_000_000


needs_namespace = pytest.mark.skipif(
    NAMESPACE_PROBLEM is not None,
    reason=f"JAX's and TensorFlow's profiler servers listen on every interface; these tests run them only in a private network namespace: {NAMESPACE_PROBLEM}",
)

# --- the jobs: each steps until told to stop, and records every step it ran -----------------

# Shared tail of every job: the loop, the ready file (written once a step has run, so
# compilation is done and the server is up) and the record of steps with wall-clock times.
_JOB_LOOP = """
import json, os, sys, time
from pathlib import Path
out = Path(sys.argv[1])
steps = []
number = 0
while not (out / "stop").exists():
    began = time.time_ns()
    one_step(number)
    steps.append([number, began, time.time_ns()])
    if number == 2:
        (out / "ready").write_text("ready")
    number += 1
    if number > 100_000:  # never runs forever
        break
(out / "job.json").write_text(json.dumps({"steps": steps, "pid": os.getpid()}))
print("job finished", number, flush=True)
"""

JAX_JOB = """
import time
import jax, jax.numpy as jnp
jax.profiler.start_server({port})

@jax.jit
def update(w, x):
    return w - 0.01 * jax.grad(lambda w: jnp.sum((x @ w) ** 2))(w)

w, x = jnp.ones((32, 8)), jnp.ones((16, 32))

def one_step(number):
    global w
    with jax.profiler.StepTraceAnnotation("train", step_num=number):
        w = update(w, x)
        w.block_until_ready()
        time.sleep(0.004)
"""

TF_JOB = """
import time
import tensorflow as tf
tf.profiler.experimental.server.start({port})
w = tf.Variable(tf.ones((32, 8)))
x = tf.ones((16, 32))

@tf.function
def update():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.matmul(x, w) ** 2)
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss

def one_step(number):
    with tf.profiler.experimental.Trace("train", step_num=number, _r=1):
        update()
        time.sleep(0.004)
"""

STEPSCOPE_JOB = """
import time
import stepscope
server = stepscope.start_server({port})

def one_step(number):
    with stepscope.step(number):
        with stepscope.trace("compute"):
            time.sleep(0.004)
"""

# --- the clients: each run as ``python -c CLIENT ADDRESS LOGDIR DURATION_MS`` ---------------

STEPSCOPE_CLIENT = """
import sys
from stepscope.cli import main
address, logdir, duration = sys.argv[1:4]
sys.exit(main(["capture", address, "--logdir", logdir, "--duration-ms", duration, "--attempts", "2"]))
"""

TF_CLIENT = """
import sys
import tensorflow as tf
address, logdir, duration = sys.argv[1:4]
tf.profiler.experimental.client.trace("grpc://" + address, logdir, int(duration), num_tracing_attempts=2)
print("tf client done", flush=True)
"""

XPROF_CLIENT = """
import sys
from xprof.convert import _pywrap_profiler_plugin
address, logdir, duration = sys.argv[1:4]
# As XProf's capture route calls it (profile_plugin.capture_route_impl), with its defaults.
options = {"host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 0, "delay_ms": 0}
_pywrap_profiler_plugin.trace(address, logdir, "", True, int(duration), 2, options)
print("xprof client done", flush=True)
"""

# --- the driver, run inside the namespace -----------------------------------------------------

DRIVER = """
import json, os, socket, subprocess, sys, time
from pathlib import Path

out, job_script, client_script, port, duration = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
address = f"127.0.0.1:{port}"
manifest = {"address": address}
job = subprocess.Popen([sys.executable, job_script, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    deadline = time.monotonic() + 120
    while not (out / "ready").exists() and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    ready = (out / "ready").exists()
    while ready and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    manifest["ready"] = ready
    if ready:
        manifest["request_ns"] = time.time_ns()
        client = subprocess.run([sys.executable, "-c", client_script, address, str(out / "logs"), duration], capture_output=True, text=True, timeout=180)
        manifest["answer_ns"] = time.time_ns()
        manifest["client"] = {"rc": client.returncode, "stdout": client.stdout[-4000:], "stderr": client.stderr[-4000:]}
finally:
    (out / "stop").write_text("stop")
    try:
        stdout, stderr = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        stdout, stderr = job.communicate()
manifest["job"] = {"rc": job.returncode, "stdout": stdout[-4000:], "stderr": stderr[-4000:]}
(out / "manifest.json").write_text(json.dumps(manifest))
"""


def run_scenario(tmp_path: Path, job: str, client: str, duration_ms: int = CAPTURE_MS) -> dict:
    """Runs ``job`` and ``client`` in a fresh network namespace; returns the driver's manifest
    with the job's own record (``steps``: [number, start ns, end ns]) under ``job_steps``."""
    out = tmp_path / "out"
    out.mkdir()
    job_script = tmp_path / "job.py"
    job_script.write_text(textwrap.dedent(job).format(port=PORT) + textwrap.dedent(_JOB_LOOP))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = dict(os.environ)
    env.update({"JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"})
    command = 'ip link set lo up && exec "$0" "$@"'  # the namespace's loopback, then the driver
    args = [sys.executable, str(driver), str(out), str(job_script), textwrap.dedent(client), str(PORT), str(duration_ms)]
    done = subprocess.run(["unshare", "-n", "sh", "-c", command, *args], capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert done.returncode == 0, f"driver failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["ready"], f"the job never became ready:\n{manifest['job']}"
    assert manifest["job"]["rc"] == 0, manifest["job"]
    manifest["job_steps"] = json.loads((out / "job.json").read_text())["steps"]
    manifest["logs"] = out / "logs"
    return manifest


def step_marks(profile: stepscope.Profile, name: str) -> list[tuple[int, int]]:
    """(start ps, step_num) of every event named ``name``, in time order."""
    return sorted(
        (int(plane.events.start_ps[row]), int(plane.events.step_num[row]))
        for plane in profile.planes
        for row in range(len(plane.events))
        if plane.event_name(row) == name
    )


def check_capture(manifest: dict, name: str) -> stepscope.Profile:
    """The file the profiler server wrote, ``<logdir>/plugins/profile/<session>/<host>.xplane.pb``
    (every client here names the host after the address, ``127.0.0.1_PORT``): it loads,
    validates, and holds a run of consecutive steps of the job, named ``name``, each where
    the job says that step ran."""
    host = manifest["address"].replace(":", "_")
    sessions = sorted((manifest["logs"] / "plugins" / "profile").iterdir())
    assert len(sessions) == 1, sessions
    path = sessions[0] / f"{host}.xplane.pb"
    assert path.is_file(), sorted(sessions[0].iterdir())
    profile = stepscope.load(path)
    profile.validate()
    marks = step_marks(profile, name)
    numbers = [number for _, number in marks]
    # ~CAPTURE_MS of a loop of ~5 ms steps: dozens of steps, in order, all ones the job ran.
    assert len(numbers) >= 10, numbers
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers
    ran_at = {number: (began, ended) for number, began, ended in manifest["job_steps"]}
    assert set(numbers) <= set(ran_at)
    # Each step event lies where the job says that step ran (same machine, same clock), and
    # between the client's request and its answer.
    for start_ps, number in marks:
        at_ns = profile.start_ns + start_ps // 1000
        began, ended = ran_at[number]
        assert began - CLOCK_SLACK_NS <= at_ns <= ended + CLOCK_SLACK_NS, (number, at_ns - began, ended - began)
        assert manifest["request_ns"] <= at_ns <= manifest["answer_ns"]
    overview = run_tool("overview_page", profile).to_json()
    assert overview["step_source"] == "step_num" and len(overview["steps"]) >= 10, overview["step_source"]
    return profile


def check_one_host(manifest: dict) -> None:
    """One capture of one job is one host: the session folder holds ``<host>.xplane.pb`` and
    nothing else, as TSL's own servers leave it, so XProf and ``stepscope.discover`` list one
    host. (TSL's clients, TensorFlow's and XProf's, also write each ``tool_data`` entry of the
    response to ``<session>/<host>.<tool name>``: a server returning the XSpace must name it so
    that this lands on ``<host>.xplane.pb``, not on a second, differently named file.)"""
    host = manifest["address"].replace(":", "_")
    files = find_files(manifest["logs"], "")
    assert [(path.parent.parent.relative_to(manifest["logs"]).as_posix(), path.name) for path in files] == [("plugins/profile", f"{host}.xplane.pb")], [
        path.relative_to(manifest["logs"]).as_posix() for path in files
    ]
    (run,) = stepscope.discover(manifest["logs"])
    assert [found.name for found in run.hosts] == [host]


@needs_namespace
@pytest.mark.parametrize("job", [JAX_JOB, TF_JOB], ids=["jax", "tensorflow"])
def test_stepscope_capture_of_a_framework_server(tmp_path: Path, job: str):
    manifest = run_scenario(tmp_path, job, STEPSCOPE_CLIENT)
    client = manifest["client"]
    assert client["rc"] == 0, client
    assert f"{manifest['address']}: ok" in client["stdout"], client
    check_capture(manifest, "train")
    check_one_host(manifest)


@needs_namespace
def test_tensorflow_client_captures_a_stepscope_server(tmp_path: Path):
    manifest = run_scenario(tmp_path, STEPSCOPE_JOB, TF_CLIENT)
    client = manifest["client"]
    assert client["rc"] == 0 and "tf client done" in client["stdout"], client
    check_capture(manifest, "stepscope.step")
    check_one_host(manifest)


@needs_namespace
def test_xprof_client_captures_a_stepscope_server(tmp_path: Path):
    manifest = run_scenario(tmp_path, STEPSCOPE_JOB, XPROF_CLIENT)
    client = manifest["client"]
    assert client["rc"] == 0 and "xprof client done" in client["stdout"], client
    check_capture(manifest, "stepscope.step")
    check_one_host(manifest)
