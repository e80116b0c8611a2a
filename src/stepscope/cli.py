"""The ``stepscope`` command line.

Every failure the user can cause (a missing file, a corrupt profile, an unknown format)
prints one line, ``stepscope: error: <file>: <problem>``, and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from tqdm import tqdm

from stepscope import __version__
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import discover
from stepscope.trace.readers import load
from stepscope.trace.summary import HostSummary, InfoReport, RunSummary, summarize
from stepscope.trace.writers import save, writer_suffix

EXIT_USAGE = 2
# The longest capture window the CLI accepts (the server's own limit is 10 minutes by default).
MAX_CAPTURE_MS = 24 * 3600 * 1000


def _progress(total: int, description: str) -> tqdm:
    """A progress bar on stderr, shown only on a terminal."""
    return tqdm(total=total, desc=description, unit="ev" if description != "loading" else "file", disable=None, leave=False, file=sys.stderr)


def cmd_info(args: argparse.Namespace) -> int:
    runs = discover(args.path)
    summaries: list[RunSummary] = []
    errors: list[str] = []
    hosts = [(run, host) for run in runs for host in run.hosts]
    with _progress(len(hosts), "loading") as bar:
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
    report = InfoReport(summaries, errors)
    for error in errors:
        print(f"stepscope: warning: {error}", file=sys.stderr)
    if args.format == "json":
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
            start = datetime.fromtimestamp(host.start_ns / 1e9, tz=timezone.utc).isoformat(timespec="milliseconds")
            out.append(f"  host {host.name}  [{host.format}]  {host.path}")
            out.append(f"    span {host.span_ps / 1e9:,.3f} ms from {start}, {host.events:,} events")
            if host.devices:
                out.append(f"    devices: {', '.join(host.devices)}")
            for warning in host.warnings:
                out.append(f"    warning: {warning}")
            for plane in host.planes:
                out.append(f"    plane {plane.name}: {plane.events:,} events in {len(plane.lines)} lines")
                for line in plane.lines:
                    out.append(f"      {line.name} (id {line.id}): {line.events:,} events")
    return "\n".join(out) + "\n"


def cmd_convert(args: argparse.Namespace) -> int:
    source, target = Path(args.input), Path(args.output)
    writer_suffix(target)  # fail on an unknown output format before reading anything
    if target.exists() and source.exists() and target.resolve() == source.resolve():
        raise StepscopeError(f"{target}: the output is the input file; choose another name")
    profile = load(source)
    for warning in profile.info.get("warnings", []):
        print(f"stepscope: warning: {source}: {warning}", file=sys.stderr)
    with _progress(profile.event_count, "writing") as bar:
        save(profile, target, bar.update)
    print(f"wrote {target} ({profile.event_count:,} events)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from stepscope.analysis import run_tool, tool_names
    from stepscope.render import render

    names = tool_names() if args.tool == "all" else [args.tool]
    if args.tool != "all" and args.tool not in tool_names():
        raise StepscopeError(f"unknown tool {args.tool!r} (tools: {', '.join(tool_names())}, all)")
    host = _pick_host(args.path, args.run, args.host)
    profile = load(host.path)
    for warning in profile.info.get("warnings", []):
        print(f"stepscope: warning: {host.path}: {warning}", file=sys.stderr)
    results = [run_tool(name, profile) for name in names]
    output = render(results, args.format)
    if args.output:
        from stepscope.trace.files import atomic_write

        atomic_write(Path(args.output), output.encode())
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(output)
    return 0


def _pick_host(path: str, run_name: str | None, host_name: str | None):
    """The one profile a report is about: by --run / --host, or the only one there is."""
    runs = discover(path)
    if run_name is not None:
        runs = [run for run in runs if run.name == run_name]
        if not runs:
            raise StepscopeError(f"{path}: no run named {run_name!r}")
    elif len(runs) > 1:
        listed = ", ".join(run.name for run in runs)
        raise StepscopeError(f"{path}: holds {len(runs)} runs; choose one with --run ({listed})")
    run = runs[0]
    if host_name is not None:
        host = run.host(host_name)
        if host is None:
            raise StepscopeError(f"{path}: run {run.name!r} has no host {host_name!r}")
        return host
    if len(run.hosts) > 1:
        listed = ", ".join(host.name for host in run.hosts)
        raise StepscopeError(f"{path}: run {run.name!r} has {len(run.hosts)} hosts; choose one with --host ({listed})")
    return run.hosts[0]


def cmd_capture(args: argparse.Namespace) -> int:
    from stepscope.capture.client import capture_remote
    from stepscope.capture.options import ProfilerOptions

    addresses = [address.strip() for address in args.addresses.split(",") if address.strip()]
    if not addresses:
        raise StepscopeError("no address given (ADDR[,ADDR...], e.g. localhost:6009)")
    if args.attempts < 1 or not 1 <= args.duration_ms <= MAX_CAPTURE_MS or not 0 <= args.delay_ms <= MAX_CAPTURE_MS:
        raise StepscopeError(f"--attempts must be positive, --duration-ms 1..{MAX_CAPTURE_MS}, --delay-ms 0..{MAX_CAPTURE_MS}")
    options = ProfilerOptions(
        host_tracer_level=args.host_tracer_level,
        python_tracer_level=args.python_tracer_level,
        device_tracer_level=args.device_tracer_level,
    )
    window_ms = args.duration_ms + args.delay_ms
    with tqdm(total=window_ms, desc="capturing", unit="ms", disable=None, leave=False, file=sys.stderr) as bar:
        phases: dict[str, str] = {}

        def show(address: str, phase: str, elapsed_ms: int, duration_ms: int) -> None:
            phases[address] = phase
            bar.n = min(elapsed_ms, window_ms)
            bar.set_postfix_str(", ".join(f"{a}: {p}" for a, p in sorted(phases.items())), refresh=True)

        results = capture_remote(addresses, args.logdir, args.duration_ms, args.delay_ms, options, args.attempts, show)
    for result in results:
        where = result.path if result.ok else result.message
        print(f"{result.address}: {'ok' if result.ok else 'failed'} ({where}; {result.attempts} attempt(s))")
        for note in result.notes:
            print(f"  {result.address}: note: {note}")
    unsaved = [result for result in results if result.local_error]
    if unsaved:
        raise StepscopeError(unsaved[0].message)
    return 0 if any(result.ok for result in results) else 1


def cmd_serve(args: argparse.Namespace) -> int:
    from stepscope.dashboard.server import serve

    serve(args.logdir, args.host, args.port, args.cache_dir)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from stepscope.demo import DemoConfig, run_demo

    logdir = Path(args.logdir)
    run_demo(logdir, DemoConfig(steps=args.steps))
    if not args.no_serve:
        from stepscope.dashboard.server import serve

        print("== the dashboard has both runs; open the URL below (Ctrl-C stops it)", flush=True)
        serve(logdir, args.host, args.port, args.cache_dir)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stepscope", description="Profiles of ML training jobs: inspect, convert, analyse.")
    parser.add_argument("--version", action="version", version=f"stepscope {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="runs, hosts, planes, lines and event counts of a file, run or logdir")
    info.add_argument("path", help="a profile file (.xplane.pb, .pt.trace.json[.gz], .trace.json[.gz]) or a log directory")
    info.add_argument("--format", choices=("text", "json"), default="text")
    info.set_defaults(handler=cmd_info)

    convert = commands.add_parser("convert", help="convert a profile by extension: .xplane.pb, .json, .json.gz")
    convert.add_argument("input")
    convert.add_argument("output")
    convert.set_defaults(handler=cmd_convert)

    report = commands.add_parser("report", help="run the analysis tools on one profile")
    report.add_argument("path", help="a profile file, a run folder or a log directory")
    report.add_argument("--run", help="the run, when PATH holds several")
    report.add_argument("--host", help="the host, when the run has several")
    report.add_argument("--tool", default="overview_page", help="a tool name, or all (default: overview_page)")
    report.add_argument("--format", choices=("text", "json", "csv"), default="text")
    report.add_argument("--output", help="write to this file instead of standard output")
    report.set_defaults(handler=cmd_report)

    capture = commands.add_parser("capture", help="capture running jobs through their profiler servers")
    capture.add_argument("addresses", help="ADDR[,ADDR...]: host:port of each profiler server")
    capture.add_argument("--logdir", required=True, help="where the session folder is written")
    capture.add_argument("--duration-ms", type=int, default=2000)
    capture.add_argument("--delay-ms", type=int, default=0, help="start every host this much later, all at the same time")
    capture.add_argument("--host-tracer-level", type=int, default=2, choices=(0, 1, 2, 3))
    capture.add_argument("--python-tracer-level", type=int, default=0, choices=(0, 1))
    capture.add_argument("--device-tracer-level", type=int, default=1, choices=(0, 1))
    capture.add_argument("--attempts", type=int, default=3, help="tries per host for transient failures")
    capture.set_defaults(handler=cmd_capture)

    serve = commands.add_parser("serve", help="the dashboard: every tool of every run in a local web page")
    serve.add_argument("--logdir", required=True, help="the log directory to serve (runs appear as they are written)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=9001, help="port (0 picks a free one; the URL is printed)")
    serve.add_argument("--cache-dir", help="where analysed tool data is kept (default $XDG_CACHE_HOME/stepscope or ~/.cache/stepscope)")
    serve.set_defaults(handler=cmd_serve)

    demo = commands.add_parser("demo", help="profile a real (CPU) PyTorch training job, diagnose it, fix it, show the dashboard")
    demo.add_argument("--logdir", default="stepscope-demo-logs", help="where the two runs are written (default: ./stepscope-demo-logs)")
    demo.add_argument("--steps", type=int, default=12, help="training steps per run (default 12)")
    demo.add_argument("--no-serve", action="store_true", help="stop after the reports (for scripts and tests)")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=9001)
    demo.add_argument("--cache-dir")
    demo.set_defaults(handler=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except StepscopeError as error:
        print(f"stepscope: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
