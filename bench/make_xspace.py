"""Makes the real XSpace the tools benchmark reads: a TensorFlow CPU training run, profiled.

A small Keras conv net is trained in a ``tf.function`` step on batches that a Python
generator makes (``tf.data.Dataset.from_generator`` -> ``map`` -> ``prefetch``), under
``tf.profiler.experimental`` with the host tracer at level 2 and the Python tracer on
(``python_tracer_level=1``); every step is a ``Trace("train", step_num=N, _r=1)``, as
Keras 2's ``fit`` marked them, so step-aware tools see the steps.

A short calibration run gives the bytes per step; the real run profiles enough steps for
about ``--target-mb`` MiB (default 10) and lands in

    bench/out/xspace_logdir/plugins/profile/<session>/<host>.xplane.pb

(the TensorBoard layout; the folder is replaced whole). The result is cached: the sidecar
``bench/out/xspace_logdir.meta.json`` records the file, its size and mtime, and a later run
with a matching sidecar does nothing (``--force`` regenerates). Takes ~10 s on 2 cores.

Needs TensorFlow (the project's test venv has tensorflow-cpu):
    .venv/bin/python bench/make_xspace.py
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LOGDIR = ROOT / "bench" / "out" / "xspace_logdir"
DEFAULT_TARGET_MB = 10.0
CALIBRATION_STEPS = 60
MiB = 1024 * 1024
BATCH = 32


@contextlib.contextmanager
def native_stderr_to(log: Path):
    """Sends fd 2 (TensorFlow's C++ logs, which no env var fully silences) to ``log``;
    on an error, puts it back and shows the log's tail."""
    sys.stderr.flush()
    saved = os.dup(2)
    with log.open("wb") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        except BaseException:
            sys.stderr.flush()
            os.dup2(saved, 2)
            tail = log.read_bytes()[-4000:].decode("utf-8", "replace")
            print(f"--- tail of {log} ---\n{tail}", file=sys.stderr)
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def meta_path(logdir: Path) -> Path:
    return logdir.with_name(logdir.name + ".meta.json")


def find_xspaces(logdir: Path) -> list[Path]:
    return sorted((logdir / "plugins" / "profile").glob("*/*.xplane.pb"))


def cached(logdir: Path) -> dict | None:
    """The sidecar's record when it describes the one XSpace now in ``logdir``."""
    try:
        meta = json.loads(meta_path(logdir).read_text())
    except (OSError, ValueError):
        return None
    found = find_xspaces(logdir)
    if len(found) != 1 or str(found[0]) != meta.get("path"):
        return None
    st = found[0].stat()
    if meta.get("size") != st.st_size or meta.get("mtime_ns") != st.st_mtime_ns:
        return None
    return meta


def build_workload():
    """(train(steps, logdir) -> seconds, versions): the model, data and profiled loop."""
    import keras
    import numpy as np
    import tensorflow as tf

    tf.random.set_seed(0)
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)

    def batches():  # the Python input code the Python tracer sees, on tf.data's thread
        while True:
            images = rng.standard_normal((BATCH, 28, 28, 1), dtype=np.float32)
            images = np.clip(images, -3.0, 3.0)
            labels = rng.integers(0, 10, size=(BATCH,))
            yield images, labels

    dataset = (
        tf.data.Dataset.from_generator(
            batches,
            output_signature=(tf.TensorSpec((BATCH, 28, 28, 1), tf.float32), tf.TensorSpec((BATCH,), tf.int64)),
        )
        .map(lambda x, y: (x * 0.5, y))
        .prefetch(2)
    )
    model = keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    optimizer = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    iterator = iter(dataset)
    for _ in range(3):  # trace and compile outside the profile
        train_step(*next(iterator))

    options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=2, python_tracer_level=1)

    def train(steps: int, logdir: Path) -> float:
        t0 = time.perf_counter()
        tf.profiler.experimental.start(str(logdir), options=options)
        try:
            for step in range(steps):
                with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
                    x, y = next(iterator)
                    train_step(x, y)
        finally:
            tf.profiler.experimental.stop()
        return time.perf_counter() - t0

    return train, {"tensorflow": tf.__version__, "keras": keras.__version__}


def generate(logdir: Path, target_mb: float) -> tuple[int, float, dict]:
    """Calibrates, profiles the real run, moves its session into ``logdir``."""
    train, versions = build_workload()
    with tempfile.TemporaryDirectory(prefix="make_xspace.", dir=logdir.parent) as scratch:
        calibration = Path(scratch) / "calibration"
        train(CALIBRATION_STEPS, calibration)
        (calibration_file,) = find_xspaces(calibration)
        per_step = calibration_file.stat().st_size / CALIBRATION_STEPS
        steps = math.ceil(target_mb * MiB / per_step)
        print(
            f"calibration: {per_step / 1024:.1f} KiB per step -> profiling {steps:,} steps (tensorflow {versions['tensorflow']}, keras {versions['keras']})",
            flush=True,
        )
        final = Path(scratch) / "final"
        seconds = train(steps, final)
        (made,) = find_xspaces(final)
        meta_path(logdir).unlink(missing_ok=True)
        if logdir.exists():
            shutil.rmtree(logdir)
        session = logdir / "plugins" / "profile" / made.parent.name
        session.parent.mkdir(parents=True)
        shutil.move(str(made.parent), str(session))
    return steps, seconds, versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", type=Path, default=DEFAULT_LOGDIR)
    parser.add_argument("--target-mb", type=float, default=DEFAULT_TARGET_MB, help="about how many MiB the XSpace should have (default 10)")
    parser.add_argument("--force", action="store_true", help="regenerate even if cached")
    args = parser.parse_args(argv)
    logdir: Path = args.logdir.resolve()

    if not args.force and (meta := cached(logdir)):
        print(f"{meta['path']}: cached, {meta['size'] / MiB:.1f} MiB, {meta['steps']:,} steps")
        return 0

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("GLOG_minloglevel", "3")
    if importlib.util.find_spec("tensorflow") is None:
        print("make_xspace.py needs tensorflow; run it with the project's .venv python", file=sys.stderr)
        return 2

    t_start = time.perf_counter()
    logdir.parent.mkdir(parents=True, exist_ok=True)
    with native_stderr_to(logdir.with_name("make_xspace.log")):
        steps, seconds, versions = generate(logdir, args.target_mb)

    (out,) = find_xspaces(logdir)
    st = out.stat()
    meta = {
        "path": str(out),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "steps": steps,
        "batch": BATCH,
        "options": {"host_tracer_level": 2, "python_tracer_level": 1},
        **versions,
        "profile_s": round(seconds, 2),
        "generation_s": round(time.perf_counter() - t_start, 2),
    }
    meta_path(logdir).write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{out}: {st.st_size / MiB:.1f} MiB, {steps:,} steps, generated in {meta['generation_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
