"""Planes read on threads (``stepscope.trace.planes_in_parallel``): results in plane order,
the first failing plane's error, the count limits shared by every thread, and the setting.
(That a threaded read gives the reference's Profile, on real, generated and damaged files,
is test_xspace_fast.py's ``decoders``.)"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from unittest import mock

import pytest

from stepscope import ProfileFormatError
from stepscope.errors import ProfileLimitError, StepscopeError
from stepscope.protos import xplane_pb2
from stepscope.trace import limits
from stepscope.trace.formats.xspace import decode
from stepscope.trace.formats.xspace import read as read_module
from stepscope.trace.formats.xspace.read import read_xspace
from stepscope.trace.planes_in_parallel import MAX_THREADS, THREAD_PREFIX, THREADS_SETTING, map_planes, read_threads


def test_results_come_back_in_order_from_several_threads(monkeypatch):
    monkeypatch.setenv(THREADS_SETTING, "4")
    ran_on: dict[int, str] = {}
    started = threading.Barrier(4, timeout=30)  # four items at once: only on four threads
    finished = [threading.Event() for _ in range(5)]
    finished[4].set()

    def work(item: int) -> int:
        ran_on[item] = threading.current_thread().name
        started.wait()
        assert finished[item + 1].wait(30)  # the last item finishes first, then the one before it...
        finished[item].set()
        return item * item

    assert map_planes(work, [0, 1, 2, 3]) == [0, 1, 4, 9]
    assert len(set(ran_on.values())) == 4 and all(name.startswith(THREAD_PREFIX) for name in ran_on.values())


def test_one_thread_runs_every_item_here(monkeypatch):
    monkeypatch.setenv(THREADS_SETTING, "1")
    names = map_planes(lambda item: threading.current_thread().name, [0, 1, 2])
    assert names == [threading.current_thread().name] * 3


def test_the_first_failing_item_s_error_is_raised(monkeypatch):
    monkeypatch.setenv(THREADS_SETTING, "2")

    def work(item: int) -> int:
        if item == 0:
            time.sleep(0.2)  # fails after item 1 has failed
            raise ValueError("item 0")
        raise KeyError("item 1")

    with pytest.raises(ValueError, match="item 0"):
        map_planes(work, [0, 1])


@pytest.mark.parametrize(("setting", "expected"), [("", None), ("1", 1), ("3", 3), ("64", MAX_THREADS)])
def test_the_threads_setting(monkeypatch, setting, expected):
    monkeypatch.setenv(THREADS_SETTING, setting)
    with mock.patch("stepscope.trace.planes_in_parallel.available_cores", return_value=5):
        assert read_threads() == (expected if expected is not None else 5)


@pytest.mark.parametrize("setting", ["0", "two", "-1", "1.5", "\u00b2"])  # (a superscript 2 is a digit to str.isdigit)
def test_a_bad_threads_setting_is_one_clear_error(monkeypatch, setting):
    monkeypatch.setenv(THREADS_SETTING, setting)
    with pytest.raises(StepscopeError) as raised:
        read_threads()
    assert str(raised.value) == f"{THREADS_SETTING} must be a whole number of threads, at least 1 (it is {setting!r})"


def four_planes(events: int) -> bytes:
    """Four planes of one line with ``events`` one-ps events each."""
    space = xplane_pb2.XSpace()
    for number in range(4):
        plane = space.planes.add(id=number, name=f"/device:GPU:{number}")
        plane.event_metadata[1].CopyFrom(xplane_pb2.XEventMetadata(id=1, name="kernel"))
        line = plane.lines.add(id=1, name="stream")
        for offset in range(events):
            line.events.add(metadata_id=1, offset_ps=offset * 10, duration_ps=1)
    return space.SerializeToString()


@pytest.mark.parametrize("threads", ["1", "4"])
def test_the_event_limit_counts_every_plane_on_every_thread(monkeypatch, threads):
    monkeypatch.setenv(THREADS_SETTING, threads)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
    data, path = four_planes(1000), Path("four.xplane.pb")
    # 4 planes x 1,000 events: 4,000 is within a limit of 4,000 and past one of 3,999.
    with limits.limited({limits.EVENTS: 4000}):
        assert read_xspace(path, data, bulk=True).event_count == 4000
    with limits.limited({limits.EVENTS: 3999}), pytest.raises(ProfileLimitError, match="more than 3,999 events"):
        read_xspace(path, data, bulk=True)


def test_damaged_planes_on_threads_report_the_first_one(monkeypatch):
    monkeypatch.setenv(THREADS_SETTING, "4")
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", 0)
    data = four_planes(200)
    plane_starts = [start for start, _ in decode_plane_ranges(data)]
    damaged = bytearray(data)
    for start in plane_starts[1:]:  # planes 1-3: a field of wire type 7 where plane content begins
        damaged[start] = 0x0F
    with pytest.raises(ProfileFormatError, match=rf"wire type 6 or 7, at byte {plane_starts[1]}\)"):
        read_xspace(Path("damaged.xplane.pb"), bytes(damaged), bulk=True)


@pytest.mark.parametrize(("least", "parallel"), [(0, True), (1, False)])
def test_only_files_of_parallel_min_bytes_read_their_planes_on_threads(monkeypatch, least: int, parallel: bool):
    """The decode, the planes' reading and their finishing go to threads (``map_planes``'s
    ``threads``) for a file of PARALLEL_MIN_BYTES or more, never for a smaller one."""
    monkeypatch.setenv(THREADS_SETTING, "4")
    data = four_planes(10)
    monkeypatch.setattr(decode, "PARALLEL_MIN_BYTES", len(data) + least)
    asked: list[bool] = []

    def spy(work, items, threads=True):
        asked.append(threads)
        return map_planes(work, items, threads)

    monkeypatch.setattr(decode, "map_planes", spy)
    monkeypatch.setattr(read_module, "map_planes", spy)
    assert read_xspace(Path("four.xplane.pb"), data, bulk=True).event_count == 40
    assert asked == [parallel] * 3


def decode_plane_ranges(data: bytes) -> list[tuple[int, int]]:
    """Where each plane's content lies in the file (its fields, after its tag and length)."""
    space, ranges, at = xplane_pb2.XSpace.FromString(data), [], 0
    for plane in space.planes:
        size = plane.ByteSize()
        head = 1 + len(decode._varint(size))
        ranges.append((at + head, at + head + size))
        at += head + size
    return ranges
