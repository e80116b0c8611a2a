"""The trace viewer's API on the real server (docs/dashboard.md "Trace viewer API"), its
numbers checked against the raw trace read with the standard library's json."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from stepscope.viewer import decode
from tests.support.perfetto_trace import read_pftrace
from tests.support.traces import read_json, shared

WHERE = dict(run="gpu", host="alexnet_small")
RAW = "kineto/alexnet_small.pt.trace.json.gz"


@pytest.fixture(scope="module")
def raw():
    return read_json(shared(RAW))["traceEvents"]


@pytest.fixture(scope="module")
def tracks(server):
    answer = server.ready("/api/trace/tracks", **WHERE)
    assert answer.status == 200
    return answer.json()


def test_tracks_hold_every_event_of_the_trace(tracks, raw):
    """Every event of the trace's processes; Kineto's own spans (string pids: the profiler's
    window and its markers) are not drawn, as in XProf."""
    complete_and_instants = [e for e in raw if e.get("ph") in ("X", "i") and isinstance(e["pid"], int)]
    assert tracks["event_count"] == len(complete_and_instants)
    assert sum(track["event_count"] for track in tracks["tracks"]) == len(complete_and_instants)
    assert tracks["sections"] == ["/device:GPU:0", "/host:CPU"]


def test_a_full_view_query_accounts_for_every_event(server, tracks, raw):
    answer = server.get("/api/trace/query", **WHERE, start_ps="0", end_ps=str(tracks["span_ps"] + 1), width_px="1600")
    assert answer.status == 200
    assert answer.headers["content-type"] == "application/octet-stream"
    decoded = decode(answer.body)
    counts = decoded["header"]["counts"]
    # Every event is drawn alone or inside a merged run: the two add up to all of them.
    assert counts["events"] + int(decoded["run_count"].sum()) == counts["overlapping"] == tracks["event_count"]


def test_a_track_subset_and_a_name_filter(server, tracks, raw):
    gpu = [track["id"] for track in tracks["tracks"] if track["section"] == "/device:GPU:0"]
    span = str(tracks["span_ps"] + 1)
    decoded = decode(server.get("/api/trace/query", **WHERE, start_ps="0", end_ps=span, width_px="800", tracks=",".join(map(str, gpu))).body)
    assert set(decoded["lane_track"].tolist()) <= set(gpu)
    gpu_events = [e for e in raw if e.get("ph") == "X" and e.get("pid") == 0]  # pid 0: GPU 0 in this trace
    assert decoded["header"]["counts"]["overlapping"] == len(gpu_events)
    filtered = decode(server.get("/api/trace/query", **WHERE, start_ps="0", end_ps=span, width_px="800", filter="CONV").body)
    assert filtered["header"]["counts"]["overlapping"] == sum(1 for e in raw if e.get("ph") == "X" and "conv" in e["name"].lower())


def test_find_steps_through_matches_and_details_show_the_args(server, raw):
    conv = sorted((float(e["ts"]), e) for e in raw if e.get("ph") == "X" and e["name"] == "aten::conv2d")
    first = server.get("/api/trace/find", **WHERE, text="aten::conv2d").json()["match"]
    assert first["name"] == "aten::conv2d" and first["ordinal"] == 0 and first["total"] == len(conv)
    second = server.get("/api/trace/find", **WHERE, text="aten::conv2d", after_id=str(first["id"])).json()["match"]
    assert second["ordinal"] == 1 and second["start_ps"] >= first["start_ps"]
    back = server.get("/api/trace/find", **WHERE, text="aten::conv2d", after_id=str(second["id"]), before="1").json()["match"]
    assert back["id"] == first["id"]

    event = server.get("/api/trace/event", **WHERE, id=str(first["id"])).json()
    expected = conv[0][1]
    assert event["details"]["name"] == "aten::conv2d"
    assert event["details"]["duration_ps"] == round(float(expected["dur"]) * 1_000_000)
    stats = {stat["name"]: stat["value"] for stat in event["details"]["stats"]}
    assert stats["external_id"] == expected["args"]["External id"]


def test_a_kernel_flows_back_to_its_launch(server, raw):
    kernel = next(e for e in raw if e.get("cat") == "kernel")
    launch = next(e for e in raw if e.get("cat") == "cuda_runtime" and e["args"].get("correlation") == kernel["args"]["correlation"])
    found = server.get("/api/trace/find", **WHERE, text=kernel["name"][:40]).json()["match"]
    flows = server.get("/api/trace/event", **WHERE, id=str(found["id"])).json()["flows"]
    ends = [flow[side]["name"] for flow in flows for side in ("from", "to")]
    assert launch["name"] in ends


def test_export_a_range_as_chrome_json(server, tracks, raw):
    start_ps, end_ps = tracks["span_ps"] // 4, tracks["span_ps"] // 2
    answer = server.get("/api/trace/export", **WHERE, start_ps=str(start_ps), end_ps=str(end_ps))
    assert answer.status == 200
    assert answer.headers["content-disposition"].startswith("attachment;")
    exported = json.load(io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(answer.body)), encoding="utf-8"))
    origin_us = tracks["start_ns"] / 1000
    expected = [
        e for e in raw if e.get("ph") == "X" and (float(e["ts"]) - origin_us) * 1e6 < end_ps and (float(e["ts"]) + float(e["dur"]) - origin_us) * 1e6 > start_ps
    ]
    assert 0 < len(expected) < sum(1 for e in raw if e.get("ph") == "X")
    assert sum(1 for e in exported["traceEvents"] if e.get("ph") == "X") == len(expected)


def test_export_a_range_as_perfetto_trace(server, tracks, raw, tmp_path):
    """``format=pftrace``: the same range as Perfetto's protobuf trace, read back with
    Perfetto's own protos; it holds one slice per complete event that overlaps the range,
    counted from the raw JSON as the Chrome JSON test counts them."""
    start_ps, end_ps = tracks["span_ps"] // 4, tracks["span_ps"] // 2
    answer = server.get("/api/trace/export", **WHERE, start_ps=str(start_ps), end_ps=str(end_ps), format="pftrace")
    assert answer.status == 200
    assert answer.headers["content-type"] == "application/octet-stream"
    assert answer.headers["content-disposition"].startswith("attachment;") and answer.headers["content-disposition"].endswith('.pftrace"')
    (tmp_path / "range.pftrace").write_bytes(answer.body)
    decoded = read_pftrace(tmp_path / "range.pftrace")
    origin_us = tracks["start_ns"] / 1000
    expected = [
        e for e in raw if e.get("ph") == "X" and (float(e["ts"]) - origin_us) * 1e6 < end_ps and (float(e["ts"]) + float(e["dur"]) - origin_us) * 1e6 > start_ps
    ]
    assert 0 < len(decoded.slices) == len(expected)
    bad = server.get("/api/trace/export", **WHERE, start_ps=str(start_ps), end_ps=str(end_ps), format="csv")
    assert bad.status == 400 and bad.json()["error"] == "format must be one of json, pftrace, not 'csv'"
    assert server.get("/api/runs").status == 200


@pytest.mark.parametrize(
    ("params", "words"),
    [
        (dict(start_ps="-5", end_ps="10", width_px="100"), "negative"),
        (dict(start_ps="10", end_ps="5", width_px="100"), "before"),
        (dict(start_ps="x", end_ps="5", width_px="100"), "integer"),
        (dict(start_ps="0", end_ps="5"), "width_px"),
        (dict(start_ps="0", end_ps="5", width_px="100", tracks="99999"), "track"),
    ],
)
def test_bad_query_parameters_are_400(server, params, words):
    server.ready("/api/trace/tracks", **WHERE)
    answer = server.get("/api/trace/query", **WHERE, **params)
    assert answer.status == 400
    assert words in answer.json()["error"]


def test_edge_ranges_answer_empty(server, tracks):
    for start, end in ((0, 0), (tracks["span_ps"] * 2, tracks["span_ps"] * 3)):
        decoded = decode(server.get("/api/trace/query", **WHERE, start_ps=str(start), end_ps=str(end), width_px="100").body)
        assert decoded["header"]["counts"]["events"] == 0


def export_files(server) -> list:
    return sorted((server.cache_dir / "exports").glob("*.json.gz"))


def test_ranges_covering_the_whole_profile_are_one_export(server, tracks):
    """100 different ranges, each holding the whole profile: one cache file, not 100."""
    span = tracks["span_ps"]
    before = export_files(server)
    bodies = set()
    for number in range(100):
        answer = server.get("/api/trace/export", **WHERE, start_ps="0", end_ps=str(span + 1 + number * 1_000_003))
        assert answer.status == 200
        bodies.add(answer.body)
    assert len(bodies) == 1
    whole = [path for path in export_files(server) if path.name.endswith(f".0_{span + 1}.json.gz")]
    assert len(whole) == 1
    assert len(export_files(server)) <= len(before) + 1
    assert not [path for path in (server.cache_dir / "exports").iterdir() if path.name.startswith(".")]  # no temporary left


def test_an_export_range_past_the_end_is_clamped_to_the_profile(server, tracks):
    span = tracks["span_ps"]
    clamped = server.get("/api/trace/export", **WHERE, start_ps=str(span // 2), end_ps=str(2**63 - 1))
    exact = server.get("/api/trace/export", **WHERE, start_ps=str(span // 2), end_ps=str(span + 1))
    assert clamped.status == exact.status == 200
    assert clamped.body == exact.body
    assert f"_{span // 2}_{span + 1}.json.gz" in clamped.headers["content-disposition"]
    assert int(clamped.headers["content-length"]) == len(clamped.body)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        (dict(start_ps="0", end_ps="9" * 400), "end_ps"),  # was a 500: a file name too long
        (dict(start_ps="0", end_ps=str(2**63)), "end_ps"),
        (dict(start_ps="-5", end_ps="10"), "start_ps"),
        (dict(start_ps="10", end_ps="5"), "end_ps"),
        (dict(start_ps="10", end_ps="10"), "end_ps"),
        (dict(start_ps="x", end_ps="5"), "start_ps"),
        (dict(start_ps="1_0", end_ps="50"), "start_ps"),
        (dict(start_ps="+5", end_ps="50"), "start_ps"),
        (dict(start_ps=" 5", end_ps="50"), "start_ps"),
        (dict(start_ps="0", end_ps="5e9"), "end_ps"),
        (dict(start_ps=str(10**18), end_ps=str(10**18 + 1)), "start_ps"),  # past the profile's end
        (dict(end_ps="10"), "start_ps"),
    ],
)
def test_bad_export_parameters_are_400_naming_the_parameter(server, tracks, params, named):
    answer = server.get("/api/trace/export", **WHERE, **params)
    assert answer.status == 400
    message = answer.json()["error"]
    assert named in message and len(message) < 200
    assert server.get("/api/runs").status == 200  # and the server goes on
