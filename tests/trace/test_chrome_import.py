"""The Chrome trace importer on a small hand-written trace covering every phase it reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stepscope
from stepscope.trace import names

US = 1_000_000  # picoseconds per microsecond

EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "trainer"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 10, "args": {"name": "main"}},
    {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "/device:TPU:0"}},
    {"ph": "X", "name": "outer", "cat": "op", "pid": 1, "tid": 10, "ts": 100, "dur": 50, "args": {"k": 1}},
    {"ph": "X", "name": "inner", "cat": "op", "pid": 1, "tid": 10, "ts": 110, "dur": 10},
    {"ph": "B", "name": "begin-end", "pid": 1, "tid": 11, "ts": 200, "args": {"why": "B/E"}},
    {"ph": "E", "pid": 1, "tid": 11, "ts": 230},
    {"ph": "i", "name": "mark", "s": "t", "pid": 1, "tid": 10, "ts": 120},
    {"ph": "C", "name": "memory", "pid": 1, "ts": 130, "args": {"bytes": 5}},
    # Flow 7: starts inside "inner", ends (binding to the enclosing slice) inside "begin-end".
    {"ph": "s", "name": "f", "cat": "flow", "id": 7, "pid": 1, "tid": 10, "ts": 115},
    {"ph": "f", "name": "f", "cat": "flow", "id": 7, "pid": 1, "tid": 11, "ts": 205, "bp": "e"},
    # Flow 8: starts in "outer" before "inner"; its end has no bp:e, so it binds to the
    # next slice starting at or after 195 on thread 11: "begin-end" at 200.
    {"ph": "s", "name": "f", "cat": "flow", "id": 8, "pid": 1, "tid": 10, "ts": 101},
    {"ph": "f", "name": "f", "cat": "flow", "id": 8, "pid": 1, "tid": 11, "ts": 195},
    {"ph": "b", "name": "request", "cat": "net", "id": 1, "pid": 1, "ts": 300},
    {"ph": "e", "name": "request", "cat": "net", "id": 1, "pid": 1, "ts": 340},
    {"ph": "X", "name": "fusion", "pid": 2, "tid": 1, "ts": 150, "dur": 5.5},
    {"ph": "O", "name": "snapshot", "pid": 1, "ts": 100, "id": 3},
]


@pytest.fixture
def trace(tmp_path: Path) -> stepscope.Profile:
    path = tmp_path / "small.trace.json"
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    profile = stepscope.load(path)
    profile.validate()
    return profile


def _event(plane: stepscope.Plane, name: str) -> int:
    rows = [row for row in range(len(plane.events)) if plane.event_name(row) == name]
    assert len(rows) == 1, name
    return rows[0]


def test_planes_lines_and_times(trace):
    assert trace.format == "chrome"
    assert [plane.name for plane in trace.planes] == [names.HOST_PLANE, "/device:TPU:0"]
    host = trace.plane(names.HOST_PLANE)
    # The earliest event is at 100 us, which becomes time 0.
    assert trace.start_ns == 100 * 1000
    assert trace.info["clock"].startswith("relative")
    labels = [line.name for line in host.lines]
    assert labels == ["trainer (1) / main", "trainer (1) / 11", names.COUNTERS_LINE, "async net"]
    events = host.events
    outer, inner, mark = _event(host, "outer"), _event(host, "inner"), _event(host, "mark")
    assert (events.start_ps[outer], events.duration_ps[outer]) == (0, 50 * US)
    assert (events.start_ps[inner], events.duration_ps[inner]) == (10 * US, 10 * US)
    assert events.parent[inner] == outer and events.depth[inner] == 1
    # The instant at 120 us is where "inner" ends, so it is outer's child, not inner's.
    assert events.duration_ps[mark] == 0 and events.parent[mark] == outer
    begin_end = _event(host, "begin-end")
    assert (events.start_ps[begin_end], events.duration_ps[begin_end]) == (100 * US, 30 * US)
    request = _event(host, "request")
    assert (events.start_ps[request], events.duration_ps[request]) == (200 * US, 40 * US)
    assert host.lines[events.line[request]].name == "async net"
    device = trace.plane("/device:TPU:0")
    # 5.5 us is a whole number of ns: kept exactly.
    assert device.events.duration_ps.tolist() == [5_500_000]
    assert trace.span_ps == 240 * US  # request ends at 340 us


def test_args_categories_and_counters(trace):
    host = trace.plane(names.HOST_PLANE)
    outer = _event(host, "outer")
    assert host.metadata.categories[host.events.metadata_id[outer]] == "op"
    assert {(s.name, s.value) for s in host.event_stats(outer)} == {("k", 1)}
    assert host.stats.raw(outer) == b'{"k": 1}'
    memory = _event(host, "memory")
    assert host.lines[host.events.line[memory]].name == names.COUNTERS_LINE
    assert {(s.name, s.value) for s in host.event_stats(memory)} == {("bytes", 5)}


def test_flows_bind_to_enclosing_or_next_slice(trace):
    host = trace.plane(names.HOST_PLANE)
    flows = trace.flows
    arrows = {(int(flows.flow_id[i]), host.event_name(int(flows.src_event[i])), host.event_name(int(flows.dst_event[i]))) for i in range(len(flows))}
    assert arrows == {(7, "inner", "begin-end"), (8, "outer", "begin-end")}
    assert flows.categories == ["flow"]


def test_unsupported_phase_is_reported(trace):
    assert any("1 'O'" in warning for warning in trace.info["warnings"])


def test_array_format_without_closing_bracket(tmp_path: Path):
    # The JSON Array Format may be cut off before "]" by a process that exits.
    path = tmp_path / "cut.json"
    path.write_text('[{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2},\n')
    profile = stepscope.load(path)
    assert profile.event_count == 1
    assert profile.planes[0].events.duration_ps.tolist() == [2 * US]


def test_picosecond_times_round_trip_through_export(trace, tmp_path: Path):
    # Sub-nanosecond times (as stepscope's own export writes for XSpace sources) survive.
    path = tmp_path / "ps.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1.000001, "dur": 0.000250},
                    {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2.5, "dur": 1},
                ]
            }
        )
    )
    plane = stepscope.load(path).planes[0]
    # Time zero is the earliest start floored to a whole ns (so start_ns is exact): 1 us.
    # 1.000001 us -> 1 ps; 2.5 us -> 1_500_000 ps; 0.00025 us = 250 ps.
    assert plane.events.start_ps.tolist() == [1, 1_500_000]
    assert plane.events.duration_ps.tolist() == [250, 1_000_000]


def test_flows_keyed_by_category_text_and_id(tmp_path: Path):
    """Flow points pair by (category text, id): a missing category and "" are one, a string
    id gets a negative number of its own. Worked by hand: flow "k1"/"x" runs a (its start
    at 5) -> b (its step at 25) -> c (its end at 45, bound to the enclosing slice). Flow 9
    starts in a at 6 without a category and again in c at 46 with category "": one flow,
    so its end at 65 (in d) links from the later start, c. Rows follow (category, id) in
    the order first seen, then time: ids -1 ("k1", the first string), -1, 9."""
    slices = [{"ph": "X", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 10} for name, ts in (("a", 0), ("b", 20), ("c", 40), ("d", 60))]
    points = [
        {"ph": "s", "id": "k1", "cat": "x", "name": "f", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "t", "id": "k1", "cat": "x", "name": "f", "pid": 1, "tid": 1, "ts": 25},
        {"ph": "f", "id": "k1", "cat": "x", "name": "f", "pid": 1, "tid": 1, "ts": 45, "bp": "e"},
        {"ph": "s", "id": 9, "name": "f", "pid": 1, "tid": 1, "ts": 6},
        {"ph": "s", "id": 9, "cat": "", "name": "f", "pid": 1, "tid": 1, "ts": 46},
        {"ph": "f", "id": 9, "name": "f", "pid": 1, "tid": 1, "ts": 65, "bp": "e"},
    ]
    path = tmp_path / "flows.json"
    path.write_text(json.dumps({"traceEvents": slices + points}))
    profile = stepscope.load(path)
    plane, flows = profile.planes[0], profile.flows
    arrows = [(plane.event_name(int(s)), plane.event_name(int(d))) for s, d in zip(flows.src_event, flows.dst_event)]
    assert arrows == [("a", "b"), ("b", "c"), ("c", "d")]
    assert flows.flow_id.tolist() == [-1, -1, 9]
    assert flows.categories == ["x", ""]
    assert flows.category.tolist() == [0, 0, 1]
