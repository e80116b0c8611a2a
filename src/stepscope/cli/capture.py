"""``stepscope capture``: running jobs captured through their profiler servers (gRPC)."""

from __future__ import annotations

import argparse

from stepscope.cli.arguments import int_in
from stepscope.cli.command import Command
from stepscope.cli.errors import EXIT_NOTHING_CAPTURED
from stepscope.cli.progress import progress
from stepscope.errors import StepscopeError

# The longest capture window the CLI accepts (the server's own limit is 10 minutes by default).
MAX_CAPTURE_MS = 24 * 3600 * 1000
MAX_ATTEMPTS = 100
AT_MOST = ", i.e. at most 24 h"


def add_capture_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("addresses", help="ADDR[,ADDR...]: host:port of each profiler server")
    parser.add_argument("--logdir", required=True, help="where the session folder is written")
    parser.add_argument("--duration-ms", type=int_in(1, MAX_CAPTURE_MS, AT_MOST), default=2000, help="how long to trace (default 2000)")
    parser.add_argument("--delay-ms", type=int_in(0, MAX_CAPTURE_MS, AT_MOST), default=0, help="start every host this much later, all at the same time")
    parser.add_argument("--host-tracer-level", type=int, default=2, choices=(0, 1, 2, 3))
    parser.add_argument("--python-tracer-level", type=int, default=0, choices=(0, 1))
    parser.add_argument("--device-tracer-level", type=int, default=1, choices=(0, 1))
    parser.add_argument("--attempts", type=int_in(1, MAX_ATTEMPTS), default=3, help="tries per host for transient failures")


def run_capture(args: argparse.Namespace) -> int:
    from stepscope.capture.client import capture_remote
    from stepscope.capture.options import ProfilerOptions

    addresses = [address.strip() for address in args.addresses.split(",") if address.strip()]
    if not addresses:
        raise StepscopeError("no address given (ADDR[,ADDR...], e.g. localhost:6009)")
    # --duration-ms, --delay-ms and --attempts are range-checked by the parser (int_in).
    options = ProfilerOptions(
        host_tracer_level=args.host_tracer_level,
        python_tracer_level=args.python_tracer_level,
        device_tracer_level=args.device_tracer_level,
    )
    window_ms = args.duration_ms + args.delay_ms
    with progress(window_ms, "capturing", "ms") as bar:
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
    return 0 if any(result.ok for result in results) else EXIT_NOTHING_CAPTURED


CAPTURE = Command("capture", "capture running jobs through their profiler servers", add_capture_arguments, run_capture)
