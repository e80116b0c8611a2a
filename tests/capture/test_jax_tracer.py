"""The JAX tracer on real jax.profiler captures, run on the CPU in a subprocess.

One child process (see ``tests/support/frameworks.py``) imports JAX, runs the scenarios and
writes what it saw to a manifest: a jitted training loop of STEPS steps, each inside
``jax.profiler.StepTraceAnnotation("train", step_num=i)``, captured by ``JaxTracer``; the
same loop at ``host_tracer_level=0``; a start while the program itself is tracing with
jax.profiler; and a capture while another TSL session (what a capture through JAX's
profiler server holds) is active. ``tempfile.tempdir`` points at a folder of the test's
own in the child, so the test sees what the tracer leaves behind.
"""

from __future__ import annotations

import pytest

from stepscope.capture.tracers import jax as jax_tracer
from tests.support.frameworks import run_framework_script
from tests.support.tracers import CHILD_HELPERS, STEPS, assert_capture, check_unavailable, ours

pytestmark = pytest.mark.framework

_JAX_SCRIPT = """
import time
import jax.numpy as jnp
from jaxlib import _profiler as jaxlib_profiler
import stepscope
from stepscope.capture.tracers.jax import JaxTracer
{helpers}
STEPS = {steps}


@jax.jit
def step(w, x):
    return w - 0.01 * jax.grad(lambda w: jnp.sum((x @ w) ** 2))(w)


def train(w, x, name="train"):
    for number in range(STEPS):
        with jax.profiler.StepTraceAnnotation(name, step_num=number):
            w = step(w, x)
            w.block_until_ready()
    return w


w, x = jnp.ones((16, 4)), jnp.ones((8, 16))
manifest = {{}}

# 1. The capture: options as the session passes them by default.
tracer = JaxTracer()
manifest["available"] = tracer.is_available()
before_ns = time.time_ns()
tracer.start(ProfilerOptions())
manifest["during"] = left_behind()
w = train(w, x)
profiles = tracer.stop()
after_ns = time.time_ns()
manifest["main"] = describe(profiles, before_ns, after_ns)
manifest["after"] = left_behind()
manifest["stop_again"] = len(tracer.stop())

# 2. host_tracer_level=0 reaches TSL: no host events at all.
tracer = JaxTracer()
tracer.start(ProfilerOptions(host_tracer_level=0))
w = train(w, x)
manifest["host_off"] = describe(tracer.stop())

# 3. The program is tracing with jax.profiler itself: start fails, the program's trace
#    goes on and is written.
user_dir = OUT / "user"
jax.profiler.start_trace(str(user_dir))
tracer = JaxTracer()
try:
    tracer.start(ProfilerOptions())
    start_error = None
except StepscopeError as error:
    start_error = str(error)
busy = {{"start_error": start_error, "stop": len(tracer.stop()), "left": left_behind()}}
w = train(w, x, name="user")
jax.profiler.stop_trace()
user_files = sorted(user_dir.rglob("*.xplane.pb"))
busy["user"] = describe([stepscope.load(path) for path in user_files], name="user")
manifest["program_busy"] = busy

# 4. Another TSL session is active (a server capture holds one): jaxlib says so only at
#    stop; afterwards jax.profiler works again.
other = jaxlib_profiler.ProfilerSession()
tracer = JaxTracer()
tracer.start(ProfilerOptions())
w = train(w, x)
try:
    tracer.stop()
    stop_error = None
except StepscopeError as error:
    stop_error = str(error)
other.stop()
tsl = {{"stop_error": stop_error, "left": left_behind()}}
tracer = JaxTracer()
tracer.start(ProfilerOptions())
w = train(w, x)
tsl["next"] = describe(tracer.stop())
manifest["tsl_busy"] = tsl

(OUT / "manifest.json").write_text(json.dumps(manifest))
"""


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> dict:
    body = _JAX_SCRIPT.format(helpers=CHILD_HELPERS, steps=STEPS)
    return run_framework_script(tmp_path_factory.mktemp("jax_tracer"), "jax", "import jax", body)


def test_captures_the_steps_on_the_epoch_clock(manifest):
    assert manifest["available"] is True
    main = manifest["main"]
    assert_capture(main, jax_tracer.SOURCE)
    assert main["step_planes"] == ["/host:CPU"]
    assert manifest["stop_again"] == 0


def test_the_temporary_folder_is_gone(manifest):
    # One folder of the tracer's while it records, none once stop() returned.
    assert len(ours(manifest["during"], jax_tracer.TEMP_PREFIX)) == 1
    assert ours(manifest["after"], jax_tracer.TEMP_PREFIX) == []


def test_host_tracer_level_reaches_jax(manifest):
    assert manifest["main"]["planes"]["/host:CPU"] > 0
    off = manifest["host_off"]
    assert off["count"] == 1 and off["invalid"] is None
    assert off["planes"].get("/host:CPU", 0) == 0 and off["steps"] == []


def test_start_fails_cleanly_while_the_program_traces_with_jax(manifest):
    busy = manifest["program_busy"]
    assert busy["start_error"] is not None and "already tracing" in busy["start_error"]
    assert busy["stop"] == 0  # stop() after a failed start: nothing, no error
    assert ours(busy["left"], jax_tracer.TEMP_PREFIX) == []
    # The program's own trace was not disturbed: it holds its STEPS "user" steps.
    assert busy["user"]["count"] == 1 and busy["user"]["steps"] == list(range(STEPS))


def test_another_tsl_session_fails_at_stop_and_jax_recovers(manifest):
    tsl = manifest["tsl_busy"]
    assert tsl["stop_error"] is not None and "another profiler session" in tsl["stop_error"]
    assert ours(tsl["left"], jax_tracer.TEMP_PREFIX) == []
    nxt = tsl["next"]
    assert nxt["count"] == 1 and nxt["invalid"] is None and nxt["steps"] == list(range(STEPS))


def test_not_available_in_a_program_without_jax():
    check_unavailable("stepscope.capture.tracers.jax", "JaxTracer", "jax")
