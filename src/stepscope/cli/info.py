"""``stepscope info``: the runs, hosts, planes, lines and event counts a path holds."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime

from stepscope.cli.arguments import JSON, LISTING_FORMATS, TEXT
from stepscope.cli.command import Command
from stepscope.cli.errors import EXIT_USAGE
from stepscope.cli.profiles import find_path, warn_failures
from stepscope.cli.progress import FILES, progress
from stepscope.errors import StepscopeError
from stepscope.trace.readers import load
from stepscope.trace.summary import HostSummary, InfoReport, RunSummary, SkippedFile, summarize


def add_info_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a profile file (.xplane.pb, .pt.trace.json[.gz], .trace.json[.gz]) or a log directory")
    parser.add_argument("--format", choices=LISTING_FORMATS, default=TEXT)


def run_info(args: argparse.Namespace) -> int:
    found = find_path(args.path)
    runs = found.runs
    summaries: list[RunSummary] = []
    errors: list[str] = []
    hosts = [(run, host) for run in runs for host in run.hosts]
    with progress(len(hosts), "loading", FILES) as bar:
        by_run: dict[str, list[HostSummary]] = {run.name: [] for run in runs}
        for run, host in hosts:
            try:
                by_run[run.name].append(summarize(load(host.path), host.name))
            except StepscopeError as error:
                if len(hosts) == 1:
                    raise
                errors.append(str(error))
            bar.update(1)
    summaries = [RunSummary(name, found) for name, found in by_run.items() if found]
    report = InfoReport(summaries, errors, [SkippedFile(str(entry.path), entry.why) for entry in found.skipped])
    if errors:
        warn_failures(args.path, errors, len(hosts) - len(errors))
    if args.format == JSON:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_info(report))
    return 0 if summaries else EXIT_USAGE


def render_info(report: InfoReport) -> str:
    out: list[str] = []
    for run in report.runs:
        out.append(f"run {run.name}")
        for host in run.hosts:
            start = datetime.fromtimestamp(host.start_ns / 1e9, tz=UTC).isoformat(timespec="milliseconds")
            out.append(f"  host {host.name}  [{host.format}]  {host.path}")
            out.append(f"    span {host.span_ps / 1e9:,.3f} ms from {start}, {host.events:,} events")
            if host.devices:
                out.append(f"    devices: {', '.join(host.devices)}")
            out.extend(f"    warning: {warning}" for warning in host.warnings)
            for plane in host.planes:
                out.append(f"    plane {plane.name}: {plane.events:,} events in {len(plane.lines)} lines")
                out.extend(f"      {line.name} (id {line.id}): {line.events:,} events" for line in plane.lines)
    if report.skipped:
        out.append(f"skipped {len(report.skipped):,} file(s)")
        out.extend(f"  {entry.path}: {entry.why}" for entry in report.skipped)
    return "\n".join(out) + "\n"


INFO = Command("info", "runs, hosts, planes, lines and event counts of a file, run or logdir", add_info_arguments, run_info)
