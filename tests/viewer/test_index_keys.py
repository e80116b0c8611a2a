"""The index's keys: each lane's starts moved into its own band by the lane's shift, spread
over the lane's rows by ``index.per_row`` (a cumulative sum) instead of ``np.repeat``."""

from __future__ import annotations

import numpy as np

from stepscope.viewer import build_index
from stepscope.viewer.index import per_row
from tests.support.reference.viewer import random_profile


def test_per_row_spreads_each_lane_value_over_its_rows():
    # Lanes of 2, 0, 3, 0 and 1 rows (offsets 0, 2, 2, 5, 5, 6): the empty lanes' values
    # (99, 77) appear nowhere; values past 2**62 and negative ones come back exactly.
    values = np.array([5, 99, -(2**62), 77, 2**62 + 3], dtype=np.int64)
    offsets = np.array([0, 2, 2, 5, 5, 6], dtype=np.int64)
    assert per_row(values, offsets).tolist() == [5, 5, -(2**62), -(2**62), -(2**62), 2**62 + 3]


def test_per_row_of_no_lanes_and_of_empty_lanes_is_empty():
    assert per_row(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64)).tolist() == []
    assert per_row(np.array([4, 8], dtype=np.int64), np.zeros(3, dtype=np.int64)).tolist() == []


def test_keys_are_each_rows_start_plus_its_lanes_shift():
    """Against ``np.repeat``: a row's key is its event's start plus its lane's shift."""
    for seed in range(4):
        profile = random_profile(seed)
        index = build_index(profile)
        assert index.keyed
        arrays = index.arrays
        lane_of_row = np.repeat(np.arange(len(arrays["lane_shift"])), np.diff(arrays["lane_offset"]))
        plane_of_row, row_of_row = arrays["ref_plane"], arrays["ref_row"]
        starts = np.array([profile.planes[p].events.start_ps[r] if p >= 0 else 0 for p, r in zip(plane_of_row.tolist(), row_of_row.tolist())], dtype=np.int64)
        events = plane_of_row >= 0  # (the steps lane's rows are no plane's events)
        assert np.array_equal(arrays["key"][events], starts[events] + arrays["lane_shift"][lane_of_row][events])
