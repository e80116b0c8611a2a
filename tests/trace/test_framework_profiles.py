"""Real framework profilers on the CPU: stepscope reads what PyTorch, JAX and TensorFlow wrote.

Each framework runs a tiny training loop in a subprocess of its own (see
``tests/support/frameworks.py``) under its own profiler, exactly as a user would capture:
torch.profiler with ``tensorboard_trace_handler`` and ``export_chrome_trace``,
``jax.profiler.trace`` with ``StepTraceAnnotation``, ``tf.profiler.experimental`` with
``Trace(..., step_num=...)``. No profiler server is started.

Every expected number is derived independently of stepscope: from what the script did
(the steps it ran, the profiler schedule, its thread id, the wall-clock window it
recorded), from the trace JSON read with the standard library (numbers kept as the
file's exact decimal text), and from the XSpace read with TSL's own protobuf class.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

import numpy as np
import pytest

import stepscope
from stepscope.trace import names
from stepscope.trace.formats.xspace.read import read_xspace
from tests.support.framework_loops import TF_BODY, TF_IMPORTS
from tests.support.frameworks import (
    exact_ns,
    find_files,
    nearest_ns,
    read_json_exact,
    read_xspace_independently,
    run_framework_script,
)
from tests.support.reference.xspace import assert_same_profile, reference_load

pytestmark = pytest.mark.framework

PS_PER_NS = 1000
NS_PER_S = 1_000_000_000
# The profile's clock and the script's time.time_ns() are the same wall clock read by
# different code; a second of slack keeps the check robust while still telling an epoch
# time (~1.8e18 ns) from a relative one.
CLOCK_SLACK_NS = NS_PER_S
# TSL's names (xplane_schema.h: kTaskEnvPlaneName, kEnvProfileStartTime), spelled out here
# on purpose: the test states the file format, not stepscope's constants.
TASK_ENVIRONMENT_PLANE = "Task Environment"
PROFILE_START_TIME = "profile_start_time"


# --- helpers reading stepscope's side ------------------------------------------------------------


def _rows_named(plane: stepscope.Plane, name: str) -> np.ndarray:
    """Rows of ``plane`` whose event is called ``name``, in time order."""
    ids = [index for index, value in enumerate(plane.metadata.names) if value == name]
    rows = np.flatnonzero(np.isin(plane.events.metadata_id, ids))
    return rows[np.argsort(plane.events.start_ps[rows], kind="stable")]


def _name_counts(profile: stepscope.Profile) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for plane in profile.planes:
        for metadata_id, count in zip(*np.unique(plane.events.metadata_id, return_counts=True)):
            counts[(plane.name, plane.metadata.names[int(metadata_id)])] += int(count)
    return counts


def _name_durations(profile: stepscope.Profile) -> dict[tuple[str, str], int]:
    totals: dict[tuple[str, str], int] = collections.defaultdict(int)
    for plane in profile.planes:
        # Summed per name in int64 (np.bincount's weights would go through float64).
        for metadata_id in np.unique(plane.events.metadata_id).tolist():
            rows = plane.events.metadata_id == metadata_id
            totals[(plane.name, plane.metadata.names[metadata_id])] += int(plane.events.duration_ps[rows].sum())
    return dict(totals)


def _stat(plane: stepscope.Plane, row: int, name: str):
    values = [stat.value for stat in plane.event_stats(int(row)) if stat.name == name]
    assert len(values) == 1, f"event {plane.event_name(int(row))!r} has {len(values)} {name!r} stats"
    return values[0]


def _root(plane: stepscope.Plane, row: int) -> int:
    """The top-level event of the line that encloses ``row`` (itself if top-level)."""
    while plane.events.parent[row] != -1:
        row = int(plane.events.parent[row])
    return row


def _assert_in_window(profile: stepscope.Profile, manifest: dict) -> None:
    """The profile's time 0 and its last event fall inside the wall-clock window the script
    recorded around the profiler (time.time_ns() before starting, after stopping)."""
    first_ns = profile.start_ns
    last_ns = profile.start_ns + profile.span_ps // PS_PER_NS
    assert manifest["t0_ns"] - CLOCK_SLACK_NS <= first_ns <= manifest["t1_ns"] + CLOCK_SLACK_NS, (
        f"start_ns={first_ns} is not a UNIX epoch time inside the capture window [{manifest['t0_ns']}, {manifest['t1_ns']}] ns"
    )
    assert last_ns <= manifest["t1_ns"] + CLOCK_SLACK_NS


# --- PyTorch -----------------------------------------------------------------------------------

TORCH_IMPORTS = """
import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
"""

TORCH_BODY = """
torch.manual_seed(0)
torch.set_num_threads(1)
LAYERS = 3  # Linear layers: each forward pass runs one aten::addmm per layer
model = torch.nn.Sequential(
    torch.nn.Linear(16, 32), torch.nn.ReLU(),
    torch.nn.Linear(32, 32), torch.nn.ReLU(),
    torch.nn.Linear(32, 4),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 16), torch.randn(8, 4)

def train_step():
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()

train_step()  # warm-up outside the profiler
WAIT, WARMUP, ACTIVE, REPEAT = 1, 1, 2, 2
logdir = OUT / "tb"
t0_ns = time.time_ns()
with profile(
    activities=[ProfilerActivity.CPU],
    schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=REPEAT),
    on_trace_ready=tensorboard_trace_handler(str(logdir / "run1"), worker_name="worker0", use_gzip=True),
) as prof:
    for _ in range(REPEAT * (WAIT + WARMUP + ACTIVE)):
        train_step()
        prof.step()
t1_ns = time.time_ns()

export_t0_ns = time.time_ns()
with profile(activities=[ProfilerActivity.CPU]) as single:
    train_step()
export_t1_ns = time.time_ns()
single.export_chrome_trace(str(OUT / "exported_trace.json"))

(OUT / "manifest.json").write_text(json.dumps({
    "logdir": str(logdir), "run": "run1", "worker": "worker0",
    "wait": WAIT, "warmup": WARMUP, "active": ACTIVE, "repeat": REPEAT, "layers": LAYERS,
    "tid": threading.get_native_id(), "pid": os.getpid(),
    "t0_ns": t0_ns, "t1_ns": t1_ns,
    "export": str(OUT / "exported_trace.json"), "export_t0_ns": export_t0_ns, "export_t1_ns": export_t1_ns,
}))
"""

_STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory) -> dict:
    return run_framework_script(tmp_path_factory.mktemp("torch"), "torch", TORCH_IMPORTS, TORCH_BODY)


def _torch_trace_files(manifest: dict) -> list[Path]:
    """The handler's files in capture order: their names end in ``.<time>.pt.trace.json.gz``."""
    files = find_files(Path(manifest["logdir"]), ".pt.trace.json.gz")
    return sorted(files, key=lambda path: int(path.name.removesuffix(".pt.trace.json.gz").rsplit(".", 1)[1]))


def _host_x_events(document: dict) -> list[dict]:
    """Complete events of the profiled process: Kineto writes the host's pid as an int (its
    own spans use string pids such as "Spans")."""
    return [
        event for event in document["traceEvents"] if event.get("ph") == "X" and isinstance(event.get("pid"), int) and not isinstance(event.get("pid"), bool)
    ]


def _check_kineto_file(path: Path, profile: stepscope.Profile, manifest: dict, active_steps: list[int]) -> None:
    """What every torch trace file must read back as, derived from the JSON and the script."""
    document = read_json_exact(path)
    base_ns = document["baseTimeNanoseconds"]
    host_events = _host_x_events(document)

    assert profile.format == "kineto"
    profile.validate()
    host = profile.plane(names.HOST_PLANE)
    assert host is not None

    # Every host event, by name: the same multiset as the JSON's complete events.
    expected_counts = collections.Counter((names.HOST_PLANE, event["name"]) for event in host_events)
    got_counts = collections.Counter({key: n for key, n in _name_counts(profile).items() if key[0] == names.HOST_PLANE})
    assert got_counts == expected_counts

    # aten::addmm: one per Linear layer per profiled step (the model has `layers` of them)...
    addmm_json = [event for event in host_events if event["name"] == "aten::addmm"]
    assert len(addmm_json) == manifest["layers"] * len(active_steps)
    rows = _rows_named(host, "aten::addmm")
    assert len(rows) == len(addmm_json)
    # ...and their total time. Kineto writes whole nanoseconds as decimal microseconds
    # (exact_ns checks that); stepscope rounds each value to the nanosecond, which recovers
    # the decimal text exactly, so the sums agree to the picosecond.
    expected_total_ps = sum(exact_ns(event["dur"]) for event in addmm_json) * PS_PER_NS
    assert int(host.events.duration_ps[rows].sum()) == expected_total_ps
    # Start times as epoch ns: baseTimeNanoseconds + ts, exactly. A ts such as
    # 5180692072563.072 us has 16 significant digits and a double's spacing there is
    # ~0.98 ns, so a float parse alone would be at the edge of losing the nanosecond;
    # stepscope promises the decimal text back exactly (docs/format.md), so no tolerance.
    expected_starts_ps = sorted((base_ns + exact_ns(event["ts"])) * PS_PER_NS for event in addmm_json)
    got_starts_ps = sorted(profile.start_ns * PS_PER_NS + int(start) for start in host.events.start_ps[rows])
    assert got_starts_ps == expected_starts_ps

    # ProfilerStep#N: one per active step, numbered as the schedule says, in time order.
    json_steps = sorted((exact_ns(event["ts"]), int(match.group(1)), event) for event in host_events if (match := _STEP_NAME.match(event["name"])))
    assert [number for _, number, _ in json_steps] == active_steps
    step_rows = [row for row in np.argsort(host.events.start_ps, kind="stable") if _STEP_NAME.match(host.event_name(row))]
    assert [int(_STEP_NAME.match(host.event_name(row)).group(1)) for row in step_rows] == active_steps

    # Each addmm nests under the step whose interval holds it (on the same thread), and
    # nowhere else: the parent chain ends at that ProfilerStep.
    def holding_step(event: dict) -> int:
        start, end = exact_ns(event["ts"]), exact_ns(event["ts"]) + exact_ns(event["dur"])
        holders = [
            number
            for step_start, number, step in json_steps
            if step["tid"] == event["tid"] and step_start <= start and end <= step_start + exact_ns(step["dur"])
        ]
        assert len(holders) == 1
        return holders[0]

    expected_per_step = collections.Counter(holding_step(event) for event in addmm_json)
    got_per_step = collections.Counter(int(_STEP_NAME.match(host.event_name(_root(host, int(row)))).group(1)) for row in rows)
    assert got_per_step == expected_per_step
    assert set(expected_per_step) == set(active_steps)

    # Threads: one /host:CPU line per thread with events, keyed by its tid and named as the
    # thread_name metadata says, holding that thread's events; the script's own thread is one.
    thread_names = {
        event["tid"]: event["args"]["name"].strip()
        for event in document["traceEvents"]
        if event.get("ph") == "M" and event.get("name") == "thread_name" and isinstance(event.get("pid"), int)
    }
    per_thread = collections.Counter(event["tid"] for event in host_events)
    assert manifest["tid"] in per_thread
    lines = {line.id: (index, line.name) for index, line in enumerate(host.lines)}
    counts = host.line_event_counts()
    for tid, count in per_thread.items():
        assert tid in lines, f"no line for thread {tid}"
        index, line_name = lines[tid]
        assert line_name == thread_names.get(tid, f"thread {tid}")
        assert int(counts[index]) == count


def test_torch_discover_finds_the_handler_layout(torch_run):
    # tensorboard_trace_handler(<logdir>/run1) writes <logdir>/run1/<worker>.<time>.pt.trace.json.gz,
    # one file per schedule cycle: one run named after the folder, one host per file.
    files = _torch_trace_files(torch_run)
    assert len(files) == torch_run["repeat"]
    assert all(path.parent.name == torch_run["run"] and path.name.startswith(torch_run["worker"] + ".") for path in files)
    runs = stepscope.discover(torch_run["logdir"])
    assert [run.name for run in runs] == [torch_run["run"]]
    expected_hosts = sorted((path.name.removesuffix(".pt.trace.json.gz"), path) for path in files)
    assert sorted((host.name, Path(host.path)) for host in runs[0].hosts) == expected_hosts


def test_torch_handler_traces_read_back(torch_run):
    wait, warmup, active = torch_run["wait"], torch_run["warmup"], torch_run["active"]
    cycle = wait + warmup + active
    for index, path in enumerate(_torch_trace_files(torch_run)):
        # prof.step() numbers every step from 0; cycle i records steps i*cycle + wait + warmup ...
        first = index * cycle + wait + warmup
        profile = stepscope.load(path)
        _check_kineto_file(path, profile, torch_run, list(range(first, first + active)))
        _assert_in_window(profile, torch_run)


def test_torch_export_chrome_trace_reads_back(torch_run):
    path = Path(torch_run["export"])
    # The name says nothing about Kineto ("exported_trace.json"): the header must.
    profile = stepscope.load(path)
    assert profile.format == "kineto"
    document = read_json_exact(path)
    host_events = _host_x_events(document)
    # Without a schedule there are no ProfilerStep events; one training step ran.
    assert not any(_STEP_NAME.match(event["name"]) for event in host_events)
    addmm_json = [event for event in host_events if event["name"] == "aten::addmm"]
    assert len(addmm_json) == torch_run["layers"]
    host = profile.plane(names.HOST_PLANE)
    rows = _rows_named(host, "aten::addmm")
    assert len(rows) == len(addmm_json)
    assert int(host.events.duration_ps[rows].sum()) == sum(exact_ns(e["dur"]) for e in addmm_json) * PS_PER_NS
    profile.validate()
    expected_counts = collections.Counter((names.HOST_PLANE, event["name"]) for event in host_events)
    assert collections.Counter({k: n for k, n in _name_counts(profile).items() if k[0] == names.HOST_PLANE}) == expected_counts
    # Forward -> backward arrows: one per flow id that has both its start and its end.
    phases: dict[object, set] = collections.defaultdict(set)
    for event in document["traceEvents"]:
        if event.get("cat") == "fwdbwd":
            phases[event["id"]].add(event["ph"])
    assert len(profile.flows) == sum(1 for seen in phases.values() if {"s", "f"} <= seen)
    assert len(profile.flows) > 0
    _assert_in_window(profile, {"t0_ns": torch_run["export_t0_ns"], "t1_ns": torch_run["export_t1_ns"]})
    # A file given directly is one run named after it, with one host: the file.
    runs = stepscope.discover(path)
    assert [(run.name, [Path(host.path) for host in run.hosts]) for run in runs] == [(path.name, [path])]


# --- JAX and TensorFlow: XSpace --------------------------------------------------------------------


def _xspace_files(manifest: dict) -> list[Path]:
    return find_files(Path(manifest["logdir"]), ".xplane.pb")


def _check_discovery(manifest: dict) -> None:
    """<logdir>/plugins/profile/<session>/<host>.xplane.pb: one run named after the session,
    one host named after the file, read from the XSpace even where a trace.json.gz of the
    same host sits beside it."""
    files = _xspace_files(manifest)
    assert len(files) == 1, files
    xplane = files[0]
    assert xplane.parent.parent == Path(manifest["logdir"]) / "plugins" / "profile"
    session, host = xplane.parent.name, xplane.name.removesuffix(".xplane.pb")
    runs = stepscope.discover(manifest["logdir"])
    assert [run.name for run in runs] == [session]
    assert [(h.name, Path(h.path)) for h in runs[0].hosts] == [(host, xplane)]


def _check_xspace(manifest: dict) -> None:
    """The XSpace as stepscope reads it against TSL's own reading of the same bytes."""
    (path,) = _xspace_files(manifest)
    reference = read_xspace_independently(path)
    profile = stepscope.load(path)
    assert profile.format == "xspace"
    profile.validate()
    # Either decoder gives exactly what a plain protobuf decode gives.
    expected = reference_load(path)
    for bulk in (True, False):
        assert_same_profile(read_xspace(path, path.read_bytes(), bulk=bulk), expected)
    assert profile.host == reference.hostnames[0]
    # TSL's "Task Environment" plane holds capture-wide facts, no timeline: Profile.info has them.
    assert [plane.name for plane in profile.planes] == [name for name in reference.plane_names if name != TASK_ENVIRONMENT_PLANE]
    assert profile.info.get("task_environment", {}) == reference.plane_stats.get(TASK_ENVIRONMENT_PLANE, {})
    assert names.HOST_PLANE in reference.plane_names
    host = profile.plane(names.HOST_PLANE)
    assert host is not None

    # Every event is there once, under its own name, with its own duration.
    assert profile.event_count == len(reference.events)
    assert _name_counts(profile) == reference.name_counts()
    assert _name_durations(profile) == reference.name_durations()
    for plane in profile.planes:
        with_events = [line.name for line, count in zip(plane.lines, plane.line_event_counts()) if count]
        assert with_events == reference.line_names[plane.name]

    # The step annotations: one "train" event per step run, carrying the step number passed.
    expected = reference.named("train")
    assert [event.stats.get(names.STEP_NUM) for event in expected] == manifest["steps"]
    assert len(expected) == len(manifest["steps"])
    rows = _rows_named(host, "train")
    assert len(rows) == len(manifest["steps"])
    assert [_stat(host, row, names.STEP_NUM) for row in rows] == manifest["steps"]
    assert host.events.step_num[rows].tolist() == manifest["steps"]
    assert host.events.duration_ps[rows].tolist() == [event.duration_ps for event in expected]
    # Times relative to each other are the file's own, to the picosecond.
    starts = host.events.start_ps[rows]
    assert (starts - starts[0]).tolist() == [event.start_ps - expected[0].start_ps for event in expected]
    # The steps ran one after another in the script's thread.
    assert len({host.lines[line].name for line in host.events.line[rows].tolist()}) == 1


def _check_epoch(manifest: dict) -> None:
    """TSL normalises an XSpace's times (ProfilerSession's post-processing): line
    ``timestamp_ns`` become nanoseconds after the session start, which the "Task
    Environment" plane keeps as ``profile_start_time`` (epoch ns). So the line timestamps
    alone are not epoch times, yet the profile's ``start_ns`` must be one."""
    (path,) = _xspace_files(manifest)
    reference = read_xspace_independently(path)
    environment = reference.plane_stats.get(TASK_ENVIRONMENT_PLANE, {})
    session_start_ns = environment.get(PROFILE_START_TIME)
    if session_start_ns is not None:
        # The file does hold the epoch time of its start, inside the script's window.
        assert manifest["t0_ns"] - CLOCK_SLACK_NS <= session_start_ns <= manifest["t1_ns"] + CLOCK_SLACK_NS
    _assert_in_window(stepscope.load(path), manifest)


# --- JAX ----------------------------------------------------------------------------------------


# jax_run: the session's capture of framework_loops.JAX_BODY (tests/conftest.py).


def test_jax_discover_finds_the_session(jax_run):
    _check_discovery(jax_run)


def test_jax_xspace_reads_back(jax_run):
    _check_xspace(jax_run)


def test_jax_profile_start_is_an_epoch_time(jax_run):
    _check_epoch(jax_run)


def test_jax_trace_json_reads_back(jax_run):
    """JAX also writes ``<host>.trace.json.gz`` beside the XSpace (XProf's trace viewer JSON)."""
    files = find_files(Path(jax_run["logdir"]), ".trace.json.gz")
    if not files:
        pytest.skip("this JAX release writes no trace.json.gz beside the XSpace")
    (path,) = files
    document = read_json_exact(path)
    train = sorted(
        (event for event in document["traceEvents"] if event.get("ph") == "X" and event.get("name") == "train"),
        key=lambda event: event["ts"],
    )
    assert [int(event["args"]["step_num"]) for event in train] == jax_run["steps"]
    profile = stepscope.load(path)
    assert profile.format == "chrome"
    profile.validate()
    host = profile.plane(names.HOST_PLANE)  # the process is named "/host:CPU" in the JSON
    assert host is not None
    rows = _rows_named(host, "train")
    assert [int(_stat(host, row, names.STEP_NUM)) for row in rows] == jax_run["steps"]
    # XProf prints microseconds as shortest-repr doubles (e.g. 110.10599999999999), not as
    # whole nanoseconds like Kineto; stepscope rounds them to the nanosecond, so each
    # duration is the decimal text rounded to the nearest ns.
    assert host.events.duration_ps[rows].tolist() == [nearest_ns(event["dur"]) * PS_PER_NS for event in train]


# --- TensorFlow ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tf_run(tmp_path_factory) -> dict:
    return run_framework_script(tmp_path_factory.mktemp("tf"), "tensorflow", TF_IMPORTS, TF_BODY)


def test_tf_discover_finds_the_session(tf_run):
    _check_discovery(tf_run)


def test_tf_xspace_reads_back(tf_run):
    _check_xspace(tf_run)


def test_tf_profile_start_is_an_epoch_time(tf_run):
    _check_epoch(tf_run)
