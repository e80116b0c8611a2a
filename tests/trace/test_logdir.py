"""Log directory layouts: TensorBoard/XProf sessions, torch's trace handler, single files."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

import stepscope
from stepscope.trace.logdir import find_profiles, make_path, parse_path, safe_host
from tests.support.traces import shared

XPLANE = "xplane/tpu_v_inference_4chips.xplane.pb"
KINETO = "kineto/cpu_only_rank34.pt.trace.json.gz"


def _copy(name: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shared(name), target)
    return target


def test_tensorboard_layout_names_runs_as_xprof(tmp_path: Path):
    _copy(XPLANE, make_path(tmp_path, "2026_01_02_03_04_05", "host-a"))
    _copy(XPLANE, make_path(tmp_path, "2026_01_02_03_04_05", "host-b"))
    _copy(XPLANE, make_path(tmp_path, "2026_02_01_00_00_00", "host-a", tb_run="train"))
    # A session with both XSpace and trace JSON for a host: the XSpace is the host's profile.
    session = tmp_path / "plugins" / "profile" / "2026_01_02_03_04_05"
    _copy(KINETO, session / "host-a.trace.json.gz")
    runs = stepscope.discover(tmp_path)
    assert [run.name for run in runs] == ["2026_01_02_03_04_05", "train/2026_02_01_00_00_00"]
    assert [host.name for host in runs[0].hosts] == ["host-a", "host-b"]
    assert runs[0].host("host-a").path.name == "host-a.xplane.pb"
    assert runs[1].hosts[0].path == make_path(tmp_path, "2026_02_01_00_00_00", "host-a", tb_run="train")


def test_torch_trace_handler_layout(tmp_path: Path):
    _copy(KINETO, tmp_path / "resnet" / "worker0.1700000000000.pt.trace.json.gz")
    _copy(KINETO, tmp_path / "resnet" / "worker1.1700000000001.pt.trace.json.gz")
    (tmp_path / "resnet" / "notes.json").write_text("{}")
    runs = stepscope.discover(tmp_path)
    assert [run.name for run in runs] == ["resnet"]
    assert [host.name for host in runs[0].hosts] == ["worker0.1700000000000", "worker1.1700000000001"]


def test_single_file_is_one_run(tmp_path: Path):
    path = _copy(XPLANE, tmp_path / "tpu.xplane.pb")
    (run,) = stepscope.discover(path)
    assert run.name == "tpu.xplane.pb" and [h.name for h in run.hosts] == ["tpu"]


def test_parse_path_inverts_make_path(tmp_path: Path):
    path = make_path(tmp_path, "s1", "my host/../x", tb_run="a/b")
    # Host names never carry path separators or traversal into the layout.
    assert path.parent == tmp_path / "a" / "b" / "plugins" / "profile" / "s1"
    parsed = parse_path(tmp_path, path)
    assert parsed.run == "a/b/s1" and parsed.host == safe_host("my host/../x") == "my_host_.._x"


@pytest.mark.parametrize("make", ["empty", "missing"])
def test_no_profiles_is_a_clear_error(tmp_path: Path, make: str):
    target = tmp_path / "logs"
    if make == "empty":
        (target / "sub").mkdir(parents=True)
        (target / "sub" / "readme.txt").write_text("nothing here")
    with pytest.raises(stepscope.ProfileFormatError, match="contains no profiles" if make == "empty" else "does not exist"):
        stepscope.discover(target)


def test_trace_json_not_named_so_is_found_by_content(tmp_path: Path):
    """HTA-style and renamed Kineto files are runs; JSON that is no trace, and anything
    that is not a regular file, is not."""
    run = tmp_path / "hta"
    run.mkdir()
    # A gzipped copy of a shared Kineto trace under HTA's name (the shared file is gzip).
    _copy(KINETO, run / "rank3.json.gz")
    # The same trace decompressed, under a name that says nothing.
    (run / "events.json").write_bytes(gzip.decompress(shared(KINETO).read_bytes()))
    # Chrome's JSON array format: events, no header object.
    (run / "array.json").write_text(json.dumps([{"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]))
    # JSON that is no trace: a config (its lone "schemaVersion" is no Kineto header), a list of settings.
    (run / "config.json").write_text(json.dumps({"schemaVersion": 2, "lr": 0.1, "layers": [64, 64]}))
    (run / "list.json").write_text(json.dumps([{"name": "a"}, {"name": "b"}]))
    (run / "empty.json").write_bytes(b"")
    (run / "bad.json.gz").write_bytes(gzip.compress(b"\0" * 100_000))
    # Named like a trace but not a regular file: a directory and a FIFO.
    (run / "dir.json").mkdir()
    os.mkfifo(run / "x.json")
    runs = stepscope.discover(tmp_path)
    assert [r.name for r in runs] == ["hta"]
    # Hosts are the trace files' names less ".json[.gz]", sorted: array, events, rank3.
    assert [host.name for host in runs[0].hosts] == ["array", "events", "rank3"]
    profile = stepscope.load(runs[0].host("rank3").path)
    assert profile.planes  # the sniffed file is one load reads as Kineto


def test_tool_caches_beside_a_session_are_not_hosts(tmp_path: Path):
    session = make_path(tmp_path, "s1", "host-a").parent
    _copy(XPLANE, session / "host-a.xplane.pb")
    # TensorBoard's plugin caches are JSON, but no trace.
    (session / "host-a.memory_profile.json.gz").write_bytes(gzip.compress(b'{"memoryProfilePerAllocator": {}}'))
    (run,) = stepscope.discover(tmp_path)
    assert [host.name for host in run.hosts] == ["host-a"]


def test_a_trace_whose_metadata_comes_first_is_found_and_nothing_is_dropped_silently(tmp_path: Path):
    """A Kineto file opening with a metadata object of hundreds of KiB (TraceLens' H100
    samples do) under a name that says nothing is a host; each file not taken is listed with
    its reason; with no profile at all, the error names them."""
    run = tmp_path / "h100"
    run.mkdir()
    trace = json.loads(gzip.decompress(shared(KINETO).read_bytes()))
    metadata = {f"kernel_{i}": {"dims": list(range(20)), "name": f'void f<{i}>("[x]")'} for i in range(4000)}
    text = json.dumps({"metadata": metadata, **trace}).encode()
    assert text.index(b'"traceEvents"') > 500_000  # far past any fixed head
    (run / "rank0.json").write_bytes(text)
    (run / "config.json").write_text(json.dumps({"lr": 0.1}))
    os.mkfifo(run / "pipe.pt.trace.json")
    # A session holding XSpace and trace JSON for one host: the JSON is set aside, and said so.
    session = make_path(tmp_path, "s1", "host-a").parent
    _copy(XPLANE, session / "host-a.xplane.pb")
    _copy(KINETO, session / "host-a.trace.json.gz")
    found = find_profiles(tmp_path)
    assert [(r.name, [h.name for h in r.hosts]) for r in found.runs] == [("h100", ["rank0"]), ("s1", ["host-a"])]
    assert [(entry.path.relative_to(tmp_path).as_posix(), entry.why) for entry in found.skipped] == [
        ("h100/config.json", "not a trace: a JSON object without traceEvents (keys: lr)"),
        ("h100/pipe.pt.trace.json", "is a named pipe (FIFO), not a regular file; profiles are read from regular files only"),
        ("plugins/profile/s1/host-a.trace.json.gz", "host-a.xplane.pb of the same host is read instead"),
    ]
    # The host reads as the trace it wraps: its complete and instant events.
    kept = sum(1 for event in trace["traceEvents"] if event.get("ph") in ("X", "i"))
    assert stepscope.load(run / "rank0.json").event_count == kept
    # Nothing but what is no trace: the error says what was skipped.
    (run / "rank0.json").unlink()
    shutil.rmtree(tmp_path / "plugins")
    with pytest.raises(stepscope.ProfileFormatError) as raised:
        stepscope.discover(run)
    assert str(raised.value).endswith(
        "; skipped: config.json (not a trace: a JSON object without traceEvents (keys: lr)), "
        "pipe.pt.trace.json (is a named pipe (FIFO), not a regular file; profiles are read from regular files only)"
    )
