"""``stepscope diff``: what changed between two runs, and a regression gate for CI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stepscope.cli.arguments import DIFF_FORMATS, GITHUB, JUNIT, MARKDOWN, TEXT, add_output
from stepscope.cli.command import Command
from stepscope.cli.errors import EXIT_REGRESSION
from stepscope.cli.output import append_step_summary, check_output, write_output
from stepscope.cli.profiles import load_profile, pick_host
from stepscope.cli.progress import FILES, progress

# The formats that show the gate even without --fail-if rules (an empty suite, no annotations).
GATE_FORMATS = (JUNIT, GITHUB)


def add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("base", help="the run to compare against: a profile file, a run folder or a log directory")
    parser.add_argument("new", help="the run to compare, likewise")
    parser.add_argument("--run", help="the run, when a path holds several (the same for both)")
    parser.add_argument("--host", help="the host, when a run has several (the same for both)")
    parser.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="RULE",
        help="exit 1 when this significant change happened, e.g. 'step_time > +5%%', 'memory_peak > +512MiB', 'input > +1ms' (repeatable)",
    )
    parser.add_argument(
        "--format",
        choices=DIFF_FORMATS,
        default=TEXT,
        help=f"{JUNIT}: one testcase per --fail-if rule; markdown: a PR comment; {GITHUB}: GitHub Actions annotations, and the Markdown summary appended to $GITHUB_STEP_SUMMARY",
    )
    add_output(parser)


def run_diff(args: argparse.Namespace) -> int:
    """Loads BASE and NEW (each as ``report`` picks its profile), diffs them, renders the
    diff (and the gate, with rules or in a GATE_FORMATS format), appends the Markdown summary
    to GitHub's step summary for the formats that do, and exits 1 when a rule failed."""
    from stepscope.analysis.diff.compare import RunResults, diff_results
    from stepscope.analysis.diff.gate import Rule, gate
    from stepscope.render import FORMATS, render

    rules = [Rule.parse(text) for text in args.fail_if]  # a bad rule fails before any loading
    if args.output:
        check_output(Path(args.output))
    hosts = [pick_host(path, args.run, args.host) for path in (args.base, args.new)]
    runs: list[RunResults] = []
    with progress(len(hosts), "loading", FILES) as bar:
        for host in hosts:
            runs.append(RunResults.of(load_profile(host.path)))
            bar.update(1)
    result = diff_results(runs[0], runs[1], str(hosts[0].path), str(hosts[1].path))
    outcome = gate(rules, result)
    results = [result, outcome] if rules or args.format in GATE_FORMATS else [result]
    write_output(args.output, render(results, args.format))
    if FORMATS[args.format].step_summary:
        append_step_summary(render(results, MARKDOWN))
    if outcome.failed:
        reasons = "; ".join(f"{failed['rule']}: {failed['reason']}" for failed in outcome.failed)
        print(f"stepscope: regression: {reasons}", file=sys.stderr)
        return EXIT_REGRESSION
    return 0


DIFF = Command("diff", "what changed between two runs, and a regression gate for CI (--fail-if)", add_diff_arguments, run_diff)
