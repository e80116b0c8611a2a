"""Critical path benchmark: stepscope's ``critical_path`` tool beside HolisticTraceAnalysis's
critical path analysis, on the shared Kineto traces HTA can read (and the shared TPU
XSpace, which HTA cannot: stepscope alone, for the load goal).

Each measurement is a fresh subprocess (nothing cached, imports done before the clock):

  stepscope   load_s    = ``stepscope.load(path)``
              tool_s    = ``run_tool("critical_path", profile)``: every step's path, its
                          composition, top ops, segments and the four what-ifs
              per step  = tool_s / steps
  HTA         parse_s   = ``TraceAnalysis(trace_dir=...)`` on a folder holding the file
              per step  = ``critical_path_analysis(rank, annotation, instance)`` +
                          ``get_critical_path_breakdown()``, the mean over the steps it
                          analysed (HTA analyses one annotation instance per call)
  speed ratio = HTA per step / stepscope per step                (> 1: stepscope faster)

The steps: ``ProfilerStep#N`` where the trace has them (HTA's ``annotation="ProfilerStep"``,
instance i = stepscope's step i); alexnet_small (HTA's own critical-path test data) has no
step marker: stepscope takes the profiled window as its one step, HTA the
``[param|cuda]`` annotation that spans nearly all of it. The path's composition is each
tool's own: stepscope's ``by_kind_ps`` (which adds up to the step), HTA's critical path
edges summed by ``bound_by`` (HTA's path is its longest path through the annotation's
events, which need not span the step; docs/tools/critical_path.md compares them).

Goals: per step, stepscope >= 10x faster than HTA on every trace both analyse;
stepscope's tool (all steps) below its own load time on every trace.

    python bench/critical_path.py [--repeat N] [--no-hta] [--hta-steps N]

Run with .venv (stepscope); HTA runs in .venv-bench/bin/python (``make bench`` builds it,
with pandas < 3, which HTA's critical path needs). Results go to bench/out/critical_path.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from goals import ANCHOR_OVER_VALUE, VALUE_OVER_ANCHOR, goal
from measure import run_marked
from summary import write_atomically

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces"
OUT_JSON = ROOT / "bench" / "out" / "critical_path.json"
HTA_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
RESULT_MARK = "@@critical-path-result@@ "
STEP_ANNOTATION = "ProfilerStep"
# Trace -> HTA's annotation for its steps (None: HTA reads no XSpace; stepscope alone).
CASES: dict[str, str | None] = {
    "kineto/alexnet_small.pt.trace.json.gz": "[param|cuda]",
    "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz": STEP_ANNOTATION,
    "kineto/v100_resnet_ns_resolution.pt.trace.json.gz": STEP_ANNOTATION,
    "kineto/v100_resnet50_dataloader4_legacy_schema.pt.trace.json.gz": STEP_ANNOTATION,
    "kineto/mi250_rocm_toy_train.pt.trace.json.gz": STEP_ANNOTATION,
    "kineto/recsys_sampled_rank0_of_128.pt.trace.json.gz": STEP_ANNOTATION,
    "xplane/tpu_v_inference_4chips.xplane.pb": None,
}
TARGET_SPEED = 10.0  # HTA per step / stepscope per step, at least
TARGET_LOAD = 1.0  # stepscope tool / stepscope load, below


# --- the children ------------------------------------------------------------------------------


def child_stepscope(path: str) -> dict:
    import stepscope
    from stepscope.analysis import run_tool

    load = stepscope.load
    t0 = time.perf_counter()
    profile = load(path)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = run_tool("critical_path", profile).to_json()
    tool_s = time.perf_counter() - t0
    steps = [
        {"step": step["step"], "duration_us": step["duration_ps"] / 1e6, "by_kind_us": {k: v / 1e6 for k, v in step["by_kind_ps"].items() if v}}
        for step in result["steps"]
    ]
    return {
        "load_s": load_s,
        "tool_s": tool_s,
        "steps": steps,
        "what_if": {change["change"]: change["predicted_step_ps"] / 1e6 for change in result["what_if"]},
    }


def child_hta(path: str, annotation: str, max_steps: str) -> dict:
    import logging

    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(path, folder)
        t0 = time.perf_counter()
        analysis = TraceAnalysis(trace_dir=folder)
        parse_s = time.perf_counter() - t0
        rank = next(iter(analysis.t.traces))
        steps: list[dict] = []
        for instance in range(int(max_steps)):
            t0 = time.perf_counter()
            try:
                found = analysis.critical_path_analysis(rank=rank, annotation=annotation, instance_id=instance)
                if found is None:
                    raise ValueError(f"no instance {instance} of {annotation!r}")
                graph, success = found
                breakdown = graph.get_critical_path_breakdown()
            except Exception as error:  # HTA's own failure on this step: recorded, not fatal
                steps.append({"instance": instance, "error": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"})
                break
            seconds = time.perf_counter() - t0
            by = {} if breakdown is None else {str(k or "dependency"): float(v) for k, v in breakdown.groupby("bound_by").duration.sum().items() if v}
            steps.append({"instance": instance, "seconds": seconds, "success": bool(success), "path_us": sum(by.values()), "bound_by_us": by})
    return {"parse_s": parse_s, "steps": steps}


# --- the parent ---------------------------------------------------------------------------------


def run_child(command: list[str], timeout: float) -> dict:
    return run_marked(command, RESULT_MARK, ROOT, timeout)


def measure(name: str, annotation: str | None, repeat: int, hta: bool, hta_steps: int) -> dict:
    path = str(TRACES / name)
    me = str(Path(__file__).resolve())
    runs = [run_child([sys.executable, me, "--child", "stepscope", path], 600) for _ in range(repeat)]
    good = [run for run in runs if "error" not in run]
    record: dict = {"trace": Path(name).name, "annotation": annotation}
    if not good:
        record["stepscope_error"] = runs[-1]["error"]
    else:
        best = min(good, key=lambda run: run["tool_s"])
        record["stepscope"] = best | {"load_s": min(run["load_s"] for run in good), "tool_s": best["tool_s"]}
        record["stepscope"]["per_step_s"] = best["tool_s"] / max(len(best["steps"]), 1)
    if hta and annotation is not None:
        steps = len(good[0]["steps"]) if good else hta_steps
        result = run_child([str(HTA_PYTHON), me, "--child", "hta", path, annotation, str(min(steps, hta_steps))], 1800)
        record["hta"] = result
        timed = [step["seconds"] for step in result.get("steps", []) if "seconds" in step]
        if timed:
            result["per_step_s"] = sum(timed) / len(timed)
    return record


def ratio_text(record: dict) -> str:
    ours, theirs = record.get("stepscope", {}).get("per_step_s"), record.get("hta", {}).get("per_step_s")
    return f"{theirs / ours:.1f}x" if ours and theirs else "-"


def composition(by: dict[str, float], total: float) -> str:
    return ", ".join(f"{kind} {100 * us / total:.0f}%" for kind, us in sorted(by.items(), key=lambda item: -item[1]) if total and us >= total * 0.005)


def report(records: list[dict]) -> list[dict]:
    print(f"{'trace':44s} {'steps':>5s} {'load':>8s} {'all paths':>9s} {'per step':>9s} {'HTA/step':>9s} {'speed':>7s}")
    goals = []
    for record in records:
        ours, theirs = record.get("stepscope"), record.get("hta", {})
        if ours is None:
            print(f"{record['trace'][:44]:44s} stepscope failed: {record['stepscope_error']}")
            continue
        hta_step = theirs.get("per_step_s")
        print(
            f"{record['trace'][:44]:44s} {len(ours['steps']):5d} {ours['load_s'] * 1e3:6.0f}ms {ours['tool_s'] * 1e3:7.0f}ms"
            f" {ours['per_step_s'] * 1e3:7.1f}ms {(f'{hta_step:7.2f} s') if hta_step else '      -':>9s} {ratio_text(record):>7s}"
        )
        for step, hta in zip(ours["steps"], theirs.get("steps", []) + [{}] * len(ours["steps"])):
            line = f"    step {step['step']}: {step['duration_us'] / 1e3:.1f} ms: {composition(step['by_kind_us'], step['duration_us'])}"
            if "path_us" in hta:
                line += f" | HTA path {hta['path_us'] / 1e3:.1f} ms: {composition(hta['bound_by_us'], hta['path_us'])}"
            elif "error" in hta:
                line += f" | HTA: {hta['error'][:90]}"
            print(line)
        goals.append(
            goal(f"critical_path tool vs load, {record['trace']}", ours["tool_s"], "s", "stepscope load", ours["load_s"], VALUE_OVER_ANCHOR, "<", TARGET_LOAD)
        )
        if hta_step:
            goals.append(goal(f"critical path per step, {record['trace']}", ours["per_step_s"], "s", "HTA", hta_step, ANCHOR_OVER_VALUE, ">=", TARGET_SPEED))
    return goals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="stepscope runs per trace (best kept)")
    parser.add_argument("--no-hta", action="store_true", help="skip HTA")
    parser.add_argument("--hta-steps", type=int, default=3, help="HTA analyses at most this many steps per trace (each takes seconds)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        record = child_hta(*rest) if kind == "hta" else child_stepscope(*rest)
        print(RESULT_MARK + json.dumps(record), flush=True)
        return
    hta = not args.no_hta and HTA_PYTHON.is_file()
    if not args.no_hta and not hta:
        print(f"{HTA_PYTHON} is missing: HTA left out (`make bench` builds .venv-bench)", file=sys.stderr)
    records = [measure(name, annotation, args.repeat, hta, args.hta_steps) for name, annotation in CASES.items() if (TRACES / name).is_file()]
    goals = report(records)
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(OUT_JSON, json.dumps({"created": time.strftime("%Y-%m-%d %H:%M"), "records": records, "goals": goals}, indent=1) + "\n")
    print(f"wrote {OUT_JSON.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
