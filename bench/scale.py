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
- ``overview_s``: ``run_tool("overview_page", profile)`` on the loaded profile;
- ``store_open_s``: ``trace.store.open_store`` of the loaded profile saved as a store
  (``store_save_s``): what a dashboard worker pays for a profile another one loaded.

With ``--dashboard``, a ``stepscope serve`` (of ``--serve-python``'s stepscope: another
checkout's venv measures it before a change) on a log directory holding only the profile
(hard-linked), with a fresh cache, is asked for the trace viewer's tracks until its
analysis is done (``dashboard_analysis_s``), then for one event's details (the profile
worker's load, ``dashboard_event_s``), while the memory of its process tree (server and
workers) is sampled every 0.2 s: ``dashboard_peak_rss_mb`` is the highest sum of the
processes' RSS, ``dashboard_peak_pss_mb`` of their PSS (pages shared between them, such as
a store both workers map, counted once).

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
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
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
    from stepscope.trace.store import open_store, save_store
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
    with tempfile.TemporaryDirectory(dir=CACHE) as folder:
        t = time.perf_counter()
        save_store(profile, Path(folder) / "store")
        store_save_s = time.perf_counter() - t
        t = time.perf_counter()
        open_store(Path(folder) / "store")
        store_open_s = time.perf_counter() - t
    return {
        "loaded_events": profile.event_count,
        "load_s": load_s,
        "load_index_s": load_index_s,
        "load_index_cpu_s": load_index_cpu_s,
        "overview_s": overview_s,
        "store_save_s": store_save_s,
        "store_open_s": store_open_s,
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


# "stepscope: serving LOGDIR at http://HOST:PORT/...": the server's first line.
SERVING = re.compile(r"at http://127\.0\.0\.1:(\d+)/")
SAMPLE_S = 0.2


def _tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def _memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process, in kB; zeros for one that has gone."""
    values = {"Rss:": 0, "Pss:": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            name, _, rest = line.partition(" ")
            if name in values:
                values[name] = int(rest.split()[0])
    except OSError:
        pass
    return values["Rss:"], values["Pss:"]


class TreeMemory(threading.Thread):
    """Samples the summed RSS and PSS of a process tree until stopped; keeps the peaks."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.peak_rss_kb, self.peak_pss_kb = root, 0, 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_S):
            sizes = [_memory_kb(pid) for pid in _tree(self.root)]
            self.peak_rss_kb = max(self.peak_rss_kb, sum(rss for rss, _ in sizes))
            self.peak_pss_kb = max(self.peak_pss_kb, sum(pss for _, pss in sizes))


def _get(port: int, path: str, **params: str) -> tuple[int, bytes]:
    url = f"http://127.0.0.1:{port}{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=600) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def dashboard(path: Path, python: str, timeout: float) -> dict:
    """The dashboard's costs for the profile at ``path`` (see the module's docstring)."""
    work = Path(tempfile.mkdtemp(prefix="dashboard.", dir=CACHE))
    try:
        (work / "logs" / "run").mkdir(parents=True)
        os.link(path, work / "logs" / "run" / path.name)  # inside the log directory: the workers read no link out of it
        host = path.name.removesuffix(SUFFIX["xspace"]).removesuffix(SUFFIX["json"])
        server = subprocess.Popen(
            [python, "-m", "stepscope.cli", "serve", "--logdir", str(work / "logs"), "--host", "127.0.0.1", "--port", "0", "--cache-dir", str(work / "cache")],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **LIMITS, "CUDA_VISIBLE_DEVICES": ""},
        )
        memory = TreeMemory(server.pid)
        memory.start()
        try:
            assert server.stdout is not None
            found = SERVING.search(server.stdout.readline())
            if found is None:
                raise SystemExit(f"scale: {python} -m stepscope.cli serve did not start")
            port, where = int(found.group(1)), {"run": "run", "host": host}
            started = time.perf_counter()
            deadline = time.monotonic() + timeout
            while (answer := _get(port, "/api/trace/tracks", **where))[0] in (202, 404) and time.monotonic() < deadline:
                time.sleep(SAMPLE_S)  # 404: the server has not listed the run yet
            if answer[0] != 200:
                raise SystemExit(f"scale: the dashboard's analysis of {path} answered {answer[0]}: {answer[1][:300]!r}")
            analysis_s = time.perf_counter() - started
            started = time.perf_counter()
            status, _ = _get(port, "/api/trace/event", **where, id="0")  # the index's first event
            event_s = time.perf_counter() - started
            if status != 200:
                raise SystemExit(f"scale: an event's details of {path} answered {status}")
        finally:
            memory.done.set()
            memory.join()
            server.terminate()
            server.wait(timeout=60)
        return {
            "dashboard_analysis_s": analysis_s,
            "dashboard_event_s": event_s,
            "dashboard_peak_rss_mb": memory.peak_rss_kb / 1024,
            "dashboard_peak_pss_mb": memory.peak_pss_kb / 1024,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
    parser.add_argument("--dashboard", action="store_true", help="also measure stepscope serve on each profile (dashboard_* fields)")
    parser.add_argument("--serve-python", default=sys.executable, help="the Python whose stepscope serves (--dashboard)")
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
            if args.dashboard:
                row.update(dashboard(profile_path(events, fmt), args.serve_python, args.timeout))
            rows.append(row)
            print(
                f"{fmt:6} {events:>12,} events ({row['loaded_events']:,} loaded, {row['file_mb']:.0f} MiB): load+index {row['load_index_s']:.1f} s "
                f"(cpu {row['load_index_cpu_s']:.1f} s), peak RSS {row['peak_rss_mb']:,.0f} MB, full view p95 {row['full_view_p95_ms']:.1f} ms, "
                f"deep zoom p95 {row['deep_zoom_p95_ms']:.1f} ms, overview {row['overview_s']:.1f} s, store save {row['store_save_s']:.2f} s "
                f"open {row['store_open_s'] * 1e3:.1f} ms"
                + (
                    f", dashboard: analysis {row['dashboard_analysis_s']:.1f} s, event {row['dashboard_event_s']:.1f} s, "
                    f"peak RSS {row['dashboard_peak_rss_mb']:,.0f} MB (PSS {row['dashboard_peak_pss_mb']:,.0f} MB)"
                    if args.dashboard
                    else ""
                ),
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
