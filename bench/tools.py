"""Tools benchmark: every analysis tool, stepscope against XProf's C++ converter.

Three profiles:
  1. the real TensorFlow CPU training XSpace made by bench/make_xspace.py (~10 MiB, Python
     tracer on): bench/out/xspace_logdir/plugins/profile/<session>/<host>.xplane.pb;
  2. the largest shared Kineto trace, ../shared/traces/kineto/
     v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz. XProf reads only XSpace, so it
     gets ``stepscope.save(stepscope.load(json), <name>.xplane.pb)`` (converted before any
     timing); stepscope is timed on the original JSON, and on the converted file too.
  3. the synthetic GPU-shaped profile of bench/make_big_profile.py, ``--gpu-events``
     events (default 1M: 8 GPUs of kernels on 4 streams each, launches, nested host ops),
     written once to bench/out/big_<events>.xplane.pb (the trace viewer benchmark's file);
     ``--gpu-events 0`` leaves it out.

Every measurement is one fresh subprocess of this interpreter, so that peak memory is that
run's own and no cache carries over. Inside the child, after the imports:

  stepscope  load = ``stepscope.load(path)``; per tool = ``run_tool(name, stats)`` (one ``OpStats`` for all) plus
             rendering its JSON (``stepscope.render.render([result], "json")``), since XProf
             returns serialized JSON too; total = load + every tool (one perf_counter span).
  XProf      per tool = one ``raw_to_tool_data.xspace_to_tool_data([path], name,
             {"use_saved_result": False})`` call (each call reads and converts the XSpace
             itself: that is how XProf works); total = every call (one perf_counter span).
             XProf writes cache files beside its input, so each child gets its own copy of
             the file in a fresh temp folder (copied by the parent, untimed).
  peak       VmHWM of the child at the end (its peak RSS); base = VmRSS after the imports.

The tools are those ``stepscope.analysis.tool_names()`` lists; XProf runs those of them it
knows. Each child runs ``--repeat`` times (interleaved); a tool's time is its best, a total
is the best run's total, a peak is the highest seen. ratio = XProf s / stepscope s (> 1:
stepscope is faster; for peak MB, > 1: stepscope uses less). The target: stepscope's total
(load + all tools) below XProf's total, per profile.

The children silence XProf/TensorFlow logs (TF_CPP_MIN_LOG_LEVEL=3, GLOG_minloglevel=3) and
their stderr goes to a file shown only when a child fails.

Run with the project's venv (stepscope, xprof; make_xspace.py needs tensorflow):
    .venv/bin/python bench/make_xspace.py && .venv/bin/python bench/tools.py
Results also go to bench/out/tools.json.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from goals import VALUE_OVER_ANCHOR, goal
from measure import MB, peak_bytes, rss_bytes, warm_page_cache

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces"
KINETO = TRACES / "kineto" / "v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz"
XSPACE_LOGDIR = ROOT / "bench" / "out" / "xspace_logdir"
OUT_JSON = ROOT / "bench" / "out" / "tools.json"
RESULT_MARK = "@@tools-result@@ "
# The tools ``xprof.convert.raw_to_tool_data.xspace_to_tool_data`` handles (xprof 2.24);
# any other name only logs "not a known xplane tool" and returns no data.
XPROF_TOOLS = frozenset(
    {
        "trace_viewer",
        "trace_viewer@",
        "overview_page",
        "input_pipeline_analyzer",
        "framework_op_stats",
        "kernel_stats",
        "memory_profile",
        "pod_viewer",
        "op_profile",
        "hlo_op_profile",
        "hlo_stats",
        "roofline_model",
        "graph_viewer",
        "memory_viewer",
        "megascale_stats",
        "inference_profile",
        "perf_counters",
        "kernel_utilization",
        "utilization_viewer",
        "smart_suggestion",
    }
)
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "GLOG_minloglevel": "3", "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": ""}


# --- the child: one implementation, every tool, measured ---------------------------------------


def child_stepscope(path: str, tools_wanted: list[str]) -> dict:
    import stepscope
    from stepscope.analysis import run_tool, tool_names
    from stepscope.analysis.opstats import OpStats
    from stepscope.render import render

    tool_names()  # imports (and so registers) every tool module: part of the imports
    base = rss_bytes()
    tools = {}
    c0 = time.process_time()
    t0 = time.perf_counter()
    profile = stepscope.load(path)
    load_s = time.perf_counter() - t0
    stats = OpStats(profile)  # shared by the tools, as `report --tool all` and the dashboard do
    for name in tools_wanted:
        t1 = time.perf_counter()
        try:
            result = run_tool(name, stats)
            t2 = time.perf_counter()
            text = render([result], "json")
        except Exception as error:
            tools[name] = {"error": f"{type(error).__name__}: {error}"[:300], "seconds": time.perf_counter() - t1}
            continue
        t3 = time.perf_counter()
        tools[name] = {"seconds": t3 - t1, "compute_s": t2 - t1, "json_s": t3 - t2, "bytes": len(text)}
        del result, text
    total_s = time.perf_counter() - t0
    cpu_s = time.process_time() - c0
    return {"load_s": load_s, "total_s": total_s, "cpu_s": cpu_s, "tools": tools, "events": profile.event_count, "base_rss": base}


def child_xprof(path: str, tools_wanted: list[str]) -> dict:
    from xprof.convert import raw_to_tool_data

    base = rss_bytes()
    tools = {}
    c0 = time.process_time()
    t0 = time.perf_counter()
    for name in tools_wanted:
        t1 = time.perf_counter()
        try:
            data, _content_type = raw_to_tool_data.xspace_to_tool_data([path], name, {"use_saved_result": False})
        except Exception as error:
            tools[name] = {"error": f"{type(error).__name__}: {error}"[:300], "seconds": time.perf_counter() - t1}
            continue
        seconds = time.perf_counter() - t1
        if data is None:
            tools[name] = {"error": "XProf returned no data", "seconds": seconds}
        else:
            tools[name] = {"seconds": seconds, "bytes": len(data)}
        del data
    total_s = time.perf_counter() - t0
    cpu_s = time.process_time() - c0
    return {"load_s": None, "total_s": total_s, "cpu_s": cpu_s, "tools": tools, "base_rss": base}


CHILDREN = {"stepscope": child_stepscope, "xprof": child_xprof}


def child(impl: str, path: str, tools: str) -> None:
    record = CHILDREN[impl](path, [t for t in tools.split(",") if t])
    record["peak_rss"] = peak_bytes()
    print(RESULT_MARK + json.dumps(record), flush=True)


# --- the parent: runs children, aggregates, prints -------------------------------------------


def measure(impl: str, path: Path, tools: list[str], timeout: float, log: Path) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", impl, str(path), ",".join(tools)]
    env = {**os.environ, **QUIET_ENV}
    with log.open("w") as err:
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK) :])
    how = f"exit {proc.returncode}" if proc.returncode >= 0 else f"signal {-proc.returncode}"
    tail = log.read_text(errors="replace").strip().splitlines()[-15:]
    print(f"    {impl} on {path.name} failed ({how}); its stderr ends:", file=sys.stderr)
    for line in tail:
        print(f"      {line}", file=sys.stderr)
    return {"error": f"{how}: " + " | ".join(tail[-3:])}


def measure_xprof(path: Path, tools: list[str], timeout: float, log: Path) -> dict:
    """XProf on a private copy of ``path``, so the cache files it writes die with the copy."""
    with tempfile.TemporaryDirectory(prefix="stepscope-bench-xprof.") as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        record = measure("xprof", copy, tools, timeout, log)
        record["files_written"] = sorted(p.name for p in Path(folder).iterdir() if p != copy)
    return record


def summarize(runs: list[dict]) -> dict | None:
    """Best time per tool and in total, highest peak; None when no run finished."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return None
    tools = {}
    for name in good[0]["tools"]:
        ok = [r["tools"][name] for r in good if "error" not in r["tools"].get(name, {"error": 1})]
        if ok:
            tools[name] = {"seconds": min(t["seconds"] for t in ok), "bytes": ok[0].get("bytes")}
        else:
            tools[name] = {"error": good[-1]["tools"][name]["error"]}
    loads = [r["load_s"] for r in good if r.get("load_s") is not None]
    return {
        "load_s": min(loads) if loads else None,
        "total_s": min(r["total_s"] for r in good),
        "cpu_s": min(r["cpu_s"] for r in good),
        "tools": tools,
        "failed_tools": sorted(n for n, t in tools.items() if "error" in t),
        "peak_rss": max(r["peak_rss"] for r in good),
        "base_rss": max(r["base_rss"] for r in good),
        "runs_ok": len(good),
    }


def ratio(theirs: float | None, ours: float | None) -> float | None:
    return theirs / ours if theirs is not None and ours else None


def fmt_s(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def tool_cell(summary: dict | None, name: str | None, key: str = "seconds") -> tuple[str, float | None]:
    """(text, seconds) of one tool (``name``) or of the load (None) in a summary."""
    if summary is None:
        return "failed", None
    if name is None:
        return fmt_s(summary["load_s"]), summary["load_s"]
    tool = summary["tools"].get(name)
    if tool is None:
        return "n/a", None
    if "error" in tool:
        return "error", None
    return fmt_s(tool[key]), tool[key]


def render_table(rows: list[dict]) -> str:
    header = ["file", "tool", "stepscope s", "XProf s", "ratio", "ss on .xplane.pb s", "ratio (.pb)"]
    body: list[list[str]] = []
    for row in rows:
        ss, xp, pb = row["stepscope"], row["xprof"], row.get("stepscope_pb")
        conv = row["converted"]
        label = [row["label"], f"{row['name']}", f"({row['bytes'] / MB:.1f} MiB" + (f"; as .xplane.pb {row['xplane_bytes'] / MB:.1f} MiB)" if conv else ")")]
        cells: list[list[str]] = []
        for name in [None, *row["tools"]]:
            ss_text, ss_s = tool_cell(ss, name)
            if name is None:
                xp_text, xp_s = "-", None
            elif name not in row["xprof_tools"]:
                xp_text, xp_s = "n/a", None
            else:
                xp_text, xp_s = tool_cell(xp, name)
            pb_text, pb_s = tool_cell(pb, name) if conv else ("-", None)
            cells.append(
                ["load" if name is None else name, ss_text, xp_text, fmt_ratio(ratio(xp_s, ss_s)), pb_text, fmt_ratio(ratio(xp_s, pb_s)) if conv else "-"]
            )

        # This row's summaries, bound as defaults: the closure is called in this iteration only.
        def total_row(title: str, value, *, ss: dict | None = ss, xp: dict | None = xp, pb: dict | None = pb, conv: bool = conv) -> list[str]:
            v = {k: (value(s) if s else None) for k, s in (("ss", ss), ("xp", xp), ("pb", pb))}
            return [
                title,
                fmt_s(v["ss"]),
                fmt_s(v["xp"]),
                fmt_ratio(ratio(v["xp"], v["ss"])),
                fmt_s(v["pb"]) if conv else "-",
                fmt_ratio(ratio(v["xp"], v["pb"])) if conv else "-",
            ]

        cells.append(total_row("TOTAL (load + tools)", lambda s: s["total_s"]))
        cells.append(total_row("  total CPU s", lambda s: s["cpu_s"]))

        def mb(s: dict | None) -> str:
            return "-" if s is None else f"{s['peak_rss'] / MB:.0f} ({s['base_rss'] / MB:.0f})"

        peak = {k: (s["peak_rss"] if s else None) for k, s in (("ss", ss), ("xp", xp), ("pb", pb))}
        cells.append(
            [
                "peak MB (base)",
                mb(ss),
                mb(xp),
                fmt_ratio(ratio(peak["xp"], peak["ss"])),
                mb(pb) if conv else "-",
                fmt_ratio(ratio(peak["xp"], peak["pb"])) if conv else "-",
            ]
        )
        for i, c in enumerate(cells):
            body.append([label[i] if i < len(label) else "", *c])
        body.append([""] * len(header))
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, body[:-1])])


def synthetic_gpu(events: int) -> Path:
    """make_big_profile.py's profile (made once; its sidecar caches it)."""
    path = ROOT / "bench" / "out" / f"big_{events}.xplane.pb"
    subprocess.run([sys.executable, str(ROOT / "bench" / "make_big_profile.py"), "--events", str(events), "--out", str(path)], check=True)
    return path


def find_xspace(logdir: Path) -> Path | None:
    found = sorted((logdir / "plugins" / "profile").glob("*/*.xplane.pb"))
    return found[-1] if found else None


def versions() -> dict:
    found = {}
    for dist in ("stepscope", "xprof", "numpy", "protobuf", "msgspec", "tensorflow-cpu", "tensorflow", "keras"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    return found


def tools_goal(row: dict) -> dict | None:
    """Issue 20's goal for one file: stepscope's load + tools <= 0.3x XProf's time on the TF
    XSpace and the GPU profile (the converted Kineto trace keeps the older bar, below XProf's).

    Summed over the tools both answered, so that one tool XProf cannot produce for a profile
    (memory_viewer wants an HLO module) leaves the rest comparable; the figure names it.
    """
    ss, xp = row["stepscope"], row["xprof"]
    if ss is None or xp is None or ss["load_s"] is None:
        return None
    both = [name for name in row["xprof_tools"] if "error" not in ss["tools"].get(name, {"error": 1}) and "error" not in xp["tools"].get(name, {"error": 1})]
    if not both:
        return None
    left_out = sorted(set(row["tools"]) - set(both))
    ours = ss["load_s"] + sum(ss["tools"][name]["seconds"] for name in both)
    theirs = sum(xp["tools"][name]["seconds"] for name in both)
    figure = f"load + tools, {row['label']}" + (f" (without {', '.join(left_out)})" if left_out else "")
    return goal(figure, ours, "s", "XProf xspace_to_tool_data", theirs, VALUE_OVER_ANCHOR, "<" if row["converted"] else "<=", 1.0 if row["converted"] else 0.3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("IMPL", "PATH", "TOOLS"), help=argparse.SUPPRESS)
    parser.add_argument("--xspace", type=Path, default=None, help="the real XSpace (default: the one bench/make_xspace.py made under bench/out/xspace_logdir)")
    parser.add_argument("--kineto", type=Path, default=KINETO, help="the Kineto trace")
    parser.add_argument("--gpu-events", type=int, default=1_000_000, help="events of the synthetic GPU profile (0: leave it out)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per implementation and file")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per child")
    parser.add_argument("--json", type=Path, default=OUT_JSON, help="where results go")
    parser.add_argument("--strict", action="store_true", help="exit 1 when stepscope is not faster than XProf on every file")
    args = parser.parse_args(argv)

    if args.child:
        child(*args.child)
        return 0
    sys.stdout.reconfigure(line_buffering=True)

    import stepscope
    from stepscope.analysis import tool_names

    names = tool_names()
    xprof_names = [n for n in names if n in XPROF_TOOLS]
    xspace = args.xspace or find_xspace(XSPACE_LOGDIR)
    if xspace is None or not xspace.is_file():
        print(f"no XSpace under {XSPACE_LOGDIR}: make it with `.venv/bin/python bench/make_xspace.py` (or pass --xspace)", file=sys.stderr)
        return 2
    if not args.kineto.is_file():
        print(f"{args.kineto} is missing (pass --kineto)", file=sys.stderr)
        return 2

    rows = []
    with tempfile.TemporaryDirectory(prefix="stepscope-bench-tools.") as scratch:
        scratch_dir = Path(scratch)
        log = scratch_dir / "child.stderr"
        converted = scratch_dir / (args.kineto.name.split(".")[0] + ".xplane.pb")
        t0 = time.perf_counter()
        stepscope.save(stepscope.load(args.kineto), converted)  # untimed: XProf's input
        convert_s = time.perf_counter() - t0
        print(f"  converted {args.kineto.name} -> {converted.name} ({converted.stat().st_size / MB:.1f} MiB) in {convert_s:.1f} s", file=sys.stderr)
        inputs = [("TF/Keras CPU XSpace", xspace, xspace, False), ("Kineto JSON (V100)", args.kineto, converted, True)]
        if args.gpu_events > 0:
            gpu = synthetic_gpu(args.gpu_events)
            inputs.append((f"synthetic GPU XSpace ({args.gpu_events:,} events)", gpu, gpu, False))
        for label, original, xplane, is_converted in inputs:
            warm_page_cache(original)
            warm_page_cache(xplane)
            runs: dict[str, list[dict]] = {"stepscope": [], "stepscope_pb": [], "xprof": []}
            for _ in range(args.repeat):  # interleaved, so that drift hits all alike
                plan = [("stepscope", functools.partial(measure, "stepscope", original, names, args.timeout, log))]
                if is_converted:
                    plan.append(("stepscope_pb", functools.partial(measure, "stepscope", xplane, names, args.timeout, log)))
                plan.append(("xprof", functools.partial(measure_xprof, xplane, xprof_names, args.timeout, log)))
                for key, run in plan:
                    record = run()
                    runs[key].append(record)
                    shown = f"error: {record['error']}" if "error" in record else f"total {record['total_s']:.3f} s, peak {record['peak_rss'] / MB:.0f} MB"
                    print(f"  {original.name:<58} {key:<12} {shown}", file=sys.stderr, flush=True)
            rows.append(
                {
                    "label": label,
                    "name": (f"{original.parent.name}/{original.name}" if not is_converted else original.name),
                    "path": str(original),
                    "bytes": original.stat().st_size,
                    "converted": is_converted,
                    "xplane": str(xplane) if is_converted else str(original),
                    "xplane_bytes": xplane.stat().st_size,
                    "convert_s": convert_s if is_converted else None,
                    "tools": names,
                    "xprof_tools": xprof_names,
                    "stepscope": summarize(runs["stepscope"]),
                    "stepscope_pb": summarize(runs["stepscope_pb"]) if is_converted else None,
                    "xprof": summarize(runs["xprof"]),
                    "runs": {k: v for k, v in runs.items() if v},
                }
            )

    print()
    print(
        f"Tools: stepscope (load + run_tool + JSON render) vs XProf xspace_to_tool_data "
        f"(use_saved_result=False), best of {args.repeat} fresh processes each.\n"
        f"ratio = XProf / stepscope (> 1: stepscope faster, or smaller for peak MB); "
        f"peak = child's peak RSS, (base) = its RSS after imports; MB = 2**20 bytes"
    )
    print(render_table(rows))
    verdicts = {}
    goals = []
    for row in rows:
        for key in ("stepscope", "stepscope_pb", "xprof"):
            summary = row[key]
            if summary and summary["failed_tools"]:
                for name in summary["failed_tools"]:
                    print(f"  {row['name']}: {key} {name} failed: {summary['tools'][name]['error']}")
            elif row["runs"].get(key) and summary is None:
                print(f"  {row['name']}: {key} failed: {row['runs'][key][-1]['error']}")
        if (entry := tools_goal(row)) is not None:
            goals.append(entry)
        ss, xp = row["stepscope"], row["xprof"]
        if ss is None or xp is None or ss["failed_tools"] or xp["failed_tools"]:
            verdicts[row["name"]] = None
            print(f"\nTarget on {row['name']}: cannot tell (a run or a tool failed)")
            continue
        speed = xp["total_s"] / ss["total_s"]
        verdicts[row["name"]] = speed > 1
        extra = ""
        if row["converted"] and row["stepscope_pb"]:
            pb_speed = xp["total_s"] / row["stepscope_pb"]["total_s"]
            extra = f"; on the same .xplane.pb: {pb_speed:.2f}x ({'faster' if pb_speed > 1 else 'SLOWER'})"
        print(
            f"\nTarget on {row['name']} (total below XProf's): stepscope {ss['total_s']:.3f} s vs "
            f"XProf {xp['total_s']:.3f} s = {speed:.2f}x -> {'MET' if speed > 1 else 'NOT MET'}{extra}"
        )

    args.json.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "versions": versions(),
        "method": {
            "stepscope": "load = stepscope.load(path); per tool = run_tool(name, stats) (one OpStats) + render([result], 'json'); total = load + all tools",
            "xprof": "per tool = raw_to_tool_data.xspace_to_tool_data([copy], name, {'use_saved_result': False}) on a private copy; total = all calls",
            "repeat": args.repeat,
            "seconds": "best wall time inside a fresh child, after its imports",
            "total_s": "best run's total (not the sum of per-tool bests)",
            "peak_rss": "highest VmHWM of the child at its end (bytes)",
            "base_rss": "VmRSS of the child after its imports (bytes)",
        },
        "target": {"rule": "stepscope total < XProf total, per file", "met": verdicts},
        "goals": goals,
        "files": rows,
    }
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(f"results: {args.json}")
    return 1 if args.strict and not all(v is True for v in verdicts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
