"""Makes the large Kineto trace the ingest benchmark reads: a real torch.profiler run.

A small conv net + MLP head is trained on random data on the CPU, profiled with
torch.profiler (CPU activity, record_shapes=True) for enough steps that the exported
trace holds at least ``--min-events`` complete ("X") events, and exported with
``export_chrome_trace`` to ``bench/out/large.pt.trace.json``.

The number of steps is found by profiling a short calibration run first. The result is
cached: a sidecar ``<trace>.meta.json`` records the trace's size, mtime and event counts,
and a later run with a matching sidecar does nothing (``--force`` regenerates).

Needs torch (the project's test venv has the CPU build):
    .venv/bin/python bench/make_large_trace.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "bench" / "out" / "large.pt.trace.json"
DEFAULT_MIN_EVENTS = 1_000_000
# Aim this much above the minimum so that step-to-step variation cannot fall short.
MARGIN = 1.08
CALIBRATION_STEPS = 40

try:  # counting with msgspec decodes only "ph", fast and small; json is the fallback
    import msgspec

    class _Ev(msgspec.Struct):
        ph: str = ""

    class _Doc(msgspec.Struct):
        traceEvents: list[_Ev] = []

except ImportError:
    msgspec = None


def meta_path(trace: Path) -> Path:
    return trace.with_name(trace.name + ".meta.json")


def cached(trace: Path, min_events: int) -> dict | None:
    """The sidecar's record when it describes this very file and enough events."""
    try:
        meta = json.loads(meta_path(trace).read_text())
        st = trace.stat()
    except (OSError, ValueError):
        return None
    if meta.get("size") != st.st_size or meta.get("mtime_ns") != st.st_mtime_ns:
        return None
    if meta.get("complete_events", 0) < min_events:
        return None
    with trace.open("rb") as fh:  # a truncated export does not end with its closing brace
        fh.seek(max(0, st.st_size - 64))
        if not fh.read().rstrip().endswith(b"}"):
            return None
    return meta


def count_events(trace: Path) -> tuple[int, Counter]:
    """(all traceEvents, count per phase), decoding only each event's ``ph``."""
    if msgspec is not None:
        events = msgspec.json.decode(trace.read_bytes(), type=_Doc).traceEvents
        phases = Counter(e.ph for e in events)
    else:
        with trace.open() as fh:
            phases = Counter(e.get("ph", "") for e in json.load(fh)["traceEvents"])
    return sum(phases.values()), phases


def build_workload():
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)  # small ops: threads only add overhead; keeps runs comparable
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 64),
        nn.ReLU(),
        nn.Dropout(0.1),
        nn.Linear(64, 10),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    images = torch.randn(16, 3, 16, 16)
    labels = torch.randint(0, 10, (16,))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()

    return step


def profile_run(step, steps: int, out: Path) -> float:
    """Profiles ``steps`` training steps into ``out``; returns the seconds spent."""
    from torch.profiler import ProfilerActivity, profile

    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(steps):
            step()
            prof.step()
    prof.export_chrome_trace(str(out))
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--min-events", type=int, default=DEFAULT_MIN_EVENTS, help="complete (X) events the trace must hold (default 1,000,000)")
    parser.add_argument("--force", action="store_true", help="regenerate even if cached")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()

    if not args.force and (meta := cached(out, args.min_events)):
        print(f"{out}: cached, {meta['events']:,} trace events ({meta['complete_events']:,} complete), {meta['size'] / 2**20:.0f} MiB")
        return 0

    try:
        import torch
    except ImportError:
        print("make_large_trace.py needs torch; run it with the project's .venv python", file=sys.stderr)
        return 2

    out.parent.mkdir(parents=True, exist_ok=True)
    meta_path(out).unlink(missing_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    t_start = time.perf_counter()
    step = build_workload()
    for _ in range(5):  # warm up allocator and dispatcher outside the profile
        step()

    profile_run(step, CALIBRATION_STEPS, tmp)
    _, phases = count_events(tmp)
    per_step = phases["X"] / CALIBRATION_STEPS
    steps = math.ceil(args.min_events * MARGIN / per_step)
    print(f"calibration: {per_step:.0f} complete events per step -> profiling {steps:,} steps (torch {torch.__version__})")

    while True:
        seconds = profile_run(step, steps, tmp)
        total, phases = count_events(tmp)
        if phases["X"] >= args.min_events:
            break
        steps = math.ceil(steps * args.min_events * MARGIN / max(phases["X"], 1))
        print(f"only {phases['X']:,} complete events; retrying with {steps:,} steps")

    os.replace(tmp, out)
    st = out.stat()
    meta = {
        "events": total,
        "complete_events": phases["X"],
        "phases": dict(phases),
        "steps": steps,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "torch": torch.__version__,
        "profile_and_export_s": round(seconds, 2),
        "generation_s": round(time.perf_counter() - t_start, 2),
    }
    meta_path(out).write_text(json.dumps(meta, indent=1) + "\n")
    print(
        f"{out}: {total:,} trace events ({phases['X']:,} complete, "
        + ", ".join(f"{ph}={n:,}" for ph, n in sorted(phases.items()) if ph != "X")
        + f"), {st.st_size / 2**20:.0f} MiB, {steps:,} steps, "
        f"generated in {meta['generation_s']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
