"""The level of detail's loop (its C) and in-place encoding give, byte for byte, the answer of the
whole-array path they replaced (tests/support/reference/lod.py), and ``find``'s per-lane
search gives the matches a sort of all of them gives.

On random profiles of every shape the reference builder makes, on odd hand-made lanes,
and on the real traces of ../shared/traces; with name filters and track subsets, keyed
and unkeyed indexes, the reference chunked finely and the scratch columns lent out.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from stepscope.trace.readers import load
from stepscope.viewer import TraceIndex, build_index, find, lod_loop, query
from stepscope.viewer import index as index_module
from stepscope.viewer.query import decode
from tests.support.reference.lod import reference_query
from tests.support.reference.viewer import EDGE_269, FAR, FAR_RANGE, GRID, HAND, one_line_profile, random_profile
from tests.support.traces import ALL_SHARED_TRACES

pytestmark = pytest.mark.usefixtures("lod_parts")


def windows(span: int, rng: np.random.Generator):
    """Full views at many widths, random ranges, and the corners: 1 ps, fewer ps than
    pixels, ranges past the end and before any event, the widest width."""
    for width in (1, 2, 3, 7, 97, 1600, 16384):
        yield 0, span, width
    yield 0, span + 12_345, 1600
    for _ in range(12):
        a = int(rng.integers(0, span))
        yield a, a + int(rng.integers(1, span)), int(rng.choice([1, 5, 64, 1600, 5000]))
    a = int(rng.integers(0, span))
    yield a, a + 37, 1600
    yield a, a + 1, 3
    yield span, span + 10, 10
    yield span + 1, span + 1000, 10
    yield 0, 0, 10


def assert_same(index, rng, texts=("alpha", "KERNEL", "zzz"), chunk_items=None, extra=()):
    span = index.span_ps
    track_sets = [None, [0], list(range(0, len(index.tracks), 2))]
    for start, end, width in [*windows(span, rng), *extra]:
        for tracks in track_sets:
            want = reference_query(index, start, end, width, tracks=tracks, **({} if chunk_items is None else {"chunk_items": chunk_items}))
            assert query(index, start, end, width, tracks=tracks) == want, (start, end, width, tracks)
        for text in texts:
            assert query(index, start, end, width, name_filter=text) == reference_query(index, start, end, width, name_filter=text), (start, end, width, text)


@pytest.mark.parametrize(
    "shape",
    [
        {"seed": 1},
        {"seed": 2, "events_per_line": 1500},  # every lane dense at most widths
        {"seed": 3, "events_per_line": 20},  # every lane sparse
        {"seed": 4, "overlaps": False},
        {"seed": 5, "events_per_line": 400, "span": 3000},  # fewer ps than pixels, many ties
    ],
    ids=lambda shape: "-".join(f"{k}={v}" for k, v in shape.items()),
)
def test_random_profiles_answer_as_the_reference(shape):
    seed = shape["seed"]
    profile = random_profile(**shape)
    index = build_index(profile)
    assert_same(index, np.random.default_rng(seed))


def test_hand_built_lanes_answer_as_the_reference():
    # HAND (every pixel rule on one lane; its own window is [500, 3000) on 5 pixels); GRID;
    # only instants, all at one time; one event; FAR, a sparse lane whose pixels are guessed.
    cases = [
        (HAND, [(500, 3000, 5), (500, 3000, 50)]),
        (GRID, [(0, 10_000, 1000), (0, 20_000, 1000), (100, 40_100, 1000), (7, 75_007, 3)]),
        ([(100, 0, "i")] * 50 + [(100, 0, "j")] * 3, []),
        ([(0, 7, "only")], []),
        (FAR, [(0, FAR_RANGE, 997)]),
    ]
    for events, extra in cases:
        index = build_index(one_line_profile(events))
        assert_same(index, np.random.default_rng(0), texts=("p", "j", "only"), extra=extra)


def test_a_sparse_pixel_guessed_one_too_far_is_moved_back():
    # FAR's three 1 ps events on 997 pixels of FAR_RANGE: pixel 269 starts at EDGE_269
    # (floor(269 * FAR_RANGE / 997), the module docstring's rule), so the events are alone
    # in pixels 0, 268 and 269: three runs of one event each.
    assert 269 * FAR_RANGE // 997 == EDGE_269 and 268 * FAR_RANGE // 997 < EDGE_269 - 1
    answer = decode(query(build_index(one_line_profile(FAR)), 0, FAR_RANGE, 997))
    assert answer["run_count"].tolist() == [1, 1, 1]
    assert answer["run_start"].tolist() == np.asarray([0, EDGE_269 - 1, EDGE_269], dtype=np.float32).tolist()


def test_unkeyed_and_finely_chunked_reference(monkeypatch):
    profile = random_profile(6)
    monkeypatch.setattr(index_module, "KEY_LIMIT", 0)
    unkeyed = build_index(profile)
    assert not unkeyed.keyed
    # The reference chunked into pieces of 7 items: the chunk boundaries fall inside lanes.
    assert_same(unkeyed, np.random.default_rng(6), chunk_items=7)


def test_scratch_lent_out_or_too_small_gives_fresh_columns(monkeypatch):
    profile = random_profile(8, events_per_line=600)
    index = build_index(profile)
    span = profile.span_ps
    big, small = (0, span, 3000), (span // 3, span // 3 + span // 50, 40)
    want_big, want_small = reference_query(index, *big), reference_query(index, *small)
    # A big answer, then a small one in the same (larger) scratch: nothing of the first leaks.
    assert query(index, *big) == want_big and query(index, *small) == want_small
    with lod_loop.SCRATCH.columns(10, 10, 1):  # lent out: the query gets its own columns
        assert query(index, *big) == want_big
    monkeypatch.setattr(lod_loop, "SCRATCH_LIMIT", 0)
    assert query(index, *big) == want_big


def test_a_large_query_is_split_into_parts_on_threads(lod_parts, monkeypatch):
    # The full view at 1,000 px: a lane's cost is its events, or 3 per pixel (3,000) when
    # it holds more events than pixels; at a threshold of 2/5 of the total the query takes
    # total // threshold + 1 = 3 parts, each lane in one of them.
    profile = random_profile(9, events_per_line=1500)
    index = build_index(profile)
    per_lane = np.diff(np.asarray(index.lane_offset))
    total = int(np.where(per_lane > 1000, 3 * 1000, per_lane).sum())
    want = reference_query(index, 0, profile.span_ps, 1000)
    monkeypatch.setattr(lod_loop, "PARALLEL_COST", total * 2 // 5)
    monkeypatch.setattr(lod_loop, "available_cores", lambda: 4)
    calls = []
    compiled = lod_loop.lod_lanes

    def counted(*arguments):
        calls.append((threading.current_thread().name, len(arguments[6])))
        return compiled(*arguments)

    monkeypatch.setattr(lod_loop, "lod_lanes", counted)
    assert query(index, 0, profile.span_ps, 1000) == want
    assert len(calls) == 3 and sum(lanes for _, lanes in calls) == len(per_lane)
    assert all(name.startswith("stepscope-lod") for name, _ in calls)


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_real_traces_answer_as_the_reference(path):
    index = build_index(load(path))
    rng = np.random.default_rng(1)
    span = index.span_ps
    for start, end, width in [(0, span, 1600), (0, span, 16384), (0, span, 3)] + [(a, a + span // 100 + 1, 1600) for a in rng.integers(0, span, 4).tolist()]:
        assert query(index, start, end, width) == reference_query(index, start, end, width), (start, end, width)
    names = sorted(index.names, key=len)
    for text in {names[len(names) // 2][:4], "memcpy", "step"}:
        if text:
            assert query(index, 0, span, 1600, name_filter=text) == reference_query(index, 0, span, 1600, name_filter=text), text


# --- find -------------------------------------------------------------------------------


def sorted_matches(index, text):
    """Every match as (start, id), sorted: the matches' order computed the plain way, from
    the index's own rows and names."""
    folded = [name.casefold() for name in index.names]
    wanted = np.asarray([text.casefold() in name for name in folded])
    ids = np.flatnonzero(wanted[np.asarray(index.name_id)])
    starts = index.starts(ids)
    order = np.lexsort((ids, starts))
    return starts[order], ids[order]


def check_find(index, text, rng, steps=60):
    starts, ids = sorted_matches(index, text)
    total = len(ids)
    first, last = find(index, text), find(index, text, before=True)
    if not total:
        assert first is None and last is None
        return
    assert (first.id, first.ordinal, first.total) == (ids[0], 0, total)
    assert (last.id, last.ordinal) == (ids[-1], total - 1)
    # Stepping from random matches, both ways, through ties of equal starts.
    for k in rng.integers(0, total, steps).tolist():
        after = find(index, text, after_id=int(ids[k]))
        assert (after.id, after.ordinal) == (ids[k + 1], k + 1) if k + 1 < total else after is None
        back = find(index, text, after_id=int(ids[k]), before=True)
        assert (back.id, back.ordinal, back.start_ps) == (ids[k - 1], k - 1, starts[k - 1]) if k else back is None
    # From times: on a match's start, just before it, and anywhere.
    span = index.span_ps
    for time in [int(starts[k]) + d for k in rng.integers(0, total, steps // 2).tolist() for d in (-1, 0)] + rng.integers(0, span + 1, 10).tolist():
        following = int(np.searchsorted(starts, time, "right"))
        after = find(index, text, after_ps=time)
        assert (after.id, after.ordinal) == (ids[following], following) if following < total else after is None
        earlier = int(np.searchsorted(starts, time, "left")) - 1
        back = find(index, text, after_ps=time, before=True)
        assert (back.id, back.ordinal) == (ids[earlier], earlier) if earlier >= 0 else back is None
    # From an event that is not a match (the cursor is its start and id).
    other = int(rng.integers(0, index.event_count))
    at = int(index.starts(np.asarray([other]))[0])
    lo, hi = np.searchsorted(starts, [at, at + 1], "left")
    position = int(lo + np.count_nonzero(ids[lo:hi] <= other))  # matches up to (at, other)
    after = find(index, text, after_id=other)
    assert (after.id, after.ordinal) == (ids[position], position) if position < total else after is None


@pytest.mark.parametrize("seed", [21, 5])
def test_find_matches_a_sort_of_every_match(seed):
    # span 3000 over hundreds of events a line: many matches share a start, in one lane
    # (instants) and across lanes.
    index = build_index(random_profile(seed, events_per_line=300, span=3000))
    rng = np.random.default_rng(seed)
    for text in ("alpha", "Step", "KERNEL", "a", "zzz"):
        check_find(index, text, rng)


def test_find_on_hand_built_ties():
    index = build_index(one_line_profile([(100, 0, "i")] * 50 + [(100, 0, "j")] * 3 + [(0, 7, "x")]))
    check_find(index, "i", np.random.default_rng(0), steps=100)


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_find_on_real_traces(path):
    index = build_index(load(path))
    rng = np.random.default_rng(2)
    names = sorted(index.names)
    for text in {names[len(names) // 3][:5], "memcpy", "step"}:
        if text:
            check_find(index, text, rng, steps=20)


def test_every_kind_of_index_is_answered(tmp_path):
    """The C loop takes the columns of a saved and memory-mapped (read-only) index, of a
    built one and of a filtered subset, and answers each as the reference does."""
    built = build_index(random_profile(3))
    built.save(tmp_path / "index")
    loaded = TraceIndex.load(tmp_path / "index")
    assert not np.asarray(loaded.arrays["key"]).flags.writeable
    for index in (built, loaded):
        for text in (None, "alpha"):
            assert query(index, 0, index.span_ps, 800, name_filter=text) == reference_query(index, 0, index.span_ps, 800, name_filter=text)
