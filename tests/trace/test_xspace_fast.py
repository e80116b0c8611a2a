"""The XSpace reader, which decodes events and stats in bulk (trace/formats/xspace/wire.py),
gives exactly the Profile of a plain protobuf decode (tests/support/reference/xspace.py), and
rejects what protobuf rejects: on the shared XSpace profile, on XSpace files written from
every shared Kineto trace, on generated spaces full of edge cases and on damaged bytes.
Real framework captures are compared in test_framework_profiles.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import stepscope
from stepscope import ProfileFormatError
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.formats.xspace import decode
from stepscope.trace.formats.xspace.read import read_xspace
from stepscope.trace.formats.xspace.warm import sample_space
from stepscope.trace.kernels import PURE_PYTHON_ENV
from stepscope.trace.model import NO_ID
from stepscope.trace.planes_in_parallel import THREADS_SETTING
from tests.support.fuzz import BYTE_OPS, mutate_bytes, source_bytes
from tests.support.kernels import python_kernels
from tests.support.reference.xspace import assert_same_profile, reference_load
from tests.support.traces import KINETO_TRACES, LARGEST_KINETO, XPLANE_TRACES, middle_fifth, shared
from tests.support.xspaces import EVENT, SETTINGS, WIRE_CASES, handmade_space, ld, space_with_event, tag, varint, xspace

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"


def outcome(read, path: Path):
    try:
        return read(path)
    except ProfileFormatError as error:
        return error


# The bulk decoder's outputs starting at one entry each, so that every event, stat,
# text and line field after the first finds its array full: the decoder stops, the array
# grows and it goes on from there.
NO_ROOM = decode.FirstRoom(event_bytes=1 << 62, stat_bytes=1 << 62, text_share=1 << 62, minimum=1)


def read_growing(path: Path) -> stepscope.Profile:
    with mock.patch.object(decode, "FIRST_ROOM", NO_ROOM):
        return read_on_threads(path, 4)


def read_on_threads(path: Path, threads: int) -> stepscope.Profile:
    """The bulk reader on up to ``threads`` threads, whatever the file's size."""
    with mock.patch.dict(os.environ, {THREADS_SETTING: str(threads)}), mock.patch.object(decode, "PARALLEL_MIN_BYTES", 0):
        return read_xspace(path, path.read_bytes(), bulk=True)


def decoders() -> dict:
    """The reader with each decoder: the bulk one (the C kernels: its planes one by one; and
    on four threads, growing its outputs from one entry) and protobuf's messages (where the
    kernels are not compiled).

    The reader itself, not ``stepscope.load``, which first tells empty files and files of
    no known format apart (tests/trace/test_bad_input.py)."""
    return {
        "bulk, one thread": lambda path: read_on_threads(path, 1),
        "bulk, growing, planes on threads": read_growing,
        "messages": lambda path: read_xspace(path, path.read_bytes(), bulk=False),
    }


def problem_kind(error: ProfileFormatError) -> str:
    """The problem without its detail: "is not a valid XSpace protobuf", "has an event with a negative duration"..."""
    return re.sub(r"\s*\(.*", "", re.sub(r"plane '.*?' ", "plane ... ", error.problem))


def check_same(path: Path) -> str:
    """Each decoder gives the reference's Profile, or rejects the file as it does."""
    slow = outcome(reference_load, path)
    for name, read in decoders().items():
        fast = outcome(read, path)
        if isinstance(slow, ProfileFormatError) or isinstance(fast, ProfileFormatError):
            assert isinstance(fast, ProfileFormatError), f"{name}: protobuf rejects it ({slow}) but stepscope loaded it"
            assert isinstance(slow, ProfileFormatError), f"{name}: protobuf reads it but stepscope rejects it: {fast}"
            assert problem_kind(fast) == problem_kind(slow), (name, fast.problem, slow.problem)
            continue
        fast.validate()
        assert_same_profile(fast, slow)
    return "rejected: " + problem_kind(slow) if isinstance(slow, ProfileFormatError) else "loaded"


# --- real profiles ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", XPLANE_TRACES, ids=lambda p: p.name)
def test_shared_xspace_reads_as_protobuf_reads_it(path: Path):
    assert check_same(path) == "loaded"


@pytest.fixture(scope="module")
def written_kineto(tmp_path_factory) -> dict[str, tuple[stepscope.Profile, Path]]:
    """Each shared Kineto trace, loaded (read-only here), and the XSpace saved from it."""
    folder = tmp_path_factory.mktemp("written")
    written = {}
    for source in KINETO_TRACES:
        target = folder / (source.name.split(".")[0] + ".xplane.pb")
        original = stepscope.load(source)
        stepscope.save(original, target)
        written[source.name] = (original, target)
    return written


@pytest.mark.parametrize("source", KINETO_TRACES, ids=lambda p: p.name.split(".")[0])
def test_xspace_written_from_kineto_reads_as_protobuf_reads_it(source: Path, written_kineto: dict[str, tuple[stepscope.Profile, Path]], tmp_path: Path):
    """Every file stepscope writes from Kineto has one shape as XSpace, read in full from
    a100_ddp_cnn (27k events) and the smaller traces; the two largest (LARGEST_KINETO) add
    none, so the XSpace of a crop of each (9-10k events) is read against the reference.
    (test_reading_what_stepscope_wrote reads their whole files, against the Kineto trace.)"""
    original, path = written_kineto[source.name]
    if source.name.split(".")[0] in LARGEST_KINETO:
        path = tmp_path / "crop.xplane.pb"
        stepscope.save(middle_fifth(original), path)
    assert check_same(path) == "loaded"


def test_the_cropped_traces_are_the_largest(written_kineto: dict[str, tuple[stepscope.Profile, Path]]):
    """LARGEST_KINETO names the two shared Kineto traces with the most events, as the crops
    above assume (a trace added later that is larger is then compared in full, or listed)."""
    events = {name.split(".")[0]: sum(len(plane.events) for plane in profile.planes) for name, (profile, _) in written_kineto.items()}
    assert sorted(events, key=events.__getitem__)[-2:] == sorted(LARGEST_KINETO, key=events.__getitem__)


@pytest.mark.parametrize("source", [*KINETO_TRACES, shared(TPU)], ids=lambda p: p.name.split(".")[0])
def test_reading_what_stepscope_wrote_gives_the_same_profile(source: Path, written_kineto: dict[str, tuple[stepscope.Profile, Path]], tmp_path: Path):
    """Times to the picosecond, start_ns, lines (with their timestamps), metadata, every
    event's stats (flows are re-derived: compared as arrows), id columns and nesting."""
    if source.name in written_kineto:
        original, path = written_kineto[source.name]
    else:
        original = stepscope.load(source)
        path = tmp_path / "again.xplane.pb"
        stepscope.save(original, path)
    again = stepscope.load(path)
    again.validate()
    assert again.start_ns == original.start_ns
    for plane, copy in zip(original.planes, again.planes, strict=True):
        assert copy.name == plane.name and copy.lines == plane.lines
        for column in ("start_ps", "duration_ps", "metadata_id", "line", "depth", "parent", "correlation_id", "external_id", "group_id", "step_num"):
            assert np.array_equal(getattr(copy.events, column), getattr(plane.events, column)), (plane.name, column)
        assert copy.metadata.names == plane.metadata.names and copy.metadata.categories == plane.metadata.categories
        assert copy.plane_stats == plane.plane_stats
        for row in range(len(plane.events)):
            own = [s for s in plane.event_stats(row) if s.name != names.FLOW]
            assert [s for s in copy.event_stats(row) if s.name != names.FLOW] == own, (plane.name, row)
    arrows = {
        (int(a), int(b), int(c), int(d))
        for a, b, c, d in zip(original.flows.src_plane, original.flows.src_event, original.flows.dst_plane, original.flows.dst_event)
    }
    again_arrows = {
        (int(a), int(b), int(c), int(d)) for a, b, c, d in zip(again.flows.src_plane, again.flows.src_event, again.flows.dst_plane, again.flows.dst_event)
    }
    assert again_arrows == arrows
    # A second trip changes nothing at all.
    path2 = tmp_path / "twice.xplane.pb"
    stepscope.save(again, path2)
    assert_same_profile(stepscope.load(path2), again, flow_ids=False)


# --- generated spaces ---------------------------------------------------------------------------


@settings(SETTINGS, max_examples=300)
@given(space=xspace())
def test_generated_spaces_read_as_protobuf_reads_them(tmp_path_factory, space: xplane_pb2.XSpace):
    path = tmp_path_factory.mktemp("generated") / "host.xplane.pb"
    path.write_bytes(space.SerializeToString())
    note(str(space))
    event(check_same(path))


# --- damaged bytes ------------------------------------------------------------------------------


@settings(SETTINGS, max_examples=250)
@given(data=st.data())
def test_damaged_xspace_is_rejected_exactly_when_protobuf_rejects_it(tmp_path_factory, data: st.DataObject):
    """Bit flips, cuts, inserted varints and tags: what protobuf parses loads the same, what
    it rejects is rejected (the reader checks the wire format itself, not through protobuf)."""
    buffer = bytearray(source_bytes(TPU))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        mutate_bytes(data, buffer, BYTE_OPS)
    path = tmp_path_factory.mktemp("damaged") / "damaged.xplane.pb"
    path.write_bytes(bytes(buffer))
    event(check_same(path))


@settings(SETTINGS, max_examples=300)
@given(space=xspace(), data=st.data())
def test_damaged_generated_spaces_are_judged_as_protobuf_judges_them(tmp_path_factory, space: xplane_pb2.XSpace, data: st.DataObject):
    """The same on small generated spaces, where one mutation lands among few fields."""
    buffer = bytearray(space.SerializeToString())
    for _ in range(data.draw(st.integers(1, 2), label="mutations")):
        mutate_bytes(data, buffer, BYTE_OPS)
    path = tmp_path_factory.mktemp("damaged") / "damaged.xplane.pb"
    path.write_bytes(bytes(buffer))
    event(check_same(path))


@pytest.mark.parametrize("event", list(WIRE_CASES.values()), ids=list(WIRE_CASES))
def test_wire_format_edge_cases_follow_protobuf(event: bytes, tmp_path: Path):
    for extra in (b"", tag(15, 0) + b"\x01" + tag(11, 2) + b"\x00"):  # also with line fields after the events
        path = tmp_path / "case.xplane.pb"
        path.write_bytes(space_with_event(event, line_extra=extra))
        check_same(path)


def _correlation(field: int, value: bytes) -> bytes:
    """A stat of metadata 2 ("correlation_id" in ``space_with_event``): ``field`` 3 uint64, 4 int64, 2 double."""
    return ld(4, tag(1, 0) + b"\x02" + tag(field, 1 if field == 2 else 0) + value)


# An event's correlation_id as each decoder reads it: the last of its integer stats that fits
# an int64 (protobuf keeps repeated stats apart, stepscope's id column keeps the last such).
HOT_ID_CASES = {
    "int64 42, then uint64 7: 7 (the last)": (_correlation(4, varint(42)) + _correlation(3, varint(7)), 7),
    "int64 42, then uint64 2**64 - 1 (past int64): 42": (_correlation(4, varint(42)) + _correlation(3, varint(2**64 - 1)), 42),
    "int64 -5 (a 10-byte varint of 2**64 - 5): -5": (_correlation(4, varint(2**64 - 5)), -5),
    "uint64 7, then a double: 7 (a double is no id)": (_correlation(3, varint(7)) + _correlation(2, b"\0" * 8), 7),
    "a double only: no id": (_correlation(2, b"\0" * 8), NO_ID),
}


@pytest.mark.parametrize("case", list(HOT_ID_CASES.values()), ids=list(HOT_ID_CASES))
def test_hot_id_columns_keep_the_last_integer_that_fits(case: tuple[bytes, int], tmp_path: Path):
    stats, expected = case
    path = tmp_path / "ids.xplane.pb"
    path.write_bytes(space_with_event(EVENT + stats))
    check_same(path)
    for read in decoders().values():
        assert read(path).planes[0].events.correlation_id.tolist() == [expected]


def test_corrupt_events_are_reported_with_their_position(tmp_path: Path):
    path = tmp_path / "case.xplane.pb"
    path.write_bytes(space_with_event(EVENT + b"\x0e"))
    with pytest.raises(ProfileFormatError, match=r"not a valid XSpace protobuf \(truncated or corrupt: a field has wire type 6 or 7, at byte \d+\)"):
        stepscope.load(path)


@pytest.mark.parametrize("name", [TPU])
def test_cut_at_every_line_boundary_is_judged_as_protobuf_judges_it(name: str, tmp_path: Path):
    data = source_bytes(name)
    path = tmp_path / "cut.xplane.pb"
    for index in range(48):
        path.write_bytes(data[: len(data) * index // 48 + 7])
        check_same(path)


# --- the Python kernels -------------------------------------------------------------------------


def test_the_bulk_reader_with_the_python_kernels_reads_the_same(tmp_path: Path):
    """The Python the C kernels were written from (decoder, nesting, hot ids, flow pairing)
    reads the hand-made space, the sample of every stat kind and a flow as the C does.
    (tests/trace/test_kernels_wire.py compares the decoders' every output on many more.)"""
    for name, data in {
        "handmade": handmade_space().SerializeToString(),
        "value types": space_with_event(WIRE_CASES["stat: value types"]),
        "sample": sample_space(),
    }.items():
        path = tmp_path / f"{name}.xplane.pb"
        path.write_bytes(data)
        with python_kernels():
            walked = read_xspace(path, data, bulk=True)
        assert_same_profile(walked, read_xspace(path, data, bulk=True))
        assert_same_profile(walked, reference_load(path))


def test_the_reader_runs_as_plain_python_where_the_c_is_not_used(tmp_path: Path):
    """``STEPSCOPE_PURE_PYTHON=1`` (as where the extension was not built): protobuf's messages
    and numpy, the same profile."""
    space = xplane_pb2.XSpace.FromString(space_with_event(WIRE_CASES["stat: value types"]))
    path = tmp_path / "small.xplane.pb"
    path.write_bytes(space.SerializeToString())
    script = textwrap.dedent(
        f"""
        import stepscope
        from stepscope.trace import kernels
        assert not kernels.COMPILED
        print(repr(describe(stepscope.load({str(path)!r}))))
        """
    )
    prelude = "import stepscope\n" + textwrap.dedent(_describe_source())
    env = {**os.environ, PURE_PYTHON_ENV: "1"}
    done = subprocess.run(
        [sys.executable, "-c", prelude + script], capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2], env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr(describe(stepscope.load(path)))


def describe(profile: stepscope.Profile) -> list:
    plane = profile.planes[0]
    return [
        profile.start_ns,
        plane.events.start_ps.tolist(),
        [plane.event_name(r) for r in range(len(plane.events))],
        [plane.event_stats(r) for r in range(len(plane.events))],
    ]


def _describe_source() -> str:
    import inspect

    return inspect.getsource(describe)


def test_bytes_handed_over_are_let_go_and_read_the_same(tmp_path: Path):
    """``read_xspace`` given the loader's ``FileBytes`` takes them (the holder is empty
    after) and reads the profile it reads from the same bytes given plainly."""
    from stepscope.trace.readers import FileBytes

    path = shared(XPLANE_TRACES[0])
    data = path.read_bytes()
    holder = FileBytes(data)
    taken = read_xspace(path, holder, bulk=True)
    with pytest.raises(AssertionError, match="already taken"):
        holder.peek()
    assert_same_profile(taken, read_xspace(path, data, bulk=True))
    assert taken.event_count > 0


@pytest.mark.parametrize("bulk", [True, False])
def test_str_values_must_be_utf8_and_bytes_values_need_not(bulk: bool):
    """Protobuf's rule for ``string`` fields, in the wire decoder as in protobuf's parser:
    an all-ASCII text blob passes at once, a valid non-ASCII str_value reads, an invalid
    one is an error naming the rule, and a bytes_value may hold any byte."""
    stat_with = lambda field, value: EVENT + ld(4, tag(1, 0) + b"\x02" + ld(field, value))  # noqa: E731
    path = Path("utf8.xplane.pb")
    cafe = read_xspace(path, space_with_event(stat_with(5, "café".encode())), bulk=bulk)
    assert [stat.value for stat in cafe.planes[0].stats.stats(0)] == ["café"]
    raw = read_xspace(path, space_with_event(stat_with(6, b"\xff\x00")), bulk=bulk)
    assert [stat.value for stat in raw.planes[0].stats.stats(0)] == [b"\xff\x00"]
    with pytest.raises(ProfileFormatError, match="UTF-8" if bulk else None):
        read_xspace(path, space_with_event(stat_with(5, b"caf\xff")), bulk=bulk)
