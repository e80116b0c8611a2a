"""Remote capture as users meet it: real training processes with the profiler server on
loopback, captured by ``stepscope capture`` (another process), and what the job itself does
around it (in-job captures, forks, exit, a full disk)."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import grpc
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.capture.client import capture_remote, probe
from stepscope.protos import profiler_options_pb2, profiler_service_pb2
from stepscope.trace import names

pytestmark = pytest.mark.framework


def capture_cli(*args: str, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", "capture", *args], capture_output=True, text=True, timeout=240, preexec_fn=preexec)


# Put before every job's body: the names and helpers its code uses.
PRELUDE = """
import time
from pathlib import Path
import stepscope
from stepscope.capture.annotations import current_recording


def serve():
    Path(PORT_FILE).write_text(str(stepscope.start_server(0).port))


def wait_for_capture():
    while current_recording() is None:
        time.sleep(0.005)


def step_until_stopped(work=lambda: time.sleep(0.001), seconds=60):
    deadline = time.monotonic() + seconds
    number = 0
    while time.monotonic() < deadline and not (Path(OUT) / "stop").exists():
        with stepscope.step(number):
            work()
        number += 1
"""


class Job:
    """A Python program run as a separate process; it writes its server's port to a file
    (``PORT_FILE`` in its globals) and its own facts to ``OUT`` (a folder)."""

    def __init__(self, tmp_path: Path, name: str, body: str, wait_for_port: bool = True) -> None:
        self.out = tmp_path / name
        self.out.mkdir()
        script = self.out / "job.py"
        script.write_text(f"PORT_FILE = {str(self.out / 'port')!r}\nOUT = {str(self.out)!r}\n" + PRELUDE + textwrap.dedent(body))
        self.process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if wait_for_port:
            self.address = f"127.0.0.1:{self.wait_file('port')}"

    def wait_file(self, name: str, timeout_s: float = 120) -> str:
        path = self.out / name
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if path.exists() and path.read_text():
                return path.read_text()
            if self.process.poll() is not None:
                raise AssertionError(f"the job ended early: {self.process.communicate()}")
            time.sleep(0.05)
        raise AssertionError(f"the job never wrote {name}")

    def finish(self) -> tuple[str, str]:
        stdout, stderr = self.process.communicate(timeout=180)
        assert self.process.returncode == 0, stderr
        assert "Traceback" not in stderr, stderr
        return stdout, stderr


def op_names(profile: stepscope.Profile, prefix: str) -> set[str]:
    found = set()
    for plane in profile.planes:
        found |= {plane.metadata.names[i] for i in set(plane.events.metadata_id.tolist()) if plane.metadata.names[i].startswith(prefix)}
    return found


def only_host(logdir: Path) -> stepscope.Host:
    (run,) = stepscope.discover(logdir)
    (host,) = run.hosts
    return host


# --- 1. the README's snippet: a server nobody keeps a reference to ---------------------------


def test_server_without_a_reference_serves_after_garbage_collection(tmp_path: Path):
    job = Job(
        tmp_path,
        "readme",
        """
        import gc, socket

        probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
        stepscope.start_server(port)  # as the README writes it: the result is dropped
        gc.collect()
        time.sleep(3)  # grpc's server used to stop within seconds once collected
        gc.collect()
        Path(PORT_FILE).write_text(str(port))
        step_until_stopped(seconds=30)
        """,
    )
    result = capture_cli(job.address, "--logdir", str(tmp_path / "logs"), "--duration-ms", "500", "--attempts", "1")
    (job.out / "stop").write_text("stop")
    job.finish()
    assert result.returncode == 0, result.stdout + result.stderr
    profile = stepscope.load(only_host(tmp_path / "logs").path)
    assert run_tool("overview_page", profile).to_json()["step_source"] == "step_num"


def test_one_server_per_process():
    port = stepscope.start_server(0).port
    try:
        assert stepscope.start_server(port) is stepscope.start_server(0)  # the running one
        with pytest.raises(stepscope.StepscopeError, match=f"already runs in this process on 127.0.0.1:{port}.*stop_server"):
            stepscope.start_server(port + 1 if port < 65535 else port - 1)
    finally:
        stepscope.stop_server()
    assert probe(f"127.0.0.1:{port}", timeout_s=5).startswith("connection refused")
    again = stepscope.start_server(0)  # a new one may start once the old one stopped
    assert probe(f"127.0.0.1:{again.port}") is None
    stepscope.stop_server()


# --- 2. PyTorch: torch's ops, recorded on the training thread -------------------------------

TORCH_JOB = """
import torch

MODE = {mode!r}
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randn(16, 1)

def train_step():
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

# The same steps captured in the job itself: what a remote capture must record too.
with stepscope.profile(Path(OUT) / "in_job", stepscope.ProfilerOptions(host_tracer_level=2)):
    for number in range(3):
        with stepscope.step(number):
            train_step()
serve()
number = 3
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not (Path(OUT) / "stop").exists():
    if MODE == "steps":
        with stepscope.step(number):
            train_step()
    elif MODE == "optimizer":
        train_step()
    else:  # no boundary at all: inference without stepscope.step
        with torch.no_grad():
            model(x)
    number += 1
    time.sleep(0.002)
"""


@pytest.mark.parametrize("mode", ["steps", "optimizer"])
def test_remote_capture_of_a_torch_job_holds_its_ops(tmp_path: Path, mode: str):
    job = Job(tmp_path, mode, TORCH_JOB.format(mode=mode))
    result = capture_cli(job.address, "--logdir", str(tmp_path / "logs"), "--duration-ms", "800", "--attempts", "1")
    (job.out / "stop").write_text("stop")
    job.finish()
    assert result.returncode == 0, result.stdout + result.stderr
    remote = stepscope.load(only_host(tmp_path / "logs").path)
    in_job = stepscope.load(only_host(job.out / "in_job").path)
    # The job's code: two Linear layers with bias (aten::addmm forward), ReLU, mse_loss,
    # autograd's backward, SGD's step (torch names it Optimizer.step#SGD.step).
    expected = {"aten::addmm", "aten::relu", "aten::mse_loss", "Optimizer.step#SGD.step"}
    assert expected <= op_names(in_job, "")  # the reference capture is what we think it is
    assert expected <= op_names(remote, "")
    # Every aten op the in-job capture saw, the remote one saw too.
    assert op_names(in_job, "aten::") <= op_names(remote, "aten::")
    overview = run_tool("overview_page", remote).to_json()
    assert overview["environment"]["framework"] == "PyTorch"


def test_remote_capture_without_any_step_boundary_says_why(tmp_path: Path):
    job = Job(tmp_path, "none", TORCH_JOB.format(mode="none"))
    result = capture_cli(job.address, "--logdir", str(tmp_path / "logs"), "--duration-ms", "500", "--attempts", "1", "--host-tracer-level", "2")
    (job.out / "stop").write_text("stop")
    job.finish()
    # Nothing recorded: torch's profiler never reached the training thread. The client
    # says so in the server's words instead of a bare "no trace events".
    assert result.returncode == 1
    assert "no trace events collected" in result.stdout
    assert "the torch tracer recorded nothing: the training thread reached no step boundary" in result.stdout
    assert not (tmp_path / "logs" / "plugins" / "profile").exists() or not any((tmp_path / "logs" / "plugins" / "profile").iterdir())


def test_remote_python_trace_records_the_training_thread(tmp_path: Path):
    job = Job(
        tmp_path,
        "python",
        """
        def tokenize_batch(size):
            return sorted(str(value) for value in range(size))

        serve()
        step_until_stopped(lambda: tokenize_batch(2000))
        """,
    )
    result = capture_cli(job.address, "--logdir", str(tmp_path / "logs"), "--duration-ms", "600", "--attempts", "1", "--python-tracer-level", "1")
    (job.out / "stop").write_text("stop")
    job.finish()
    assert result.returncode == 0, result.stdout
    plane = stepscope.load(only_host(tmp_path / "logs").path).plane(names.PYTHON_TRACER_PLANE)
    # The job's function, as the tracer labels it: qualified name (file:line of its def).
    source = (job.out / "job.py").read_text().splitlines()
    label = f"tokenize_batch (job.py:{source.index('def tokenize_batch(size):') + 1})"
    rows = [row for row, meta in enumerate(plane.events.metadata_id.tolist()) if plane.metadata.names[meta] == label]
    assert len(rows) >= 5
    # Recorded on the training (main) thread's line, not the server's.
    assert {plane.lines[plane.events.line[row]].name for row in rows} == {"MainThread"}


# --- 4. the job never fails because of the profiler -----------------------------------------


def test_in_job_capture_during_a_remote_capture_goes_on(tmp_path: Path):
    job = Job(
        tmp_path,
        "inner",
        """
        import warnings

        serve()
        wait_for_capture()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with stepscope.profile(Path(OUT) / "inner") as session:
                with stepscope.trace("inside"):
                    time.sleep(0.05)
        assert session.path is None
        (Path(OUT) / "warning").write_text(str(caught[0].message))
        for number in range(20):
            with stepscope.step(number):
                time.sleep(0.002)
        """,
    )
    result = capture_cli(job.address, "--logdir", str(tmp_path / "logs"), "--duration-ms", "1500", "--attempts", "1", "--host-tracer-level", "1")
    job.finish()
    assert result.returncode == 0, result.stdout
    assert "records nothing" in (job.out / "warning").read_text() and "remote capture" in (job.out / "warning").read_text()
    assert not (job.out / "inner").exists()
    # The remote capture recorded on through the in-job attempt: its span and the steps.
    profile = stepscope.load(only_host(tmp_path / "logs").path)
    host = profile.plane(names.HOST_PLANE)
    recorded = [host.metadata.names[i] for i in host.events.metadata_id.tolist()]
    assert recorded.count("inside") == 1 and recorded.count(names.STEPSCOPE_STEP) == 20


def test_a_forked_child_does_not_inherit_the_capture(tmp_path: Path):
    job = Job(
        tmp_path,
        "fork",
        """
        import os

        session = stepscope.start(Path(OUT) / "logs", stepscope.ProfilerOptions(host_tracer_level=1))
        with stepscope.trace("parent before fork"):
            pass
        child = os.fork()
        if child == 0:
            with stepscope.trace("child work"):  # recorded for the parent (worker spool)
                pass
            stopped = stepscope.stop()  # the child has no capture of its own
            also = session.stop()  # and the inherited object stops nothing
            again = stepscope.stop()  # nor does a second stop() (it once raised)
            os._exit(0 if stopped is None and also is None and again is None else 3)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with stepscope.trace("parent after fork"):
            pass
        path = stepscope.stop()
        (Path(OUT) / "path").write_text(str(path))
        """,
        wait_for_port=False,
    )
    job.finish()
    profile = stepscope.load(Path((job.out / "path").read_text()))
    host = profile.plane(names.HOST_PLANE)
    recorded = sorted(host.metadata.names[i] for i in host.events.metadata_id.tolist())
    assert recorded == ["child work", "parent after fork", "parent before fork"]


# --- 5. a capture that may land is never sent twice; progress while waiting ------------------


def test_job_dying_during_the_capture_is_reported_once(tmp_path: Path):
    job = Job(
        tmp_path,
        "dies",
        """
        import os

        serve()
        wait_for_capture()
        time.sleep(0.2)
        os._exit(0)  # killed mid-capture (OOM, preemption)
        """,
    )
    # A minute's capture: the job's death 0.2 s into it lies far inside, however slow the machine.
    result = capture_cli(job.address, "--logdir", str(tmp_path / "logs"), "--duration-ms", "60000", "--attempts", "3")
    job.finish()
    assert result.returncode == 1
    assert f"{job.address}: failed (the connection was lost during the capture" in result.stdout
    assert "; 1 attempt(s))" in result.stdout  # sent once: never retried


def test_progress_and_two_captures_in_one_second_get_two_folders(tmp_path: Path):
    job = Job(
        tmp_path,
        "twice",
        """
        serve()
        step_until_stopped()
        """,
    )
    seen: list[tuple[str, int]] = []
    options = stepscope.ProfilerOptions(host_tracer_level=1)
    # 4 s: the client polls every 0.5 s, so it hears the server while it records, even with
    # polls a loaded machine delays by a second or two.
    first = capture_remote([job.address], tmp_path / "logs", 4000, options=options, progress=lambda a, phase, ms, total: seen.append((phase, total)))
    second = capture_remote([job.address], tmp_path / "logs", 300, options=options)
    (job.out / "stop").write_text("stop")
    job.finish()
    assert first[0].ok and second[0].ok
    assert first[0].path.parent != second[0].path.parent  # two session folders, nothing overwritten
    (run_a,), (run_b,) = ([r for r in stepscope.discover(tmp_path / "logs") if r.name == p.parent.name] for p in (first[0].path, second[0].path))
    assert stepscope.load(run_a.hosts[0].path).start_ns < stepscope.load(run_b.hosts[0].path).start_ns
    # The client heard the server's phases while it waited, and the duration asked for.
    assert ("recording", 4000) in seen


# --- 6. nothing lost: the server cannot write, the client can (or cannot) -----------------------

FULL_DISK_JOB = """
import resource, signal

# Files this process writes may not exceed 1 kB: a full disk, as far as its writes go.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
serve()
step_until_stopped()
"""


def _limit_file_size() -> None:
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))


def test_server_that_cannot_write_hands_the_profile_to_the_client(tmp_path: Path):
    job = Job(tmp_path, "full", FULL_DISK_JOB)
    saved = capture_cli(job.address, "--logdir", str(tmp_path / "logs"), "--duration-ms", "400", "--attempts", "1", "--host-tracer-level", "1")
    # Both sides limited: the client says so in one line, exit 2, with the real error.
    unsaved = capture_cli(
        job.address, "--logdir", str(tmp_path / "logs2"), "--duration-ms", "400", "--attempts", "1", "--host-tracer-level", "1", preexec=_limit_file_size
    )
    (job.out / "stop").write_text("stop")
    job.finish()
    assert saved.returncode == 0, saved.stdout + saved.stderr
    assert "note: the server could not write the profile" in saved.stdout and "(EFBIG)" in saved.stdout
    profile = stepscope.load(only_host(tmp_path / "logs").path)
    assert profile.plane(names.HOST_PLANE) is not None and len(profile.plane(names.HOST_PLANE).events) > 0
    assert unsaved.returncode == 2
    error_lines = unsaved.stderr.strip().splitlines()
    assert len(error_lines) == 1 and error_lines[0].startswith("stepscope: error: could not write") and "(EFBIG)" in error_lines[0]


def _profile_request(repository: Path, session: str) -> profiler_service_pb2.ProfileRequest:
    return profiler_service_pb2.ProfileRequest(
        duration_ms=100,
        opts=profiler_options_pb2.ProfileOptions(version=1, host_tracer_level=1),
        repository_root=str(repository),
        session_id=session,
        host_name="h",
    )


def test_server_never_overwrites_a_profile_and_sends_a_copy_only_when_needed(tmp_path: Path):
    port = stepscope.start_server(0).port
    try:
        existing = tmp_path / "repo" / "session" / "h.xplane.pb"
        existing.parent.mkdir(parents=True)
        existing.write_bytes(b"earlier capture")
        (tmp_path / "repo" / "shared").mkdir()  # made by the client: it sees this filesystem
        requests = [_profile_request(tmp_path / "repo", name) for name in ("session", "shared", "elsewhere")]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(
                f"/{names.PROFILER_SERVICE}/Profile",
                request_serializer=profiler_service_pb2.ProfileRequest.SerializeToString,
                response_deserializer=profiler_service_pb2.ProfileResponse.FromString,
            )
            stop = threading.Event()

            def work() -> None:
                number = 0
                while not stop.is_set():
                    with stepscope.step(number):
                        time.sleep(0.001)
                    number += 1

            worker = threading.Thread(target=work)
            worker.start()
            try:
                (response, answer), (shared, _), (elsewhere, _) = [call.with_call(request, timeout=60) for request in requests]
            finally:
                stop.set()
                worker.join()
        # A folder the client made: the file is written there and no copy comes back.
        assert not shared.tool_data and not shared.empty_trace
        assert len(stepscope.load(tmp_path / "repo" / "shared" / "h.xplane.pb").plane(names.HOST_PLANE).events) > 0
        # A folder the server had to make (a TSL client, another machine): written, and a copy.
        (copy,) = elsewhere.tool_data
        assert copy.data == (tmp_path / "repo" / "elsewhere" / "h.xplane.pb").read_bytes()
        # A file already there: left as it is, and the profile comes back with the reason.
        assert existing.read_bytes() == b"earlier capture"
        trailing = dict(answer.trailing_metadata())
        assert trailing[names.CAPTURE_WRITE_ERROR_KEY] == f"{existing} already exists; it was left as it is"
        (tool,) = response.tool_data
        out = tmp_path / "answer.xplane.pb"
        out.write_bytes(tool.data)
        assert len(stepscope.load(out).plane(names.HOST_PLANE).events) > 0
    finally:
        stepscope.stop_server()


# --- error messages that say what is there ------------------------------------------------------


def test_errors_name_what_answers_on_the_port(tmp_path: Path):
    http_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)  # accepts (the kernel does) and never says a word
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    try:
        result = capture_cli(f"127.0.0.1:{http_server.server_port}", "--logdir", str(tmp_path / "logs"), "--attempts", "1")
        assert result.returncode == 1
        assert "an HTTP/1 server answers on that port, not a profiler server" in result.stdout
        assert probe(f"127.0.0.1:{silent.getsockname()[1]}", timeout_s=1).startswith("the port accepts connections but says nothing")
        assert probe(f"127.0.0.1:{closed_port}", timeout_s=1).startswith("connection refused")
        assert probe("no-such-host.invalid:6009", timeout_s=1).startswith("cannot resolve no-such-host.invalid")
    finally:
        http_server.shutdown()
        silent.close()
    # Nothing captured: no empty session folder is left behind.
    assert not any((tmp_path / "logs" / "plugins" / "profile").iterdir())
    assert os.path.isdir(tmp_path / "logs" / "plugins" / "profile")
