"""The TensorFlow tracer on real tf.profiler captures, run on the CPU in subprocesses.

One child process (see ``tests/support/frameworks.py``) imports TensorFlow, runs the
scenarios and writes what it saw to a manifest: a ``tf.function`` training loop of STEPS
steps, each inside ``tf.profiler.experimental.Trace("train", step_num=i, _r=1)``, captured
by ``TensorFlowTracer``; a start while the program itself profiles with tf.profiler; and a
start while another TSL session (what a capture through TensorFlow's profiler server
holds) is active. Another child captures at host tracer levels 0, 1 and 2 with TensorFlow's
logging on and its stderr kept; a third imports TensorFlow and JAX together and runs both
tracers at once.
"""

from __future__ import annotations

import pytest

from stepscope.capture.tracers import jax as jax_tracer
from stepscope.capture.tracers import tensorflow as tf_tracer
from tests.support.frameworks import find_files, run_framework_script, tsl_xplane_pb2
from tests.support.tracers import CHILD_HELPERS, STEPS, assert_capture, check_unavailable, ours

pytestmark = pytest.mark.framework

_TF_PRELUDE = """
import time
import warnings
from tensorflow.python.profiler import profiler_v2
from tensorflow.python.profiler.internal import _pywrap_profiler
import stepscope
from stepscope.capture.tracers.tensorflow import TensorFlowTracer
{helpers}
STEPS = {steps}


@tf.function
def step(w, x):
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_sum(tf.matmul(x, w) ** 2)
    return w - 0.01 * tape.gradient(loss, w)


def train(w, x, name="train"):
    for number in range(STEPS):
        with tf.profiler.experimental.Trace(name, step_num=number, _r=1):
            w = step(w, x)
            w.numpy()
    return w


w, x = tf.ones((16, 4)), tf.ones((8, 16))
manifest = {{"version": tf.__version__}}
"""

_TF_SCRIPT = """
# 0. TensorFlow imported jax by itself (where it is installed); the JAX tracer stays out.
from stepscope.capture.tracers.jax import JaxTracer

manifest["jax_imported"] = "jax" in sys.modules
manifest["jax_tracer_available"] = JaxTracer().is_available()

# 1. The capture: options as the session passes them by default.
tracer = TensorFlowTracer()
manifest["available"] = tracer.is_available()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    before_ns = time.time_ns()
    tracer.start(ProfilerOptions())
    manifest["during"] = left_behind()
    w = train(w, x)
    profiles = tracer.stop()
    after_ns = time.time_ns()
manifest["main"] = describe(profiles, before_ns, after_ns)
manifest["main_warnings"] = [str(warning.message) for warning in caught]
manifest["after"] = left_behind()
manifest["stop_again"] = len(tracer.stop())

# 2. The program is profiling with tf.profiler itself: start fails, the program's session
#    goes on and is written.
user_dir = OUT / "user"
tf.profiler.experimental.start(str(user_dir))
tracer = TensorFlowTracer()
try:
    tracer.start(ProfilerOptions())
    start_error = None
except StepscopeError as error:
    start_error = str(error)
busy = {"start_error": start_error, "stop": len(tracer.stop()), "left": left_behind()}
w = train(w, x, name="user")
tf.profiler.experimental.stop()
busy["user"] = describe([stepscope.load(path) for path in sorted(user_dir.rglob("*.xplane.pb"))], name="user")
manifest["program_busy"] = busy

# 3. Another TSL session is active (a server capture holds one): start fails; TensorFlow's
#    failed session is not left behind as its current profiler, so a later start works.
other = _pywrap_profiler.ProfilerSession()
other.start(str(OUT / "other"), {})
tracer = TensorFlowTracer()
try:
    tracer.start(ProfilerOptions())
    start_error = None
except StepscopeError as error:
    start_error = str(error)
tsl = {
    "start_error": start_error,
    "stop": len(tracer.stop()),
    "left": left_behind(),
    "tf_holds_a_profiler": profiler_v2._profiler is not None,
}
other.export_to_tb()
tracer = TensorFlowTracer()
tracer.start(ProfilerOptions())
w = train(w, x)
tsl["next"] = describe(tracer.stop())
manifest["tsl_busy"] = tsl

(OUT / "manifest.json").write_text(json.dumps(manifest))
"""

_LEVELS_SCRIPT = """
# Host tracer levels 0, 1, 2, with descriptor 2 (where TSL logs) held in a file; each
# XSpace TensorFlow wrote is copied out before the tracer reads and removes it.
import shutil
from stepscope.capture.tracers import tensorflow as tf_module

read_folder = tf_module.read_xspace_folder
saved = os.dup(2)
with open(OUT / "stderr.txt", "wb") as err:
    os.dup2(err.fileno(), 2)
    try:
        for level in (0, 1, 2):
            into = OUT / f"level{level}"
            into.mkdir()

            def keeping(folder, source, into=into):
                for path in folder.rglob("*.xplane.pb"):
                    shutil.copy(path, into)
                return read_folder(folder, source)

            tf_module.read_xspace_folder = keeping
            tracer = TensorFlowTracer()
            tracer.start(ProfilerOptions(host_tracer_level=level))
            w = train(w, x)
            manifest[f"level{level}"] = describe(tracer.stop())
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        tf_module.read_xspace_folder = read_folder
(OUT / "manifest.json").write_text(json.dumps(manifest))
"""

_BOTH_SCRIPT = """
import jax.numpy as jnp
from stepscope.capture.tracers.jax import JaxTracer

jax_step = jax.jit(lambda v, y: v - 0.01 * jax.grad(lambda v: jnp.sum((y @ v) ** 2))(v))
v, y = jnp.ones((16, 4)), jnp.ones((8, 16))
tracers = [JaxTracer(), TensorFlowTracer()]
manifest["available"] = {tracer.name: tracer.is_available() for tracer in tracers}  # JAX has made arrays
before_ns = time.time_ns()
for tracer in tracers:  # the session's order: torch, jax, tensorflow
    tracer.start(ProfilerOptions())
for number in range(STEPS):
    with jax.profiler.StepTraceAnnotation("jax_train", step_num=number):
        v = jax_step(v, y)
        v.block_until_ready()
w = train(w, x, name="tf_train")
results = {tracer.name: tracer.stop() for tracer in reversed(tracers)}
after_ns = time.time_ns()
for name, profiles in results.items():
    manifest[name] = {
        mark: describe(profiles, before_ns, after_ns, name=mark) for mark in ("jax_train", "tf_train")
    }
manifest["after"] = left_behind()
(OUT / "manifest.json").write_text(json.dumps(manifest))
"""


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> dict:
    body = _TF_PRELUDE.format(helpers=CHILD_HELPERS, steps=STEPS) + _TF_SCRIPT
    return run_framework_script(tmp_path_factory.mktemp("tf_tracer"), "tensorflow", "import tensorflow as tf", body)


def test_captures_the_steps_on_the_epoch_clock(manifest):
    assert manifest["available"] is True
    main = manifest["main"]
    assert_capture(main, tf_tracer.SOURCE)
    assert main["step_planes"] == ["/host:CPU"]
    assert manifest["main_warnings"] == []  # the defaults are TensorFlow's: nothing to say
    assert manifest["stop_again"] == 0


def test_the_temporary_folder_is_gone(manifest):
    assert len(ours(manifest["during"], tf_tracer.TEMP_PREFIX)) == 1
    assert ours(manifest["after"], tf_tracer.TEMP_PREFIX) == []


def test_the_jax_tracer_stays_out_of_a_tensorflow_program(manifest):
    # Whether or not TensorFlow pulled jax in, a program that never used JAX gets no JAX
    # trace (whose start would initialize JAX's backend).
    assert manifest["jax_tracer_available"] is False


def test_the_levels_take_effect_and_tensorflow_logs_no_option_warning_nor_temporary_folder(tmp_path):
    body = _TF_PRELUDE.format(helpers=CHILD_HELPERS, steps=STEPS) + _LEVELS_SCRIPT
    # TensorFlow's C++ logging at its default level (the other scenarios silence it).
    levels = run_framework_script(tmp_path, "tensorflow", "import tensorflow as tf", body, switches={"TF_CPP_MIN_LOG_LEVEL": "0"})
    stderr = (tmp_path / "tensorflow_out" / "stderr.txt").read_text(errors="replace")
    assert "Profiler session started" in stderr  # TSL's INFO log was caught, so would its warnings be
    assert "expects an" not in stderr  # the options arrived as ints
    assert "Collecting XSpace to repository" not in stderr and tf_tracer.TEMP_PREFIX not in stderr
    # Host events per level, counted with TSL's own XSpace class in the file TensorFlow wrote.
    counts = {}
    for level in (0, 1, 2):
        (path,) = find_files(tmp_path / "tensorflow_out" / f"level{level}", ".xplane.pb")
        counts[level] = sum(len(line.events) for plane in read_space(path).planes if plane.name == "/host:CPU" for line in plane.lines)
        assert levels[f"level{level}"]["planes"].get("/host:CPU", 0) == counts[level]
    # level 0: the host tracer is off; 1: TraceMe level 1 only (the steps' annotations);
    # 2: TensorFlow's ops and executor too. With ints TensorFlow traced at 2 every time.
    assert counts[0] == 0 < counts[1] < counts[2]
    assert levels["level0"].get("steps", []) == []
    assert levels["level1"]["steps"] == levels["level2"]["steps"] == list(range(STEPS))


def test_start_fails_cleanly_while_the_program_profiles_with_tf(manifest):
    busy = manifest["program_busy"]
    assert busy["start_error"] is not None and "already running" in busy["start_error"]
    assert busy["stop"] == 0  # stop() after a failed start: nothing, no error
    assert ours(busy["left"], tf_tracer.TEMP_PREFIX) == []
    # The program's own session was not disturbed: it holds its STEPS "user" steps.
    assert busy["user"]["count"] == 1 and busy["user"]["steps"] == list(range(STEPS))


def test_another_tsl_session_fails_the_start_and_tf_recovers(manifest):
    tsl = manifest["tsl_busy"]
    assert tsl["start_error"] is not None and "another TensorFlow profiler session" in tsl["start_error"]
    assert tsl["stop"] == 0
    assert ours(tsl["left"], tf_tracer.TEMP_PREFIX) == []
    assert tsl["tf_holds_a_profiler"] is False
    nxt = tsl["next"]
    assert nxt["count"] == 1 and nxt["invalid"] is None and nxt["steps"] == list(range(STEPS))


def test_with_jax_in_the_process_both_record_their_own(tmp_path):
    body = _TF_PRELUDE.format(helpers=CHILD_HELPERS, steps=STEPS) + _BOTH_SCRIPT
    both = run_framework_script(tmp_path, "tensorflow_and_jax", "import tensorflow as tf\nimport jax", body)
    assert both["available"] == {"jax": True, "tensorflow": True}
    # Separate TSL copies: neither tracer fails, each sees only its framework's steps.
    assert both["jax"]["jax_train"]["steps"] == list(range(STEPS))
    assert both["jax"]["tf_train"]["steps"] == []
    assert both["tensorflow"]["tf_train"]["steps"] == list(range(STEPS))
    assert both["tensorflow"]["jax_train"]["steps"] == []
    assert_capture(both["jax"]["jax_train"], jax_tracer.SOURCE)
    assert_capture(both["tensorflow"]["tf_train"], tf_tracer.SOURCE)
    assert ours(both["after"], "stepscope-") == []


def read_space(path):
    space = tsl_xplane_pb2().XSpace()
    space.ParseFromString(path.read_bytes())
    return space


def test_not_available_in_a_program_without_tensorflow():
    check_unavailable("stepscope.capture.tracers.tensorflow", "TensorFlowTracer", "tensorflow")
