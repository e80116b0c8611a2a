"""Fuzzing the readers: a damaged profile loads as a valid Profile or raises ProfileFormatError.

Each example takes the (decompressed) bytes of a small real profile from ``../shared/traces``,
applies a few mutations drawn by Hypothesis and writes the result to a file (gzipped or not),
then calls ``stepscope.load``. The only acceptable outcomes are a Profile whose ``validate()``
passes, or a ``ProfileFormatError`` naming the file; any other exception is a reader bug.

Mutations:
- byte level, for every source: truncate, flip bits, replace bytes, insert random bytes,
  insert a token that real damage and drift produce (``NaN``, ints past int64, control
  characters, invalid UTF-8, protobuf varints...), delete a span, duplicate a span;
- JSON value level, for the Kineto sources: overwrite the value of one ``"dur"``, ``"ts"``,
  ``"id"``, ``"tid"``, ``"ph"``... with an odd one, so that the file still parses and the
  importer itself is exercised;
- field level, for the XSpace source: parse it, set timestamps, offsets, durations, ids and
  stat values to extreme values or drop metadata, serialize it again.

Deterministic (``derandomize=True``, no example database) and bounded: the example counts keep
this file well under a minute on two cores. On failure Hypothesis prints each applied mutation
(``note``), which replays the damage exactly. Shrinking is off to keep a failing run short;
drop ``phases=`` from ``FUZZ_SETTINGS`` locally to get a minimal example.
"""

from __future__ import annotations

import functools
import gzip
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, currently_in_test_context, event, given, note, settings
from hypothesis import strategies as st

import stepscope
from stepscope import ProfileFormatError
from stepscope.protos import xplane_pb2
from tests.support.fuzz import BYTE_OPS, JSON_OPS, mutate_bytes, source_bytes
from tests.support.traces import shared

# Small real profiles to damage.
ALEXNET = "kineto/alexnet_small.pt.trace.json.gz"
CPU_ONLY = "kineto/cpu_only_rank34.pt.trace.json.gz"
MI250 = "kineto/mi250_rocm_toy_train.pt.trace.json.gz"
XPLANE = "xplane/tpu_v_inference_4chips.xplane.pb"
SOURCES = (ALEXNET, CPU_ONLY, MI250, XPLANE)

FUZZ_SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

INT64_EXTREMES = (0, 1, -1, 1000, 2**31, 2**53 + 1, 2**62, 2**63 - 1, -(2**62), -(2**63), 10**15, 10**18)
INT64 = st.sampled_from(INT64_EXTREMES) | st.integers(-(2**63), 2**63 - 1)
UINT64 = st.sampled_from((0, 1, 2**63, 2**64 - 1)) | st.integers(0, 2**64 - 1)
DOUBLES = st.sampled_from((math.nan, math.inf, -math.inf, -0.0, 1e308)) | st.floats()
SPACE_OPS = (
    "line.timestamp_ns",
    "line.duration_ps",
    "line.id",
    "event.offset_ps",
    "event.duration_ps",
    "event.metadata_id",
    "event.num_occurrences",
    "stat.metadata_id",
    "stat.int64_value",
    "stat.uint64_value",
    "stat.double_value",
    "stat.ref_value",
    "stat.bytes_value",
    "plane.id",
    "plane.drop_event_metadata",
    "plane.drop_stat_metadata",
    "space.drop_line",
)


def mutate_space(data: st.DataObject, space: xplane_pb2.XSpace) -> None:
    """Sets one drawn field of a parsed XSpace to a drawn (often extreme) value."""
    op = data.draw(st.sampled_from(SPACE_OPS), label="field")
    with_events = [i for i, plane in enumerate(space.planes) if any(line.events for line in plane.lines)]
    plane_index = data.draw(st.sampled_from(with_events), label="plane")
    plane = space.planes[plane_index]
    lines = [i for i, line in enumerate(plane.lines) if line.events]
    line_index = data.draw(st.sampled_from(lines), label="line")
    line = plane.lines[line_index]
    event_index = data.draw(st.integers(0, len(line.events) - 1), label="event")
    xevent = line.events[event_index]
    where = f"plane {plane_index} ({plane.name}) line {line_index} event {event_index}"
    kind, field = op.split(".")
    if kind == "stat":
        if not xevent.stats:
            xevent.stats.add().metadata_id = min(plane.stat_metadata, default=1)
        stat_index = data.draw(st.integers(0, len(xevent.stats) - 1), label="stat")
        stat = xevent.stats[stat_index]
        # (`in` first: indexing a protobuf map of messages would add the key.)
        stat_name = plane.stat_metadata[stat.metadata_id].name if stat.metadata_id in plane.stat_metadata else "?"
        where += f" stat {stat_index} ({stat_name})"
        strategy = {"uint64_value": UINT64, "ref_value": UINT64, "double_value": DOUBLES}.get(field, INT64)
        value = data.draw(st.binary(max_size=16) if field == "bytes_value" else strategy, label="value")
        setattr(stat, field, value)
    elif field == "drop_event_metadata":
        value = xevent.metadata_id
        plane.event_metadata.pop(value, None)
    elif field == "drop_stat_metadata":
        value = data.draw(st.sampled_from(sorted(plane.stat_metadata) or [0]), label="stat metadata id")
        plane.stat_metadata.pop(value, None)
    elif field == "drop_line":
        value = line.id
        del plane.lines[line_index]
    else:
        value = data.draw(INT64, label="value")
        setattr({"line": line, "event": xevent, "plane": plane}[kind], field, value)
    note(f"{where}: {op} = {value!r}")


def _record(outcome: str) -> None:
    """Counts outcomes for ``pytest --hypothesis-show-statistics``."""
    if currently_in_test_context():
        event(outcome)


def check_load(path: Path) -> None:
    """Either a valid Profile or ProfileFormatError naming the file; anything else propagates."""
    try:
        profile = stepscope.load(path)
    except ProfileFormatError as error:
        assert error.path == str(path)
        assert str(error).startswith(f"{path}: ") and error.problem, str(error)
        kind = re.sub(r"'[^']*'", "'...'", re.sub(r"\d+", "N", re.sub(r"\s*\(.*", "", error.problem)))
        _record(f"rejected: {kind}")
        return
    profile.validate()
    warnings = profile.info.get("warnings", [])
    assert isinstance(warnings, list) and all(isinstance(w, str) for w in warnings), warnings
    _record("loaded" + (" with warnings" if warnings else ""))


def damage_and_load(tmp_path: Path, data: st.DataObject, name: str) -> None:
    buffer = bytearray(source_bytes(name))
    ops = BYTE_OPS if name.endswith(".xplane.pb") else JSON_OPS
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        mutate_bytes(data, buffer, ops)
    compress = data.draw(st.booleans(), label="gzip")
    suffix = ".xplane.pb" if name.endswith(".xplane.pb") else ".pt.trace.json"
    path = tmp_path / ("damaged" + suffix + (".gz" if compress else ""))
    path.write_bytes(gzip.compress(bytes(buffer), compresslevel=1) if compress else bytes(buffer))
    note(f"wrote {len(buffer)} bytes{' gzipped' if compress else ''} to {path.name}")
    check_load(path)


@settings(FUZZ_SETTINGS, max_examples=300)
@given(data=st.data())
def test_damaged_alexnet_small_loads_or_is_rejected(tmp_path: Path, data: st.DataObject) -> None:
    damage_and_load(tmp_path, data, ALEXNET)


@settings(FUZZ_SETTINGS, max_examples=400)
@given(data=st.data())
def test_damaged_cpu_only_rank34_loads_or_is_rejected(tmp_path: Path, data: st.DataObject) -> None:
    damage_and_load(tmp_path, data, CPU_ONLY)


@settings(FUZZ_SETTINGS, max_examples=400)
@given(data=st.data())
def test_damaged_mi250_rocm_toy_train_loads_or_is_rejected(tmp_path: Path, data: st.DataObject) -> None:
    damage_and_load(tmp_path, data, MI250)


@settings(FUZZ_SETTINGS, max_examples=250)
@given(data=st.data())
def test_damaged_tpu_xplane_loads_or_is_rejected(tmp_path: Path, data: st.DataObject) -> None:
    damage_and_load(tmp_path, data, XPLANE)


@functools.cache
def parsed_space() -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace()
    space.ParseFromString(source_bytes(XPLANE))
    return space


@settings(FUZZ_SETTINGS, max_examples=80)
@given(data=st.data())
def test_tpu_xplane_with_odd_field_values_loads_or_is_rejected(tmp_path: Path, data: st.DataObject) -> None:
    space = xplane_pb2.XSpace()
    space.CopyFrom(parsed_space())
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        mutate_space(data, space)
    path = tmp_path / "odd.xplane.pb"
    path.write_bytes(space.SerializeToString())
    check_load(path)


def test_sources_are_present_and_load() -> None:
    """The undamaged sources load and validate, so a fuzz failure is the damage's doing."""
    for name in SOURCES:
        assert source_bytes(name), name
        stepscope.load(shared(name)).validate()


@pytest.mark.parametrize("name", SOURCES)
def test_cut_at_evenly_spaced_points(tmp_path: Path, name: str) -> None:
    """A fixed sweep beside the random one: the file cut at 64 evenly spaced points."""
    data = source_bytes(name)
    path = tmp_path / Path(name).name.removesuffix(".gz")
    for index in range(64):
        path.write_bytes(data[: len(data) * index // 64])
        check_load(path)
