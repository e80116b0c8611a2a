"""The viewer tests' fixtures."""

from __future__ import annotations

import pytest

from stepscope.viewer import lod_loop


@pytest.fixture(params=["one part", "parts on threads"])
def lod_parts(request, monkeypatch):
    """Each level-of-detail test twice: as the query runs at its size (small: one part), and
    split into as many parts as it has lanes, up to four, on threads, however small
    (``lod_loop.lod_lanes_in_parts``): the answers must be the same bytes."""
    if request.param == "parts on threads":
        monkeypatch.setattr(lod_loop, "PARALLEL_COST", 1)
        monkeypatch.setattr(lod_loop, "available_cores", lambda: lod_loop.MAX_PARTS)
    return request.param
