"""The tiny JAX and TensorFlow training loops the framework tests run in a child process
(``frameworks.run_framework_script``), each under the framework's own profiler, as a
user would capture: ``jax.profiler.trace`` with ``StepTraceAnnotation``,
``tf.profiler.experimental`` with ``Trace(..., step_num=...)``. Each script writes its
logdir, steps and wall-clock window to ``manifest.json``. The trace tests read what the
profilers wrote; the analysis tests edit a loop and compare the tools with XProf's.
"""

from __future__ import annotations


def edited(body: str, *edits: tuple[str, str]) -> str:
    """A loop ``body`` with ``edits`` (old, new) made; each must apply."""
    for old, new in edits:
        assert old in body, old
        body = body.replace(old, new)
    return body


# The step numbers the JAX and TF scripts pass; deliberately not 0..n-1, so that a step
# number cannot be confused with an index.
STEPS = [10, 11, 12]


# --- JAX ----------------------------------------------------------------------------------------

JAX_IMPORTS = """
import jax
import jax.numpy as jnp
"""

JAX_BODY = f"""
STEPS = {STEPS!r}

def loss_fn(w, x):
    return jnp.tanh(x @ w).sum()

@jax.jit
def train_step(w, x):
    loss, grad = jax.value_and_grad(loss_fn)(w, x)
    return w - 0.01 * grad, loss

w, x = jnp.ones((32, 32)), jnp.ones((8, 32))
w, _ = train_step(w, x)  # compile outside the profile
w.block_until_ready()
logdir = OUT / "logdir"
t0_ns = time.time_ns()
with jax.profiler.trace(str(logdir)):
    for step in STEPS:
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            w, loss = train_step(w, x)
            w.block_until_ready()
t1_ns = time.time_ns()
(OUT / "manifest.json").write_text(json.dumps({{
    "logdir": str(logdir), "steps": STEPS, "t0_ns": t0_ns, "t1_ns": t1_ns,
}}))
"""


# --- TensorFlow ---------------------------------------------------------------------------------

TF_IMPORTS = """
import tensorflow as tf
"""

TF_BODY = f"""
STEPS = {STEPS!r}
w = tf.Variable(tf.ones((16, 4)))
x = tf.ones((8, 16))

@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.tanh(tf.matmul(x, w)))
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss

train_step(x)  # trace and compile outside the profile
logdir = OUT / "logdir"
t0_ns = time.time_ns()
tf.profiler.experimental.start(str(logdir))
for step in STEPS:
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        train_step(x)
tf.profiler.experimental.stop()
t1_ns = time.time_ns()
(OUT / "manifest.json").write_text(json.dumps({{
    "logdir": str(logdir), "steps": STEPS, "t0_ns": t0_ns, "t1_ns": t1_ns,
}}))
"""
