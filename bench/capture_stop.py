"""What stopping a capture costs: the host tracer's stop and the XSpace write, per-event
Python (the reference paths the tests keep) against the bulk paths.

The capture: 250,000 ``stepscope.step`` markers each holding a
``stepscope.trace`` span (500,000 events). Timed on the same records:

- ``events_plane``: records -> plane (tests/support/reference/events_plane.py vs
  capture/tracers/host.py), and ``HostTracer.stop`` as a whole (the new one);
- ``merge_profiles`` (the session does it before writing);
- the write: the old writer (tests/support/reference/xspace_write.py, a protobuf message per
  event and stat, then serialised and written) vs ``write_xspace``;
- the whole stop, tracer stop + merge + write, old and new.

Both writers' files are parsed with protobuf and compared (the new one less the step roots
and links it adds for XProf, which the old one predates; they are in its time). A fresh
process's first stop costs more than later ones (imports: the writer, protobuf); that is
printed apart, measured in a fresh process.

Run: ``.venv/bin/python bench/capture_stop.py`` (``--steps N``, ``--busy`` to run a
Python-bound thread beside, as a training loop would, while timing). Results in
``bench/out/capture_stop.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

from goals import VALUE_OVER_ANCHOR, goal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "bench" / "out" / "capture_stop.json"

FIRST_USE = textwrap.dedent(
    """
    import pathlib, tempfile, time
    import stepscope
    from stepscope.capture.tracers.host import HostTracer

    def stop_and_save(path):
        tracer = HostTracer()
        tracer.start(stepscope.ProfilerOptions(host_tracer_level=1))
        with stepscope.step(1):
            with stepscope.trace("x", note="a"):
                pass
        start = time.perf_counter()
        (profile,) = tracer.stop()
        stepscope.save(profile, path)
        return time.perf_counter() - start

    path = pathlib.Path(tempfile.mkdtemp()) / "first.xplane.pb"
    print("@@first@@", stop_and_save(path), stop_and_save(path))
    """
)


def first_use() -> float:
    """What a fresh process's first stop and write of a tiny capture costs more than its
    second: the imports of the stop's modules."""
    done = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True, cwd=ROOT, check=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("@@first@@"))
    first, second = map(float, line.split()[1:])
    return first - second


def record(steps: int):
    import stepscope
    from stepscope.capture.tracers.host import HostTracer

    tracer = HostTracer()
    tracer.start(stepscope.ProfilerOptions(host_tracer_level=2))
    for index in range(steps):
        with stepscope.step(index), stepscope.trace("compute"):
            pass
    return tracer


def timed(repeat: int, function, *args):
    """The best of ``repeat`` runs, and the last result."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=250_000, help="step markers (each with one span): events = 2 x steps")
    parser.add_argument("--busy", action="store_true", help="a Python-bound thread runs beside while timing")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs (the tracer's stop runs once)")
    options = parser.parse_args()

    first_use_s = first_use()

    from stepscope.protos import xplane_pb2
    from stepscope.trace import names
    from stepscope.trace.files import atomic_write
    from stepscope.trace.formats.xspace.write import write_xspace
    from stepscope.trace.merge import merge_profiles
    from tests.support.reference.events_plane import reference_events_plane
    from tests.support.reference.xspace_write import reference_to_xspace
    from tests.support.xspaces import without_xprof_hints

    tracer = record(options.steps)
    records = list(tracer._recording.events)
    threads = dict(tracer._recording.threads)
    clock = tracer._clock
    start_ns = clock.epoch(min(r[1] for r in records)) // 1000 * 1000

    stop_flag = threading.Event()
    if options.busy:

        def spin() -> None:
            total = 0
            while not stop_flag.is_set():
                for value in range(1000):
                    total += value * value

        threading.Thread(target=spin, daemon=True).start()

    from stepscope.capture.tracers.host import events_plane
    from stepscope.trace.model import Profile

    repeat = options.repeat
    folder = Path(tempfile.mkdtemp(prefix="capture-stop-"))
    warm = events_plane(names.HOST_PLANE, records[:10], clock, start_ns, threads)  # imports done, as in a second stop
    write_xspace(Profile(planes=[warm], start_ns=start_ns, host="", source="", format="stepscope"), folder / "warm.xplane.pb")
    old_plane_s, old_plane = timed(repeat, reference_events_plane, names.HOST_PLANE, records, clock, start_ns, threads)
    new_plane_s, _ = timed(repeat, events_plane, names.HOST_PLANE, records, clock, start_ns, threads)
    stop_s, profiles = timed(1, tracer.stop)
    merge_s, merged = timed(repeat, merge_profiles, profiles, "bench", "bench")
    old_profile = Profile(planes=[old_plane], start_ns=start_ns, host="", source="", format="stepscope")
    old_merged = merge_profiles([old_profile], "bench", "bench")

    def old_write(profile, path):
        atomic_write(path, reference_to_xspace(profile).SerializeToString())

    old_write_s, _ = timed(repeat, old_write, old_merged, folder / "old.xplane.pb")
    new_write_s, _ = timed(repeat, write_xspace, merged, folder / "new.xplane.pb")
    stop_flag.set()
    # (the new file less what it adds for XProf: a root per step, links, docs/format.md)
    same = xplane_pb2.XSpace.FromString((folder / "old.xplane.pb").read_bytes()) == without_xprof_hints(
        xplane_pb2.XSpace.FromString((folder / "new.xplane.pb").read_bytes())
    )

    # The old stop: the same tracer stop but for events_plane, then the old writer.
    old_total = stop_s - new_plane_s + old_plane_s + merge_s + old_write_s
    new_total = stop_s + merge_s + new_write_s
    results = {
        "events": len(records),
        "busy_thread": options.busy,
        "events_plane_old_s": old_plane_s,
        "events_plane_new_s": new_plane_s,
        "host_tracer_stop_new_s": stop_s,
        "merge_s": merge_s,
        "write_old_s": old_write_s,
        "write_new_s": new_write_s,
        "stop_total_old_s": old_total,
        "stop_total_new_s": new_total,
        "first_use_s": first_use_s,
        "same_xspace": same,
        # No number in the issues: the bulk paths must beat the per-event ones they replaced.
        "goals": [
            goal(f"whole capture stop ({len(records):,} events)", new_total, "s", "per-event reference stop", old_total, VALUE_OVER_ANCHOR, "<", 1),
            goal(f"XSpace write ({len(records):,} events)", new_write_s, "s", "per-event reference writer", old_write_s, VALUE_OVER_ANCHOR, "<", 1),
        ],
    }
    print(f"{len(records):,} events{' (with a busy thread beside)' if options.busy else ''}")
    print(f"  events_plane      old {old_plane_s:7.3f} s   new {new_plane_s:7.3f} s   x{old_plane_s / new_plane_s:6.1f}")
    print(f"  HostTracer.stop               new {stop_s:7.3f} s")
    print(f"  merge_profiles        {merge_s:7.3f} s")
    print(f"  write_xspace      old {old_write_s:7.3f} s   new {new_write_s:7.3f} s   x{old_write_s / new_write_s:6.1f}")
    print(f"  whole stop        old {old_total:7.3f} s   new {new_total:7.3f} s   x{old_total / new_total:6.1f}")
    print(f"  first use in a process, more than later stops: {first_use_s:.2f} s (imports)")
    print(f"  same XSpace (protobuf messages equal): {same}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
