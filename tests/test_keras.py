"""``stepscope.keras.ProfilerCallback``: real ``model.fit`` runs on each Keras 3 backend, and
its batch counting driven by hand.

Each backend runs in its own subprocess (``KERAS_BACKEND`` is read once, at ``import
keras``), which writes a JSON manifest of what the callback did. The captures use host
annotations only (``host_tracer_level=1, device_tracer_level=0``), so the profiles hold
stepscope's step markers and nothing that depends on the framework tracers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

import stepscope
import stepscope.keras
from stepscope.analysis import run_tool
from stepscope.capture.session import CaptureSession
from stepscope.capture.tracers.host import HostTracer
from stepscope.keras import _Profiling, parse_profile_batch
from stepscope.trace import names

# The fit: SAMPLES / BATCH_SIZE = 4 batches per epoch, EPOCHS = 2, so global batches 1..8
# (batch 1 of the second epoch is global batch 5).
SAMPLES, BATCH_SIZE, EPOCHS = 64, 16, 2
# A window across the epoch boundary: batches 3, 4 (epoch 1) and 5, 6 (epoch 2).
PROFILE_BATCH = (3, 6)
EXPECTED_STEPS = [3, 4, 5, 6]

_SCRIPT = textwrap.dedent(
    """
    import json, sys

    import stepscope
    import stepscope.keras
    keras_imported_early = "keras" in sys.modules  # stepscope.keras must import keras lazily
    from stepscope.keras import ProfilerCallback

    import keras
    import numpy as np

    log_dir, off_dir, manifest_path = sys.argv[1:4]
    samples, batch_size, epochs, start, stop = (int(a) for a in sys.argv[4:9])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(samples, 8)).astype("float32")
    y = rng.normal(size=(samples, 1)).astype("float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    options = stepscope.ProfilerOptions(host_tracer_level=1, device_tracer_level=0)
    callback = ProfilerCallback(log_dir, profile_batch=(start, stop), options=options)
    history = model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0, callbacks=[callback])
    off = ProfilerCallback(off_dir, profile_batch=0, options=options)
    off_history = model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0, callbacks=[off])
    tf_keras_paths = None
    if keras.backend.backend() == "tensorflow":  # the same callback through tf.keras
        import tensorflow as tf

        tf_model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
        tf_model.compile(optimizer="sgd", loss="mse")
        tf_callback = ProfilerCallback(log_dir + "_tf_keras", profile_batch=2, options=options)
        tf_model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0, callbacks=[tf_callback])
        tf_keras_paths = [str(p) for p in tf_callback.paths]
    with open(manifest_path, "w") as stream:
        json.dump(
            {
                "backend": keras.backend.backend(),
                "keras_imported_early": keras_imported_early,
                "is_keras_callback": isinstance(callback, keras.callbacks.Callback),
                "paths": [str(p) for p in callback.paths],
                "loss": history.history["loss"],
                "off_paths": [str(p) for p in off.paths],
                "off_loss": off_history.history["loss"],
                "tf_keras_paths": tf_keras_paths,
            },
            stream,
        )
    """
)

BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}  # backend -> module


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def fit_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One subprocess per backend: a profiled fit, then a fit with ``profile_batch=0``."""
    backend = request.param
    for module in ("keras", BACKENDS[backend]):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")
    root = tmp_path_factory.mktemp(f"keras_{backend}")
    script = root / "fit.py"
    script.write_text(_SCRIPT)
    log_dir, off_dir, manifest = root / "logs", root / "off", root / "manifest.json"
    src = str(Path(stepscope.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    args = [str(a) for a in (log_dir, off_dir, manifest, SAMPLES, BATCH_SIZE, EPOCHS, *PROFILE_BATCH)]
    result = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{backend} fit failed:\n{result.stdout}\n{result.stderr[-6000:]}"
    return {**json.loads(manifest.read_text()), "log_dir": log_dir, "off_dir": off_dir}


@pytest.mark.framework
def test_fit_captures_the_profiled_batches_as_steps(fit_run: dict):
    assert fit_run["is_keras_callback"] and not fit_run["keras_imported_early"]
    # Training finished normally: one loss per epoch, finite.
    assert len(fit_run["loss"]) == EPOCHS and all(loss == loss and abs(loss) < 1e6 for loss in fit_run["loss"])
    (run,) = stepscope.discover(fit_run["log_dir"])
    (host,) = run.hosts
    assert host.path.name.endswith(".xplane.pb") and host.path.parent.parent.parts[-2:] == ("plugins", "profile")
    assert [str(host.path)] == fit_run["paths"]
    profile = stepscope.load(host.path)
    profile.validate()
    overview = run_tool("overview_page", profile).to_json()
    assert overview["step_source"] == "step_num"
    # profile_batch=(3, 6), counted from 1 across epochs of 4 batches: 3, 4, 5, 6.
    assert [step["step"] for step in overview["steps"]] == EXPECTED_STEPS
    host_plane = profile.plane(names.HOST_PLANE)
    markers = [r for r in range(len(host_plane.events)) if host_plane.event_name(r) == names.STEPSCOPE_STEP]
    assert sorted(int(host_plane.events.step_num[r]) for r in markers) == EXPECTED_STEPS
    if fit_run["backend"] == "tensorflow":  # the same callback through tf.keras
        (path,) = fit_run["tf_keras_paths"]
        assert _steps(Path(path)) == [2]  # profile_batch=2: batch 2 only
    else:
        assert fit_run["tf_keras_paths"] is None


@pytest.mark.framework
def test_profile_batch_zero_writes_nothing(fit_run: dict):
    assert fit_run["off_paths"] == []
    assert not fit_run["off_dir"].exists()
    assert len(fit_run["off_loss"]) == EPOCHS  # training went on


# The callback's logic without Keras: the hooks driven as fit drives them.


@pytest.fixture
def host_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Captures with stepscope's annotation tracer only, whatever frameworks are imported."""
    monkeypatch.setattr(stepscope.keras, "CaptureSession", lambda logdir, options: CaptureSession(logdir, options, tracers=[HostTracer()]))


OPTIONS = stepscope.ProfilerOptions(host_tracer_level=1)


def _fit(callback: _Profiling, epochs: int, batches: int) -> None:
    callback.on_train_begin()
    for _ in range(epochs):
        for batch in range(batches):
            callback.on_train_batch_begin(batch)
            with stepscope.trace("train_step"):
                time.sleep(0.001)
            callback.on_train_batch_end(batch)
    callback.on_train_end()


def _steps(path: Path) -> list[int]:
    profile = stepscope.load(path)
    profile.validate()
    overview = run_tool("overview_page", profile).to_json()
    assert overview["step_source"] == "step_num"
    return [step["step"] for step in overview["steps"]]


def test_profile_batch_values():
    assert parse_profile_batch(0) == (0, 0)
    assert parse_profile_batch((0, 0)) == (0, 0)
    assert parse_profile_batch(5) == (5, 5)
    assert parse_profile_batch((2, 4)) == (2, 4)
    assert parse_profile_batch([2, 4]) == (2, 4)
    assert parse_profile_batch("10,20") == (10, 20)
    for bad in (-1, (4, 2), (0, 3), (1, 2, 3), "a,b", 2.0, True, None):
        with pytest.raises(stepscope.StepscopeError, match="profile_batch"):
            parse_profile_batch(bad)  # type: ignore[arg-type]


def test_an_int_profiles_one_batch_counted_across_epochs(tmp_path: Path, host_only: None):
    callback = _Profiling(tmp_path, profile_batch=4, options=OPTIONS)
    _fit(callback, epochs=2, batches=3)
    # 3 batches per epoch: global batch 4 is the first batch of the second epoch.
    (path,) = callback.paths
    assert _steps(path) == [4]
    host = stepscope.load(path).plane(names.HOST_PLANE)
    assert [host.event_name(r) for r in range(len(host.events))].count("train_step") == 1


def test_a_window_past_the_last_batch_stops_at_train_end_and_each_fit_counts_anew(tmp_path: Path, host_only: None):
    callback = _Profiling(tmp_path, profile_batch=(5, 99), options=OPTIONS)
    _fit(callback, epochs=2, batches=3)  # batches 1..6: the window holds 5 and 6
    _fit(callback, epochs=2, batches=3)  # counting restarts: 5 and 6 again, a second profile
    assert len(callback.paths) == 2 and len({p.parent for p in callback.paths}) == 2
    assert [_steps(p) for p in callback.paths] == [[5, 6], [5, 6]]
    _fit(callback, epochs=1, batches=4)  # never reaches batch 5: nothing written
    assert len(callback.paths) == 2


def test_profile_batch_zero_starts_nothing(tmp_path: Path, host_only: None):
    callback = _Profiling(tmp_path / "logs", profile_batch=0, options=OPTIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(callback, epochs=2, batches=3)
    assert callback.paths == [] and not (tmp_path / "logs").exists()


def test_a_capture_that_cannot_start_warns_and_training_goes_on(tmp_path: Path, host_only: None):
    other = CaptureSession(tmp_path / "other", OPTIONS, tracers=[HostTracer()])
    other.start()
    try:
        callback = _Profiling(tmp_path / "logs", profile_batch=(2, 3), options=OPTIONS)
        with pytest.warns(stepscope.ProfilerWarning, match="could not start a capture at batch 2.*already running"):
            _fit(callback, epochs=1, batches=4)
    finally:
        other.stop()
    assert callback.paths == [] and not (tmp_path / "logs").exists()
