"""What stepscope costs inside the training process, beside torch.profiler alone.

The README's PyTorch job (its first Quick start snippet, 16 steps of a small MLP with a
DataLoader) runs in a fresh process per round, three ways:

- ``none``: unprofiled (the process's own peak, for scale);
- ``torch.profiler``: inside ``torch.profiler.profile(on_trace_ready=tensorboard_trace_handler(...))``,
  what a torch user runs otherwise (it writes its trace to disk at stop, as stepscope does);
- ``stepscope``: ``import stepscope`` and ``stepscope.profile(...)``, as the README has it
  (stepscope runs torch.profiler for the ops, adds its annotations and writes an XSpace).

Per round and way: the peak RSS of the process (``ru_maxrss``), the time from the loop's end
to the profiler's context exited (the stop: torch.profiler's own, plus stepscope's read of
Kineto's trace, merge and XSpace write), ``import stepscope``'s time, and which of the
modules a training job should never load (numba, llvmlite, starlette, uvicorn, grpc) are in
``sys.modules`` at the end. Ways run interleaved, round by round, so the machine's drift hits
all alike; the medians and quartiles are printed.

Goals: at most +40 MB of peak RSS and +0.2 s at stop over torch.profiler alone,
and none of those modules loaded.

Run: ``.venv/bin/python bench/job_side.py [--rounds N]`` (writes bench/out/job_side.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from goals import VALUE_MINUS_ANCHOR, VALUE_OVER_ANCHOR, goal

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "job_side.json"
MARK = "@@job_side@@ "
NEVER_IN_JOB = ("numba", "llvmlite", "starlette", "uvicorn", "grpc")
WAYS = ("none", "torch.profiler", "stepscope")
RSS_BOUND_MB = 40.0
STOP_BOUND_S = 0.2

JOB = textwrap.dedent(
    """
    import json, resource, sys, time
    import torch

    way, logdir = sys.argv[1], sys.argv[2]
    data = torch.utils.data.TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
    loader = torch.utils.data.DataLoader(data, batch_size=32)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(loader, step=lambda number: __import__("contextlib").nullcontext()):
        for number, (x, y) in enumerate(loader):
            with step(number):
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()

    import_s = 0.0
    if way == "none":
        train(loader)
        stop_s = 0.0
    elif way == "torch.profiler":
        from torch.profiler import profile, tensorboard_trace_handler
        with profile(on_trace_ready=tensorboard_trace_handler(logdir)):
            train(loader)
            end = time.perf_counter()
        stop_s = time.perf_counter() - end
    else:
        start = time.perf_counter()
        import stepscope
        import_s = time.perf_counter() - start
        with stepscope.profile(logdir):
            train(stepscope.data.instrument(loader, name="train"), stepscope.step)
            end = time.perf_counter()
        stop_s = time.perf_counter() - end
    loaded = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[3].split(",")))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("@@job_side@@ " + json.dumps({"peak_rss_mb": peak_mb, "stop_s": stop_s, "import_s": import_s, "loaded": loaded}))
    """
)


def run_once(way: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="stepscope-job-side-") as logdir:
        done = subprocess.run([sys.executable, "-c", JOB, way, logdir, ",".join(NEVER_IN_JOB)], capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"job_side: the {way} run failed (status {done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(lines[-1][len(MARK) :])


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    runs: dict[str, list[dict]] = {way: [] for way in WAYS}
    for number in range(rounds):
        for way in WAYS:
            runs[way].append(run_once(way))
        print(f"round {number + 1}/{rounds} done", file=sys.stderr)

    def median(way: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[way])

    def spread(way: str, key: str) -> tuple[float, float]:
        return quartiles([run[key] for run in runs[way]])

    loaded = sorted({name for run in runs["stepscope"] for name in run["loaded"]})
    print(f"{'way':<16}{'peak RSS (MB)':>16}{'stop (s)':>12}{'import (s)':>12}  loaded of {', '.join(NEVER_IN_JOB)}")
    for way in WAYS:
        names = sorted({name for run in runs[way] for name in run["loaded"]})
        print(f"{way:<16}{median(way, 'peak_rss_mb'):>16.1f}{median(way, 'stop_s'):>12.3f}{median(way, 'import_s'):>12.3f}  {', '.join(names) or '-'}")
    extra_rss = median("stepscope", "peak_rss_mb") - median("torch.profiler", "peak_rss_mb")
    extra_stop = median("stepscope", "stop_s") - median("torch.profiler", "stop_s")
    print(f"stepscope over torch.profiler: {extra_rss:+.1f} MB peak RSS (goal <= +{RSS_BOUND_MB:g}), {extra_stop:+.3f} s at stop (goal <= +{STOP_BOUND_S:g})")
    goals = [
        goal(
            f"README torch job: {label}",
            median("stepscope", key),
            unit,
            "torch.profiler alone",
            median("torch.profiler", key),
            VALUE_MINUS_ANCHOR,
            "<=",
            bound,
            value_range=spread("stepscope", key),
            anchor_range=spread("torch.profiler", key),
        )
        for label, key, unit, bound in (("peak RSS", "peak_rss_mb", "MB", RSS_BOUND_MB), ("stop", "stop_s", "s", STOP_BOUND_S))
    ]
    goals.append(goal("README torch job: modules a job never needs, loaded", len(loaded), "modules", "none", None, VALUE_OVER_ANCHOR, "<=", 0, on="value"))
    result = {
        "rounds": rounds,
        "runs": runs,
        "medians": {way: {key: median(way, key) for key in ("peak_rss_mb", "stop_s", "import_s")} for way in WAYS},
        "loaded_by_stepscope": loaded,
        "goals": goals,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))
    print(f"written {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
