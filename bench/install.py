"""What ``pip install stepscope`` does to an environment, beside what a user installs
otherwise (XProf's TensorBoard plugin), and whether it leaves the user's frameworks as they were.

Each case is a fresh venv (the wheel of ``make dist``; nothing on PATH but the venv's bin/):

- ``stepscope``: the wheel alone: what it adds on disk (MB of site-packages beyond an empty
  venv's pip), by distribution;
- ``xprof``: ``pip install xprof`` alone, the Profile tab's plugin (the anchor);
- ``torch``, ``jax``, ``tensorflow``: the framework first (torch pinned to the CPU build),
  then the wheel: every distribution the framework brought must keep its version (pip may
  add, never change), and the README's snippet for that framework must capture a profile
  whose steps stepscope then reports;
- ``protobuf-oldest``, ``protobuf-newest``: the oldest protobuf stepscope accepts and the
  newest there is, installed first, kept as they are, and a capture read back.

Goals: the wheel changes nothing a framework installed; its footprint at most XProf's.

Run: ``.venv/bin/python bench/install.py [--cases a,b]`` after ``make dist`` (``make bench``
does both). Writes bench/out/install.json. Minutes: each framework is installed afresh.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from goals import VALUE_OVER_ANCHOR, goal

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "install.json"
DIST = ROOT / "dist"
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)
OLDEST_PROTOBUF = "protobuf==5.26.1"

# The README's snippets, each ending with the profile's path on stdout.
PLAIN_JOB = """
import time, stepscope
with stepscope.profile("logs") as session:
    for number in range(5):
        with stepscope.step(number):
            time.sleep(0.002)
print(session.path)
"""
TORCH_JOB = """
import torch, stepscope
data = torch.utils.data.TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
loader = torch.utils.data.DataLoader(data, batch_size=32)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with stepscope.profile("logs") as session:
    for number, (x, y) in enumerate(stepscope.data.instrument(loader, name="train")):
        with stepscope.step(number):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
print(session.path)
"""
JAX_JOB = """
import jax, jax.numpy as jnp, stepscope

@jax.jit
def train_step(w, x):
    return w - 0.01 * jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)

w, x = jnp.ones((256, 256)), jnp.ones((128, 256))
with stepscope.profile("logs") as session:
    for number in range(10):
        with stepscope.step(number):
            w = train_step(w, x).block_until_ready()
print(session.path)
"""
TF_JOB = """
import tensorflow as tf, stepscope
model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(10)])
optimizer = tf.keras.optimizers.SGD(0.1)
features, labels = tf.random.normal((320, 16)), tf.random.uniform((320,), maxval=10, dtype=tf.int32)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(32)

@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(y, model(x), from_logits=True))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))

with stepscope.profile("logs") as session:
    for number, (x, y) in enumerate(stepscope.data.instrument(dataset, name="train")):
        with stepscope.step(number):
            train_step(x, y)
print(session.path)
"""


@dataclass
class Case:
    name: str
    first: list[str]  # installed before the wheel (the user's environment)
    job: str | None  # run after the wheel is installed
    steps: int = 0  # the steps the job's profile must report
    wheel: bool = True
    result: dict = field(default_factory=dict)


CASES = [
    Case("stepscope", [], PLAIN_JOB, 5),
    Case("xprof", ["xprof"], None, wheel=False),
    Case("torch", ["torch==2.13.0"], TORCH_JOB, 16),
    Case("jax", ["jax"], JAX_JOB, 10),
    Case("tensorflow", ["tensorflow-cpu"], TF_JOB, 10),
    Case("protobuf-oldest", [OLDEST_PROTOBUF], PLAIN_JOB, 5),
    Case("protobuf-newest", ["protobuf"], PLAIN_JOB, 5),
]


def env_of(venv: Path) -> dict[str, str]:
    kept = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**kept, "PATH": str(venv / "bin"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def run(venv: Path, *args: str, cwd: Path | None = None, timeout: float = 1800) -> str:
    done = subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True, env=env_of(venv), cwd=cwd, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-1500:]}")
    return done.stdout


def freeze(venv: Path) -> dict[str, str]:
    lines = run(venv, "python", "-m", "pip", "list", "--format=freeze").splitlines()
    return {name.lower(): version for name, _, version in (line.partition("==") for line in lines if "==" in line)}


def site_mb(venv: Path) -> float:
    (site,) = (venv / "lib").glob("python3*/site-packages")
    return sum(path.stat().st_size for path in site.rglob("*") if path.is_file() and not path.is_symlink()) / 2**20


def run_case(case: Case, wheel: Path, work: Path) -> dict:
    venv = work / case.name
    subprocess.run([BASE_PYTHON, "-m", "venv", str(venv)], check=True)
    empty_mb = site_mb(venv)
    start = time.perf_counter()
    if case.first:
        run(venv, "python", "-m", "pip", "install", "--quiet", *case.first)
    before = freeze(venv)
    if case.wheel:
        run(venv, "python", "-m", "pip", "install", "--quiet", str(wheel))
    after = freeze(venv)
    result: dict = {
        "install_s": time.perf_counter() - start,
        "added_mb": site_mb(venv) - empty_mb,
        "changed": {name: [version, after.get(name)] for name, version in before.items() if after.get(name) != version},
        "added": sorted(set(after) - set(before)),
    }
    if case.job is not None:
        path = run(venv, "python", "-c", textwrap.dedent(case.job), cwd=venv).split()[-1]
        overview = json.loads(run(venv, "stepscope", "report", path, "--tool", "overview_page", "--format", "json", cwd=venv))["overview_page"]
        result["steps"] = len(overview["steps"])
        result["steps_ok"] = result["steps"] == case.steps
    shutil.rmtree(venv)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(case.name for case in CASES))
    chosen = set(parser.parse_args().cases.split(","))
    (wheel,) = DIST.glob("stepscope-*.whl")
    results = {}
    with tempfile.TemporaryDirectory(prefix="stepscope-install-") as work:
        for case in CASES:
            if case.name in chosen:
                print(f"{case.name}: installing ...", file=sys.stderr, flush=True)
                results[case.name] = run_case(case, wheel, Path(work))
    print(f"{'case':<18}{'added MB':>10}{'install s':>11}  changed by the wheel          steps")
    for name, result in results.items():
        changed = ", ".join(f"{dist} {old}->{new}" for dist, (old, new) in result["changed"].items()) or "nothing"
        steps = f"{result['steps']} ({'ok' if result['steps_ok'] else 'WRONG'})" if "steps" in result else "-"
        print(f"{name:<18}{result['added_mb']:>10.1f}{result['install_s']:>11.1f}  {changed:<28} {steps}")
    goals = [
        goal(f"beside {name}: versions the wheel changed", len(result["changed"]), "packages", "none", None, VALUE_OVER_ANCHOR, "<=", 0, on="value")
        for name, result in results.items()
        if name not in ("stepscope", "xprof")
    ]
    if "stepscope" in results and "xprof" in results:
        goals.append(
            goal("installed size (site-packages)", results["stepscope"]["added_mb"], "MB", "xprof", results["xprof"]["added_mb"], VALUE_OVER_ANCHOR, "<=", 1)
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"wheel": wheel.name, "cases": results, "goals": goals}, indent=2))
    print(f"written {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
