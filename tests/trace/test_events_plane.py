"""``events_plane`` (the host and Python tracers' records -> plane), built in bulk, gives the
plane the per-record version gave (tests/support/reference/events_plane.py): lines, metadata,
every event column and every stat, on hand-picked and generated records.
"""

from __future__ import annotations

import enum
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from stepscope.capture.tracers.host import EpochClock, _worker_key, events_plane
from stepscope.trace import names
from stepscope.trace.model import Plane, Profile
from stepscope.trace.stat_types import StatKind
from tests.support.reference.events_plane import reference_events_plane
from tests.support.reference.xspace import assert_same_profile

SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Color(enum.IntEnum):
    RED = 3


class Label(str):
    pass


class Opaque:
    """No JSON form: typed as its str."""

    def __str__(self) -> str:
        return "opaque"


def build(records: list, thread_names: dict[int, str] | None = None, plane: str = names.HOST_PLANE) -> tuple[Plane, Plane]:
    clock = EpochClock()
    start_ns = clock.epoch(min((r[1] for r in records), default=0)) // 1000 * 1000  # as HostTracer.stop
    new = events_plane(plane, records, clock, start_ns, thread_names)
    old = reference_events_plane(plane, records, clock, start_ns, thread_names)
    return new, old


def assert_same_plane(new: Plane, old: Plane) -> None:
    wrap = [Profile(planes=[plane], start_ns=0, host="", source="", format="stepscope") for plane in (new, old)]
    assert_same_profile(*wrap)


def test_steps_spans_and_args_of_every_type():
    big = 2**63  # past int64: a uint64 stat
    records = [
        (names.STEPSCOPE_STEP, 1_000, 9_000, 11, {names.STEP_NUM: 0}),
        ("compute", 1_500, 8_000, 11, None),
        ("compute", 1_600, 1_600, 11, {}),
        ("load", 2_000, 3_000, 12, {"n": 5, "ratio": 0.25, "name": "a", "raw": b"\x00\xff", "flag": True}),
        ("load", 2_500, 2_400, 12, {"nan": math.nan, "neg": -0.0, "inf": -math.inf, "big": big, "huge": 2**70}),
        ("load", 3_000, 3_500, 12, {"list": [1, "x"], "dict": {"k": None}, "none": None, "enum": Color.RED, "sub": Label("s")}),
        ("load", 3_100, 3_200, 12, {"numpy": np.int64(4), "float32": np.float32(0.5), "object": Opaque()}),
        (names.STEPSCOPE_STEP, 9_000, 20_000, 11, {names.STEP_NUM: 1, "extra": "x"}),
        (names.STEPSCOPE_STEP, 20_000, 30_000, 13, {names.STEP_NUM: True}),
        (names.STEPSCOPE_STEP, 20_000, 30_000, 13, {names.STEP_NUM: Color.RED}),
        (names.STEPSCOPE_STEP, 30_000, 31_000, 13, {names.STEP_NUM: 2.5}),
        (names.STEPSCOPE_STEP, 31_000, 32_000, 13, {names.STEP_NUM: "7"}),
        ("surrogate \ud800", 4_000, 5_000, _worker_key(4242, 11), {"s": "\udfff"}),
    ]
    new, old = build(records, {11: "main", _worker_key(4242, 11): "process 4242 / main"})
    assert_same_plane(new, old)
    step_rows = np.flatnonzero(new.events.step_num != -1)
    assert sorted(new.events.step_num[step_rows].tolist()) == [0, 1, 1, 3]


def test_only_ints_and_only_floats():
    for values in ([1, 2, 3], [0.5, 1.5, 2.5], ["a", "b", "a"]):
        records = [("e", 10 * i, 10 * i + 5, 1, {"v": value}) for i, value in enumerate(values)]
        assert_same_plane(*build(records))


def test_no_records_and_no_args():
    assert_same_plane(*build([]))
    assert_same_plane(*build([("a", 5, 10, 1, None), ("b", 6, 7, 2, None)], plane=names.PYTHON_TRACER_PLANE))


def test_a_step_number_past_int64_is_kept_as_a_stat():
    """The per-record version failed here (the step_num column is an int64): now the step
    is a uint64 stat and the column says it has none."""
    records = [(names.STEPSCOPE_STEP, 0, 10, 1, {names.STEP_NUM: 2**63})]
    clock = EpochClock()
    with pytest.raises(OverflowError):
        reference_events_plane(names.HOST_PLANE, records, clock, clock.epoch(0))
    plane = events_plane(names.HOST_PLANE, records, clock, clock.epoch(0))
    assert plane.events.step_num.tolist() == [-1]
    (stat,) = plane.stats.stats(0)
    assert (stat.name, stat.kind, stat.value) == (names.STEP_NUM, StatKind.UINT64, 2**63)


ARG_VALUES = (
    st.integers(-(2**63), 2**63 - 1)
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.booleans()
    | st.text(max_size=5)
    | st.binary(max_size=4)
    | st.none()
    | st.lists(st.integers(0, 3), max_size=2)
)
RECORD = st.tuples(
    st.sampled_from((names.STEPSCOPE_STEP, "compute", "load", "x\ud800")),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.sampled_from((1, 2, 2**40, _worker_key(99, 1), 0)),
    st.none()
    | st.just({})
    | st.dictionaries(st.sampled_from((names.STEP_NUM, "a", "b", "c")), ARG_VALUES, max_size=3)
    | st.integers(-(2**63), 2**63 - 1).map(lambda n: {names.STEP_NUM: n}),
)


@settings(SETTINGS, max_examples=300)
@given(records=st.lists(RECORD, max_size=30))
def test_generated_records(records: list):
    records = [(name, start, start + length, thread, args) for name, start, length, thread, args in records]
    if any(type(args.get(names.STEP_NUM)) is int and args[names.STEP_NUM] >= 2**63 for _, _, _, _, args in records if args):
        records = [record for record in records if not record[4] or names.STEP_NUM not in record[4]]  # see above
    assert_same_plane(*build(records, {1: "one"}))
