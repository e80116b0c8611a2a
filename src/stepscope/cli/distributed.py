"""``stepscope distributed``: a run of many ranks analysed as one, on an engine."""

from __future__ import annotations

import argparse
from pathlib import Path

from stepscope.cli.arguments import RESULT_FORMATS, TEXT, add_output, int_in
from stepscope.cli.command import Command
from stepscope.cli.errors import warn
from stepscope.cli.output import check_output, write_output
from stepscope.cli.profiles import pick_run
from stepscope.cli.progress import progress
from stepscope.errors import StepscopeError

MAX_WORKERS = 4096


def add_distributed_arguments(parser: argparse.ArgumentParser) -> None:
    from stepscope.analysis.distributed.reduce import BY_AUTO, UNITS

    parser.add_argument("path", help="a run folder or a log directory (each host file is a rank); or a URL that fsspec reads (s3://, gs://, file://...)")
    parser.add_argument("--run", help="the run, when PATH holds several")
    parser.add_argument(
        "--engine", default="local", help="where the per-rank analysis runs: local (a process pool, the default) or ray (Ray tasks; pip install stepscope[ray])"
    )
    parser.add_argument(
        "--workers",
        type=int_in(1, MAX_WORKERS),
        help="local: processes (default one per core, at most one per rank); ray: most tasks in flight (default all)",
    )
    parser.add_argument(
        "--ray-address",
        help="the Ray cluster to run on (ray://HEAD:10001, HEAD:6379 or auto; default $RAY_ADDRESS); local: start a local Ray (its servers listen on every interface)",
    )
    parser.add_argument(
        "--by",
        choices=UNITS,
        default=BY_AUTO,
        help="the unit: rank (each host file, all its devices together), device (each /device:GPU:N or /device:TPU:N plane of each file: host x device), "
        "or auto (the default: device for a run of one file with several devices, else rank)",
    )
    parser.add_argument("--format", choices=RESULT_FORMATS, default=TEXT)
    add_output(parser)


def run_distributed(args: argparse.Namespace) -> int:
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
        check_output(Path(args.output))
    run = pick_run(args.path, args.run, discover_url if is_url(args.path) else None)
    if args.engine == RAY:  # attach (or start a local Ray) before the bar; no Ray: one line
        connect(args.ray_address)
    with progress(len(run.hosts), "ranks", "rank") as bar:
        result = analyse_run(run, args.engine, args.workers, lambda: bar.update(1), by=args.by)
    for warning in result.warnings:
        warn(warning)
    write_output(args.output, render([result], args.format))
    return 0


DISTRIBUTED = Command(
    "distributed", "a run of many ranks as one: rank x step times, stragglers, collective wait skew", add_distributed_arguments, run_distributed
)
