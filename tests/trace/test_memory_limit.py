"""The memory a trace JSON's load may take: the estimate of 512 bytes per
event (128 per metadata event) plus the text, against ``STEPSCOPE_MAX_MEMORY`` (set here
with ``limits.limited``), checked on the streamed decode's events so far and on the
whole-file decode's count. Through the real CLI and dashboard (the address-space limit,
the worker's cap): tests/test_adversarial.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import stepscope
from stepscope.errors import ProfileLimitError
from stepscope.sizes import size_text
from stepscope.trace import limits
from tests.support import hostile

MiB = 1 << 20
EVENTS = 200_000
PER_EVENT = 512  # the estimate's bytes per event, written out here (not read from the code)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """200,000 one-name complete events, ~55 bytes of JSON each, as a trace JSON object."""
    return hostile.json_of_nested_events(tmp_path_factory.mktemp("memory") / "tiny.trace.json", EVENTS)


def test_the_streamed_load_stops_at_the_limit(tiny: Path):
    text = tiny.read_bytes()
    # All of it: 200,000 x 512 + the text, about 102 MiB + 11 MiB; the limit is 64 MiB.
    assert EVENTS * PER_EVENT + len(text) > 64 * MiB
    with limits.limited({limits.MEMORY: 64 * MiB}), pytest.raises(ProfileLimitError) as raised:
        stepscope.load(tiny)
    message = str(raised.value)
    found = re.fullmatch(
        rf"{re.escape(str(tiny))}: loading it needs more memory than the limit allows, 64\.0 MiB \(([\d,]+) events need about ([\d.]+) MiB\) "
        rf"\(limit STEPSCOPE_MAX_MEMORY={64 * MiB}; raise it to read larger profiles\)",
        message,
    )
    assert found, message
    # Refused on the events read so far (whole batches of ~1 MiB of text: ~19,000 events),
    # at the first batch past the limit: 64 MiB / (512 + 55) bytes is ~118,000 events.
    read = int(found[1].replace(",", ""))
    assert 64 * MiB < read * (PER_EVENT + len(hostile.EVENT) + 1) and read < 64 * MiB // PER_EVENT + 25_000 < EVENTS
    assert raised.value.setting == "STEPSCOPE_MAX_MEMORY" and raised.value.limit == 64 * MiB
    # Under a limit above the estimate it loads, every event.
    with limits.limited({limits.MEMORY: 128 * MiB}):
        assert stepscope.load(tiny).event_count == EVENTS


def test_the_whole_file_decode_counts_every_event(tiny: Path, tmp_path: Path):
    """The JSON Array Format is decoded whole: refused on the exact count, before its columns."""
    array = tmp_path / "array.trace.json"
    text = b"[" + tiny.read_bytes().removeprefix(b'{"traceEvents":[').removesuffix(b"]}") + b"]"
    array.write_bytes(text)
    expected = size_text(EVENTS * PER_EVENT + len(text))  # 200,000 x 512 + 10.8 MB: "108.0 MiB"
    with limits.limited({limits.MEMORY: 64 * MiB}), pytest.raises(ProfileLimitError, match=rf"\(200,000 events need about {re.escape(expected)}\)"):
        stepscope.load(array)


def test_none_lifts_the_bound_and_a_bad_value_is_one_line(tiny: Path, monkeypatch):
    monkeypatch.setenv("STEPSCOPE_MAX_MEMORY", "none")
    budget = limits.memory_budget()
    # Only an address-space limit of this process could bound it now (none in the tests).
    assert budget is None or budget.remedy.startswith("limit ulimit -v"), budget
    monkeypatch.setenv("STEPSCOPE_MAX_MEMORY", "lots")
    with pytest.raises(stepscope.StepscopeError, match=r"^STEPSCOPE_MAX_MEMORY='lots' is not a limit"):
        stepscope.load(tiny)


def test_unset_the_bound_is_the_memory_available(monkeypatch, tmp_path: Path):
    """Read from /proc/meminfo's MemAvailable (here a copy with a known value)."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemAvailable:     123456 kB\n")
    monkeypatch.delenv("STEPSCOPE_MAX_MEMORY", raising=False)
    monkeypatch.setattr(limits, "MEMINFO", meminfo)
    monkeypatch.setattr(limits, "CGROUP_MEMORY", tmp_path / "no cgroup")
    budget = limits.memory_budget()
    assert budget is not None and budget.bytes == 123456 * 1024 and budget.what == "the machine has available"
    assert budget.remedy == "set STEPSCOPE_MAX_MEMORY to load it anyway"
