"""A log directory holding every kind of run the dashboard meets, and a server on it.

- ``gpu``: torch's trace-handler layout, two real GPU traces (two hosts of one run);
- ``tpu/<session>``: TensorBoard's layout, the real TPU XSpace;
- ``cpu/<session>``: a capture made here by stepscope of a real torch CPU training loop
  (ops, steps, memory);
- ``cpu_only``: HTA's CPU-only Kineto trace (no device, no memory events);
- ``demo/1-input-bound/<session>`` and ``demo/2-parallel-input/<session>``: the before and
  after runs of ``stepscope demo`` (a real torch CPU loop, its input in the loop and then
  in DataLoader workers), the compare view's pair of runs;
- ``broken``: a truncated trace JSON, the run that must fail alone;
- ``linked``: a symlink to a profile outside the logdir, which must never be served.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from stepscope.demo import RUN_AFTER, RUN_BEFORE
from tests.support.demo_runs import DemoRun
from tests.support.traces import shared

GPU_HOSTS = {
    "v100_resnet_ns_resolution": "kineto/v100_resnet_ns_resolution.pt.trace.json.gz",
    "alexnet_small": "kineto/alexnet_small.pt.trace.json.gz",
}
CPU_ONLY_HOST = "cpu_only_rank34"
TPU_SESSION = "2024_05_01_12_00_00"
CPU_STEPS = 6

CPU_JOB = textwrap.dedent(
    """
    import sys
    import torch
    import stepscope

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(16, 3, 16, 16), torch.randint(0, 10, (16,))) for _ in range({steps})]
    options = stepscope.ProfilerOptions(host_tracer_level=3)
    with stepscope.profile(sys.argv[1], options):
        for number, (images, labels) in enumerate(stepscope.data.instrument(batches, name="train")):
            with stepscope.step(number):
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
    """
).format(steps=CPU_STEPS)


@dataclass(frozen=True)
class Logdir:
    root: Path
    cpu_run: str
    cpu_host: str
    cpu_path: Path
    before: tuple[str, str]  # the demo's runs as (run, host)
    after: tuple[str, str]

    def path(self, run: str, host: str) -> Path:
        """Where a run/host's file is, from how this fixture laid them out."""
        if run == "gpu":
            return self.root / "gpu" / Path(GPU_HOSTS[host]).name
        if run == f"tpu/{TPU_SESSION}":
            return self.root / "tpu/plugins/profile" / TPU_SESSION / f"{host}.xplane.pb"
        if run == self.cpu_run:
            return self.cpu_path
        raise KeyError(run)


def cpu_capture(logdir: Path) -> Path:
    """A real capture, made in its own process (no other test's frameworks or state)."""
    script = logdir.parent.parent / "cpu_job.py"  # outside the logdir
    script.write_text(CPU_JOB)
    subprocess.run([sys.executable, str(script), str(logdir)], check=True, timeout=300, capture_output=True)
    (path,) = logdir.glob("plugins/profile/*/*.xplane.pb")
    return path


def demo_runs(logdir: Path, demo: DemoRun) -> tuple[tuple[str, str], tuple[str, str]]:
    """``stepscope demo``'s before and after runs (made in their own process, ``demo_runs``),
    copied to ``logdir`` (a child of the dashboard's logdir), as (run, host)."""
    assert demo.returncode == 0, demo.stderr[-3000:]
    shutil.copytree(demo.logdir, logdir)
    found = []
    for name in (RUN_BEFORE, RUN_AFTER):
        (path,) = (logdir / name).glob("plugins/profile/*/*.xplane.pb")
        found.append((f"{logdir.name}/{name}/{path.parent.name}", path.name.removesuffix(".xplane.pb")))
    return found[0], found[1]


def make_logdir(root: Path, demo: DemoRun) -> Logdir:
    """Lays the runs out under ``root`` (made here; its parent must be a folder of its own:
    the symlink's target and the capture's script go beside it)."""
    (root / "gpu").mkdir(parents=True)
    for name in GPU_HOSTS.values():
        shutil.copy(shared(name), root / "gpu")
    (root / "cpu_only").mkdir()
    shutil.copy(shared(f"kineto/{CPU_ONLY_HOST}.pt.trace.json.gz"), root / "cpu_only")
    tpu = root / "tpu/plugins/profile" / TPU_SESSION
    tpu.mkdir(parents=True)
    shutil.copy(shared("xplane/tpu_v_inference_4chips.xplane.pb"), tpu / "tpu_host.xplane.pb")
    (root / "broken").mkdir()
    whole = (shared("kineto/alexnet_small.pt.trace.json.gz")).read_bytes()
    (root / "broken" / "worker0.pt.trace.json").write_bytes(gzip.decompress(whole)[:5000])
    # A profile outside the logdir reached through a symlink inside it: never listed.
    outside = root.parent / "outside"
    outside.mkdir()
    shutil.copy(shared("kineto/alexnet_small.pt.trace.json.gz"), outside / "secret.pt.trace.json.gz")
    (root / "linked").mkdir()
    (root / "linked" / "secret.pt.trace.json.gz").symlink_to(outside / "secret.pt.trace.json.gz")
    cpu_path = cpu_capture(root / "cpu")
    session = cpu_path.parent.name
    before, after = demo_runs(root / "demo", demo)
    return Logdir(root, f"cpu/{session}", cpu_path.name.removesuffix(".xplane.pb"), cpu_path, before, after)
