"""Diff benchmark: ``stepscope diff`` of two ~1M-event profiles against loading both.

The anchor is the load: a diff is worth running in CI only if it costs no more than
reading the two files it compares. The goal: the diff's own time (the four
tools a diff reads, run on each profile, plus the subtraction, the bootstrap and the
rendering) below the time of loading both.

The profiles are ``make_big_profile.make_profile(--events, seed 0 and seed 1)``: the trace
viewer benchmark's synthetic PyTorch-like job on 8 GPUs (nested host ops, launches,
kernels on 4 streams per GPU, ``ProfilerStep#N`` steps), written as ``.xplane.pb`` to
``bench/out/diff_{base,new}_<events>.xplane.pb`` once (a ``.meta.json`` sidecar caches them;
``--force`` remakes them). The two seeds draw different op and kernel durations, so the
diff has real changes to find.

Measured in one fresh process after the imports (``stepscope diff`` is one process too):
  load   ``stepscope.load`` of each file;
  diff   ``RunResults.of`` each profile (overview_page, framework_op_stats, kernel_stats,
         memory_profile on one shared ``OpStats``), ``diff_results``, a ``--fail-if`` gate,
         and rendering the text and the JSON;
best of ``--repeat`` (default 1: one run takes a minute), ratio = diff s / load s (< 1:
the goal holds). Results also go to ``bench/out/diff.json``.

    .venv/bin/python bench/diff.py [--events N] [--repeat N] [--force]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from goals import VALUE_OVER_ANCHOR, goal
from measure import MB, peak_bytes, warm_page_cache

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
DEFAULT_EVENTS = 1_000_000
RESULT_MARK = "@@diff-result@@ "


def profile_paths(events: int, force: bool) -> tuple[Path, Path]:
    """The two profiles, made with make_big_profile.py (cached by its sidecar)."""
    paths = []
    for seed, role in ((0, "base"), (1, "new")):
        out = OUT / f"diff_{role}_{events}.xplane.pb"
        command = [sys.executable, str(ROOT / "bench" / "make_big_profile.py"), "--events", str(events), "--seed", str(seed), "--out", str(out)]
        subprocess.run([*command, *(["--force"] if force else [])], check=True)
        paths.append(out)
    return paths[0], paths[1]


def child(base: str, new: str) -> dict:
    import stepscope
    from stepscope.analysis.diff.compare import RunResults, diff_results
    from stepscope.analysis.diff.gate import Rule, gate
    from stepscope.render import render

    t0 = time.perf_counter()
    profiles = [stepscope.load(base), stepscope.load(new)]
    t1 = time.perf_counter()
    runs = [RunResults.of(profile) for profile in profiles]
    t2 = time.perf_counter()
    result = diff_results(runs[0], runs[1], base, new)
    outcome = gate([Rule.parse("step_time > +5%")], result)
    text, document = render([result, outcome], "text"), render([result, outcome], "json")
    t3 = time.perf_counter()
    return {
        "events": sum(profile.event_count for profile in profiles),
        "load_s": t1 - t0,
        "tools_s": t2 - t1,
        "subtract_and_render_s": t3 - t2,
        "diff_s": t3 - t1,
        "peak_mb": peak_bytes() / MB,
        "verdict": result.verdict,
        "rows": {"ops": len(result.ops), "kernels": len(result.kernels), "steps": len(result.steps)},
        "output_bytes": len(text) + len(document),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="events per profile (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--force", action="store_true", help="remake the profiles")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(RESULT_MARK + json.dumps(child(*args.child)))
        return 0
    base, new = profile_paths(args.events, args.force)
    runs = []
    for _ in range(args.repeat):
        for path in (base, new):
            warm_page_cache(path)
        answer = subprocess.run([sys.executable, __file__, "--child", str(base), str(new)], capture_output=True, text=True, check=True)
        runs.append(json.loads(next(line for line in answer.stdout.splitlines() if line.startswith(RESULT_MARK))[len(RESULT_MARK) :]))
    best = {key: min(run[key] for run in runs) for key in ("load_s", "tools_s", "subtract_and_render_s", "diff_s")}
    ratio = best["diff_s"] / best["load_s"]
    goals = [goal(f"diff of two profiles ({runs[0]['events']:,} events)", best["diff_s"], "s", "loading both", best["load_s"], VALUE_OVER_ANCHOR, "<", 1)]
    report = {**runs[0], **best, "ratio_diff_to_load": ratio, "goal_holds": ratio < 1, "repeat": args.repeat, "goals": goals}
    print(f"{report['events']:,} events in two profiles ({base.name}, {new.name})")
    print(f"  load both      {best['load_s']:8.2f} s   (the anchor)")
    print(f"  diff           {best['diff_s']:8.2f} s   = tools {best['tools_s']:.2f} s + subtract, gate, render {best['subtract_and_render_s']:.2f} s")
    print(
        f"  ratio diff / load = {ratio:.2f} ({'goal holds: under the load' if ratio < 1 else 'goal missed: over the load'}); peak {report['peak_mb']:,.0f} MB"
    )
    print(f"  verdict: {report['verdict']}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "diff.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
