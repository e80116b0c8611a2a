"""Distributed benchmark: the distributed view of 8, 32 and 128 ranks on each engine,
beside HolisticTraceAnalysis's multi-rank load of the same files.

The runs are rank-shifted copies of the real recsys ranks in ../shared/traces/kineto
(``recsys_sampled_rank{0,1}_of_128``; even ranks copy rank 0, odd ranks rank 1), every
timestamp moved by ``rank * SHIFT_US``, ``distributedInfo`` set to the rank and the world
size, and one straggler: on rank ``5/8`` of the way up, one compute kernel of step 552
lengthened by ``STRAGGLER_US`` (``tests.support.distributed_runs``, the tests' builder).
They are cached under bench/out/distributed/ranks<N>/ (a manifest says what was built).

Each measurement is a fresh subprocess, so that its peak memory is its own:

  seconds     = perf_counter around discover + the map + the reduce (stepscope), or around
                ``TraceAnalysis(trace_dir=...)`` (HTA: it parses every rank, its default:
                a fork pool of one process per core)
  init_s      = ray only: attaching to (starting) a local Ray, apart
  driver MB   = the driver's VmHWM (what holding the run costs where the reduce runs)
  worker MB   = the largest child's peak RSS (RUSAGE_CHILDREN: a pool worker, one rank's
                load at a time); not known for Ray's workers (not this process's children)
  ratio       = HTA s / stepscope s                        (> 1: stepscope faster)

Engines: local with 1 worker (in process), local with one worker per core, and ray (a
local Ray of one worker per core, run inside a private network namespace where
``unshare -n`` works: Ray's servers listen on every interface). The straggler must be
named (its rank and step) by every stepscope run. Goal: >= 5x faster than HTA at 128
ranks; the driver's memory bounded (it never holds a rank's events).

    python bench/distributed.py [--sizes 8,32,128] [--no-hta] [--no-ray] [--profile]

Run with a venv holding stepscope and ray (``make bench`` uses .venv); HTA runs in
.venv-bench/bin/python (``make bench`` builds it). Results go to bench/out/distributed.json.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from goals import ANCHOR_OVER_VALUE
from goals import goal as goal_entry
from measure import MB, peak_bytes, run_marked

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the tests' run builder (tests.support.distributed_runs)

TRACES = ROOT.parent / "shared" / "traces" / "kineto"
SOURCES = ("recsys_sampled_rank0_of_128.pt.trace.json.gz", "recsys_sampled_rank1_of_128.pt.trace.json.gz")
OUT = ROOT / "bench" / "out"
RUNS = OUT / "distributed"
OUT_JSON = OUT / "distributed.json"
HTA_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
RESULT_MARK = "@@distributed-result@@ "
SIZES = (8, 32, 128)
SHIFT_US = 1_000
STRAGGLER_STEP = 552
STRAGGLER_US = 150_000  # in a ~620 ms step
TARGET_SPEED = 5.0  # HTA s / stepscope s at the largest size, at least
LOOPBACK_THEN = 'ip link set lo up && exec "$0" "$@"'


def straggler_rank(size: int) -> int:
    return size * 5 // 8


# --- the runs ------------------------------------------------------------------------------


def build(size: int) -> Path:
    """bench/out/distributed/ranks<size>/node<NNN>.pt.trace.json.gz, cached by its manifest
    (beside the folder: HTA takes every *.json in it for a rank's trace)."""
    from tests.support.distributed_runs import host_name, pick, shift, stretch
    from tests.support.traces import read_json

    folder = RUNS / f"ranks{size}"
    manifest = {"sources": list(SOURCES), "ranks": size, "shift_us": SHIFT_US, "straggler": [straggler_rank(size), STRAGGLER_STEP, STRAGGLER_US]}
    written = RUNS / f"ranks{size}.manifest.json"
    if written.is_file() and json.loads(written.read_text()) == manifest and folder.is_dir():
        return folder
    building = RUNS / f".ranks{size}.building"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    bases = [read_json(TRACES / name) for name in SOURCES]
    for rank in range(size):
        document = copy.deepcopy(bases[rank % len(bases)])
        if rank == straggler_rank(size):
            stretch(document, pick(document, STRAGGLER_STEP, "compute"), STRAGGLER_US)
        shift(document, rank * SHIFT_US)
        document["distributedInfo"] = {**document.get("distributedInfo", {}), "rank": rank, "world_size": size}
        with gzip.open(building / f"{host_name(rank, size)}.pt.trace.json.gz", "wt", encoding="utf-8", compresslevel=6) as stream:
            json.dump(document, stream)
    shutil.rmtree(folder, ignore_errors=True)
    building.rename(folder)
    written.write_text(json.dumps(manifest))
    return folder


# --- the children: one measurement each ------------------------------------------------------


def _children_peak() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def child_stepscope(engine: str, workers: str, folder: str) -> dict:
    from stepscope.analysis.distributed import RankTables, reduce_ranks
    from stepscope.engines import RankFailure, rank_tasks
    from stepscope.engines import engine as named_engine
    from stepscope.trace.logdir import discover

    init_s = 0.0
    if engine == "ray":
        from stepscope.engines.ray_engine import connect

        t0 = time.perf_counter()
        connect("local")  # in a private network namespace where unshare works
        init_s = time.perf_counter() - t0
    # engines.analyse_run's steps, timed apart: the map (on the engine) and the reduce (here).
    t0 = time.perf_counter()
    run = discover(folder)[0]
    outcomes = named_engine(engine)(rank_tasks(run), None if workers == "default" else int(workers), lambda: None)
    t_map = time.perf_counter()
    tables = [outcome for outcome in outcomes if isinstance(outcome, RankTables)]
    result = reduce_ranks(run.name, tables, [outcome.message for outcome in outcomes if isinstance(outcome, RankFailure)])
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "map_s": t_map - t0,
        "reduce_s": seconds - (t_map - t0),
        "init_s": init_s,
        "driver_peak": peak_bytes(),
        "worker_peak": _children_peak() if engine == "local" and workers != "1" else None,
        "ranks": len(result.ranks),
        "steps": len(result.steps),
        "stragglers": sorted({(row["rank"], row["step"]) for row in result.stragglers}),
        "result_bytes": len(json.dumps(result.to_json())),
    }


def child_hta(folder: str) -> dict:
    import logging

    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    t0 = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=folder)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "driver_peak": peak_bytes(), "worker_peak": _children_peak(), "ranks": len(analysis.t.traces)}


def profile_rank(path: str) -> None:
    """Where one rank's map goes: cProfile of ``analyse_rank`` on one file, top entries."""
    import cProfile
    import pstats

    from stepscope.engines.tasks import RankTask, analyse_rank

    task = RankTask(path, "rank")
    analyse_rank(task)  # first use: imports
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.runcall(analyse_rank, task)
    print(f"analyse_rank({Path(path).name}): {time.perf_counter() - t0:.3f} s")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


# --- the parent ------------------------------------------------------------------------------


def namespaced(command: list[str]) -> list[str]:
    """``command`` inside a fresh network namespace, where ``unshare -n`` works; else as is."""
    if shutil.which("unshare") and shutil.which("ip"):
        probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True)
        if probe.returncode == 0:
            return ["unshare", "-n", "sh", "-c", LOOPBACK_THEN, *command]
    print("unshare -n is not available: Ray runs on the host's network (its servers listen on every interface)", file=sys.stderr)
    return command


def measure(command: list[str], timeout: float) -> dict:
    return run_marked(command, RESULT_MARK, ROOT, timeout)


def configs(have_ray: bool, have_hta: bool) -> list[tuple[str, list[str]]]:
    me = [sys.executable, str(Path(__file__).resolve()), "--child"]
    found = [("local, 1 worker", [*me, "stepscope", "local", "1"]), (f"local, {os.cpu_count()} workers", [*me, "stepscope", "local", "default"])]
    if have_ray:
        found.append(("ray", namespaced([*me, "stepscope", "ray", "default"])))
    if have_hta:
        found.append(("HTA", [str(HTA_PYTHON), str(Path(__file__).resolve()), "--child", "hta"]))
    return found


def mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / MB:,.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="rank counts (default 8,32,128)")
    parser.add_argument("--no-hta", action="store_true", help="skip HTA")
    parser.add_argument("--no-ray", action="store_true", help="skip the ray engine")
    parser.add_argument("--profile", action="store_true", help="also profile one rank's map (cProfile)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per measurement")
    parser.add_argument("--json", type=Path, default=OUT_JSON)
    parser.add_argument("--strict", action="store_true", help="exit 1 when the goal at the largest size is missed")
    args = parser.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        record = child_hta(*rest) if kind == "hta" else child_stepscope(*rest)
        print(RESULT_MARK + json.dumps(record), flush=True)
        return 0
    sys.stdout.reconfigure(line_buffering=True)

    have_ray = not args.no_ray and _importable("ray")
    have_hta = not args.no_hta and HTA_PYTHON.is_file()
    if not args.no_hta and not have_hta:
        print(f"{HTA_PYTHON} is missing: HTA left out (`make bench` builds .venv-bench)", file=sys.stderr)
    if not args.no_ray and not have_ray:
        print("ray is not installed here: the ray engine left out (pip install stepscope[ray])", file=sys.stderr)
    rows = []
    for size in (int(text) for text in args.sizes.split(",")):
        t0 = time.perf_counter()
        folder = build(size)
        print(
            f"ranks{size}: {sum(p.stat().st_size for p in folder.glob('*.gz')) / MB:.0f} MB of gzip ({time.perf_counter() - t0:.1f} s to build or find)",
            file=sys.stderr,
        )
        for name, command in configs(have_ray, have_hta):
            record = measure([*command, str(folder)], args.timeout)
            record.update({"ranks_built": size, "engine": name})
            if "stragglers" in record:
                record["straggler_named"] = [straggler_rank(size), STRAGGLER_STEP] in record["stragglers"]
            rows.append(record)
            shown = record.get("error") or f"{record['seconds']:.2f} s, driver {mb(record['driver_peak'])} MB, worker {mb(record.get('worker_peak'))} MB"
            print(f"  {size:>4} ranks  {name:<18} {shown}", file=sys.stderr)
    table = render(rows)
    print(table)
    verdict = goal(rows)
    print(verdict["text"])
    if args.profile:
        profile_rank(str(build(min(int(text) for text in args.sizes.split(","))) / "node000.pt.trace.json.gz"))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    temporary = args.json.with_suffix(".json.tmp")
    temporary.write_text(
        json.dumps({"rows": rows, "goal": verdict, "goals": verdict.get("goals", []), "cpus": os.cpu_count(), "python": sys.version.split()[0]}, indent=2)
    )
    temporary.replace(args.json)
    return 1 if args.strict and not verdict["met"] else 0


def _importable(name: str) -> bool:
    from importlib.util import find_spec

    return find_spec(name) is not None


def render(rows: list[dict]) -> str:
    hta = {row["ranks_built"]: row["seconds"] for row in rows if row["engine"] == "HTA" and "seconds" in row}
    header = ["ranks", "engine", "seconds", "reduce s", "init s", "s/rank", "driver MB", "worker MB", "HTA/ss", "straggler"]
    body = []
    for row in rows:
        if "error" in row:
            body.append([row["ranks_built"], row["engine"], row["error"][:60], "", "", "", "", "", "", ""])
            continue
        ratio = hta.get(row["ranks_built"])
        body.append(
            [
                row["ranks_built"],
                row["engine"],
                f"{row['seconds']:.2f}",
                f"{row['reduce_s']:.3f}" if "reduce_s" in row else "",
                f"{row['init_s']:.1f}" if row.get("init_s") else "",
                f"{row['seconds'] / row['ranks_built']:.3f}",
                mb(row["driver_peak"]),
                mb(row.get("worker_peak")),
                f"{ratio / row['seconds']:.2f}" if ratio and row["engine"] != "HTA" else "",
                {True: "named", False: "MISSED"}.get(row.get("straggler_named"), ""),
            ]
        )
    widths = [max(len(str(r[i])) for r in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) if i != 1 else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))) for cells in [header, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def goal(rows: list[dict]) -> dict:
    largest = max(row["ranks_built"] for row in rows)
    at = [row for row in rows if row["ranks_built"] == largest and "seconds" in row]
    hta = next((row["seconds"] for row in at if row["engine"] == "HTA"), None)
    ours = {row["engine"]: row["seconds"] for row in at if row["engine"] != "HTA"}
    named = all(row.get("straggler_named") for row in rows if "stragglers" in row)
    if hta is None or not ours:
        return {"met": False, "text": f"goal at {largest} ranks: not measured (HTA or stepscope missing)", "named": named}
    best = min(ours, key=lambda engine: ours[engine])
    ratio = hta / ours[best]
    met = ratio >= TARGET_SPEED and named
    text = f"goal at {largest} ranks: >= {TARGET_SPEED:.0f}x HTA's {hta:.1f} s: best {best} {ours[best]:.2f} s = {ratio:.2f}x ({'met' if met else 'MISSED'}); straggler named by every run: {named}"
    figure = goal_entry(f"distributed view, {largest} ranks ({best})", ours[best], "s", "HTA TraceAnalysis", hta, ANCHOR_OVER_VALUE, ">=", TARGET_SPEED)
    return {"met": met, "ratio": ratio, "best": best, "text": text, "named": named, "goals": [figure]}


if __name__ == "__main__":
    sys.exit(main())
