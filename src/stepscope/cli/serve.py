"""``stepscope serve`` and ``stepscope demo``: the two commands that end in the dashboard's
server (the demo first profiles a real training job into its logdir)."""

from __future__ import annotations

import argparse
from pathlib import Path

from stepscope.cli.arguments import int_in, port
from stepscope.cli.command import Command
from stepscope.cli.output import check_writable_folder

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 9001
MAX_DEMO_STEPS = 10_000


def check_cache_dir(cache_dir: str | None) -> None:
    """The dashboard's cache folder is usable (checked before the server starts, for
    ``serve`` and ``demo``)."""
    from stepscope.dashboard.jobs.analysis_cache import default_cache_dir

    hint = "" if cache_dir else " (the default; choose another with --cache-dir)"
    check_writable_folder(Path(cache_dir) if cache_dir else default_cache_dir(), "the cache folder", hint)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--logdir", required=True, help="the log directory to serve (runs appear as they are written)")
    parser.add_argument("--host", default=LOOPBACK, help=f"address to listen on (default {LOOPBACK}: this machine only)")
    parser.add_argument("--port", type=port, default=DEFAULT_PORT, help="port (0 picks a free one; the URL is printed)")
    parser.add_argument("--cache-dir", help="where analysed tool data is kept (default $XDG_CACHE_HOME/stepscope or ~/.cache/stepscope)")
    parser.add_argument(
        "--allow-host",
        dest="allow_hosts",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name browsers may reach the server by (repeatable; loopback names are always allowed on loopback)",
    )
    parser.add_argument(
        "--frame-ancestor",
        dest="frame_ancestors",
        action="append",
        default=[],
        metavar="SOURCE",
        help="a page origin that may show the dashboard in a frame, as a CSP source (repeatable; e.g. http://localhost:*, what stepscope.notebook.show passes)",
    )
    parser.add_argument(
        "--token",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="require the random access token printed in the URL (default: only when --host is not loopback; --no-token then needs --allow-host)",
    )


def run_serve(args: argparse.Namespace) -> int:
    from stepscope.dashboard.server import serve

    if Path(args.logdir).is_dir():  # else serve() says so first, and no cache folder is made
        check_cache_dir(args.cache_dir)
    serve(args.logdir, args.host, args.port, args.cache_dir, allow_hosts=args.allow_hosts, token=args.token, frame_ancestors=args.frame_ancestors)
    return 0


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--logdir", help="where the two runs are written (default: a new stepscope-demo-* folder in the temporary folder, $TMPDIR)")
    parser.add_argument("--steps", type=int_in(1, MAX_DEMO_STEPS), default=12, help="training steps per run (default 12)")
    parser.add_argument("--no-serve", action="store_true", help="stop after the reports (for scripts and tests)")
    parser.add_argument(
        "--verbose", action="store_true", help="print the full reports too (each run's overview and the diff; they are written to LOGDIR/reports/ either way)"
    )
    parser.add_argument("--host", default=LOOPBACK)
    parser.add_argument("--port", type=port, default=DEFAULT_PORT)
    parser.add_argument("--cache-dir")


def run_demo(args: argparse.Namespace) -> int:
    from stepscope import demo

    logdir = Path(args.logdir) if args.logdir else demo.default_logdir()
    check_writable_folder(logdir, "the demo's log folder")  # the profiles are written there
    if not args.no_serve:
        check_cache_dir(args.cache_dir)  # before minutes of training, not after
    demo.run_demo(logdir, demo.DemoConfig(steps=args.steps), verbose=args.verbose)
    if not args.no_serve:
        from stepscope.dashboard.server import serve

        print("== the dashboard has both runs; open the URL below (Ctrl-C stops it)", flush=True)
        serve(logdir, args.host, args.port, args.cache_dir)
    return 0


SERVE = Command("serve", "the dashboard: every tool of every run in a local web page", add_serve_arguments, run_serve)
DEMO = Command("demo", "profile a real (CPU) PyTorch training job, diagnose it, fix it, show the dashboard", add_demo_arguments, run_demo)
