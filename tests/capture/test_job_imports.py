"""A training job that captures with stepscope loads none of what only the tools need.

The dashboard's web stack (starlette, uvicorn, anyio), the profiler server's gRPC and any
JIT compiler (numba, llvmlite) stay out of the training process: each costs it memory for
its whole life and time at the capture's stop (numba measured +1.07 s and
+133 MB). Each job runs in a fresh interpreter, as a user's would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NEVER_IN_JOB = ("numba", "llvmlite", "starlette", "uvicorn", "anyio", "grpc")

PLAIN = """
import time
import stepscope

with stepscope.profile({logdir!r}):
    for number in range(5):
        with stepscope.step(number), stepscope.trace("work"):
            time.sleep(0.001)
hook = stepscope.StepHook({logdir!r}, schedule=stepscope.schedule(wait=1, warmup=1, active=1, repeat=1))
for number in range(4):
    hook.step()
"""

# The README's PyTorch snippet.
TORCH = """
import torch
import stepscope

data = torch.utils.data.TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
loader = torch.utils.data.DataLoader(data, batch_size=32)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

with stepscope.profile({logdir!r}):
    for number, (x, y) in enumerate(stepscope.data.instrument(loader, name="train")):
        with stepscope.step(number):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
"""


def _loaded_by(job: str, logdir: Path) -> list[str]:
    probe = textwrap.dedent(job.format(logdir=str(logdir))) + textwrap.dedent(
        f"""
        import sys
        print(" ".join(sorted({{name.split(".")[0] for name in sys.modules}} & {set(NEVER_IN_JOB)!r})))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _written(logdir: Path) -> list[Path]:
    return sorted(logdir.rglob("*.xplane.pb"))


def test_a_plain_python_job_loads_none_of_them(tmp_path: Path):
    assert _loaded_by(PLAIN, tmp_path) == []
    assert len(_written(tmp_path)) == 2  # the profile block's and the schedule's one cycle


@pytest.mark.framework
def test_the_readme_torch_job_loads_none_of_them(tmp_path: Path):
    assert _loaded_by(TORCH, tmp_path) == []
    assert len(_written(tmp_path)) == 1
