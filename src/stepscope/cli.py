"""The ``stepscope`` command line.

Every failure the user can cause (a missing file, a corrupt profile, an unknown format, an
unwritable output, an out-of-range option) prints one line, ``stepscope: error: <file or
value>: <problem>``, and exits with status 2; Ctrl-C exits with status 130, quietly.

What counts as the user's failure: a ``StepscopeError``, an ``OSError`` (files, folders,
sockets: the environment, not stepscope) and a bad argument (argparse). Anything else is a
bug in stepscope and keeps its traceback. ``STEPSCOPE_DEBUG=1`` shows the traceback of the
one-line errors too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

from tqdm import tqdm

from stepscope import __version__
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import discover
from stepscope.trace.readers import load
from stepscope.trace.summary import HostSummary, InfoReport, RunSummary, summarize
from stepscope.trace.writers import save, writer_suffix

EXIT_USAGE = 2
EXIT_REGRESSION = 1  # stepscope diff: a --fail-if rule failed
# The longest capture window the CLI accepts (the server's own limit is 10 minutes by default).
MAX_CAPTURE_MS = 24 * 3600 * 1000
MAX_DEMO_STEPS = 10_000
MAX_ATTEMPTS = 100
EXIT_INTERRUPTED = 130
DEBUG_ENV = "STEPSCOPE_DEBUG"
# A logdir whose profiles fail to load names this many of them, then counts the rest.
SHOWN_FAILURES = 5
# A "choose one with --run/--host" error lists this many names, then counts the rest.
SHOWN_CHOICES = 10


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line like every other error (and names --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"stepscope: error: {message} (see: {self.prog} --help)\n")


def _int_in(low: int, high: int, what: str = "", grouped: bool = True) -> Callable[[str], int]:
    """An argparse ``type=``: a whole number in ``low..high``, else a one-line complaint."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            spec = "," if grouped else ""
            raise argparse.ArgumentTypeError(f"{text} is out of range ({low:{spec}}..{high:{spec}}{what})")
        return value

    return parse


_port = _int_in(0, 65535, "; 0 picks a free port", grouped=False)


def _check_output(path: Path) -> None:
    """Fails early, before any work, on an output that can never be written: a folder, or a
    name under a plain file. (Permissions are found when writing; the write is atomic.)"""
    if path.is_dir():
        raise StepscopeError(f"{path}: is a directory; give a file name for the output")
    blocked = _file_in_the_way(path.parent)
    if blocked:
        raise StepscopeError(f"{path}: not written ({blocked})")


def _file_in_the_way(folder: Path) -> str | None:
    """Why ``folder`` can never be created: it, or the nearest existing folder above it, is a file."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return None if candidate.is_dir() else f"{candidate} is a file, not a directory"
    return None


def _cannot_write(path: Path, error: OSError) -> StepscopeError:
    """The one line for an output that could not be written; the old file, if any, is untouched."""
    reason = error.strerror or str(error)
    where = Path(error.filename) if isinstance(error.filename, str) else None
    if where is not None and where.name.startswith(f".{path.name}.") and where.name.endswith(".tmp"):
        # atomic_output's temporary file beside the output: the folder is the problem.
        reason = f"cannot create a file in {path.parent}: {reason}"
    elif where is not None and where != path:
        reason = f"{where}: {reason}"
    return StepscopeError(f"{path}: not written ({reason})")


def _progress(total: int, description: str) -> tqdm:
    """A progress bar on stderr, shown only on a terminal."""
    return tqdm(total=total, desc=description, unit="ev" if description != "loading" else "file", disable=None, leave=False, file=sys.stderr)


def _discover(path: str):
    """``discover``, but a folder that cannot be listed is said to be so (rather than
    "contains no profiles")."""
    folder = Path(path)
    if folder.is_dir():
        try:
            with os.scandir(folder) as entries:
                next(entries, None)
        except OSError as error:
            raise StepscopeError(f"{folder}: cannot be read ({error.strerror or error})") from None
    return discover(path)


def _warn_failures(path: str, errors: list[str], loaded: int) -> None:
    """The first few load failures of a logdir, a count of the rest, and one summary line:
    an error (nothing loaded) or a warning (the report covers the profiles that loaded)."""
    for error in errors[:SHOWN_FAILURES]:
        print(f"stepscope: warning: {error}", file=sys.stderr)
    if len(errors) > SHOWN_FAILURES:
        print(f"stepscope: warning: ... and {len(errors) - SHOWN_FAILURES:,} more", file=sys.stderr)
    if not loaded:
        raise StepscopeError(f"no profile in {path} could be read ({len(errors):,} failed; first: {errors[0]})")
    total = loaded + len(errors)
    print(f"stepscope: warning: {len(errors):,} of {total:,} profiles in {path} could not be read; showing the other {loaded:,}", file=sys.stderr)


def cmd_info(args: argparse.Namespace) -> int:
    runs = _discover(args.path)
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
    if errors:
        _warn_failures(args.path, errors, len(hosts) - len(errors))
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
            start = datetime.fromtimestamp(host.start_ns / 1e9, tz=UTC).isoformat(timespec="milliseconds")
            out.append(f"  host {host.name}  [{host.format}]  {host.path}")
            out.append(f"    span {host.span_ps / 1e9:,.3f} ms from {start}, {host.events:,} events")
            if host.devices:
                out.append(f"    devices: {', '.join(host.devices)}")
            out.extend(f"    warning: {warning}" for warning in host.warnings)
            for plane in host.planes:
                out.append(f"    plane {plane.name}: {plane.events:,} events in {len(plane.lines)} lines")
                out.extend(f"      {line.name} (id {line.id}): {line.events:,} events" for line in plane.lines)
    return "\n".join(out) + "\n"


def cmd_convert(args: argparse.Namespace) -> int:
    source, target = Path(args.input), Path(args.output)
    writer_suffix(target)  # fail on an unknown output format before reading anything
    if target.exists() and source.exists() and target.resolve() == source.resolve():
        raise StepscopeError(f"{target}: the output is the input file; choose another name")
    _check_output(target)
    profile = load(source)
    for warning in profile.info.get("warnings", []):
        print(f"stepscope: warning: {source}: {warning}", file=sys.stderr)
    with _progress(profile.event_count, "writing") as bar:
        try:
            save(profile, target, bar.update)
        except OSError as error:
            raise _cannot_write(target, error) from error
    print(f"wrote {target} ({profile.event_count:,} events)")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from stepscope.analysis import Output, spec, tool_names
    from stepscope.analysis.opstats import OpStats
    from stepscope.render import render

    if args.tool != "all" and args.tool not in tool_names(None):
        raise StepscopeError(f"unknown tool {args.tool!r} (tools: {', '.join(tool_names())}, all)")
    if args.tool != "all" and spec(args.tool).output is not Output.TABLES:
        raise StepscopeError(f"{args.tool} is shown by the dashboard only (stepscope serve), not by report")
    tools = [spec(name) for name in (tool_names() if args.tool == "all" else [args.tool])]
    options = _tool_options(tools, args.options)
    host = _pick_host(args.path, args.run, args.host)
    if args.output:  # before the analysis: an output that can never be written fails now
        output_path = Path(args.output)
        _check_output(output_path)
        if output_path.exists() and output_path.resolve() == host.path.resolve():
            raise StepscopeError(f"{output_path}: the output is the profile being reported on; choose another name")
    profile = load(host.path)
    for warning in profile.info.get("warnings", []):
        print(f"stepscope: warning: {host.path}: {warning}", file=sys.stderr)
    stats = OpStats(profile)  # what the tools share, built once for all of them
    results = [tool.run(stats, **options[tool.name]) for tool in tools]
    _write_output(args.output, render(results, args.format))
    return 0


def _write_output(output: str | None, text: str) -> None:
    """``text`` to the file ``--output`` names (whole or not at all), else to stdout."""
    if not output:
        sys.stdout.write(text)
        return
    from stepscope.trace.files import atomic_write

    try:
        atomic_write(Path(output), text.encode())
    except OSError as error:
        raise _cannot_write(Path(output), error) from error
    print(f"wrote {output}", file=sys.stderr)


def cmd_diff(args: argparse.Namespace) -> int:
    """Loads BASE and NEW (each as ``report`` picks its profile), diffs them, renders the
    diff (and the gate, with rules or as JUnit), and exits 1 when a rule failed."""
    from stepscope.analysis.diff import RunResults, diff_results
    from stepscope.analysis.gate import Rule, gate
    from stepscope.render import render

    rules = [Rule.parse(text) for text in args.fail_if]  # a bad rule fails before any loading
    if args.output:
        _check_output(Path(args.output))
    hosts = [_pick_host(path, args.run, args.host) for path in (args.base, args.new)]
    runs: list[RunResults] = []
    with _progress(len(hosts), "loading") as bar:
        for host in hosts:
            profile = load(host.path)
            for warning in profile.info.get("warnings", []):
                print(f"stepscope: warning: {host.path}: {warning}", file=sys.stderr)
            runs.append(RunResults.of(profile))
            bar.update(1)
    result = diff_results(runs[0], runs[1], str(hosts[0].path), str(hosts[1].path))
    outcome = gate(rules, result)
    _write_output(args.output, render([result, outcome] if rules or args.format == "junit" else [result], args.format))
    if outcome.failed:
        reasons = "; ".join(f"{failed['rule']}: {failed['reason']}" for failed in outcome.failed)
        print(f"stepscope: regression: {reasons}", file=sys.stderr)
        return EXIT_REGRESSION
    return 0


def cmd_distributed(args: argparse.Namespace) -> int:
    """The distributed view of one run: every host file a rank, mapped on ``--engine`` (a
    progress bar per finished rank), reduced here, rendered like a report. PATH may be a
    URL (fsspec's: ``s3://``, ``gs://``, ``file://``...), read where it lies by each rank's
    worker."""
    from stepscope.engines import RAY, analyse_run, engine
    from stepscope.engines.ray_engine import connect
    from stepscope.render import render
    from stepscope.trace.remote import discover_url, is_url

    engine(args.engine)  # an unknown engine fails before any work
    if args.ray_address is not None and args.engine != RAY:
        raise StepscopeError(f"--ray-address: only with --engine {RAY} (not {args.engine})")
    if args.output:
        _check_output(Path(args.output))
    run = _pick_run(args.path, args.run, discover_url if is_url(args.path) else None)
    if args.engine == RAY:  # attach (or start a local Ray) before the bar; no Ray: one line
        connect(args.ray_address)
    with tqdm(total=len(run.hosts), desc="ranks", unit="rank", disable=None, leave=False, file=sys.stderr) as bar:
        result = analyse_run(run, args.engine, args.workers, lambda: bar.update(1), by=args.by)
    for warning in result.warnings:
        print(f"stepscope: warning: {warning}", file=sys.stderr)
    _write_output(args.output, render([result], args.format))
    return 0


def _tool_options(tools: list, given: list[str]) -> dict[str, dict]:
    """``--option NAME=VALUE``s, typed by the registry, per tool: each applies to the chosen
    tools that have it, and one that none of them has is an error."""
    values: dict[str, str] = {}
    for text in given:
        name, equals, value = text.partition("=")
        if not equals or not name:
            raise StepscopeError(f"--option {text!r}: give NAME=VALUE (see stepscope tools)")
        values[name] = value
    names = {tool.name: {option.name for option in tool.options} for tool in tools}
    for name in values:
        if not any(name in known for known in names.values()):
            raise StepscopeError(f"--option {name}: no option of that name in {', '.join(names)} (see stepscope tools)")
    return {tool.name: tool.parse_options({name: value for name, value in values.items() if name in names[tool.name]}) for tool in tools}


def cmd_tools(args: argparse.Namespace) -> int:
    from stepscope.analysis import specs

    if args.format == "json":
        print(json.dumps({"tools": [entry.to_json() for entry in specs()]}, indent=2))
        return 0
    for entry in specs():
        where = "report and dashboard" if entry.output.value == "tables" else "dashboard only"
        print(f"{entry.name}  ({entry.title}; {where})\n  {entry.description}")
        for option in entry.options:
            described = option.to_json()
            bound = f", at least {option.minimum}" if option.minimum is not None else ""
            print(f"  --option {option.name}=VALUE  ({described['type']}, default {option.default!r}{bound}): {option.help}")
    return 0


def _pick_host(path: str, run_name: str | None, host_name: str | None):
    """The one profile a report is about: by --run / --host, or the only one there is."""
    run = _pick_run(path, run_name)
    if host_name is not None:
        host = run.host(host_name)
        if host is None:
            raise StepscopeError(f"{path}: run {run.name!r} has no host {host_name!r} (hosts: {_listed(h.name for h in run.hosts)})")
        return host
    if len(run.hosts) > 1:
        listed = _listed(host.name for host in run.hosts)
        raise StepscopeError(f"{path}: run {run.name!r} has {len(run.hosts)} hosts; choose one with --host ({listed})")
    return run.hosts[0]


def _pick_run(path: str, run_name: str | None, find: Callable[[str], list] | None = None):
    """The run a command is about: by --run, or the only one there is (runs listed by
    ``find``: ``discover``, or ``discover_url`` for a URL)."""
    all_runs = (find or _discover)(path)
    runs = all_runs
    if run_name is not None:
        runs = [run for run in runs if run.name == run_name]
        if not runs:
            raise StepscopeError(f"{path}: no run named {run_name!r} (runs: {_listed(run.name for run in all_runs)})")
    elif len(runs) > 1:
        raise StepscopeError(f"{path}: holds {len(runs)} runs; choose one with --run ({_listed(run.name for run in runs)})")
    return runs[0]


def _listed(names: Iterable[str]) -> str:
    """``a, b, c``; past SHOWN_CHOICES names, the rest counted (``stepscope info`` lists all)."""
    names = list(names)
    shown = ", ".join(names[:SHOWN_CHOICES])
    return shown if len(names) <= SHOWN_CHOICES else f"{shown}, ... and {len(names) - SHOWN_CHOICES:,} more"


def cmd_capture(args: argparse.Namespace) -> int:
    from stepscope.capture.client import capture_remote
    from stepscope.capture.options import ProfilerOptions

    addresses = [address.strip() for address in args.addresses.split(",") if address.strip()]
    if not addresses:
        raise StepscopeError("no address given (ADDR[,ADDR...], e.g. localhost:6009)")
    # --duration-ms, --delay-ms and --attempts are range-checked by the parser (_int_in).
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


def _check_writable_folder(folder: Path, role: str, hint: str = "") -> None:
    """``folder`` can be created and written into, or one line saying why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = _file_in_the_way(folder) or error.strerror or str(error)
        raise StepscopeError(f"{folder}: cannot be used as {role} ({reason}){hint}") from None


def _check_cache_dir(cache_dir: str | None) -> None:
    """The dashboard's cache folder is usable (checked before the server starts, for
    ``serve`` and ``demo``)."""
    from stepscope.dashboard.analysis_cache import default_cache_dir

    hint = "" if cache_dir else " (the default; choose another with --cache-dir)"
    _check_writable_folder(Path(cache_dir) if cache_dir else default_cache_dir(), "the cache folder", hint)


def cmd_serve(args: argparse.Namespace) -> int:
    from stepscope.dashboard.server import serve

    if Path(args.logdir).is_dir():  # else serve() says so first, and no cache folder is made
        _check_cache_dir(args.cache_dir)
    serve(args.logdir, args.host, args.port, args.cache_dir, allow_hosts=args.allow_hosts, token=args.token)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from stepscope.demo import DemoConfig, run_demo

    logdir = Path(args.logdir)
    _check_writable_folder(logdir, "the demo's log folder")  # the profiles are written there
    if not args.no_serve:
        _check_cache_dir(args.cache_dir)  # before minutes of training, not after
    run_demo(logdir, DemoConfig(steps=args.steps))
    if not args.no_serve:
        from stepscope.dashboard.server import serve

        print("== the dashboard has both runs; open the URL below (Ctrl-C stops it)", flush=True)
        serve(logdir, args.host, args.port, args.cache_dir)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from stepscope.analysis.distributed.reduce import BY_AUTO, UNITS

    parser = _Parser(prog="stepscope", description="Profiles of ML training jobs: inspect, convert, analyse.")
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
    report.add_argument("--tool", default="overview_page", help="a tool name, or all (default: overview_page; stepscope tools lists them)")
    report.add_argument(
        "--option",
        dest="options",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a tool option, e.g. top_n=5 (repeatable; stepscope tools lists them)",
    )
    report.add_argument("--format", choices=("text", "json", "csv"), default="text")
    report.add_argument("--output", help="write to this file instead of standard output")
    report.set_defaults(handler=cmd_report)

    diff = commands.add_parser("diff", help="what changed between two runs, and a regression gate for CI (--fail-if)")
    diff.add_argument("base", help="the run to compare against: a profile file, a run folder or a log directory")
    diff.add_argument("new", help="the run to compare, likewise")
    diff.add_argument("--run", help="the run, when a path holds several (the same for both)")
    diff.add_argument("--host", help="the host, when a run has several (the same for both)")
    diff.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="RULE",
        help="exit 1 when this significant change happened, e.g. 'step_time > +5%%', 'memory_peak > +512MiB', 'input > +1ms' (repeatable)",
    )
    diff.add_argument("--format", choices=("text", "json", "csv", "junit"), default="text", help="junit: one testcase per --fail-if rule")
    diff.add_argument("--output", help="write to this file instead of standard output")
    diff.set_defaults(handler=cmd_diff)

    distributed = commands.add_parser("distributed", help="a run of many ranks as one: rank x step times, stragglers, collective wait skew")
    distributed.add_argument("path", help="a run folder or a log directory (each host file is a rank); or a URL that fsspec reads (s3://, gs://, file://...)")
    distributed.add_argument("--run", help="the run, when PATH holds several")
    distributed.add_argument(
        "--engine", default="local", help="where the per-rank analysis runs: local (a process pool, the default) or ray (Ray tasks; pip install stepscope[ray])"
    )
    distributed.add_argument(
        "--workers", type=_int_in(1, 4096), help="local: processes (default one per core, at most one per rank); ray: most tasks in flight (default all)"
    )
    distributed.add_argument(
        "--ray-address",
        help="the Ray cluster to run on (ray://HEAD:10001, HEAD:6379 or auto; default $RAY_ADDRESS); local: start a local Ray (its servers listen on every interface)",
    )
    distributed.add_argument(
        "--by",
        choices=UNITS,
        default=BY_AUTO,
        help="the unit: rank (each host file, all its devices together), device (each /device:GPU:N or /device:TPU:N plane of each file: host x device), "
        "or auto (the default: device for a run of one file with several devices, else rank)",
    )
    distributed.add_argument("--format", choices=("text", "json", "csv"), default="text")
    distributed.add_argument("--output", help="write to this file instead of standard output")
    distributed.set_defaults(handler=cmd_distributed)

    tools = commands.add_parser("tools", help="the analysis tools, what each answers, and their options")
    tools.add_argument("--format", choices=("text", "json"), default="text")
    tools.set_defaults(handler=cmd_tools)

    capture = commands.add_parser("capture", help="capture running jobs through their profiler servers")
    capture.add_argument("addresses", help="ADDR[,ADDR...]: host:port of each profiler server")
    capture.add_argument("--logdir", required=True, help="where the session folder is written")
    capture.add_argument("--duration-ms", type=_int_in(1, MAX_CAPTURE_MS, ", i.e. at most 24 h"), default=2000, help="how long to trace (default 2000)")
    capture.add_argument(
        "--delay-ms", type=_int_in(0, MAX_CAPTURE_MS, ", i.e. at most 24 h"), default=0, help="start every host this much later, all at the same time"
    )
    capture.add_argument("--host-tracer-level", type=int, default=2, choices=(0, 1, 2, 3))
    capture.add_argument("--python-tracer-level", type=int, default=0, choices=(0, 1))
    capture.add_argument("--device-tracer-level", type=int, default=1, choices=(0, 1))
    capture.add_argument("--attempts", type=_int_in(1, MAX_ATTEMPTS), default=3, help="tries per host for transient failures")
    capture.set_defaults(handler=cmd_capture)

    serve = commands.add_parser("serve", help="the dashboard: every tool of every run in a local web page")
    serve.add_argument("--logdir", required=True, help="the log directory to serve (runs appear as they are written)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=_port, default=9001, help="port (0 picks a free one; the URL is printed)")
    serve.add_argument("--cache-dir", help="where analysed tool data is kept (default $XDG_CACHE_HOME/stepscope or ~/.cache/stepscope)")
    serve.add_argument(
        "--allow-host",
        dest="allow_hosts",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name browsers may reach the server by (repeatable; loopback names are always allowed on loopback)",
    )
    serve.add_argument(
        "--token",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="require the random access token printed in the URL (default: only when --host is not loopback; --no-token then needs --allow-host)",
    )
    serve.set_defaults(handler=cmd_serve)

    demo = commands.add_parser("demo", help="profile a real (CPU) PyTorch training job, diagnose it, fix it, show the dashboard")
    demo.add_argument("--logdir", default="stepscope-demo-logs", help="where the two runs are written (default: ./stepscope-demo-logs)")
    demo.add_argument("--steps", type=_int_in(1, MAX_DEMO_STEPS), default=12, help="training steps per run (default 12)")
    demo.add_argument("--no-serve", action="store_true", help="stop after the reports (for scripts and tests)")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=_port, default=9001)
    demo.add_argument("--cache-dir")
    demo.set_defaults(handler=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = os.environ.get(DEBUG_ENV, "") not in ("", "0")
    try:
        return args.handler(args)
    except StepscopeError as error:
        if debug:
            raise
        print(f"stepscope: error: {_one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return 0
    except OSError as error:
        # The environment, not stepscope: a file, folder or socket the commands above do
        # not name themselves (they turn the expected ones into a StepscopeError). Not a
        # catch-all: any other exception is a bug and keeps its traceback.
        if debug:
            raise
        where = f"{error.filename}: " if error.filename else ""
        print(f"stepscope: error: {where}{_one_line(error.strerror or str(error))} (run with {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return EXIT_USAGE


def _one_line(text: str) -> str:
    return " ".join(text.split("\n")).strip()


if __name__ == "__main__":
    sys.exit(main())
