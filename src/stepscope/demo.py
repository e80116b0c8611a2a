"""``stepscope demo``: stepscope's main job on a real training loop, start to finish.

A small CNN trains on the CPU on synthetic images. Each sample is read (a simulated
storage latency: a sleep, as a network file system or object store would cost), decoded
and augmented in the ``Dataset``; the first run loads batches in the training process
(``num_workers=0``), so the loop waits for input most of the step. stepscope profiles a
few steps and prints its verdict (input-bound) with the figures behind it, then runs again
with the recommendation applied (worker processes and prefetching) and prints the same,
then the before/after (step time, input share) and ``stepscope diff``'s verdict on the two
runs. It predicts the second run's step time from the first run's critical path with the
input wait cut to what the second run still waits (``predicted_step_ms``) and prints it
beside the measurement. Each run trains in a fresh process of its own, so that both
start from the same state (``train``). Last, the dashboard serves both runs.

The console holds what a person reads before opening the page (about ten lines): the full
text reports (each run's overview with its steps table and top ops, and the whole diff)
go to ``<logdir>/reports/`` (``REPORTS``), or to the console as well with ``verbose``.

The storage latency is simulated so that the demo shows the same diagnosis on any
machine (a laptop with 2 cores or a 64-core server): it is the part that loading in
parallel hides, as it hides a real slow disk.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stepscope.errors import StepscopeError

if TYPE_CHECKING:
    import torch

    from stepscope.analysis.diff.compare import DiffResult

# Without --logdir the runs go to a new folder of the system's temporary folder ($TMPDIR),
# never into the folder the demo is started from (a clone's working tree, a project).
DEFAULT_LOGDIR_PREFIX = "stepscope-demo-"
RUN_BEFORE, RUN_AFTER = "1-input-bound", "2-parallel-input"
# The full text reports, beside the runs (discovery lists only profiles, so the dashboard
# ignores them): one per run, named as the run, and the diff's.
REPORTS = "reports"
DIFF_REPORT = "diff"
# Breakdown categories named on a run's figures line: the largest shares, at most this many.
SHARES_SHOWN = 3


@dataclass(frozen=True)
class DemoConfig:
    steps: int = 12
    batch_size: int = 32
    image_size: int = 48
    classes: int = 10
    read_latency_ms: float = 1.5  # per sample
    # One worker per core, at least 2 (parallel reads hide the storage latency even on
    # one core), at most 4 (PyTorch warns past the core count).
    workers_after: int = min(4, max(2, os.cpu_count() or 2))
    prefetch_after: int = 4


@dataclass(frozen=True)
class RunFigures:
    """What the demo compares: measured from the profile by the overview tool."""

    name: str
    path: Path
    step_time_ms: float  # mean over the steady steps
    median_ms: float
    steps: int
    set_aside: int
    input_percent: float
    input_bound: str
    verdict: str  # the overview's recommendation, one sentence or two
    breakdown_percent: dict[str, float]  # the overview's, of the steady steps' time
    report: str  # the overview as ``stepscope report`` prints it

    def figures_line(self) -> str:
        """The run's figures in one line: step time and where it went (shares of the kept
        steps' summed time, as the overview's breakdown; the verdict's "on average" share is
        the mean of the per-step shares, so the two differ where steps differ)."""
        shares = sorted(((value, key) for key, value in self.breakdown_percent.items() if value >= 0.05), reverse=True)[:SHARES_SHOWN]
        where = ", ".join(f"{key.replace('_', ' ')} {value:.1f}%" for value, key in shares)
        aside = f", {self.set_aside} set aside" if self.set_aside else ""
        return f"step time {self.step_time_ms:.1f} ms mean, {self.median_ms:.1f} ms median ({self.steps} steps{aside}); of the steps' total time: {where}"


def default_logdir() -> Path:
    """A new, empty folder for the demo's runs in the temporary folder: each demo its own,
    so the dashboard shows this demo's two runs and no earlier one's."""
    return Path(tempfile.mkdtemp(prefix=DEFAULT_LOGDIR_PREFIX))


def _require_torch() -> None:
    """One line instead of a traceback where PyTorch is missing (it is imported only here,
    when the demo runs, and then by each function that uses it)."""
    try:
        import torch  # noqa: F401 - only whether it imports
    except ImportError:
        raise StepscopeError("stepscope demo trains a PyTorch model: install PyTorch first (pip install torch)") from None


def _dataset(config: DemoConfig) -> torch.utils.data.Dataset[tuple[torch.Tensor, int]]:
    import numpy as np
    import torch

    import stepscope.data

    class SyntheticImages(torch.utils.data.Dataset[tuple[torch.Tensor, int]]):
        """Images made from their index, so every run and worker sees the same data."""

        def __len__(self) -> int:
            return config.steps * config.batch_size

        def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
            with stepscope.data.stage("read"):
                time.sleep(config.read_latency_ms / 1000)
                raw = np.random.default_rng(index).integers(0, 256, (config.image_size + 8, config.image_size + 8, 3), dtype=np.uint8)
            with stepscope.data.stage("decode"):
                image = torch.from_numpy(raw).permute(2, 0, 1).float().div_(255)
            with stepscope.data.stage("transform"):
                top, left = index % 8, (index // 8) % 8
                image = image[:, top : top + config.image_size, left : left + config.image_size]
                if index % 2:
                    image = image.flip(2)
                image = (image - 0.5) / 0.25
            return image, index % config.classes

    return SyntheticImages()


def _model(config: DemoConfig) -> torch.nn.Module:
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * (config.image_size // 4) ** 2, config.classes),
    )


def train(logdir: Path, run: str, config: DemoConfig, workers: int, prefetch: int | None) -> Path:
    """One profiled training run in a fresh Python process of its own, as a person re-runs a
    job after changing it; returns the profile it wrote.

    Both runs start from the same state, so that the second is measured against the
    prediction from the first on equal terms: in the demo's own process the second run
    found what the first had warmed (the C allocator's thresholds, ``_settle_allocator``)
    and its model step ran 1 to 3 ms faster, which put the measurement 8% to 16% below the
    prediction (docs/tools/critical_path.md).
    """
    _require_torch()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_train, logdir, run, config, workers, prefetch).result()


def _train(logdir: Path, run: str, config: DemoConfig, workers: int, prefetch: int | None) -> Path:
    import torch

    import stepscope

    # A spawned process starts its own children by spawning too; the loader's workers start
    # as they do in a job run as a script (the platform's default: fork on Linux).
    multiprocessing.set_start_method(None, force=True)
    torch.set_num_threads(1)  # the same compute on every machine; the input is what changes
    _settle_allocator()
    torch.manual_seed(0)
    model = _model(config)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    # Without workers, the loader's defaults (no prefetch factor, no persistent workers).
    loader = torch.utils.data.DataLoader(
        _dataset(config), batch_size=config.batch_size, num_workers=workers, prefetch_factor=prefetch if workers else None, persistent_workers=False
    )
    with stepscope.profile(logdir / run) as session:
        _warm_up(model, optimizer, config)
        for number, (images, labels) in enumerate(stepscope.data.instrument(loader, name="train")):
            with stepscope.step(number):
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
    if session.path is None:  # the profiler warned and the job went on; the demo cannot
        raise StepscopeError(f"{logdir / run}: the profile of this run was not written (see the warning above)")
    return session.path


def _warm_up(model: torch.nn.Module, optimizer: torch.optim.Optimizer, config: DemoConfig) -> None:
    """One training step on a batch of zeros, in the profile before its first step, so that
    the first step is a steady one. The first step sets up what every later one reuses
    (oneDNN's kernels for these shapes, the optimizer's momentum buffers, the first touch of
    the activations' memory, the profiler's own first events): its compute took 11 to 20 ms
    more than the others' (6 to 15 ms with this step before the profile, 1.5 to 5.5 ms
    with it inside). The first run keeps that step among its steady ones (its input wait is like
    every step's), the second sets it aside (it waits for the workers to start, many times
    the median), so the prediction from the first carried the set-up (a twelfth of it in
    the mean of 12 steps) and the second's measurement did not. The trace viewer shows this
    step's ops before step 0; no step holds them."""
    import torch

    images = torch.zeros(config.batch_size, 3, config.image_size, config.image_size)
    labels = torch.zeros(config.batch_size, dtype=torch.long)
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(images), labels).backward()
    optimizer.step()


# Above the ~11 MiB the demo's model step frees at the heap's top; at most glibc's largest
# dynamic mmap threshold (32 MiB), so that freeing it raises the thresholds.
SETTLING_BLOCK_BYTES = 16 << 20


def _settle_allocator() -> None:
    """Allocates and frees one 16 MiB block, so that every run's steps find glibc's malloc
    in the same state. glibc serves a block above its mmap threshold (128 KiB at first) with
    mmap; freeing one raises the threshold to its size and the trim threshold (the free
    memory it keeps at the heap's top) to twice that. This model's largest block is 4.7 MB
    (the first convolution's output), below the ~11 MiB a step frees at the heap's top: a
    process that had freed nothing larger gave the memory back to the system at the end of
    each step and faulted it in again in the next (1,100 to 2,900 page faults a step, up to
    3 ms of a 21 ms step); one that had freed a larger block before did not, and which of
    the two a fresh process was varied from run to run. After this block the trim threshold
    is 32 MiB in every run. A no-op in effect with another allocator."""
    import torch

    block = torch.empty(SETTLING_BLOCK_BYTES, dtype=torch.uint8)
    del block


def figures(name: str, path: Path) -> RunFigures:
    from stepscope.analysis import run_tool
    from stepscope.render import render
    from stepscope.trace.readers import load

    result = run_tool("overview_page", load(path))
    overview = result.to_json()
    return RunFigures(
        name=name,
        path=path,
        step_time_ms=overview["step_time_us"]["mean"] / 1000,
        median_ms=overview["step_time_us"]["median"] / 1000,
        steps=len(overview["steps"]),
        set_aside=len(overview["set_aside"]),
        input_percent=overview["breakdown_percent"]["input"],
        input_bound=overview["recommendation"]["input_bound"],
        verdict=overview["recommendation"]["summary"],
        breakdown_percent=overview["breakdown_percent"],
        report=render([result], "text"),
    )


def predicted_step_ms(path: Path, input_wait_ms: float) -> tuple[float, float]:
    """A run's step time predicted from ``path``'s profile (run 1's) with its input wait cut
    to ``input_wait_ms`` a step, and the wait the profile had (ms, means over its steady
    steps).

    The critical path's input-free what-if re-schedules the recorded work with every input
    wait at 0; the wait that is left (the loop still waits where the workers fall behind:
    run 2's measured input time) lies on the loop's own thread, in series, so it adds to
    the step as it is. The fix (workers loading in parallel) moves the loading off the path
    and leaves that wait; what the prediction cannot see is the loop's compute slowed by
    the workers competing for the same cores, and sped up by no longer loading batches
    itself between its steps (docs/tools/critical_path.md).
    """
    import numpy as np

    from stepscope.analysis import run_tool
    from stepscope.analysis.opstats import OpStats
    from stepscope.analysis.paths.what_if import INPUT_FREE
    from stepscope.trace.readers import load

    stats = OpStats(load(path))
    result = run_tool("critical_path", stats).to_json()
    (free,) = [np.asarray(change["predicted_steps_ps"], dtype=float) for change in result["what_if"] if change["change"] == INPUT_FREE]
    waits = np.asarray([step["by_kind_ps"]["input"] for step in result["steps"]], dtype=float)
    kept = stats.set_aside.kept
    return float(free[kept].mean()) / 1e9 + input_wait_ms, float(waits[kept].mean()) / 1e9


def prediction_line(predicted_ms: float, wait_before_ms: float, wait_after_ms: float, measured_ms: float) -> str:
    return (
        f"   predicted {predicted_ms:.1f} ms, measured {measured_ms:.1f} ms ({100 * (measured_ms - predicted_ms) / predicted_ms:+.1f}%): "
        f"run 1's critical path with its {wait_before_ms:.1f} ms input wait cut to run 2's {wait_after_ms:.1f} ms"
    )


def input_wait_ms(figures: RunFigures) -> float:
    """The run's input wait per steady step: the breakdown's input share of their summed time, times their mean."""
    return figures.breakdown_percent["input"] / 100 * figures.step_time_ms


def comparison(before: RunFigures, after: RunFigures) -> str:
    speedup = before.step_time_ms / after.step_time_ms if after.step_time_ms else float("inf")
    return (
        f"step time {before.step_time_ms:.1f} ms -> {after.step_time_ms:.1f} ms ({speedup:.2f}x); "
        f"input {before.input_percent:.1f}% -> {after.input_percent:.1f}% of the steps' total time"
    )


def run_diff(before: RunFigures, after: RunFigures) -> DiffResult:
    """``stepscope diff BEFORE AFTER`` of the two runs."""
    from stepscope.analysis.diff.compare import diff
    from stepscope.trace.readers import load

    return diff(load(before.path), load(after.path), str(before.path), str(after.path))


def write_report(logdir: Path, name: str, text: str) -> Path:
    """``<logdir>/reports/<name>.txt``, written whole or not at all."""
    from stepscope.trace.files import atomic_write

    path = logdir / REPORTS / f"{name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode())
    return path


def _run_lines(figures: RunFigures) -> str:
    return f"   {figures.verdict}\n   {figures.figures_line()}"


def run_demo(logdir: Path, config: DemoConfig = DemoConfig(), out: Callable[[str], object] = print, verbose: bool = False) -> tuple[RunFigures, RunFigures]:
    """Trains, profiles and diagnoses both runs, printing what a person reads (``verbose``:
    and the full reports, which go to ``<logdir>/reports/`` either way)."""
    from stepscope.render import render

    _require_torch()
    out(f"== the runs are written to {logdir} (--logdir chooses another folder)")
    out(f"== run 1: DataLoader(num_workers=0), {config.steps} steps profiled into {logdir / RUN_BEFORE}")
    before = figures(RUN_BEFORE, train(logdir, RUN_BEFORE, config, workers=0, prefetch=None))
    out(_run_lines(before))
    if verbose:
        out(before.report)
    out(f"== run 2: the recommendation applied: DataLoader(num_workers={config.workers_after}, prefetch_factor={config.prefetch_after})")
    after = figures(RUN_AFTER, train(logdir, RUN_AFTER, config, workers=config.workers_after, prefetch=config.prefetch_after))
    out(_run_lines(after))
    predicted_ms, wait_before_ms = predicted_step_ms(before.path, input_wait_ms(after))
    out(prediction_line(predicted_ms, wait_before_ms, input_wait_ms(after), after.step_time_ms))
    if verbose:
        out(after.report)
    out("== before / after: " + comparison(before, after))
    result = run_diff(before, after)
    out(f"   stepscope diff: {result.verdict}")
    diff_text = render([result], "text")
    if verbose:
        out(f"== stepscope diff {before.path} {after.path}")
        out(diff_text)
    written = [write_report(logdir, name, text) for name, text in ((RUN_BEFORE, before.report), (RUN_AFTER, after.report), (DIFF_REPORT, diff_text))]
    out(
        f"== the full reports (each run's overview with its steps and top ops, and the diff) are in {written[0].parent}: {', '.join(path.name for path in written)}"
        + ("" if verbose else " (--verbose prints them here)")
    )
    return before, after
