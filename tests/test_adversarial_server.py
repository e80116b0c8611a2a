"""Hostile input at the surfaces beyond the profile readers, each met as a
user meets it: ``file://`` URLs through the real CLI, the profiler server inside a real
training job, and the dashboard's cache and logdir through a real ``stepscope serve``.

Every answer is one line (exit status 2 on the CLI, a JSON error or a rebuilt analysis on
the server); nothing hangs (each child process has a timeout), nothing dies.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from stepscope.dashboard.api import state
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache
from stepscope.protos import profiler_service_pb2
from stepscope.trace import names
from tests.support import hostile
from tests.support.dashboard.inprocess import InProcessServer
from tests.support.dashboard.server import DashboardServer
from tests.support.service_job import Job

TIMEOUT_S = 60


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", *args], capture_output=True, text=True, timeout=TIMEOUT_S)


def _one_line_error(result: subprocess.CompletedProcess, says: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"stepscope: error: {says}"]


# --- item 7: file:// URLs get the local checks ---------------------------------------------

FIFO_PROBLEM = "is a named pipe (FIFO), not a regular file; profiles are read from regular files only"
DEVICE_PROBLEM = "is a character device, not a regular file; profiles are read from regular files only"


@pytest.mark.parametrize(("make", "problem"), [(hostile.fifo, FIFO_PROBLEM), (hostile.device_file, DEVICE_PROBLEM)])
def test_a_file_url_that_is_no_regular_file_is_one_line(tmp_path, make, problem):
    """A FIFO URL gave `distributed` an IndexError traceback; a link to /dev/zero was read."""
    url = f"file://{make(tmp_path / 'rank0.trace.json')}"
    _one_line_error(_cli("distributed", url), f"{url}: {problem}")


def test_a_file_url_folder_skips_what_is_no_regular_file(tmp_path):
    """A folder URL with two ranks, a FIFO and a link to /dev/zero beside them: the two
    ranks are read, the others never opened (a FIFO opened for sniffing would hang)."""
    for rank in (0, 1):
        hostile.xspace_of_events(tmp_path / f"rank{rank}.xplane.pb", 10)
    hostile.fifo(tmp_path / "rank2.trace.json")
    hostile.device_file(tmp_path / "rank3.trace.json")
    result = _cli("distributed", f"file://{tmp_path}", "--format", "json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert '"rank0"' in result.stdout and '"rank1"' in result.stdout
    assert "rank2" not in result.stdout and "rank3" not in result.stdout


# --- item 3: the profiler server in the job holds no more than a small request -----------------


def _memory_mib(pid: int) -> dict[str, int]:
    """The job's resident memory now (VmRSS) and at its peak so far (VmHWM), in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return {key: int(re.search(rf"^{key}:\s+(\d+) kB", status, re.MULTILINE).group(1)) >> 10 for key in ("VmRSS", "VmHWM")}


def _profile_call(address: str):
    channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)])
    call = channel.unary_unary(
        f"/{names.PROFILER_SERVICE}/Profile",
        request_serializer=profiler_service_pb2.ProfileRequest.SerializeToString,
        response_deserializer=profiler_service_pb2.ProfileResponse.FromString,
    )
    return channel, call


def test_the_job_refuses_a_huge_request_without_holding_it(tmp_path):
    """A 256 MiB ProfileRequest (a path of 256 Mi "x") on loopback. Before the cap the job went
    from 61 MB to a 2,467 MB peak and kept 419 MB (1 GB: 182 MB -> 6.77 GB); now grpc refuses
    it as it arrives and the job's peak stays within a few MB of where it was."""
    job = Job(tmp_path, "huge")
    channel, call = _profile_call(job.address)
    try:
        # Warmed up before the baseline: a first call through its handler (refused for its
        # zero duration), so the server's threads and imports are in the baseline.
        with pytest.raises(grpc.RpcError) as warm_up:
            call(profiler_service_pb2.ProfileRequest(duration_ms=0), timeout=TIMEOUT_S)
        assert warm_up.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        before = _memory_mib(job.process.pid)
        with pytest.raises(grpc.RpcError) as refused:
            call(profiler_service_pb2.ProfileRequest(duration_ms=100, repository_root="x" * (256 << 20)), timeout=TIMEOUT_S)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "larger than max" in refused.value.details() and "65536" in refused.value.details()
        # Under the request cap, but a host name no file system takes: refused by field.
        with pytest.raises(grpc.RpcError) as named:
            call(profiler_service_pb2.ProfileRequest(duration_ms=100, host_name="h" * 10_000), timeout=TIMEOUT_S)
        assert named.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert named.value.details() == "host_name is 10000 characters, more than 255"
        after = _memory_mib(job.process.pid)
        assert after["VmHWM"] - before["VmHWM"] < 32, (before, after)  # measured: 0-1 MiB
        # And the job still captures.
        answer = call(profiler_service_pb2.ProfileRequest(duration_ms=100, host_name="ok"), timeout=TIMEOUT_S)
        assert not answer.empty_trace and answer.tool_data[0].name == "xplane.pb"
    finally:
        channel.close()
        job.finish()


# --- item 4: a profile swapped for a link outside the logdir after the listing ----------------


def test_a_profile_swapped_for_a_link_outside_is_not_served(tmp_path, monkeypatch):
    """The listing saw a regular file inside the logdir; before the read, it became a link to
    a profile outside. The worker checks the file it opened (its real path, from the open
    descriptor) against the logdir: refused in one line, where the outside profile's data
    was served (its 7 events) on the first try."""
    monkeypatch.setattr(state, "DISCOVERY_TTL_S", 3600.0)  # the listing stays as it was: the race, held open
    session = tmp_path / "logs" / "plugins" / "profile" / "run"
    session.mkdir(parents=True)
    host = hostile.xspace_of_events(session / "host.xplane.pb", 10)
    outside = hostile.xspace_of_events(tmp_path / "secret.xplane.pb", 7)
    server = InProcessServer(tmp_path / "logs", AnalysisCache(tmp_path / "cache", workers=1))
    try:
        assert server.get("/api/runs").json()["runs"] == [{"name": "run", "hosts": ["host"]}]
        host.unlink()
        host.symlink_to(outside)
        answer = server.ready("/api/data", TIMEOUT_S, run="run", host="host", tool="trace_viewer")
        assert answer.status == 422, answer.body[:300]
        assert answer.json() == {"error": f"{host}: lies outside the log directory (through a link); it is not read"}
    finally:
        server.stop()


# --- item 5: a damaged cache is rebuilt, never served, never fatal --------------------------------

EVENTS = 10  # the profile's events: 1 ns each, back to back, so its span is 10 ns = 10,000 ps
SPAN_PS = EVENTS * 1_000


def _truncate(path: Path) -> None:
    with open(path, "r+b") as stream:
        stream.truncate(path.stat().st_size // 2)


def _replace_with(make):
    def damage(path: Path) -> None:
        path.unlink()
        make(path)

    return damage


# What is done to the cached overview_page.json: each was served as it was (a truncated
# document as 200 with invalid JSON), or a plain-text 500, or hung the request (a FIFO).
DAMAGE = {
    "truncated": _truncate,
    "missing": Path.unlink,
    "directory": _replace_with(Path.mkdir),
    "fifo": _replace_with(hostile.fifo),
}


@pytest.fixture
def served(tmp_path):
    session = tmp_path / "logs" / "plugins" / "profile" / "run"
    session.mkdir(parents=True)
    hostile.xspace_of_events(session / "host.xplane.pb", EVENTS)
    server = DashboardServer(tmp_path / "logs", tmp_path / "cache")
    yield server
    server.stop()


def _folder(server: DashboardServer) -> Path:
    (folder,) = [path for path in (server.cache_dir / "analysis").iterdir() if path.is_dir() and not path.name.startswith(".")]
    return folder


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_tool_answer_is_rebuilt(served, damage):
    where = {"run": "run", "host": "host", "tool": "overview_page"}
    first = served.ready("/api/data", TIMEOUT_S, **where)
    assert first.status == 200
    document = _folder(served) / "overview_page.json"
    DAMAGE[damage](document)
    answer = served.request("GET", "/api/data?run=run&host=host&tool=overview_page")
    assert answer.status == 202, answer.body[:300]  # at once: no hang on the FIFO
    assert "is damaged (overview_page.json: " in answer.json()["message"]
    again = served.ready("/api/data", TIMEOUT_S, **where)
    assert again.status == 200 and again.json() == first.json()
    assert served.process.poll() is None


def _summary(server: DashboardServer):
    return server.get("/api/trace/summary", run="run", host="host", start_ps="0", end_ps=str(SPAN_PS))


def test_a_truncated_index_array_is_rebuilt(served):
    """Truncated before the server opened the index: refused at open (its size is not the
    header's), rebuilt; it was a 500."""
    assert served.ready("/api/data", TIMEOUT_S, run="run", host="host", tool="overview_page").status == 200
    _truncate(_folder(served) / "trace_index" / "key.npy")
    answer = _summary(served)
    assert answer.status == 202, answer.body[:300]
    assert "is damaged (trace_index: " in answer.json()["message"] and "array key is missing or damaged" in answer.json()["message"]
    rebuilt = served.ready("/api/trace/summary", TIMEOUT_S, run="run", host="host", start_ps="0", end_ps=str(SPAN_PS))
    assert rebuilt.status == 200
    assert (_folder(served) / "trace_index" / "key.npy").stat().st_size == 128 + EVENTS * 8  # whole again: header + 10 int64


def test_truncating_an_open_index_does_not_kill_the_server(served):
    """The index was open (its arrays mapped, the server killed by SIGBUS, rc -7, at the
    next query once one was truncated); an index this small is read into memory, so the
    server answers as before."""
    served.ready("/api/trace/summary", TIMEOUT_S, run="run", host="host", start_ps="0", end_ps=str(SPAN_PS))
    before = _summary(served)
    assert before.status == 200
    for array in (_folder(served) / "trace_index").glob("*.npy"):
        with open(array, "r+b") as stream:
            stream.truncate(0)
    after = _summary(served)
    assert served.process.poll() is None
    assert after.status == 200 and after.json() == before.json()
