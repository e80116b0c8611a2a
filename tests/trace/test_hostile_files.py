"""Hostile files: each is one clear ProfileFormatError line, in bounded memory and time.

The files come from ``tests/support/hostile.py``: gzip bombs, XSpace of very many empty planes,
lines or metadata entries, trace JSON of very many threads or processes, deeply nested
JSON, FIFOs and devices. Cases that could exhaust the machine if a limit regressed run
``stepscope.load`` in a child process under ``RLIMIT_AS`` and a timeout, and report the
child's peak memory growth; the rest run here with small limits (``limits.limited``).
Real profiles, a real multi-member gzip among them, must load as they did before the
limits: the reference reads the file whole and gunzips it with ``gzip.decompress``, as the
reader did then.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import stepscope
from stepscope.errors import ProfileFormatError, ProfileLimitError, StepscopeError
from stepscope.sizes import size_text
from stepscope.trace import files, limits, logdir, readers
from tests.support import hostile
from tests.support.reference.xspace import assert_same_profile
from tests.support.traces import ALL_SHARED_TRACES, shared

MiB = 1 << 20
GiB = 1 << 30
ROOT = Path(__file__).resolve().parents[2]
CPU_ONLY = "kineto/cpu_only_rank34.pt.trace.json.gz"
XPLANE = "xplane/tpu_v_inference_4chips.xplane.pb"
# The address space a child may use: imports (Python, numpy, the reader) reserve ~0.15 GiB of it.
CHILD_ADDRESS_SPACE = 3 * GiB // 2

SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=25,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --- loading in a child under RLIMIT_AS ------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    import stepscope
    from stepscope.errors import ProfileFormatError
    from stepscope.trace.formats.xspace import read  # the reader, imported before the baseline
    results = []
    for path in sys.argv[1:]:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.process_time()  # CPU seconds: the work done, which a loaded machine does not stretch
        try:
            profile = stepscope.load(path)
            outcome = {{"planes": len(profile.planes), "events": sum(len(p.events) for p in profile.planes)}}
        except ProfileFormatError as error:
            outcome = {{"error": type(error).__name__, "message": str(error)}}
        except BaseException as error:
            outcome = {{"unexpected": (type(error).__name__ + ": " + str(error))[:400]}}
        outcome["seconds"] = time.process_time() - start
        outcome["peak_growth"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
        results.append(outcome)
    print(json.dumps(results))
    """
)


def load_in_child(*paths: Path, env: dict[str, str] | None = None, timeout: float = 60) -> list[dict]:
    """``stepscope.load`` of each path, one after another, in a child limited to
    CHILD_ADDRESS_SPACE: its outcome, CPU seconds and growth of the peak RSS (bytes)."""
    child_env = {key: value for key, value in os.environ.items() if not key.startswith("STEPSCOPE_MAX_")}
    child_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(limit=CHILD_ADDRESS_SPACE), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=child_env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for path, result in zip(paths, results):
        assert "unexpected" not in result, (path, result)
    return results


def one_line(message: str, path: Path) -> None:
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(f"{path}: "), message


def load_error(path: Path) -> ProfileFormatError:
    with pytest.raises(ProfileFormatError) as caught:
        stepscope.load(path)
    one_line(str(caught.value), path)
    return caught.value


def load_unbounded(path: Path) -> stepscope.Profile:
    """The reader as it was before the limits: the whole file, ``gzip.decompress``d."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    kinds = readers.candidates(path, data)
    return readers.READERS[kinds[0]](path, readers.FileBytes(data))


# --- gzip bombs ----------------------------------------------------------------------------


def test_a_gzip_bomb_of_zeros_stops_at_its_first_bytes(tmp_path: Path):
    """6 MB expanding to 6 GiB of zeros, default limits: no profile starts with a zero
    byte, so reading stops after the first 16 MiB decompressed."""
    path = hostile.gzip_bomb(tmp_path / "zeros.json.gz", 6 * GiB)
    [result] = load_in_child(path)
    assert "not a profile" in result["message"], result
    one_line(result["message"], path)
    assert result["peak_growth"] < 200 * MiB and result["seconds"] < 10, result


@pytest.mark.parametrize("expanded", [GiB, 6 * GiB], ids=["1GiB", "6GiB"])
def test_a_gzip_bomb_past_the_limit_is_one_line_naming_the_file_and_the_limit(tmp_path: Path, expanded: int):
    """Valid trace JSON all the way, so only the limit stops it: after 64 MiB decompressed
    (peak growth ~ the limit: the buffer, not twice it)."""
    path = hostile.json_bomb(tmp_path / "bomb.json.gz", expanded)
    [result] = load_in_child(path, env={"STEPSCOPE_MAX_INPUT_BYTES": "64MiB"})
    assert result["error"] == "ProfileLimitError", result
    assert result["message"] == (f"{path}: decompresses to more than 64.0 MiB (limit STEPSCOPE_MAX_INPUT_BYTES={64 * MiB}); raise it to read larger profiles")
    assert result["peak_growth"] < 64 * MiB + 100 * MiB and result["seconds"] < 10, result


def test_a_bomb_under_the_limit_loads(tmp_path: Path):
    """A 16 MiB trace of 230,000 metadata events and one complete event, in a gzip of 3
    members, limit 17 MiB: it loads, every thread name read."""
    path = hostile.json_bomb(tmp_path / "big.json.gz", 16 * MiB, members=3, event=hostile.METADATA_EVENT)
    with limits.limited({limits.INPUT_BYTES: 17 * MiB}):
        profile = stepscope.load(path)
    [plane] = profile.planes
    assert len(plane.events) == 1 and [line.name for line in plane.lines] == ["process (1) / main"]


def test_the_default_input_limit_is_2_gib_and_the_variable_changes_it(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("STEPSCOPE_MAX_INPUT_BYTES", raising=False)
    assert limits.INPUT_BYTES.get() == 2 * GiB
    for text, value in [("1048576", MiB), ("4GiB", 4 * GiB), ("512M", 512 * MiB), ("3 kb", 3072), (" 7 ", 7), ("1.5GiB", 3 * GiB // 2)]:
        monkeypatch.setenv("STEPSCOPE_MAX_INPUT_BYTES", text)
        assert limits.INPUT_BYTES.get() == value, text
    for bad in ("0", "-1", "lots", "5Q"):
        monkeypatch.setenv("STEPSCOPE_MAX_INPUT_BYTES", bad)
        with pytest.raises(StepscopeError, match="STEPSCOPE_MAX_INPUT_BYTES="):
            limits.INPUT_BYTES.get()
    monkeypatch.setenv("STEPSCOPE_MAX_INPUT_BYTES", "1")
    with limits.limited({limits.INPUT_BYTES: 5 * GiB}):  # what the program sets wins
        assert limits.INPUT_BYTES.get() == 5 * GiB
    assert limits.INPUT_BYTES.get() == 1


@pytest.mark.parametrize("name", [CPU_ONLY, XPLANE])
def test_a_tiny_limit_refuses_a_real_trace_and_the_default_loads_it(name: str, monkeypatch: pytest.MonkeyPatch):
    path = shared(name)
    monkeypatch.setenv("STEPSCOPE_MAX_INPUT_BYTES", "1000")
    error = load_error(path)
    assert isinstance(error, ProfileLimitError) and error.setting == "STEPSCOPE_MAX_INPUT_BYTES" and error.limit == 1000
    assert "(limit STEPSCOPE_MAX_INPUT_BYTES=1000); raise it to read larger profiles" in str(error)
    monkeypatch.delenv("STEPSCOPE_MAX_INPUT_BYTES")
    assert len(stepscope.load(path).planes)


def test_the_limit_bounds_the_size_on_disk_too(tmp_path: Path):
    path = tmp_path / "plain.pt.trace.json"
    path.write_bytes(gzip.decompress(shared(CPU_ONLY).read_bytes()))
    size = path.stat().st_size
    with limits.limited({limits.INPUT_BYTES: 1 * MiB}):
        assert len(stepscope.load(path).planes)  # ~10 KB: well under
    with limits.limited({limits.INPUT_BYTES: size - 1}):
        error = load_error(path)
    assert f"is {size_text(size)} on disk, more than {size_text(size - 1)} (limit STEPSCOPE_MAX_INPUT_BYTES={size - 1})" in str(error)


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda path: path.name)
def test_real_traces_load_as_before(path: Path):
    assert_same_profile(stepscope.load(path), load_unbounded(path), stats_rows=50)


@pytest.fixture(params=["isal", "zlib"])
def inflater(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Gzip read by each module ``files`` may inflate with: ISA-L's where it is installed
    (the project installs it), zlib where it is not."""
    if request.param == "zlib":
        monkeypatch.setattr(files, "INFLATER", zlib)
    else:
        assert files.INFLATER.__name__ == "isal.isal_zlib"
    return request.param


@pytest.mark.parametrize("name", [CPU_ONLY, XPLANE])
def test_a_real_multi_member_gzip_loads_as_its_content(tmp_path: Path, name: str, inflater: str):
    """Three gzip members with zero padding between them, as ``gzip.decompress`` takes."""
    raw = gzip.decompress(shared(name).read_bytes()) if name.endswith(".gz") else shared(name).read_bytes()
    thirds = [raw[: len(raw) // 3], raw[len(raw) // 3 : 2 * len(raw) // 3], raw[2 * len(raw) // 3 :]]
    path = tmp_path / (Path(name).name.removesuffix(".gz") + ".gz")
    path.write_bytes(gzip.compress(thirds[0]) + b"\0" * 9 + gzip.compress(thirds[1]) + gzip.compress(thirds[2]) + b"\0" * 3)
    assert gzip.decompress(path.read_bytes()) == raw
    assert_same_profile(stepscope.load(path), load_unbounded(path), stats_rows=50)


def test_damaged_gzip_members_are_format_errors(tmp_path: Path, inflater: str):
    good = gzip.compress(b'{"traceEvents":[]}')
    for name, data, problem in [
        ("garbage_after.json.gz", good + b"garbage", "gzip data is truncated or corrupt"),
        ("cut_second.json.gz", good + good[:-5], "truncated"),
        ("bad_crc.json.gz", good[:-8] + bytes(8), "corrupt"),
        ("bad_size.json.gz", good[:-1] + bytes([good[-1] ^ 1]), "corrupt"),  # the length ISIZE's last byte
        ("bad_deflate.json.gz", good[:10] + b"\xff" * 8 + good[18:], "corrupt"),
    ]:
        path = tmp_path / name
        path.write_bytes(data)
        assert problem in str(load_error(path)), name


# --- XSpace and JSON of many containers --------------------------------------------------


def test_many_containers_are_refused_before_they_cost(tmp_path: Path):
    """200,000 empty planes (3 MB) took 1.2 GB and 60 s; 150,000 empty lines, 20,000
    metadata entries for one event (limit 10,000), JSON of 200,000 named threads or 2,000
    processes named like planes: each one line, quickly, in little memory."""
    cases = {
        "planes": (
            hostile.xspace_of_empty_planes(tmp_path / "planes.xplane.pb", 200_000),
            "has 200,001 planes, more than 1,000 (limit STEPSCOPE_MAX_PLANES=1000)",
        ),
        "lines": (hostile.xspace_of_empty_lines(tmp_path / "lines.xplane.pb", 150_000), "has more than 100,000 lines (limit STEPSCOPE_MAX_LINES=100000)"),
        "metadata": (
            hostile.xspace_of_metadata(tmp_path / "metadata.xplane.pb", 20_000),
            "plane 1 has 20,000 event and stat metadata entries for 0 events and 0 stats, more than 10,000 beyond one "
            "per event and stat (limit STEPSCOPE_MAX_METADATA=10000)",
        ),
        "threads": (hostile.json_of_threads(tmp_path / "threads.json", 200_000), "has 200,001 threads, more than 100,000 (limit STEPSCOPE_MAX_LINES=100000)"),
        "processes": (hostile.json_of_processes(tmp_path / "processes.json", 2_000), "has 2,001 processes, more than 1,000 (limit STEPSCOPE_MAX_PLANES=1000)"),
    }
    results = load_in_child(*(path for path, _ in cases.values()), env={"STEPSCOPE_MAX_METADATA": "10000"}, timeout=120)
    for (name, (path, expected)), result in zip(cases.items(), results):
        assert result.get("error") == "ProfileLimitError", (name, result)
        one_line(result["message"], path)
        assert expected in result["message"], (name, result["message"])
        assert result["seconds"] < 10, (name, result)
    assert max(result["peak_growth"] for result in results) < 600 * MiB, results


def test_too_many_events_are_refused_before_they_are_decoded(tmp_path: Path):
    """A 3 MB gzip of 20M tiny events takes >10 GB to decode (measured: out of memory at
    8 GiB after 90 s, for 1 GiB of them); with the events limit at 100,000 an 8 MiB bomb
    of 155,000 events, and an XSpace of 150,000 events, stop when counted."""
    json_bomb = hostile.json_bomb(tmp_path / "events.json.gz", 8 * MiB)
    xspace = hostile.xspace_of_events(tmp_path / "events.xplane.pb", 150_000)
    results = load_in_child(json_bomb, xspace, env={"STEPSCOPE_MAX_EVENTS": "100000"})
    events = (8 * MiB - len(b'{"traceEvents":[') - len(hostile.EVENT) - 1) // len(hostile.EVENT) + 1  # (see json_bomb)
    assert results[0]["message"] == (
        f"{json_bomb}: has {events:,} events, more than 100,000 (limit STEPSCOPE_MAX_EVENTS=100000); raise it to read larger profiles"
    )
    assert results[1]["message"] == (f"{xspace}: has more than 100,000 events (limit STEPSCOPE_MAX_EVENTS=100000); raise it to read larger profiles")
    assert all(result["seconds"] < 5 for result in results), results


def test_empty_planes_under_the_limit_cost_little(tmp_path: Path):
    """999 empty planes: kept (XProf keeps them too), in well under a second each 1,000."""
    path = hostile.xspace_of_empty_planes(tmp_path / "planes.xplane.pb", 999)
    [result] = load_in_child(path)
    assert result.get("planes") == 1000 and result.get("events") == 1, result
    assert result["seconds"] < 5 and result["peak_growth"] < 200 * MiB, result


def test_a_plane_of_only_stats_or_metadata_is_kept(tmp_path: Path):
    """Like /host:metadata (HLO protos as plane stats, no lines): not an empty plane."""
    from stepscope.protos import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(hostile.xspace_of_metadata(tmp_path / "m.xplane.pb", 3).read_bytes())
    meta = space.planes.add(id=9, name="/host:metadata")
    meta.stat_metadata[1].name = "hlo_proto"
    meta.stats.add(metadata_id=1, bytes_value=b"\x0a\x03abc")
    path = tmp_path / "kept.xplane.pb"
    path.write_bytes(space.SerializeToString())
    profile = stepscope.load(path)
    assert [plane.name for plane in profile.planes] == ["/host:CPU", "/device:GPU:0", "/host:metadata"]
    assert [profile.planes[0].event_name(0)] == profile.planes[0].metadata.names == ["op"]
    assert profile.planes[1].metadata.names == ["m0", "m1", "m2"]
    assert profile.planes[2].plane_stats[0].value == b"\x0a\x03abc"


# --- nesting ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("depth", "where"), [(1_000, "top"), (100_000, "top"), (5_000, "args"), (100_000, "args")])
def test_deeply_nested_json_is_one_line(tmp_path: Path, depth: int, where: str):
    path = hostile.deep_json(tmp_path / "deep.json", depth, where)
    assert "nested too deeply" in str(load_error(path))


def test_nesting_deep_in_a_gzip_too(tmp_path: Path):
    path = tmp_path / "deep.json.gz"
    path.write_bytes(gzip.compress(hostile.deep_json(tmp_path / "deep.json", 50_000, "args").read_bytes()))
    assert "nested too deeply" in str(load_error(path))


# --- not regular files -------------------------------------------------------------------------


def test_fifos_and_devices_are_refused_without_reading(tmp_path: Path):
    fifo = hostile.fifo(tmp_path / "pipe.pt.trace.json")
    zero = hostile.device_file(tmp_path / "zero.xplane.pb")
    fifo_result, zero_result = load_in_child(fifo, zero, timeout=30)  # a hang fails here, not forever
    assert fifo_result["message"] == f"{fifo}: is a named pipe (FIFO), not a regular file; profiles are read from regular files only"
    assert zero_result["message"] == f"{zero}: is a character device, not a regular file; profiles are read from regular files only"
    assert "directory" in str(load_error(tmp_path))


def test_a_fifo_swapped_in_after_the_check_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The time-of-check/time-of-use gap: stat says regular, the open file is a FIFO. The
    open does not block (O_NONBLOCK) and the open file is checked again."""
    fifo = hostile.fifo(tmp_path / "swapped.json")
    regular = tmp_path / "regular.json"
    regular.write_bytes(b"{}")
    real_stat = os.stat
    monkeypatch.setattr(files.os, "stat", lambda path, *args, **kwargs: real_stat(regular if Path(path) == fifo else path, *args, **kwargs))
    with pytest.raises(ProfileFormatError, match="named pipe"):
        files.open_regular(fifo)


def test_discovery_skips_what_is_not_a_regular_file(tmp_path: Path):
    session = tmp_path / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    (session / "host.xplane.pb").write_bytes(shared(XPLANE).read_bytes())
    hostile.fifo(session / "pipe.xplane.pb")
    hostile.device_file(session / "zero.xplane.pb")
    hostile.fifo(tmp_path / "worker.1.pt.trace.json")
    [run] = logdir.discover(tmp_path)
    assert [host.name for host in run.hosts] == ["host"]
    with pytest.raises(ProfileFormatError, match="named pipe"):
        logdir.discover(session / "pipe.xplane.pb")


def test_limit_errors_cross_processes_intact():
    error = limits.PLANES.error("x.xplane.pb", "has 5 planes, more than 4", 4)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ProfileLimitError and str(copy) == str(error) and (copy.setting, copy.limit) == ("STEPSCOPE_MAX_PLANES", 4)


# --- properties: a profile or the project's error, never another exception --------------------


def outcome(path: Path) -> stepscope.Profile | ProfileFormatError:
    try:
        return stepscope.load(path)
    except ProfileFormatError as error:
        one_line(str(error), path)
        return error


@SETTINGS
@given(depth=st.integers(1, 3_000), where=st.sampled_from(["top", "args"]), packed=st.booleans())
def test_any_nesting_depth_gives_a_profile_or_a_format_error(tmp_path: Path, depth: int, where: str, packed: bool):
    path = hostile.deep_json(tmp_path / "deep.json", depth, where)
    if packed:
        path.with_suffix(".json.gz").write_bytes(gzip.compress(path.read_bytes()))
        path = path.with_suffix(".json.gz")
    result = outcome(path)
    if isinstance(result, ProfileFormatError):
        assert "nested too deeply" in str(result) or "no events" in str(result) or where == "top", result


@SETTINGS
@given(
    expanded=st.integers(0, 4 * MiB),
    limit=st.integers(1, 4 * MiB),
    members=st.integers(1, 3),
    json_pattern=st.booleans(),
)
def test_any_gzip_expansion_loads_within_the_limit_or_is_a_limit_error(tmp_path: Path, expanded: int, limit: int, members: int, json_pattern: bool):
    path = tmp_path / "bomb.json.gz"
    if json_pattern:
        hostile.json_bomb(path, expanded, members)
    else:
        hostile.gzip_bomb(path, expanded, b" ", b"[", b"]", members)
    size = len(gzip.decompress(path.read_bytes()))
    with limits.limited({limits.INPUT_BYTES: limit}):
        result = outcome(path)
    if size > limit or path.stat().st_size > limit:
        assert isinstance(result, ProfileLimitError), (size, limit, result)
        assert f"(limit STEPSCOPE_MAX_INPUT_BYTES={limit})" in str(result)
    elif json_pattern:
        assert isinstance(result, stepscope.Profile), result
    else:
        assert not isinstance(result, ProfileLimitError), result


@SETTINGS
@given(
    kind=st.sampled_from(["planes", "lines", "events", "metadata", "stat metadata", "threads", "processes", "json events"]),
    count=st.integers(0, 300),
    limit=st.integers(1, 300),
)
def test_any_number_of_containers_loads_within_its_limit_or_is_a_limit_error(tmp_path: Path, kind: str, count: int, limit: int):
    """With a limit drawn too: over it, the error names that limit; under it, the profile
    has every container."""
    builders = {
        "planes": (lambda path: hostile.xspace_of_empty_planes(path, count), limits.PLANES, count + 1),
        "lines": (lambda path: hostile.xspace_of_empty_lines(path, count), limits.LINES, count + 1),
        "events": (lambda path: hostile.xspace_of_events(path, count), limits.EVENTS, count),
        "json events": (lambda path: hostile.json_of_names(path, count), limits.EVENTS, count),
        "metadata": (lambda path: hostile.xspace_of_metadata(path, count), limits.METADATA, count),
        "stat metadata": (lambda path: hostile.xspace_of_metadata(path, count, "stat"), limits.METADATA, count),
        "threads": (lambda path: hostile.json_of_threads(path, count, events=True), limits.LINES, count + 1),
        "processes": (lambda path: hostile.json_of_processes(path, count), limits.PLANES, count + 1),
    }
    build, limit_of_kind, total = builders[kind]
    path = build(tmp_path / ("many.json" if kind in ("threads", "processes", "json events") else "many.xplane.pb"))
    with limits.limited({limit_of_kind: limit}):
        result = outcome(path)
    if total > limit:
        assert isinstance(result, ProfileLimitError) and result.setting == limit_of_kind.env, (total, limit, result)
        return
    assert isinstance(result, stepscope.Profile), (total, limit, result)
    if kind in ("events", "json events"):
        assert sum(len(plane.events) for plane in result.planes) == total
    elif kind == "planes":
        assert len(result.planes) == total
    elif kind == "lines":
        assert sum(len(plane.lines) for plane in result.planes) == total
    elif kind == "metadata":
        assert len(result.planes[1].metadata.names) == count
    elif kind == "threads":
        assert sum(len(plane.lines) for plane in result.planes) == total
    elif kind == "processes":
        assert len(result.planes) == total
