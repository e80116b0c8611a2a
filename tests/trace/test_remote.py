"""Profiles named by URL (``stepscope.trace.remote``, through fsspec): a ``file://`` URL
loads the same profile as its path, named by the URL as given; bad URLs are one line
naming the URL."""

from __future__ import annotations

import fsspec
import pytest

import stepscope
from stepscope.errors import ProfileFormatError, ProfileLimitError
from stepscope.trace import limits
from stepscope.trace.logdir import discover
from stepscope.trace.remote import discover_url, is_url
from tests.support.traces import shared

RECSYS = shared("kineto/recsys_sampled_rank0_of_128.pt.trace.json.gz")


def test_a_file_url_loads_the_path_s_profile():
    by_path, by_url = stepscope.load(RECSYS), stepscope.load(RECSYS.as_uri())
    assert by_url.source == RECSYS.as_uri() == f"file://{RECSYS}"
    assert (by_url.host, by_url.start_ns, by_url.event_count) == (by_path.host, by_path.start_ns, by_path.event_count)
    for a, b in zip(by_path.planes, by_url.planes, strict=True):
        assert a.name == b.name and (a.events.start_ps == b.events.start_ps).all()


def test_what_is_a_url():
    assert is_url("s3://bucket/run") and is_url("memory://x") and is_url("file:///tmp/x")
    assert not is_url("/tmp/x") and not is_url("C://x") and not is_url("relative/file.json")


@pytest.fixture
def memory():
    fs = fsspec.filesystem("memory")
    yield fs
    if fs.exists("/t"):
        fs.rm("/t", recursive=True)


def test_bad_urls_are_one_line_naming_the_url(memory, monkeypatch):
    memory.pipe("/t/job/empty.pt.trace.json", b"")
    memory.pipe("/t/job/junk.pt.trace.json", b"\x00\x01 not a profile")
    for url, problem in (
        ("memory://t/job/missing.pt.trace.json", "does not exist"),
        ("memory://t/job", "is a directory"),
        ("memory://t/job/empty.pt.trace.json", "is empty"),
        ("memory://t/job/junk.pt.trace.json", "is not a profile"),
        ("nosuchscheme://t/x.json", "cannot be opened"),
    ):
        with pytest.raises(ProfileFormatError) as caught:
            stepscope.load(url)
        assert str(caught.value).startswith(f"{url}: ") and problem in str(caught.value), str(caught.value)
    memory.pipe("/t/big.pt.trace.json", b"{" + b" " * 200 + b"}")
    monkeypatch.setenv(limits.INPUT_BYTES.env, "100")
    with pytest.raises(
        ProfileLimitError, match=r"^memory://t/big.pt.trace.json: is 202 bytes on disk, more than 100 bytes \(limit STEPSCOPE_MAX_INPUT_BYTES=100\)"
    ):
        stepscope.load("memory://t/big.pt.trace.json")


def test_discovery_under_a_url_follows_the_layout(memory):
    trace = RECSYS.read_bytes()
    memory.pipe("/t/logdir/tb/plugins/profile/s1/hostA.trace.json.gz", trace)
    memory.pipe("/t/logdir/torchrun/worker0.123.pt.trace.json.gz", trace)
    memory.pipe("/t/logdir/torchrun/notes.json", b'{"a": 1}')
    memory.pipe("/t/logdir/torchrun/.hidden.pt.trace.json.gz", trace)
    runs = discover_url("memory://t/logdir")
    assert [(run.name, [(host.name, host.path) for host in run.hosts]) for run in runs] == [
        ("tb/s1", [("hostA", "memory:///t/logdir/tb/plugins/profile/s1/hostA.trace.json.gz")]),
        ("torchrun", [("worker0.123", "memory:///t/logdir/torchrun/worker0.123.pt.trace.json.gz")]),
    ]
    with pytest.raises(ProfileFormatError, match=r"^memory://t/nothing: does not exist"):
        discover_url("memory://t/nothing")


def test_a_url_with_no_profile_names_what_it_skipped_as_a_local_folder_does(memory, tmp_path):
    """The same four files under a URL and in a local folder: both errors end with the
    same "; skipped: ..." part (the local discovery is the reference), which names the
    two JSON files that are no trace; the hidden file and the .txt are not candidates."""
    files = {
        "job/a/notes.json": b'{"a": 1}',
        "job/b/list.json": b"[1, 2, 3]",
        "job/.hidden.pt.trace.json": b"{}",
        "job/readme.txt": b"text",
    }
    for name, content in files.items():
        memory.pipe(f"/t/{name}", content)
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    with pytest.raises(ProfileFormatError) as local:
        discover(tmp_path / "job")
    with pytest.raises(ProfileFormatError) as remote:
        discover_url("memory://t/job")
    local_skipped = str(local.value).split("; skipped: ")[1]
    assert local_skipped.startswith("a/notes.json (not a trace: ") and ", b/list.json (not a trace: " in local_skipped
    assert str(remote.value).startswith("memory://t/job: contains no profiles (")
    assert str(remote.value).split("; skipped: ")[1] == local_skipped
