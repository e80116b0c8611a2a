"""The level of detail's C loop (src/stepscope/kernels/lod.c) answers every query with the
bytes its Python (viewer/lod_loop.py) answers: full views at many widths, random ranges,
the corners of test_lod_reference.py, name filters (a subset's ids) and track subsets, on
random profiles of every shape, hand-built lanes and an unkeyed index; as one part and
split into parts on threads (the ``lod_parts`` fixture). That Python answers as the
whole-array reference does is test_lod_reference.py's (through the C, which this ties to it).
"""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.viewer import build_index, query
from stepscope.viewer import index as index_module
from stepscope.viewer.query import decode
from tests.support.kernels import python_kernels
from tests.support.reference.viewer import FAR, FAR_RANGE, GRID, HAND, one_line_profile, random_profile

pytestmark = pytest.mark.usefixtures("lod_parts")


def windows(span: int, rng: np.random.Generator) -> list[tuple[int, int, int]]:
    found = [(0, span, width) for width in (1, 3, 97, 1600)]
    found += [(0, span + 12_345, 800), (span, span + 10, 10), (0, 0, 10)]
    for _ in range(6):
        a = int(rng.integers(0, max(span, 1)))
        found.append((a, a + int(rng.integers(1, max(span, 2))), int(rng.choice([1, 5, 64, 1600]))))
    return found


def assert_same(index, rng: np.random.Generator, extra=()) -> int:
    """The C's answer is the Python's for every window, with and without a name filter and
    on every other track; returns how many events the answers held (that there were some)."""
    shown = 0
    for start, end, width in [*windows(index.span_ps, rng), *extra]:
        for options in ({}, {"name_filter": "a"}, {"tracks": list(range(0, len(index.tracks), 2))}):
            answer = query(index, start, end, width, **options)
            with python_kernels():
                assert query(index, start, end, width, **options) == answer, (start, end, width, options)
            decoded = decode(answer)
            shown += len(decoded["event_start"]) + int(decoded["run_count"].sum())
    return shown


@pytest.mark.parametrize(
    "shape",
    [{"seed": 1}, {"seed": 2, "events_per_line": 600}, {"seed": 3, "events_per_line": 20}, {"seed": 5, "events_per_line": 200, "span": 3000}],
    ids=lambda shape: "-".join(f"{k}={v}" for k, v in shape.items()),
)
def test_random_profiles_are_answered_alike(shape):
    assert assert_same(build_index(random_profile(**shape)), np.random.default_rng(shape["seed"])) > 0


def test_hand_built_lanes_are_answered_alike():
    cases = [
        (HAND, [(500, 3000, 5), (500, 3000, 50)]),
        (GRID, [(0, 10_000, 1000), (100, 40_100, 1000), (7, 75_007, 3)]),
        ([(100, 0, "i")] * 50 + [(100, 0, "a")] * 3, []),
        (FAR, [(0, FAR_RANGE, 997)]),
    ]
    for events, extra in cases:
        assert assert_same(build_index(one_line_profile(events)), np.random.default_rng(0), extra=extra) > 0


def test_an_unkeyed_index_is_answered_alike(monkeypatch):
    monkeypatch.setattr(index_module, "KEY_LIMIT", 0)
    index = build_index(random_profile(6))
    assert not index.keyed
    assert assert_same(index, np.random.default_rng(6)) > 0
