"""The XSpace writer, which encodes events in bulk (trace/formats/xspace/encode.py), writes
the same XSpace as the per-event writer it replaced (tests/support/reference/xspace_write.py),
and its encoder's C (src/stepscope/kernels/encode.c) writes the bytes its Python writes.

"The same": both files parsed by protobuf are equal messages (compared through their
deterministic serialisation, so maps in any order and NaNs bit for bit) — every plane,
line, event, stat (name through its metadata id, kind and value), flow, the Task
Environment plane, hostnames, errors and warnings — and both read back by stepscope give
the same Profile. Where the old writer fails (a value its stat kind cannot hold) the new one
fails with the same exception type.

Checked on every shared trace (Kineto JSON and XSpace), on the hand-made and generated
XSpaces of the reader's tests, on a real torch CPU capture (host, Python tracer and torch
planes merged) and on generated profiles over every stats store (typed, JSON args with
both translators, concatenated) with flows, id columns, odd strings and values.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import stepscope
from stepscope import ProfileFormatError
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.builder import RawPlane, finish_plane
from stepscope.trace.formats.chrome.kineto import translate_args
from stepscope.trace.formats.xspace.schema import TASK_ENVIRONMENT_INFO
from stepscope.trace.formats.xspace.write import to_xspace, write_xspace, xspace_chunks
from stepscope.trace.kernels import PURE_PYTHON_ENV
from stepscope.trace.merge import merge_profiles
from stepscope.trace.model import NO_ID, EventMetadata, FlowTable, Line, Profile
from stepscope.trace.stat_types import Stat, StatKind
from stepscope.trace.stats import EmptyStats, JsonStats, TypedStats, plain_translator
from tests.support.kernels import python_kernels
from tests.support.reference.xspace import assert_same_profile
from tests.support.reference.xspace_write import reference_to_xspace
from tests.support.traces import ALL_SHARED_TRACES, LARGEST_KINETO, middle_fifth, shared
from tests.support.xspaces import SETTINGS, handmade_space, without_xprof_hints, xspace

# Profiles up to this many events are also written with the encoder's Python (~12k events
# a second: 2.3 s for a100_ddp_cnn's 27k, where the C takes 0.6 s with its JSON args); the
# two V100 traces (45-53k) and the torch capture are written by the C alone.
PYTHON_KERNELS_EVENTS = 30_000


def canonical(data: bytes) -> bytes:
    """The XSpace re-serialised deterministically, less the hints the writer adds for XProf
    (which the per-event writer predates; tests/trace/test_xprof_hints.py checks them):
    equal for equal messages."""
    return without_xprof_hints(xplane_pb2.XSpace.FromString(data)).SerializeToString(deterministic=True)


def outcome(write, profile: Profile) -> bytes | type[BaseException]:
    try:
        return write(profile)
    except (ValueError, TypeError, OverflowError) as error:
        return type(error)


def old_bytes(profile: Profile) -> bytes:
    return reference_to_xspace(profile).SerializeToString()


def new_bytes(profile: Profile) -> bytes:
    return b"".join(xspace_chunks(profile))


def written_bytes(path: Path):
    """A writer that writes the file with ``write_xspace`` and returns its bytes."""

    def write(profile: Profile) -> bytes:
        write_xspace(profile, path)
        return path.read_bytes()

    return write


def check_same_xspace(profile: Profile, folder: Path | None = None) -> str:
    """Both writers give the same XSpace (or fail alike); read back, the same Profile.

    With a ``folder`` the new writer's bytes are those ``write_xspace`` wrote to the file
    that is read back (it writes ``xspace_chunks``'s pieces as they are, which
    test_gzip_and_to_xspace_give_the_same_space checks), so the profile is encoded once."""
    old_path, new_path = (folder / "old.xplane.pb", folder / "new.xplane.pb") if folder is not None else (None, None)
    old = outcome(old_bytes, profile)
    new = outcome(new_bytes if new_path is None else written_bytes(new_path), profile)
    if profile.event_count <= PYTHON_KERNELS_EVENTS:
        with python_kernels():  # the encoder's Python, which the C was written from: the same bytes
            assert outcome(new_bytes, profile) == new
    if not isinstance(old, bytes) or not isinstance(new, bytes):
        assert old == new, f"old writer: {old!r}, new writer: {new!r}"
        return "both failed"
    if canonical(new) != canonical(old):
        _explain(without_xprof_hints(xplane_pb2.XSpace.FromString(new)), xplane_pb2.XSpace.FromString(old))
    if old_path is None or new_path is None:
        return "written"
    old_path.write_bytes(old)
    try:
        expected = stepscope.load(old_path)
    except ProfileFormatError as error:  # what the reader refuses (times past an int64)
        with pytest.raises(ProfileFormatError) as caught:
            stepscope.load(new_path)
        assert caught.value.problem == error.problem
        return "written, not readable"
    assert_same_profile(stepscope.load(new_path), expected)
    return "written and read"


def _explain(new: xplane_pb2.XSpace, old: xplane_pb2.XSpace) -> None:
    """The first difference, as a readable assertion."""
    assert len(new.planes) == len(old.planes), "plane count"
    for index, (plane, other) in enumerate(zip(new.planes, old.planes)):
        assert dict(plane.stat_metadata) == dict(other.stat_metadata), (index, "stat metadata")
        assert dict(plane.event_metadata) == dict(other.event_metadata), (index, "event metadata")
        assert list(plane.stats) == list(other.stats), (index, "plane stats")
        assert len(plane.lines) == len(other.lines), (index, "line count")
        for line, other_line in zip(plane.lines, other.lines):
            for written, other_event in zip(line.events, other_line.events):
                assert written == other_event, (index, line.name, str(written), str(other_event))
            assert line == other_line, (index, "line", line.name)
        assert plane == other, index
    assert new == old


# --- real profiles ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name.split(".")[0])
def test_shared_traces_are_written_as_the_per_event_writer_wrote_them(path: Path, tmp_path: Path):
    profile = stepscope.load(path)
    assert check_same_xspace(profile, tmp_path) == "written and read"
    # A second trip, from what stepscope wrote (typed stats read from a file, refs, flows).
    # Whatever the source, that is one shape, taken in full from a100_ddp_cnn, the TPU trace
    # and the small ones; the two V100 traces' own shapes (the 2021 schema, float ns times)
    # are their first trip, in full, so their second runs on a crop (LARGEST_KINETO): 10k
    # and 9k events, 1.8k and 351 flows, a store taken row by row as an exported range's is.
    again = stepscope.load(tmp_path / "new.xplane.pb")
    if path.name.split(".")[0] in LARGEST_KINETO:
        again = middle_fifth(again)
        assert sum(len(plane.events) for plane in again.planes) > 5_000 and len(again.flows) > 100
    assert check_same_xspace(again, tmp_path) == "written and read"


@pytest.fixture(scope="module")
def first_trace() -> tuple[Profile, bytes]:
    """The first shared trace, loaded, and what the per-event writer writes of it
    (canonical): the reference of the tests below, computed once (the tests only read it)."""
    profile = stepscope.load(ALL_SHARED_TRACES[0])
    return profile, canonical(old_bytes(profile))


def test_gzip_and_to_xspace_give_the_same_space(tmp_path: Path, first_trace: tuple[Profile, bytes]):
    """Also: ``write_xspace`` writes exactly ``xspace_chunks``'s bytes, plain or gzipped
    (check_same_xspace takes the new writer's bytes from the file it wrote)."""
    profile, old = first_trace
    chunks = new_bytes(profile)
    path = tmp_path / "host.xplane.pb.gz"
    write_xspace(profile, path)
    assert gzip.decompress(path.read_bytes()) == chunks
    assert canonical(chunks) == old
    write_xspace(profile, tmp_path / "host.xplane.pb")
    assert (tmp_path / "host.xplane.pb").read_bytes() == chunks
    assert canonical(to_xspace(profile).SerializeToString()) == old  # the same message as the per-event writer's


def test_handmade_space(tmp_path: Path):
    path = tmp_path / "hand.xplane.pb"
    path.write_bytes(handmade_space().SerializeToString())
    assert check_same_xspace(stepscope.load(path), tmp_path) == "written and read"


@SETTINGS
@given(space=xspace())
def test_generated_spaces(tmp_path_factory, space: xplane_pb2.XSpace):
    """The reader's generated XSpaces (edge values, refs, flows, Task Environment), read then written."""
    folder = tmp_path_factory.mktemp("space")
    path = folder / "in.xplane.pb"
    path.write_bytes(space.SerializeToString())
    try:
        profile = stepscope.load(path)
    except ProfileFormatError:
        return
    note(str(space))
    event(check_same_xspace(profile, folder))


def test_torch_cpu_capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A real capture: stepscope's annotations, the Python tracer and torch.profiler's ops,
    merged (one /host:CPU plane from two tracers: typed and JSON stats together)."""
    import torch

    import stepscope.capture.session as session_module

    written: list[Profile] = []
    real = session_module.write_xspace

    def keep(profile: Profile, path: Path) -> None:
        written.append(profile)
        real(profile, path)

    monkeypatch.setattr(session_module, "write_xspace", keep)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    x = torch.randn(4, 8)
    options = stepscope.ProfilerOptions(host_tracer_level=2, python_tracer_level=1)
    with stepscope.profile(tmp_path / "logs", options):
        for step in range(2):
            with stepscope.step(step), stepscope.trace("forward", batch=4, lr=0.5, tag="a\ud800b"):
                model(x).sum().backward()
    (profile,) = written
    stores = {plane.name: type(plane.stats).__name__ for plane in profile.planes}
    assert stores[names.HOST_PLANE] == "ConcatStats" and stores[names.PYTHON_TRACER_PLANE] == "TypedStats", stores
    assert check_same_xspace(profile, tmp_path) == "written and read"


# --- generated profiles -------------------------------------------------------------------------

STAT_NAMES = ("correlation_id", "group_id", "step_num", "external_id", "flow", "tf_op", "flops", "x\ud800y", "")
INT64 = st.integers(-(2**63), 2**63 - 1) | st.sampled_from((0, -1, 1, 2**63 - 1, -(2**63)))
TEXT = st.text(max_size=6) | st.sampled_from(("\ud800", "caf\u00e9", "a\x00b"))
TIMESTAMPS = st.sampled_from((0, 7, 10**9, 10**17 - 1, 10**17, 1_700_000_000_000_000_000)) | st.integers(0, 10**12)
# Values as a typed store holds them: each kind's own, and some its kind cannot hold (kept
# boxed; written as the old writer converted them, or failing as it failed).
TYPED_VALUES = (
    st.tuples(st.just(StatKind.INT64), INT64)
    | st.tuples(st.just(StatKind.UINT64), st.integers(0, 2**64 - 1))
    | st.tuples(st.just(StatKind.DOUBLE), st.floats() | st.sampled_from((math.nan, -0.0, math.inf)))
    | st.tuples(st.just(StatKind.STR), TEXT)
    | st.tuples(st.just(StatKind.BYTES), st.binary(max_size=6))
    | st.sampled_from(
        (
            (StatKind.INT64, 3.7),  # int(3.7): 3
            (StatKind.UINT64, True),
            (StatKind.DOUBLE, 5),
            (StatKind.STR, 17),
            (StatKind.STR, b"y"),  # str(b"y")
            (StatKind.BYTES, 2),  # bytes(2): two zero bytes
            (StatKind.INT64, "12"),
            (StatKind.DOUBLE, "nan"),
            (StatKind.UINT64, 2**64),  # fails: ValueError
            (StatKind.BYTES, "x"),  # fails: TypeError
        )
    )
)
JSON_KEYS = ("correlation", "External id", "grid", "block", "bytes", "kind", "stream", "name", "x\u00e9")
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
CATEGORIES = ("", "cpu_op", "kernel", "gpu_memcpy", "Memset", "Runtime")


@st.composite
def stats_store(draw, count: int, categories: list[str], metadata_id: np.ndarray):
    kind = draw(st.sampled_from(("empty", "typed", "json", "kineto")))
    if kind == "empty":
        return EmptyStats(count)
    if kind == "typed":
        entries = draw(st.lists(st.tuples(st.integers(0, max(count - 1, 0)), st.sampled_from(STAT_NAMES), TYPED_VALUES), max_size=3 * count))
        entries = [entry for entry in entries if count]
        keys = sorted({name for _, name, _ in entries})
        return TypedStats(
            np.asarray([row for row, _, _ in entries], dtype=np.int64),
            np.asarray([keys.index(name) for _, name, _ in entries], dtype=np.int32),
            np.asarray([int(value[0]) for _, _, value in entries], dtype=np.int8),
            [value[1] for _, _, value in entries],
            keys,
            np.arange(count, dtype=np.int64),
        )
    blobs = [
        msgspec.json.encode(args) if args is not None else b""
        for args in draw(st.lists(st.none() | st.dictionaries(st.sampled_from(JSON_KEYS), JSON_VALUES, max_size=3), min_size=count, max_size=count))
    ]
    ends = np.cumsum([len(blob) for blob in blobs], dtype=np.int64)
    return JsonStats(b"".join(blobs), ends - [len(blob) for blob in blobs], ends, translate_args if kind == "kineto" else plain_translator)


@st.composite
def plane(draw, index: int):
    lines = [
        Line(
            id=draw(st.integers(-3, 2**40)),
            name=draw(TEXT),
            display_name=draw(st.sampled_from(("", "shown", "\ud801"))),
            timestamp_ns=draw(TIMESTAMPS),
            duration_ps=draw(st.integers(0, 10**6)),
        )
        for _ in range(draw(st.integers(1, 3)))
    ]
    types = draw(st.integers(1, 3))
    categories = [draw(st.sampled_from(CATEGORIES)) for _ in range(types)]
    metadata = EventMetadata(
        [draw(st.sampled_from(("op", "Memcpy HtoD (Pageable -> Device)", "kernel", "\ud800"))) for _ in range(types)],
        [draw(st.sampled_from(("", "shown"))) for _ in range(types)],
        categories,
        [[Stat(name, *value) for name, value in draw(st.lists(st.tuples(st.sampled_from(STAT_NAMES), TYPED_VALUES), max_size=2))] for _ in range(types)],
        [draw(st.binary(max_size=3)) for _ in range(types)],
    )
    count = draw(st.integers(0, 8))
    big = draw(st.booleans())
    start = np.asarray(draw(st.lists(st.integers(0, 2**62 if big else 10**9), min_size=count, max_size=count)), dtype=np.int64)
    duration = np.asarray(draw(st.lists(st.integers(0, 10**6), min_size=count, max_size=count)), dtype=np.int64)
    metadata_id = np.asarray(draw(st.lists(st.integers(0, types - 1), min_size=count, max_size=count)), dtype=np.int32)
    ids = {
        column: np.asarray(draw(st.lists(st.sampled_from((NO_ID, 0, 5, -7)) | INT64, min_size=count, max_size=count)), dtype=np.int64)
        for column in ("correlation_id", "external_id", "group_id", "step_num")
        if draw(st.booleans())
    }
    raw = RawPlane(
        id=draw(st.integers(-2, 5)),
        name=draw(st.sampled_from(("/host:CPU", "/device:GPU:0", f"plane {index}"))),
        lines=lines,
        metadata=metadata,
        start_ps=start,
        duration_ps=duration,
        metadata_id=metadata_id,
        line=np.asarray(draw(st.lists(st.integers(0, len(lines) - 1), min_size=count, max_size=count)), dtype=np.int32),
        stats=draw(stats_store(count, categories, metadata_id)),
        ids=ids,
        plane_stats=[
            Stat(name, *value) for name, value in draw(st.lists(st.tuples(st.sampled_from(STAT_NAMES), st.tuples(st.just(StatKind.INT64), INT64)), max_size=2))
        ],
    )
    return finish_plane(raw, 0)[0]


@st.composite
def profile(draw) -> Profile:
    planes = [draw(plane(index)) for index in range(draw(st.integers(1, 3)))]
    points = [(p, r) for p, item in enumerate(planes) for r in range(len(item.events))]
    arrows = draw(st.lists(st.tuples(st.sampled_from(points), st.sampled_from(points)), max_size=6)) if points else []
    flows = FlowTable(
        flow_id=np.arange(len(arrows), dtype=np.int64),
        category=np.zeros(len(arrows), dtype=np.int32),
        src_plane=np.asarray([a[0][0] for a in arrows], dtype=np.int32),
        src_event=np.asarray([a[0][1] for a in arrows], dtype=np.int64),
        dst_plane=np.asarray([a[1][0] for a in arrows], dtype=np.int32),
        dst_event=np.asarray([a[1][1] for a in arrows], dtype=np.int64),
        categories=["flow"] if arrows else [],
    )
    info: dict = {}
    if draw(st.booleans()):
        info["warnings"] = draw(st.lists(TEXT, max_size=2))
    if draw(st.booleans()):
        info["errors"] = draw(st.lists(TEXT, max_size=1))
    if draw(st.booleans()):
        info[TASK_ENVIRONMENT_INFO] = {names.PROFILE_START_TIME: draw(TIMESTAMPS), "profile_stop_time": draw(TIMESTAMPS), "note": draw(TEXT)}
    start_ns = draw(TIMESTAMPS)
    return Profile(planes=planes, start_ns=start_ns, host=draw(TEXT), source="generated", format="xspace", flows=flows, info=info)


@settings(SETTINGS, max_examples=300)
@given(generated=profile())
def test_generated_profiles(tmp_path_factory, generated: Profile):
    note(repr([(p.name, type(p.stats).__name__, len(p.events)) for p in generated.planes]))
    event(check_same_xspace(generated, tmp_path_factory.mktemp("profile")))
    for item in generated.planes:
        event(f"stats: {type(item.stats).__name__}")


@settings(SETTINGS, max_examples=100)
@given(first=profile(), second=profile(), shift_ns=st.integers(0, 10**6))
def test_merged_profiles(tmp_path_factory, first: Profile, second: Profile, shift_ns: int):
    """Planes of one name from two profiles share a plane: their stores are concatenated."""
    later = Profile(planes=second.planes, start_ns=first.start_ns + shift_ns, host="", source="", format="xspace", flows=second.flows)
    try:
        merged = merge_profiles([first, later], host="merged", source="merged")
    except (ValueError, OverflowError):
        return
    event(check_same_xspace(merged, tmp_path_factory.mktemp("merged")))
    event(f"stores: {sorted({type(item.stats).__name__ for item in merged.planes})}")


def test_an_event_may_carry_what_the_id_columns_hold():
    """An own stat named like an id column is written, the column's value not added again; an
    own `flow` stat is dropped (flows are written from the flow table)."""
    stats = TypedStats(
        np.asarray([0, 0, 0], dtype=np.int64),
        np.asarray([0, 1, 2], dtype=np.int32),
        np.asarray([StatKind.STR, StatKind.UINT64, StatKind.INT64], dtype=np.int8),
        ["own", 7, 3],
        [names.CORRELATION_ID, names.FLOW, "other"],
        np.arange(2, dtype=np.int64),
    )
    raw = RawPlane(
        id=1,
        name="/host:CPU",
        lines=[Line(1, "t")],
        metadata=EventMetadata(["a"], [""], [""], [[]], [b""]),
        start_ps=np.asarray([0, 10], dtype=np.int64),
        duration_ps=np.asarray([5, 5], dtype=np.int64),
        metadata_id=np.zeros(2, dtype=np.int32),
        line=np.zeros(2, dtype=np.int32),
        stats=stats,
        ids={"correlation_id": np.asarray([11, 12], dtype=np.int64), "group_id": np.asarray([NO_ID, 4], dtype=np.int64)},
    )
    built = Profile(planes=[finish_plane(raw, 0)[0]], start_ns=10**18, host="h", source="", format="xspace")
    space = xplane_pb2.XSpace.FromString(new_bytes(built))
    plane_proto = space.planes[0]
    stat_names = {key: meta.name for key, meta in plane_proto.stat_metadata.items()}
    written = [[(stat_names[s.metadata_id], s.WhichOneof("value"), getattr(s, s.WhichOneof("value"))) for s in e.stats] for e in plane_proto.lines[0].events]
    assert written == [
        [("correlation_id", "str_value", "own"), ("other", "int64_value", 3)],
        [("correlation_id", "int64_value", 12), ("group_id", "int64_value", 4)],
    ]
    assert check_same_xspace(built) == "written"


class _PlainStore:
    """A store with only the StatStore protocol (no bulk ``entries``)."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def __len__(self) -> int:
        return len(self._inner)

    def stats(self, row: int, name: str = "", category: str = "") -> list[Stat]:
        return self._inner.stats(row, name, category)

    def raw(self, row: int) -> bytes:
        return self._inner.raw(row)

    def value(self, row: int, stat: str, name: str = "", category: str = ""):
        return self._inner.value(row, stat, name, category)

    def take(self, rows: np.ndarray) -> _PlainStore:
        return _PlainStore(self._inner.take(rows))


def test_a_store_without_bulk_entries_is_asked_row_by_row(first_trace: tuple[Profile, bytes]):
    profile, old = first_trace
    planes = [dataclasses.replace(plane, stats=_PlainStore(plane.stats)) for plane in profile.planes]
    plain = dataclasses.replace(profile, planes=planes)
    assert canonical(new_bytes(plain)) == canonical(new_bytes(profile)) == old


def test_the_writer_runs_as_plain_python_where_the_c_is_not_used(tmp_path: Path, first_trace: tuple[Profile, bytes]):
    """``STEPSCOPE_PURE_PYTHON=1`` (as where the extension was not built): the same file."""
    source = ALL_SHARED_TRACES[0]
    script = textwrap.dedent(
        f"""
        import pathlib, stepscope
        from stepscope.trace import kernels
        assert not kernels.COMPILED
        stepscope.save(stepscope.load({str(source)!r}), pathlib.Path({str(tmp_path / "plain.xplane.pb")!r}))
        """
    )
    env = {**os.environ, PURE_PYTHON_ENV: "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2], env=env)
    assert done.returncode == 0, done.stderr
    assert canonical((tmp_path / "plain.xplane.pb").read_bytes()) == first_trace[1]


def test_kineto_ranks_are_kept_in_the_task_environment(tmp_path: Path):
    """A Kineto trace's ``distributedInfo`` rank and world size (header: rank 1 of 128)
    survive a conversion to XSpace as Task Environment stats."""
    source = stepscope.load(shared("kineto/recsys_sampled_rank1_of_128.pt.trace.json.gz"))
    assert source.info["distributedInfo"]["rank"] == 1 and source.info["distributedInfo"]["world_size"] == 128
    target = tmp_path / "rank.xplane.pb"
    write_xspace(source, target)
    environment = stepscope.load(target).info[TASK_ENVIRONMENT_INFO]
    assert (environment[names.DISTRIBUTED_RANK], environment[names.DISTRIBUTED_WORLD_SIZE]) == (1, 128)
