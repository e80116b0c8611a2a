"""What the child processes of the stepscope.data tests run: real PyTorch DataLoaders (in
process and in forked worker processes) over a dataset whose fetches are stepscope.data
stages, each scenario writing its profile and what the loop did to ``manifest.json``.

torch is imported in the child only (inside the functions): importing it into the test
process would make the torch tracer available to every later test of the session.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import stepscope
import stepscope.data
from stepscope.capture import annotations
from stepscope.trace import names

ITEMS = 8
BATCH = 2  # the sequential sampler makes batch k items BATCH*k .. BATCH*k + BATCH-1
READ_S = 0.001  # each item's read sleeps 1 ms
WORKERS = 2
# Host level 1 records stepscope's annotations only (no torch profiler); device level 0
# keeps torch's device tracing off on machines with an accelerator too.
OPTIONS = stepscope.ProfilerOptions(host_tracer_level=1, device_tracer_level=0)
PREFIX = names.STEPSCOPE_INPUT_STAGE_PREFIX
READ, DECODE, COLLATE = f"{PREFIX}read", f"{PREFIX}decode", f"{PREFIX}collate"
WAIT = names.STEPSCOPE_INPUT_WAIT


class DatasetError(Exception):
    pass


class Items:
    """A map-style dataset: item i is the tensor [i, i, i]; a fetch is a read (a sleep) and
    a decode, each a stage carrying the item and the process that ran it."""

    def __init__(self, items: int = ITEMS, fail_at: int | None = None, error: Exception | None = None) -> None:
        self.items, self.fail_at, self.error = items, fail_at, error

    def __len__(self) -> int:
        return self.items

    def __getitem__(self, index: int) -> Any:
        import torch

        with stepscope.data.stage("read", item=index, pid=os.getpid()):
            time.sleep(READ_S)
        if index == self.fail_at:
            raise self.error
        with stepscope.data.stage("decode", item=index, pid=os.getpid()):
            return torch.full((3,), float(index))


@stepscope.data.stage.function("collate")
def collate(items: list[Any]) -> Any:
    """The DataLoader's collate_fn: the default one, one collate stage per batch."""
    from torch.utils.data import default_collate

    return default_collate(items)


def _loader(num_workers: int = 0, dataset: Items | None = None) -> Any:
    from torch.utils.data import DataLoader

    context = multiprocessing.get_context("fork") if num_workers else None
    return DataLoader(dataset or Items(), batch_size=BATCH, num_workers=num_workers, collate_fn=collate, multiprocessing_context=context)


def _run_in_process(out: Path) -> dict[str, Any]:
    loader = _loader(num_workers=0)
    with stepscope.profile(out / "logs", OPTIONS) as session:
        # The fetch inside the step, so that its wait is the step's input time (a step's
        # window is the span of its markers).
        batches = iter(stepscope.data.instrument(loader, name="train"))
        for number in range(len(loader)):
            with stepscope.step(number):
                batch = next(batches)
                (batch * 2).sum()
    return {"profile": str(session.path), "batches": len(loader), "items": len(loader.dataset), "batch_size": loader.batch_size}


def _run_workers(out: Path) -> dict[str, Any]:
    loader = _loader(num_workers=WORKERS)
    seen = []
    with stepscope.profile(out / "logs", OPTIONS) as session:
        # The plain loop: iter(loader) forks the workers inside the capture, and running
        # out shuts them down.
        for number, batch in enumerate(stepscope.data.instrument(loader, name="train")):
            with stepscope.step(number):
                seen.append(batch.tolist())
    return {
        "profile": str(session.path),
        "pid": os.getpid(),
        "seen": seen,
        "batches": len(loader),
        "items": len(loader.dataset),
        "start_method": loader.multiprocessing_context.get_start_method(),
    }


def _run_loader_api(out: Path) -> dict[str, Any]:
    import torch

    loader = _loader(num_workers=0)
    instrumented = stepscope.data.instrument(loader, name="train")
    idle_before = annotations.current_recording() is None
    plain = list(loader)
    epochs = [list(instrumented) for _ in range(2)]  # two passes: the wrapper is re-iterable
    result: dict[str, Any] = {
        "len_loader": len(loader),
        "len_instrumented": len(instrumented),
        "dataset_forwarded": instrumented.dataset is loader.dataset,
        "idle": idle_before and annotations.current_recording() is None,
        "identical": [len(epoch) == len(plain) and all(torch.equal(a, b) for a, b in zip(epoch, plain)) for epoch in epochs],
    }
    error = DatasetError("corrupt item 3")
    failing = _loader(num_workers=0, dataset=Items(fail_at=3, error=error))
    received = []
    with stepscope.profile(out / "logs", OPTIONS) as session:
        try:
            for batch in stepscope.data.instrument(failing):
                received.append(batch.tolist())
        except DatasetError as raised:
            result["same_error"] = raised is error
    result.update(profile=str(session.path), received=received)
    return result


def child(scenario: str, out: Path) -> None:
    """The child process's entry: runs ``_run_<scenario>`` and writes its manifest."""
    import json

    manifest = globals()[f"_run_{scenario}"](out)
    (out / "manifest.json").write_text(json.dumps(manifest))
