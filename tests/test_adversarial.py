"""Every hostile file of ``tests/support/hostile*.py`` through the two ways a user meets stepscope: the
command line and the dashboard's server, each a real process under a memory limit.

The files come from ``tests/support/hostile.py`` (each small on disk, costly to a naive reader).
The CLI must answer each with one line naming the file, exit status 2 and no traceback,
inside an address-space limit (``RLIMIT_AS``) far below what the unbounded reader took
(2-6 GB for the bombs); the server must answer each with an error for that profile (never
a 500, never a hang) and keep serving the others. Readers' limits are lowered through
their environment variables, as a user on a small machine would.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import hostile, hostile_hlo
from tests.support.dashboard.server import DashboardServer

# The CLI and the server run under this address-space limit: room for Python, numpy and
# the reader (~0.15 GB of address space at start) and a profile of the lowered input limit.
ADDRESS_SPACE = 3 << 30
# Reader limits of a small machine: 256 MiB of input, as the user would export them.
LIMITS = {"STEPSCOPE_MAX_INPUT_BYTES": "256M", "STEPSCOPE_WORKER_MEMORY": "2G"}
TIMEOUT_S = 60
RUN = "hostile"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _env() -> dict[str, str]:
    import os

    return {**os.environ, **LIMITS}


# name -> (builder writing the file at a path, the suffix it needs, what the error says).
CASES = {
    # 1 GiB of valid trace events in ~0.5 MB of gzip: stops at the 256 MiB input limit.
    "json_bomb": (lambda path: hostile.json_bomb(path, 1 << 30, event=hostile.METADATA_EVENT), ".trace.json.gz", "decompresses to more than 256.0 MiB"),
    # 1 GiB of zeros: not a profile, found in its first bytes.
    "zero_bomb": (lambda path: hostile.gzip_bomb(path, 1 << 30), ".trace.json.gz", "is not a profile"),
    # 200,000 empty planes in ~3 MB: over the 1,000-plane limit before they cost anything.
    "empty_planes": (lambda path: hostile.xspace_of_empty_planes(path, 200_000), ".xplane.pb", "planes, more than 1,000"),
    "empty_lines": (lambda path: hostile.xspace_of_empty_lines(path, 1_000_000), ".xplane.pb", "lines"),
    "deep_json": (lambda path: hostile.deep_json(path, 100_000), ".trace.json", "nested too deeply"),
    "deep_args": (lambda path: hostile.deep_json(path, 100_000, "args"), ".trace.json", "nested too deeply"),
    # 200,000 events at one instant, each nested in the one before.
    "nested_events": (lambda path: hostile.json_of_nested_events(path, 200_000), ".trace.json", None),
    # Issue 40: 250 MiB of 44-byte instant events (5.96M) in 0.8 MB: each costs ~400-500 bytes
    # loaded (3.2 GB of memory in all), more than either process may have: refused early.
    "tiny_events": (lambda path: hostile.json_bomb(path, 250 << 20, event=TINY_EVENT), ".trace.json.gz", "loading it needs more memory than"),
}
TINY_EVENT = b'{"ph":"i","name":"a","ts":1,"pid":1,"tid":1},'
# Issue 40: XLA programs that cost memory_viewer more than they should (tests/support/hostile_hlo.py).
# name -> (builder, what the one line says; None: a valid program, answered in time).
HLO_CASES = {
    # Before: an endless loop (the dashboard's only worker busy for good).
    "self_share": (hostile_hlo.self_share, "heap event 1 shares logical buffer 1 with itself (a cycle)"),
    "share_cycle": (hostile_hlo.share_cycle, "heap event 2 shares logical buffer 1 with logical buffer 2, which already uses its memory (a cycle)"),
    # Before: an OverflowError traceback.
    "huge_shape": (hostile_hlo.huge_shape, "instruction 'op1': its shape f32[20 dimensions] holds more than 9,223,372,036,854,775,807 bytes"),
    # Before: 103 s (quadratic); now a few seconds, inside TIMEOUT_S.
    "allocations": (lambda path: hostile_hlo.allocations(path, 100_000), None),
}
ALLOCATIONS_PEAK = "peak 97.656 MiB in memory space 0 at heap event 99999 (op100000)"  # 100,000 x 1,024 bytes / 2^20
NOT_REGULAR = {
    "fifo": (hostile.fifo, "named pipe"),
    "dev_zero": (hostile.device_file, "character device"),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Every hostile file, as a host of one run (``plugins/profile/hostile/<case><suffix>``)."""
    session = tmp_path_factory.mktemp("adversarial") / "logdir" / "plugins" / "profile" / RUN
    session.mkdir(parents=True)
    made = {name: build(session / f"{name}{suffix}") for name, (build, suffix, _) in CASES.items()}
    made |= {name: build(session / f"{name}.trace.json") for name, (build, _) in NOT_REGULAR.items()}
    made |= {name: build(session / f"{name}.xplane.pb") for name, (build, _) in HLO_CASES.items()}
    return made


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "stepscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**_env(), **(env or {})},
        preexec_fn=_limited,
    )


def _one_line_error(result: subprocess.CompletedProcess, path: Path, says: str | None) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"stepscope: error: {path}"), lines
    if says:
        assert says in lines[0], lines[0]


@pytest.mark.parametrize("name", list(CASES))
def test_cli_report_answers_each_hostile_file_in_one_line(files, name):
    _, _, says = CASES[name]
    result = _cli("report", str(files[name]))
    if name == "nested_events":  # a valid, if odd, profile: it must load, quickly
        assert result.returncode == 0, result.stderr[-2000:]
        return
    _one_line_error(result, files[name], says)


@pytest.mark.parametrize("name", list(NOT_REGULAR))
def test_cli_refuses_what_is_not_a_regular_file(files, name, tmp_path):
    _, says = NOT_REGULAR[name]
    for args in (("info", str(files[name])), ("convert", str(files[name]), str(tmp_path / "out.xplane.pb"))):
        _one_line_error(_cli(*args), files[name], says)
    assert not (tmp_path / "out.xplane.pb").exists()


def test_cli_convert_of_a_bomb_writes_nothing(files, tmp_path):
    out = tmp_path / "out.xplane.pb"
    _one_line_error(_cli("convert", str(files["json_bomb"]), str(out)), files["json_bomb"], "decompresses to more than")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def server(files, tmp_path_factory):
    logdir = files["json_bomb"].parents[3]
    running = DashboardServer(logdir, tmp_path_factory.mktemp("adversarial_cache"), env=_env(), preexec_fn=_limited)
    yield running
    running.stop()


def test_the_server_lists_only_regular_files(server):
    (run,) = server.get("/api/runs").json()["runs"]
    # The session folder is "hostile" under plugins/profile: the FIFO and the device are
    # not offered.
    assert run == {"name": RUN, "hosts": sorted([*CASES, *HLO_CASES])}


@pytest.mark.parametrize("name", [name for name in CASES if name != "nested_events"])
def test_the_server_answers_each_hostile_profile_and_goes_on(server, files, name):
    _, _, says = CASES[name]
    answer = server.ready("/api/data", timeout_s=TIMEOUT_S, run=RUN, host=name, tool="overview_page")
    assert answer.status == 422, (answer.status, answer.body[:300])
    message = answer.json()["error"]
    assert message.startswith(f"{files[name]}: ") and "\n" not in message
    if says:
        assert says in message
    # The server goes on: the odd but valid profile next to it is analysed.
    assert server.ready("/api/data", timeout_s=TIMEOUT_S, run=RUN, host="nested_events", tool="overview_page").status == 200


def test_cli_refuses_tiny_events_by_the_setting_that_bounds_it(files):
    """Under the CLI's address-space limit the one line names ``ulimit -v``; with a lower
    STEPSCOPE_MAX_MEMORY, that setting and its value."""
    path = files["tiny_events"]
    result = _cli("info", str(path))
    _one_line_error(result, path, "needs more memory than the address-space limit leaves")
    assert result.stderr.rstrip().endswith("(limit ulimit -v; raise it to read larger profiles)")
    result = _cli("info", str(path), env={"STEPSCOPE_MAX_MEMORY": "1G"})
    _one_line_error(result, path, "needs more memory than the limit allows, 1.0 GiB (")
    assert "(limit STEPSCOPE_MAX_MEMORY=1073741824; raise it to read larger profiles)" in result.stderr


def test_the_server_refuses_tiny_events_by_the_workers_cap(server, files):
    answer = server.ready("/api/data", timeout_s=TIMEOUT_S, run=RUN, host="tiny_events", tool="overview_page")
    assert answer.status == 422, (answer.status, answer.body[:300])
    message = answer.json()["error"]
    assert message.startswith(f"{files['tiny_events']}: loading it needs more memory than the worker's memory cap leaves")
    assert message.endswith("(limit STEPSCOPE_WORKER_MEMORY=2147483648; raise it to read larger profiles)")


@pytest.mark.parametrize("name", list(HLO_CASES))
def test_cli_memory_viewer_answers_each_hostile_program(files, name):
    _, says = HLO_CASES[name]
    result = _cli("report", str(files[name]), "--tool", "memory_viewer")
    if says is None:
        assert result.returncode == 0, result.stderr[-2000:]
        assert f"{hostile_hlo.LABEL}: {ALLOCATIONS_PEAK}" in result.stdout
        return
    _one_line_error(result, files[name], f"memory_viewer: program '{hostile_hlo.LABEL}': ")
    assert says in result.stderr


@pytest.mark.parametrize("name", list(HLO_CASES))
def test_the_server_answers_each_hostile_program_and_goes_on(server, files, name):
    _, says = HLO_CASES[name]
    answer = server.ready("/api/data", timeout_s=TIMEOUT_S, run=RUN, host=name, tool="memory_viewer")
    if says is None:
        assert answer.status == 200, (answer.status, answer.body[:300])
        assert answer.json()["peak_bytes"] == 100_000 * hostile_hlo.BUFFER_BYTES
    else:
        assert answer.status == 422, (answer.status, answer.body[:300])
        message = answer.json()["error"]
        assert message.startswith(f"{files[name]}: memory_viewer: ") and "\n" not in message and says in message
    # The worker is free for the next job.
    assert server.ready("/api/data", timeout_s=TIMEOUT_S, run=RUN, host="nested_events", tool="overview_page").status == 200
