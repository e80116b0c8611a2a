"""How stepscope's costs grow with the events of a profile.

For each ``--events N`` and ``--format``, a profile shaped like multi-GPU LLM training
(``kineto_synth.py``: 8 ranks, CUDA-graph launches, NCCL kernels, steps) of about N
events is made once (cached under ``bench/out/scale/``): the Kineto JSON is written as it
is generated; the XSpace is that JSON loaded and saved with ``stepscope.save`` (so both
formats hold the same profile; making it needs the load's memory). A fresh child process
then measures:

- ``load_index_s``: ``stepscope.load`` + ``viewer.build_index`` (wall time);
- ``peak_rss_mb``: the child's peak RSS (its process tree: it starts no other);
- ``full_view_p95_ms`` / ``deep_zoom_p95_ms``: ``viewer.query`` over the whole span and
  over windows of 0.01% of it, at random places, every track, 1600 px (as
  ``trace_viewer.py``'s "full, all tracks" and "deep zoom" views), p50 and p95;
- ``overview_s``: ``run_tool("overview_page", profile)`` on the loaded profile.

Results go to ``bench/out/scale.json`` (a list of {events, format, load_index_s,
peak_rss_mb, full_view_p95_ms, deep_zoom_p95_ms, overview_s}, plus p50s, CPU time and
the file's size), and the ratios between successive sizes are printed with the events'
ratio: costs growing linearly grow by about the events' ratio.

    .venv/bin/python bench/scale.py --events 1000000,10000000 --format json,xspace
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
CACHE = OUT / "scale"
RESULT_MARK = "@@scale@@ "
OVERVIEW = "overview_page"
WIDTH = 1600
DEEP_ZOOM = 0.0001
FORMATS = ("json", "xspace")
SUFFIX = {"json": ".pt.trace.json", "xspace": ".xplane.pb"}
# stepscope's input limits, raised for the child: 10M events are 2.7 GiB of Kineto JSON.
LIMITS = {"STEPSCOPE_MAX_INPUT_BYTES": str(64 << 30), "STEPSCOPE_MAX_EVENTS": str(1 << 31)}

sys.path.insert(0, str(Path(__file__).resolve().parent))


def profile_path(events: int, fmt: str) -> Path:
    """The cached profile of ``events`` events in ``fmt``, made where missing."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"llm_{events}{SUFFIX[fmt]}"
    if path.exists():
        return path
    if fmt == "json":
        import kineto_synth

        temp = path.with_name(path.name + ".tmp")
        with open(temp, "w", encoding="utf-8") as out:
            kineto_synth.write(out, events)
        temp.replace(path)
    else:
        import stepscope

        source = profile_path(events, "json")
        temp = path.with_name("tmp_" + path.name)
        stepscope.save(stepscope.load(source), temp)
        temp.replace(path)
    return path


def windows(span: int, fraction: float, count: int, seed: int) -> list[tuple[int, int]]:
    width = max(1, int(span * fraction))
    if width >= span:
        return [(0, span)] * count
    rng = np.random.default_rng(seed)
    return [(int(a), int(a) + width) for a in rng.integers(0, span - width, count)]


def child(path: str, repeat: int) -> dict:
    from stepscope.analysis import run_tool
    from stepscope.trace.readers import load
    from stepscope.viewer import build_index, query

    cpu = time.process_time()
    t = time.perf_counter()
    profile = load(path)
    load_s = time.perf_counter() - t
    index = build_index(profile)
    load_index_s = time.perf_counter() - t
    load_index_cpu_s = time.process_time() - cpu
    timings = {}
    for name, fraction in (("full_view", 1.0), ("deep_zoom", DEEP_ZOOM)):
        times = []
        for start, end in windows(index.span_ps, fraction, repeat, seed=len(name)):
            q = time.perf_counter()
            query(index, start, end, WIDTH)
            times.append(time.perf_counter() - q)
        timings[f"{name}_p50_ms"] = float(np.percentile(times, 50)) * 1e3
        timings[f"{name}_p95_ms"] = float(np.percentile(times, 95)) * 1e3
    t = time.perf_counter()
    run_tool(OVERVIEW, profile)
    overview_s = time.perf_counter() - t
    return {
        "loaded_events": profile.event_count,
        "load_s": load_s,
        "load_index_s": load_index_s,
        "load_index_cpu_s": load_index_cpu_s,
        "overview_s": overview_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        **timings,
    }


def measure(events: int, fmt: str, repeat: int, timeout: float) -> dict:
    path = profile_path(events, fmt)
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **LIMITS, "CUDA_VISIBLE_DEVICES": ""},
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"scale: the child measuring {path} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result = json.loads(lines[-1][len(RESULT_MARK) :])
    return {"events": events, "format": fmt, "file_mb": path.stat().st_size / 2**20, **result}


def ratios(rows: list[dict]) -> list[str]:
    """Each size's costs over the previous size's, beside the events' ratio."""
    lines = []
    keys = ("load_index_s", "peak_rss_mb", "full_view_p95_ms", "deep_zoom_p95_ms", "overview_s")
    for fmt in FORMATS:
        mine = sorted((row for row in rows if row["format"] == fmt), key=lambda row: row["events"])
        for before, after in itertools.pairwise(mine):
            grown = ", ".join(f"{key} x{after[key] / before[key]:.2f}" if before[key] else f"{key} -" for key in keys)
            lines.append(f"{fmt} {before['events']:,} -> {after['events']:,} (events x{after['events'] / before['events']:.2f}): {grown}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="1000000,10000000", help="comma-separated event counts")
    parser.add_argument("--format", default="json,xspace", help="json, xspace or both (comma-separated)")
    parser.add_argument("--repeat", type=int, default=40, help="queries per view")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per child")
    parser.add_argument("--out", type=Path, default=OUT / "scale.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(RESULT_MARK + json.dumps(child(args.child, args.repeat)), flush=True)
        return 0
    os.environ.update(LIMITS)  # (the XSpace is made here, from the JSON)
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    if not formats or any(f not in FORMATS for f in formats):
        parser.error(f"--format must be among {', '.join(FORMATS)}")
    counts = [int(n.replace("_", "")) for n in args.events.split(",") if n.strip()]
    rows = []
    for events in counts:
        for fmt in formats:
            row = measure(events, fmt, args.repeat, args.timeout)
            rows.append(row)
            print(
                f"{fmt:6} {events:>12,} events ({row['loaded_events']:,} loaded, {row['file_mb']:.0f} MiB): load+index {row['load_index_s']:.1f} s "
                f"(cpu {row['load_index_cpu_s']:.1f} s), peak RSS {row['peak_rss_mb']:,.0f} MB, full view p95 {row['full_view_p95_ms']:.1f} ms, "
                f"deep zoom p95 {row['deep_zoom_p95_ms']:.1f} ms, overview {row['overview_s']:.1f} s",
                flush=True,
            )
    for line in ratios(rows):
        print(line)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    temp = args.out.with_name(args.out.name + ".tmp")
    temp.write_text(json.dumps(rows, indent=1) + "\n")
    temp.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
