"""Queries at the edges: a hand-built lane with every corner of the pixel rules, empty and
outside ranges, bad arguments, huge widths, and the binary layout itself."""

from __future__ import annotations

import struct

import pytest

from stepscope.viewer import MAX_WIDTH_PX, build_index, decode, query
from tests.support.reference.viewer import HAND, one_line_profile, random_profile


def test_hand_built_lane_at_five_pixels():
    profile = one_line_profile(HAND)
    index = build_index(profile)
    # Range [500, 3000) on 5 pixels: edges 500, 1000, 1500, 2000, 2500, 3000; a pixel is
    # 500 ps, so events of 500 ps or more come one by one.
    data = decode(query(index, 500, 3000, 5))
    header = data["header"]
    assert header["min_event_ps"] == 500
    # 68 = A + 10 + 50 + 5 + C + D (E starts at the range's end).
    assert header["counts"] == {"lanes": 1, "events": 3, "runs": 3, "overlapping": 68}
    names = [header["names"][str(i)] for i in data["event_name"]]
    assert names == ["A", "C", "D"]
    assert data["event_start"].tolist() == [-500, 1600, 2100]  # relative to 500
    assert data["event_duration"].tolist() == [600, 500, 500]
    # Pixel 0's run: the 10 events after A: first 600, last ends 600+270+10 = 880,
    # busy 100 of 280 ps. Pixel 1's: first 1000, last ends 1000+490+5 = 1495, 250 of 495.
    # Pixel 3's: the 5 before C: first 2000, last ends 2040+5 = 2045, 25 of 45.
    assert data["run_count"].tolist() == [10, 50, 5]
    assert data["run_start"].tolist() == [100, 500, 1500]
    assert data["run_end"].tolist() == [380, 995, 1545]
    assert data["run_busy"].tolist() == pytest.approx([100 / 280, 250 / 495, 25 / 45])
    assert data["lane_events"].tolist() == [0, 3] and data["lane_runs"].tolist() == [0, 3]


def test_hand_built_lane_sparse_and_dense_paths_agree():
    # At 5 pixels the lane (68 events in range) is summarised from its pixel edges; at 100
    # pixels (pixel = 25 ps) it is read event by event. Both must count 68.
    index = build_index(one_line_profile(HAND))
    for width in (5, 100, 68, 67):
        assert decode(query(index, 500, 3000, width))["header"]["counts"]["overlapping"] == 68


def test_instants_at_the_range_start_count_and_at_the_end_do_not():
    index = build_index(one_line_profile(HAND))
    # E is an instant at 3100: in [3100, 3200), not in [3000, 3100).
    assert decode(query(index, 3100, 3200, 10))["header"]["counts"]["overlapping"] == 1
    # [3000, 3100) holds D's tail only.
    assert decode(query(index, 3000, 3100, 10))["header"]["counts"]["overlapping"] == 1


@pytest.fixture(scope="module")
def index():
    return build_index(random_profile(3))


def test_empty_range_answers_nothing(index):
    data = decode(query(index, 5000, 5000, 800))
    assert data["header"]["counts"] == {"lanes": 0, "events": 0, "runs": 0, "overlapping": 0}
    assert all(len(data[name]) == 0 for name in ("event_start", "run_start", "lane_track"))
    assert data["lane_events"].tolist() == [0]


def test_range_outside_the_profile_answers_nothing(index):
    span = index.span_ps
    data = decode(query(index, span + 1, span + 10**9, 1600))
    assert data["header"]["counts"]["overlapping"] == 0
    assert data["header"]["span_ps"] == span


@pytest.mark.parametrize(
    ("start", "end", "width", "message"),
    [
        (-1, 10, 100, "negative"),
        (0, -10, 100, "negative"),
        (10, 5, 100, "before"),
        (0, 10, 0, "width_px"),
        (0, 10, -3, "width_px"),
        (0, 2**63 - 1, 100, "largest time"),
        (0.5, 10, 100, "integer"),
        ("0", 10, 100, "integer"),
        (0, 10, True, "integer"),
    ],
)
def test_bad_arguments_say_what_is_wrong(index, start, end, width, message):
    with pytest.raises(ValueError, match=message):
        query(index, start, end, width)


def test_unknown_tracks_are_refused(index):
    with pytest.raises(ValueError, match="no track"):
        query(index, 0, 100, 10, tracks=[len(index.tracks)])
    with pytest.raises(ValueError, match="integers"):
        query(index, 0, 100, 10, tracks=["1"])


def test_huge_width_is_capped(index):
    header = decode(query(index, 0, index.span_ps, 10**9))["header"]
    assert header["width_px"] == MAX_WIDTH_PX == 16384


def test_track_subset_answers_those_tracks_only(index):
    wanted = [1, 3]
    data = decode(query(index, 0, index.span_ps, 300, tracks=wanted))
    assert set(data["lane_track"].tolist()) <= set(wanted)
    assert {t["id"] for t in data["header"]["tracks"]} == set(data["lane_track"].tolist())
    total = sum(decode(query(index, 0, index.span_ps, 300, tracks=[t]))["header"]["counts"]["overlapping"] for t in wanted)
    assert data["header"]["counts"]["overlapping"] == total
    assert decode(query(index, 0, index.span_ps, 300, tracks=[]))["header"]["counts"]["overlapping"] == 0


def test_binary_layout_matches_the_documented_one(index):
    data = query(index, 0, index.span_ps, 640)
    magic, version, header_length, reserved = struct.unpack_from("<4sIII", data)
    assert (magic, version, reserved) == (b"SSTV", 1, 0)
    header = decode(data)["header"]
    names = [a["name"] for a in header["arrays"]]
    assert names == [
        "lane_track", "lane_depth", "lane_events", "lane_runs",
        "event_start", "event_duration", "event_id", "event_name",
        "run_start", "run_end", "run_count", "run_busy",
    ]  # fmt: skip
    first = header["arrays"][0]["offset"]
    assert first == (16 + header_length + 7) // 8 * 8
    sizes = {"int32": 4, "uint32": 4, "float32": 4, "float64": 8}
    position = first
    for array in header["arrays"]:
        assert array["offset"] % 8 == 0 and array["offset"] >= position
        position = array["offset"] + array["length"] * sizes[array["type"]]
    assert position <= len(data) < position + 8
    counts = header["counts"]
    lengths = {a["name"]: a["length"] for a in header["arrays"]}
    assert lengths["lane_events"] == counts["lanes"] + 1 and lengths["event_start"] == counts["events"]
    assert lengths["run_busy"] == counts["runs"]
    with pytest.raises(ValueError):
        decode(b"XXXX" + data[4:])
