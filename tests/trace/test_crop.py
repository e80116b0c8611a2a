"""Cropping a profile to a time range (the trace viewer's "export this range")."""

from __future__ import annotations

import numpy as np
import pytest

import stepscope
from stepscope.trace.crop import crop
from stepscope.trace.model import NO_ID
from tests.support.traces import read_json, shared

TRACE = "kineto/v100_resnet_ns_resolution.pt.trace.json.gz"


@pytest.fixture(scope="module")
def profile():
    return stepscope.load(shared(TRACE))


def test_crop_keeps_exactly_the_events_overlapping_the_range(profile, tmp_path):
    """Counted independently from the raw JSON: complete events with ts < end and
    ts + dur > start (times from the file's own first timestamp)."""
    raw = [e for e in read_json(shared(TRACE))["traceEvents"] if e.get("ph") == "X"]
    origin_us = profile.start_ns / 1000
    start_ps, end_ps = profile.span_ps // 4, 3 * profile.span_ps // 4  # the middle half
    expected = sum(
        1 for e in raw if (float(e["ts"]) - origin_us) * 1e6 < end_ps and (float(e["ts"]) + float(e["dur"]) - origin_us) * 1e6 > start_ps and e["dur"] > 0
    )
    part = crop(profile, start_ps, end_ps)
    part.validate()
    kept = sum(int(np.sum(p.events.duration_ps > 0)) for p in part.planes)
    assert kept == expected
    assert part.start_ns == profile.start_ns
    # Nothing outside, every kept event overlapping, parents inside the crop or none.
    for plane in part.planes:
        events = plane.events
        assert np.all(events.start_ps < end_ps)
        assert np.all((events.end_ps > start_ps) | ((events.duration_ps == 0) & (events.start_ps >= start_ps)))
        assert np.all((events.parent == NO_ID) | (events.parent < len(events)))
    # Flows: only those with both ends kept, and they still join a launch to its kernel.
    assert 0 < len(part.flows) < len(profile.flows)
    for i in range(len(part.flows)):
        src = part.planes[part.flows.src_plane[i]]
        dst = part.planes[part.flows.dst_plane[i]]
        assert src.events.correlation_id[part.flows.src_event[i]] == dst.events.correlation_id[part.flows.dst_event[i]]

    path = tmp_path / "part.json.gz"
    stepscope.save(part, path)
    assert len(read_json(path)["traceEvents"]) > 0


def test_crop_edges(profile):
    assert crop(profile, 0, 0).event_count <= sum(int(np.sum(p.events.start_ps == 0)) for p in profile.planes)
    assert crop(profile, profile.span_ps + 1, profile.span_ps + 10).event_count == 0
    assert crop(profile, 0, profile.span_ps + 1).event_count == profile.event_count
    with pytest.raises(ValueError, match="ends"):
        crop(profile, 10, 5)
