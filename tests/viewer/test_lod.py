"""Level of detail: nothing a pixel wide is dropped, merged counts add up, per pixel.

Every expected value comes from ``reference.expected``, a Python loop over the Profile's
own event arrays; the index is only asked for what it answered.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from stepscope.analysis.steps.steps import find_steps
from stepscope.trace.readers import load
from stepscope.viewer import STEPS_PLANE, build_index, decode, query
from stepscope.viewer import index as index_module
from tests.support.reference.viewer import (
    expected,
    overlapping_depths,
    overlaps,
    random_profile,
)
from tests.support.traces import ALL_SHARED_TRACES

pytestmark = pytest.mark.usefixtures("lod_parts")


def per_track(index, data):
    """The decoded answer as (plane, line) -> {"count", "wide", "runs": {depth: [...]}, "lanes"}."""
    header = data["header"]
    start = header["start_ps"]
    got = defaultdict(lambda: {"count": 0, "wide": set(), "runs": {}, "events": []})
    for lane in range(header["counts"]["lanes"]):
        track = index.tracks[int(data["lane_track"][lane])]
        answer = got[(track.plane, track.line)]
        events = range(int(data["lane_events"][lane]), int(data["lane_events"][lane + 1]))
        runs = range(int(data["lane_runs"][lane]), int(data["lane_runs"][lane + 1]))
        for k in events:
            answer["wide"].add(index.ref(int(data["event_id"][k])))
            answer["events"].append(k)
        answer["count"] += len(events) + int(data["run_count"][runs.start : runs.stop].sum())
        answer["runs"][int(data["lane_depth"][lane])] = [
            (
                float(data["run_start"][k]) + start,
                float(data["run_end"][k]) + start,
                int(data["run_count"][k]),
                float(data["run_busy"][k]),
            )
            for k in runs
        ]
    return got


def step_count(profile, start, end):
    steps = find_steps(profile)
    if steps.inferred:
        return 0
    return sum(overlaps(int(a), int(b), start, end) for a, b in zip(steps.start_ps, steps.end_ps))


def close(value: float, want: int) -> bool:
    # run times travel as float32 relative to the query start
    return abs(value - want) <= abs(want) * 2e-7 + 2


def check(profile, index, start, end, width, name_filter=None):
    data = decode(query(index, start, end, width, name_filter=name_filter))
    header = data["header"]
    used_width = min(width, 16384)
    assert header["width_px"] == used_width
    want = expected(profile, start, end, used_width, name_filter)
    got = per_track(index, data)
    steps = 0 if name_filter else step_count(profile, start, end)
    assert got.get((STEPS_PLANE, -1), {"count": 0})["count"] == steps
    irregular = overlapping_depths(profile)
    for key in set(want) | {k for k in got if k[0] != STEPS_PLANE}:
        w, g = want[key], got[key]
        assert g["count"] == w.count, (key, start, end, width)
        assert g["wide"] == w.wide, (key, start, end, width)
        if key in irregular:
            continue
        for depth in set(w.runs) | set(g["runs"]):
            mine = g["runs"].get(depth, [])
            theirs = [w.runs[depth][pixel] for pixel in sorted(w.runs.get(depth, {}))]
            assert [run[2] for run in mine] == [run[0] for run in theirs], (key, depth)
            for (first, last, _count, busy), (_, want_first, want_last, want_busy) in zip(mine, theirs):
                assert close(first, want_first) and close(last, want_last)
                span = want_last - want_first
                assert busy == pytest.approx(want_busy / span if span else 0.0, rel=1e-5, abs=1e-6)
    # The wide events are the profile's own: start, duration, name (as the timeline shows it:
    # XLA's ``all-reduce``, not its HLO text; tests/analysis/xla/test_xla_short_names.py).
    for k in range(header["counts"]["events"]):
        plane, row = index.ref(int(data["event_id"][k]))
        if plane == STEPS_PLANE:
            continue
        events = profile.planes[plane].events
        assert data["event_start"][k] + start == events.start_ps[row]
        assert data["event_duration"][k] == events.duration_ps[row]
        assert header["names"][str(data["event_name"][k])] == profile.planes[plane].metadata.labels[events.metadata_id[row]]
    # At most one run per pixel, and a wide event per pixel (two in pixel 0), per lane.
    lane_runs, lane_events = np.diff(data["lane_runs"]), np.diff(data["lane_events"])
    assert np.all(lane_runs <= used_width) and np.all(lane_events <= used_width + 1)
    total = sum(answer.count for answer in want.values()) + steps
    assert header["counts"]["overlapping"] == total
    assert data["run_busy"].min(initial=0) >= 0 and data["run_busy"].max(initial=0) <= 1 + 1e-6
    return data


def windows(span: int, rng: np.random.Generator):
    yield 0, span, 1600
    yield 0, span + 12_345, 7  # few pixels: most lanes take the dense path
    yield 0, span, 1
    for width in (3, 50, 1000, 20_000):
        a = int(rng.integers(0, span))
        b = a + int(rng.integers(1, span // 4))
        yield a, b, width
    a = int(rng.integers(0, span))
    yield a, a + 37, 1600  # narrower than the pixel count: some pixels are empty


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_profiles(seed):
    profile = random_profile(seed)
    profile.validate()
    index = build_index(profile)
    index.validate()
    rng = np.random.default_rng(seed)
    for start, end, width in windows(profile.span_ps, rng):
        check(profile, index, start, end, width)


def test_dense_lanes_with_wide_events():
    # ~1700 events a line against 10-100 pixels: every lane is summarised from its pixel
    # edges, and the longest events (up to span/20) are wider than a pixel.
    profile = random_profile(9, events_per_line=1500)
    index = build_index(profile)
    span = profile.span_ps
    for start, end, width in ((0, span, 40), (0, span, 100), (span // 3, span, 10), (span // 5, span // 2, 60)):
        data = check(profile, index, start, end, width)
        assert data["header"]["counts"]["events"] > 0


def test_properly_nested_profile_keeps_model_depths():
    profile = random_profile(7, overlaps=False)
    assert not overlapping_depths(profile)
    index = build_index(profile)
    for track in index.tracks:
        if track.plane != STEPS_PLANE:
            model = profile.planes[track.plane].events.depth[profile.planes[track.plane].line_slice(track.line)]
            assert track.max_depth == int(model.max())
    rng = np.random.default_rng(7)
    for start, end, width in windows(profile.span_ps, rng):
        check(profile, index, start, end, width)


def test_lanes_never_overlap_after_layout():
    profile = random_profile(11)
    assert overlapping_depths(profile), "the profile should exercise the re-layout"
    done = []
    index = build_index(profile, progress=done.append)
    assert done[-1] == index.event_count and done == sorted(done)
    index.validate()
    for lane in range(index.lane_count):
        lo, hi = int(index.lane_offset[lane]), int(index.lane_offset[lane + 1])
        ids = np.arange(lo, hi)
        starts = index.starts(ids)
        ends = starts + index.duration_ps[lo:hi]
        assert np.all(starts[1:] >= ends[:-1])


def test_unkeyed_path_answers_the_same(monkeypatch):
    profile = random_profile(5)
    plain = build_index(profile)
    answers = [query(plain, 0, profile.span_ps, width) for width in (5, 400)]
    monkeypatch.setattr(index_module, "KEY_LIMIT", 0)
    unkeyed = build_index(profile)
    assert not unkeyed.keyed
    unkeyed.validate()
    assert [query(unkeyed, 0, profile.span_ps, width) for width in (5, 400)] == answers
    check(profile, unkeyed, 1000, profile.span_ps // 3, 17)


def test_name_filter_keeps_matches_only_before_merging():
    profile = random_profile(4)
    index = build_index(profile)
    for text in ("alpha", "ALPHA", "kernel", "zzz"):
        data = check(profile, index, 0, profile.span_ps, 200, name_filter=text)
        assert all(text.lower() in name.lower() for name in data["header"]["names"].values())
    data = check(profile, index, 0, profile.span_ps, 3, name_filter="gamma")
    assert data["header"]["name_filter"] == "gamma"


@pytest.mark.parametrize("path", ALL_SHARED_TRACES, ids=lambda p: p.name)
def test_real_traces(path):
    profile = load(path)
    index = build_index(profile)
    index.validate()
    span = profile.span_ps
    rng = np.random.default_rng(0)
    check(profile, index, 0, span, 1600)
    check(profile, index, 0, span, 97)
    for _ in range(3):
        a = int(rng.integers(0, span))
        check(profile, index, a, a + span // 50 + 1, 1600)
