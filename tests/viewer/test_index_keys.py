"""The index's rows against a layout computed the slow way from the Profile's own arrays
(``reference.viewer.line_lanes``): build_index gathers each plane's columns once in lane
order and adds each lane's shift in place, so every row's source, key, duration, name and
way back (``position``) is checked here, on profiles with overlapping lines, steps, empty
planes and hidden ones."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.analysis.steps.steps import find_steps
from stepscope.errors import ProfileFormatError
from stepscope.trace import model
from stepscope.trace.model import EventTable
from stepscope.viewer import STEPS_PLANE, build_index
from stepscope.viewer import index as index_module
from stepscope.viewer import layout as layout_module
from tests.support.reference.viewer import line_lanes, overlapping_depths, random_profile


@pytest.mark.parametrize("piece", [None, 1, 7], ids=["whole", "piece 1", "piece 7"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_rows_are_each_lines_lanes_in_start_order(seed, piece, monkeypatch):
    """Also with the overlap check's pieces (layout.END_PIECE, a million rows) a few rows
    long, so that overlapping pairs straddle the pieces' edges."""
    if piece is not None:
        monkeypatch.setattr(layout_module, "END_PIECE", piece)
    profile = random_profile(seed)
    assert overlapping_depths(profile)  # (the random profiles have lines laid out again)
    index = build_index(profile)
    arrays = index.arrays
    want = line_lanes(profile)
    assert {(t.plane, t.line) for t in index.tracks if t.plane != STEPS_PLANE} == set(want)
    for track in index.tracks:
        lanes = [slice(int(arrays["lane_offset"][lane]), int(arrays["lane_offset"][lane + 1])) for lane in track.lanes]
        if track.plane == STEPS_PLANE:
            steps = find_steps(profile)
            rows = np.concatenate([arrays["ref_row"][lane] for lane in lanes])
            assert sorted(rows.tolist()) == list(range(len(steps)))
            starts, durations = steps.start_ps, steps.end_ps - steps.start_ps
            names = [f"Step {int(number)}" for number in steps.number]
        else:
            assert [arrays["ref_row"][lane].tolist() for lane in lanes] == want[(track.plane, track.line)]
            events = profile.planes[track.plane].events
            starts, durations = events.start_ps, events.duration_ps
            names = [profile.planes[track.plane].event_name(row) for row in range(len(events))]
        for lane, rows in zip(track.lanes, lanes):
            source = arrays["ref_row"][rows]
            assert np.array_equal(arrays["key"][rows] - arrays["lane_shift"][lane], starts[source])
            assert np.array_equal(arrays["duration_ps"][rows], durations[source])
            assert [index.names[i] for i in arrays["name_id"][rows]] == [names[i] for i in source]
            assert np.all(index.ref_planes(np.arange(rows.start, rows.stop)) == track.plane)
            if track.plane != STEPS_PLANE:
                first = int(arrays["plane_offset"][track.plane])
                assert arrays["position"][first + source].tolist() == list(range(rows.start, rows.stop))
    assert np.array_equal(arrays["busy_before"], np.concatenate(([0], np.cumsum(arrays["duration_ps"]))))
    index.validate()


def test_a_profile_past_the_index_rows_is_refused_naming_it(monkeypatch):
    profile = random_profile(0)  # 5 lines of 120 events and more
    monkeypatch.setattr(index_module, "MAX_EVENTS", 100)
    with pytest.raises(ProfileFormatError, match=f"^{profile.source}: .* more than the trace viewer holds"):
        build_index(profile)


@pytest.mark.parametrize("piece", [1, 3, 7, 1 << 20])
def test_last_end_is_the_largest_start_plus_duration_in_any_piece(monkeypatch, piece):
    monkeypatch.setattr(model, "END_PIECE", piece)
    # The latest end is neither the last start's (row 3) nor the longest event's (row 0).
    start = np.array([0, 5, 40, 60, 61, 62, 63], dtype=np.int64)
    duration = np.array([50, 90, 1, 2, 0, 1, 2], dtype=np.int64)
    table = EventTable(**{**{name: np.zeros(7, dtype=np.int64) for name in EventTable.__dataclass_fields__}, "start_ps": start, "duration_ps": duration})
    assert table.last_end_ps() == 95  # row 1: 5 + 90
