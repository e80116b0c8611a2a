"""Real JAX and TensorFlow training jobs with stepscope's profiler server, for remote captures.

Each job is a script run with this interpreter as ``python job.py OUT MODE``: it builds a
tiny model, compiles its training step, writes what the framework itself says about that
step (JAX: the compiled HLO module's text; TensorFlow: the traced graph's operations and
the concrete function's name) to ``OUT``, starts ``stepscope.start_server(0)`` (loopback
only) and writes the bound port to ``OUT/port``. Then it steps: with ``MODE == "annotated"``
each step runs inside ``stepscope.step(number)``, with ``"plain"`` there is no stepscope
annotation at all (only the server). Every step's wall-clock window (``time.time_ns()``
before and after, the output blocked on) is recorded; ``OUT/ready`` appears once a few
steps have run (compiled, server up). The job ends by itself when ``OUT/stop`` appears, or
after ``MAX_SECONDS`` / ``MAX_STEPS`` whatever happens, and writes ``OUT/job.json``.

No framework is imported into the test process: the test reads these files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

# The name of each job's training-step function (the tests derive the expected names from
# it: ``jit_<name>`` for JAX's HLO module, the tf.function's name for TensorFlow).
JAX_FUNCTION = "train_step"
TF_FUNCTION = "train_step"
# The op types a TensorFlow step runs that the test looks for: what tf.matmul and
# tf.nn.relu make in the forward graph, and Relu's gradient (ReluGrad) in the backward one.
TF_OP_TYPES = ("MatMul", "Relu", "ReluGrad")
# A job never runs past these, whatever the test does.
MAX_SECONDS = 90
MAX_STEPS = 100_000
READY_AFTER_STEPS = 3

_LOOP = """
import json, os, sys, time
from pathlib import Path

import stepscope

server = stepscope.start_server(0)  # 127.0.0.1, an ephemeral port
(OUT / "port.tmp").write_text(str(server.port))
os.replace(OUT / "port.tmp", OUT / "port")
steps = []
number = 0
deadline = time.monotonic() + {max_seconds}
while not (OUT / "stop").exists() and time.monotonic() < deadline and number < {max_steps}:
    began = time.time_ns()
    if ANNOTATED:
        with stepscope.step(number):
            one_step()
    else:
        one_step()
    steps.append([number, began, time.time_ns()])
    number += 1
    if number == {ready_after}:
        (OUT / "ready").write_text("ready")
    time.sleep(0.002)  # a gap between steps, so that each step's window is its own
(OUT / "job.json").write_text(json.dumps({{"steps": steps, "pid": os.getpid()}}))
print("job finished", number, flush=True)
"""

_PRELUDE = """
import json, sys
from pathlib import Path

OUT = Path(sys.argv[1])
ANNOTATED = sys.argv[2] == "annotated"
"""

JAX_JOB = """
import jax
import jax.numpy as jnp


def loss_fn(params, x, y):
    hidden = jnp.tanh(x @ params["w1"])
    return jnp.mean((hidden @ params["w2"] - y) ** 2)


def {function}(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss


step_fn = jax.jit({function})
k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
params = {{"w1": jax.random.normal(k1, (16, 32)) * 0.1, "w2": jax.random.normal(k2, (32, 4)) * 0.1}}
x, y = jax.random.normal(k3, (8, 16)), jnp.zeros((8, 4))
# What XLA compiles for this call, from JAX itself: the optimized HLO module's text.
(OUT / "hlo.txt").write_text(step_fn.lower(params, x, y).compile().as_text())


def one_step():
    global params
    params, loss = step_fn(params, x, y)
    loss.block_until_ready()
"""

# Sizes large enough that every MatMul, Relu and ReluGrad of the step stays "expensive"
# for TensorFlow's executor: its cost model marks kernels that run in a few thousand
# cycles inexpensive, and those are traced only at host_tracer_level 3, which TensorFlow
# 2.21 does not let a profiler ask for (measured: with 8x16 inputs, after a few hundred
# steps, tf.profiler.experimental itself records only some of the MatMuls and no Relu).
# Here the hidden layer is 256x1024: Relu takes tens of microseconds, MatMul hundreds.
TF_JOB = """
import tensorflow as tf

tf.random.set_seed(0)
w1 = tf.Variable(tf.random.normal((128, 1024), stddev=0.05), name="w1")
w2 = tf.Variable(tf.random.normal((1024, 64), stddev=0.05), name="w2")
x, y = tf.random.normal((256, 128)), tf.zeros((256, 64))


@tf.function
def {function}(x, y):
    with tf.GradientTape() as tape:
        hidden = tf.nn.relu(tf.matmul(x, w1))
        loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) - y))
    g1, g2 = tape.gradient(loss, [w1, w2])
    w1.assign_sub(0.05 * g1)
    w2.assign_sub(0.05 * g2)
    return loss


# What TensorFlow traced for this call, from TensorFlow itself: the graph's operations and
# the name of the concrete function that runs it.
concrete = {function}.get_concrete_function(x, y)
(OUT / "graph.json").write_text(json.dumps({{
    "function": concrete.function_def.signature.name,
    "ops": [[op.name, op.type] for op in concrete.graph.get_operations()],
}}))


def one_step():
    {function}(x, y).numpy()
"""


def job_script(body: str, function: str) -> str:
    loop = _LOOP.format(max_seconds=MAX_SECONDS, max_steps=MAX_STEPS, ready_after=READY_AFTER_STEPS)
    return textwrap.dedent(_PRELUDE) + textwrap.dedent(body).format(function=function) + textwrap.dedent(loop)


def job_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"})
    return env


@dataclass
class Capture:
    """What one remote capture of a job left: the client's output, the job's output and its
    record of steps, and the folder the job wrote its framework files into."""

    out: Path
    logdir: Path
    address: str
    client: subprocess.CompletedProcess
    job_rc: int
    job_stdout: str
    job_stderr: str
    steps: list[list[int]]  # [number, began ns, ended ns] of every step the job ran
    request_ns: int
    answer_ns: int

    def describe(self) -> str:
        return (
            f"client rc={self.client.returncode}\n--- client stdout ---\n{self.client.stdout[-3000:]}\n"
            f"--- client stderr ---\n{self.client.stderr[-3000:]}\n"
            f"job rc={self.job_rc}\n--- job stdout ---\n{self.job_stdout[-3000:]}\n--- job stderr ---\n{self.job_stderr[-6000:]}"
        )


def capture_job(tmp_path: Path, body: str, function: str, mode: str, duration_ms: int, ready_timeout_s: float = 180) -> Capture:
    """Runs the job, waits until it is ready, captures it with ``stepscope capture`` (a
    process of its own), stops the job and returns what happened. The job is always told
    to stop, and killed if it does not end within a minute."""
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "job.py"
    script.write_text(job_script(body, function))
    logdir = tmp_path / "logs"
    job = subprocess.Popen(
        [sys.executable, str(script), str(out), mode],
        cwd=tmp_path,
        env=job_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    client = None
    request_ns = answer_ns = 0
    address = ""
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not ((out / "ready").exists() and (out / "port").exists()) and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if (out / "ready").exists() and (out / "port").exists():
            address = f"127.0.0.1:{(out / 'port').read_text().strip()}"
            request_ns = time.time_ns()
            client = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "stepscope.cli",
                    "capture",
                    address,
                    "--logdir",
                    str(logdir),
                    "--duration-ms",
                    str(duration_ms),
                    "--attempts",
                    "2",
                ],
                capture_output=True,
                text=True,
                timeout=120,
                env=job_env(),
            )
            answer_ns = time.time_ns()
    finally:
        (out / "stop").write_text("stop")
        try:
            stdout, stderr = job.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
            stdout, stderr = job.communicate()
    if client is None:
        raise AssertionError(f"the job never became ready (rc={job.returncode}):\n--- stdout ---\n{stdout[-3000:]}\n--- stderr ---\n{stderr[-6000:]}")
    steps = json.loads((out / "job.json").read_text())["steps"] if (out / "job.json").exists() else []
    return Capture(out, logdir, address, client, job.returncode, stdout, stderr, steps, request_ns, answer_ns)
