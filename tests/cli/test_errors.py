"""Every error of the command line is one line on stderr and exit status 2, never a traceback.
Each case runs the real CLI in a subprocess, as a user runs it, and checks:
status 2, exactly one stderr line ``stepscope: error: ...`` naming the offending file or value
and what is wrong with it, no "Traceback", and no output file left behind or overwritten.

Permission cases (an unwritable folder, an unreadable file) need an OS that denies them. As
root that is arranged, not skipped: the CLI runs without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH
(dropped from its bounding set before exec), so root is held to the owner bits of the mode
like anyone else. They are skipped only where even that is impossible.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stepscope.trace.logdir import make_path
from tests.support.cli import as_in_a_terminal, assert_one_error_line
from tests.support.traces import shared

CPU_ONLY = "kineto/cpu_only_rank34.pt.trace.json.gz"  # 2 KB, 18 events: the quickest real profile
GARBAGE = b"\x00\xffnot a profile\x13\x37" * 8
BROKEN_HOSTS = 50

PR_CAPBSET_DROP = 24  # <linux/prctl.h>
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2  # <linux/capability.h>


def stepscope(*args: str | Path, preexec_fn: Callable[[], None] | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stepscope.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec_fn,
        env=env,
    )


def listing(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder`` (hidden temporary files included) with a file's bytes."""
    return {str(path.relative_to(folder)): (path.read_bytes() if path.is_file() else None) for path in sorted(folder.rglob("*"))}


# --- fixtures -----------------------------------------------------------------------------


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "cpu.pt.trace.json.gz"
    path.parent.mkdir()
    shutil.copy(shared(CPU_ONLY), path)
    return path


def _without_dac_override() -> None:
    """In the child, before exec: root loses the capabilities that ignore file modes."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)


@pytest.fixture(scope="module")
def denied(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], None] | None:
    """A ``preexec_fn`` under which the CLI is refused what file modes refuse (None: it already is)."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    if root and not sys.platform.startswith("linux"):
        pytest.skip("running as root off Linux: no way to make the OS deny root a read or write")
    preexec = _without_dac_override if root else None
    probe = tmp_path_factory.mktemp("probe") / "secret"
    probe.write_text("x")
    probe.chmod(0)
    opened = subprocess.run([sys.executable, "-c", f"open({str(probe)!r}).read()"], preexec_fn=preexec, capture_output=True)
    probe.chmod(0o600)
    if opened.returncode == 0:
        pytest.skip("root here keeps CAP_DAC_OVERRIDE (cannot drop it: no CAP_SETPCAP), so the OS cannot deny a read or write")
    return preexec


@pytest.fixture
def read_only(tmp_path: Path):
    """A folder the CLI may not write into, holding an earlier output that must survive."""
    folder = tmp_path / "read_only"
    folder.mkdir()
    (folder / "existing.json").write_bytes(b'{"an earlier report": true}\n')
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.fixture
def broken_logdir(tmp_path: Path) -> Path:
    """50 hosts in one run, each file garbage: nothing in it loads."""
    logdir = tmp_path / "logdir"
    for number in range(BROKEN_HOSTS):
        path = make_path(logdir, "2026_01_01_00_00_00", f"host{number:02d}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(GARBAGE)
    return logdir


# --- outputs that cannot be written ----------------------------------------------------------


def output_args(command: str, profile: Path, output: Path) -> list[str | Path]:
    return ["report", profile, "--output", output] if command == "report" else ["convert", profile, output]


@pytest.mark.parametrize("command", ["report", "convert"])
@pytest.mark.parametrize("kind", ["directory", "under_a_file", "missing_folder_under_a_file"])
def test_output_that_can_never_be_written_fails_before_any_work(tmp_path: Path, profile: Path, command: str, kind: str) -> None:
    (tmp_path / "a_file").write_text("not a folder\n")
    if kind == "directory":
        output, fragments = tmp_path / "out.json", ("is a directory",)
        output.mkdir()
    elif kind == "under_a_file":
        output, fragments = tmp_path / "a_file" / "out.json", (f"{tmp_path / 'a_file'} is a file, not a directory",)
    else:
        output, fragments = tmp_path / "a_file" / "sub" / "out.json", (f"{tmp_path / 'a_file'} is a file, not a directory",)
    before = listing(tmp_path)
    assert_one_error_line(stepscope(*output_args(command, profile, output)), str(output), *fragments)
    assert listing(tmp_path) == before


@pytest.mark.parametrize("command", ["report", "convert"])
@pytest.mark.parametrize("name", ["new.json", "existing.json"])
def test_output_in_a_read_only_folder_leaves_it_as_it_was(
    tmp_path: Path, profile: Path, read_only: Path, denied: Callable[[], None] | None, command: str, name: str
) -> None:
    output = read_only / name
    before = listing(read_only)
    result = stepscope(*output_args(command, profile, output), preexec_fn=denied)
    assert_one_error_line(result, str(output), "not written", f"cannot create a file in {read_only}", "Permission denied")
    assert listing(read_only) == before  # the earlier report intact, no temporary file left


def _files_of_at_most_1_kb() -> None:
    """In the child: a write past 1 kB fails with EFBIG (a full disk, as far as it can tell)."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


@pytest.mark.parametrize("command", ["report", "convert"])
def test_output_that_fails_halfway_leaves_the_old_file(tmp_path: Path, profile: Path, command: str) -> None:
    output = tmp_path / "existing.json"
    output.write_bytes(b'{"an earlier report": true}\n')
    before = listing(tmp_path)
    args = [*output_args(command, profile, output)] + (["--tool", "all", "--format", "json"] if command == "report" else [])
    result = stepscope(*args, preexec_fn=_files_of_at_most_1_kb)
    assert_one_error_line(result, str(output), "not written (File too large)")
    assert listing(tmp_path) == before  # neither truncated nor replaced; no temporary file left


def test_report_onto_the_profile_itself_is_refused(profile: Path) -> None:
    before = profile.read_bytes()
    assert_one_error_line(stepscope("report", profile, "--output", profile), str(profile), "the output is the profile")
    assert profile.read_bytes() == before


# --- numbers and choices the parser refuses ---------------------------------------------------

PARSER_CASES = {
    "serve-port-too-big": (["serve", "--port", "70000"], ["--port", "70000", "out of range (0..65535"]),
    "serve-port-negative": (["serve", "--port", "-1"], ["--port", "-1", "out of range"]),
    "serve-port-not-a-number": (["serve", "--port", "http"], ["--port", "'http'", "not a whole number"]),
    "capture-duration-huge": (
        ["capture", "localhost:6009", "--duration-ms", "99999999999999999999999"],
        ["--duration-ms", "99999999999999999999999", "out of range", "at most 24 h"],
    ),
    "capture-duration-zero": (["capture", "localhost:6009", "--duration-ms", "0"], ["--duration-ms", "0 is out of range (1..86,400,000"]),
    "capture-duration-negative": (["capture", "localhost:6009", "--duration-ms", "-5"], ["--duration-ms", "-5 is out of range"]),
    "capture-duration-not-a-number": (["capture", "localhost:6009", "--duration-ms", "2s"], ["--duration-ms", "'2s' is not a whole number"]),
    "capture-delay-negative": (["capture", "localhost:6009", "--delay-ms", "-1"], ["--delay-ms", "-1 is out of range"]),
    "capture-attempts-zero": (["capture", "localhost:6009", "--attempts", "0"], ["--attempts", "0 is out of range"]),
    "demo-steps-zero": (["demo", "--no-serve", "--steps", "0"], ["--steps", "0 is out of range"]),
    "demo-port-too-big": (["demo", "--port", "65536"], ["--port", "65536 is out of range"]),
    "report-format": (["report", "PROFILE", "--format", "xml"], ["--format", "'xml'", "invalid choice"]),
    "info-format": (["info", "PROFILE", "--format", "yaml"], ["--format", "'yaml'", "invalid choice"]),
    "no-command": ([], ["required: command", "stepscope --help"]),
    "unknown-command": (["analyse"], ["invalid choice: 'analyse'"]),
    "missing-argument": (["convert", "PROFILE"], ["required: output", "stepscope convert --help"]),
}


@pytest.mark.parametrize("case", PARSER_CASES, ids=list(PARSER_CASES))
def test_bad_argument_is_one_line(tmp_path: Path, profile: Path, case: str) -> None:
    args, fragments = PARSER_CASES[case]
    args = [str(profile) if arg == "PROFILE" else arg for arg in args]
    if args[:1] in (["serve"], ["capture"], ["demo"]):
        args += ["--logdir", str(tmp_path / "logs")]
        if args[0] in ("serve", "demo"):
            args += ["--cache-dir", str(tmp_path / "cache")]
    assert_one_error_line(stepscope(*args), *fragments)
    assert not (tmp_path / "logs").exists() and not (tmp_path / "cache").exists()  # refused before any work


# --- serve: the port and the cache folder -----------------------------------------------------


def test_serve_on_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = stepscope("serve", "--logdir", tmp_path, "--port", str(port), "--cache-dir", tmp_path / "cache")
    assert_one_error_line(result, f"cannot listen on 127.0.0.1:{port}", "in use")


def test_serve_with_a_cache_folder_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("x\n")
    cache = tmp_path / "a_file" / "cache"
    result = stepscope("serve", "--logdir", tmp_path, "--port", "0", "--cache-dir", cache)
    assert_one_error_line(result, str(cache), "cannot be used as the cache folder", "a_file is a file, not a directory")


def test_serve_with_a_read_only_cache_folder(tmp_path: Path, read_only: Path, denied: Callable[[], None] | None) -> None:
    for cache in (read_only / "cache", read_only):  # one to create, one that exists but is not writable
        result = stepscope("serve", "--logdir", tmp_path, "--port", "0", "--cache-dir", cache, preexec_fn=denied)
        assert_one_error_line(result, str(cache), "cannot be used as the cache folder", "Permission denied")
    assert not (read_only / "cache").exists()


def test_demo_logdir_that_is_a_file(tmp_path: Path) -> None:
    logdir = tmp_path / "a_file"
    logdir.write_text("x\n")
    result = stepscope("demo", "--no-serve", "--logdir", logdir)
    assert_one_error_line(result, str(logdir), "cannot be used as the demo's log folder", "a_file is a file, not a directory")


def test_demo_logdir_in_a_read_only_folder(read_only: Path, denied: Callable[[], None] | None) -> None:
    """Refused before training (the profiler would only warn, and the demo then fail)."""
    logdir = read_only / "demo"
    result = stepscope("demo", "--no-serve", "--logdir", logdir, preexec_fn=denied)
    assert_one_error_line(result, str(logdir), "cannot be used as the demo's log folder", "Permission denied")


# --- inputs ---------------------------------------------------------------------------------


def test_logdir_where_every_profile_fails_is_summarised(broken_logdir: Path) -> None:
    result = stepscope("info", broken_logdir)
    assert "Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    # 5 named failures, "... and 45 more", the error: 7 lines however many files fail.
    assert len(lines) == 7, result.stderr
    first = make_path(broken_logdir, "2026_01_01_00_00_00", "host00")
    assert all(line.startswith("stepscope: warning: ") for line in lines[:-1]), lines
    assert lines[0].startswith(f"stepscope: warning: {first}: ")
    assert lines[5] == f"stepscope: warning: ... and {BROKEN_HOSTS - 5} more"
    assert lines[-1].startswith(f"stepscope: error: no profile in {broken_logdir} could be read ({BROKEN_HOSTS} failed; first: {first}: ")


def test_logdir_where_some_profiles_fail_reports_the_rest(broken_logdir: Path) -> None:
    good = make_path(broken_logdir, "2026_01_01_00_00_00", "good").with_name("good.trace.json.gz")
    shutil.copy(shared(CPU_ONLY), good)
    for extra in range(3, BROKEN_HOSTS):  # keep 3 broken hosts beside the good one
        make_path(broken_logdir, "2026_01_01_00_00_00", f"host{extra:02d}").unlink()
    result = stepscope("info", broken_logdir)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "host good" in result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("stepscope: warning: ") for line in lines), result.stderr
    assert lines[-1] == f"stepscope: warning: 3 of 4 profiles in {broken_logdir} could not be read; showing the other 1"


def test_report_on_many_hosts_lists_a_few(broken_logdir: Path) -> None:
    line = assert_one_error_line(stepscope("report", broken_logdir), f"has {BROKEN_HOSTS} hosts; choose one with --host (host00, ")
    assert line.endswith(f"... and {BROKEN_HOSTS - 10} more)")


INPUT_CASES = {
    "missing": (["report", "MISSING"], ["MISSING", "does not exist"]),
    "empty-folder": (["report", "EMPTY"], ["EMPTY", "contains no profiles"]),
    "garbage-file": (["report", "GARBAGE"], ["GARBAGE", "is not a profile"]),
    "convert-a-folder": (["convert", "FOLDER", "OUT"], ["FOLDER", "is a directory"]),
    "convert-unknown-format": (["convert", "PROFILE", "OUT.txt"], ["OUT.txt", "unknown output format"]),
    "unknown-tool": (["report", "PROFILE", "--tool", "nope"], ["unknown tool 'nope'", "overview_page"]),
    "unknown-run": (["report", "PROFILE", "--run", "nope"], ["PROFILE", "no run named 'nope'", "(runs: cpu.pt.trace.json.gz)"]),
    "unknown-host": (["report", "PROFILE", "--host", "nope"], ["PROFILE", "no host 'nope'", "(hosts: cpu)"]),
    "capture-no-address": (["capture", ",", "--logdir", "OUT"], ["no address given"]),
    "capture-bad-address": (["capture", "localhost", "--logdir", "OUT"], ["'localhost' is not host:port"]),
}


@pytest.mark.parametrize("case", INPUT_CASES, ids=list(INPUT_CASES))
def test_bad_input_is_one_line(tmp_path: Path, profile: Path, case: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "folder.pt.trace.json").mkdir()
    (tmp_path / "garbage.xplane.pb").write_bytes(GARBAGE)
    names = {
        "MISSING": tmp_path / "missing.xplane.pb",
        "EMPTY": tmp_path / "empty",
        "GARBAGE": tmp_path / "garbage.xplane.pb",
        "FOLDER": tmp_path / "folder.pt.trace.json",
        "PROFILE": profile,
        "OUT.txt": tmp_path / "out.txt",
        "OUT": tmp_path / "out.json",
    }
    args, fragments = INPUT_CASES[case]
    before = listing(tmp_path)
    result = stepscope(*[str(names.get(arg, arg)) for arg in args])
    assert_one_error_line(result, *[str(names.get(fragment, fragment)) for fragment in fragments])
    assert listing(tmp_path) == before


@pytest.mark.parametrize("command", ["info", "report", "convert"])
def test_unreadable_file(tmp_path: Path, profile: Path, denied: Callable[[], None] | None, command: str) -> None:
    profile.chmod(0)
    try:
        args = [command, profile] + ([tmp_path / "out.json"] if command == "convert" else [])
        assert_one_error_line(stepscope(*args, preexec_fn=denied), str(profile), "cannot be read (Permission denied)")
        assert not (tmp_path / "out.json").exists()
    finally:
        profile.chmod(0o644)


@pytest.mark.parametrize("command", ["info", "report"])
def test_unreadable_folder(profile: Path, denied: Callable[[], None] | None, command: str) -> None:
    folder = profile.parent
    folder.chmod(0)
    try:
        assert_one_error_line(stepscope(command, folder, preexec_fn=denied), str(folder), "cannot be read (Permission denied)")
    finally:
        folder.chmod(0o755)


# --- Ctrl-C and bugs ------------------------------------------------------------------------


def test_ctrl_c_exits_130_quietly(tmp_path: Path) -> None:
    """A capture waiting on a profiler server that never answers, interrupted."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        silent.settimeout(60)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        job = subprocess.Popen(
            [sys.executable, "-m", "stepscope.cli", "capture", address, "--logdir", str(tmp_path / "logs"), "--attempts", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=as_in_a_terminal,
        )
        try:
            connection, _ = silent.accept()  # the CLI is inside the command now
            with connection:
                job.send_signal(signal.SIGINT)
            # Hung up at once: the capture's worker thread, which the interrupted main thread
            # waits for, ends now rather than at its 10 s connect timeout. No wait between the
            # two: the signal is sent first, so Python's handler has run before the main thread
            # goes on, and the command never completes as a failed capture.
            stdout, stderr = job.communicate(timeout=60)
        finally:
            if job.poll() is None:
                job.kill()
                job.communicate()
    assert job.returncode == 130, (job.returncode, stdout, stderr)
    assert stderr.strip() == "" and "Traceback" not in stdout, stderr


def test_stepscope_debug_shows_the_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "missing.xplane.pb"
    result = stepscope("report", missing, env={**os.environ, "STEPSCOPE_DEBUG": "1"})
    assert result.returncode != 0 and "Traceback" in result.stderr and str(missing) in result.stderr
