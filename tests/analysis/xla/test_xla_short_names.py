"""XLA ops are named by their instruction (``copy-done.2``), not their whole HLO text
(``%copy-done.2 = f32[5,1024,1024,256]{...} copy-done(...)``), in every tool that names
them: the overview's top ops, the trace viewer's timeline and range summary, the
distributed collectives; the text stays in the event's details. Expected names are read
from the shared TPU XSpace with protobuf and a regex, not through stepscope's reader."""

from __future__ import annotations

import re
from functools import cache

from stepscope.analysis import run_tool
from stepscope.analysis.distributed import rank_tables, reduce_ranks
from stepscope.analysis.distributed.reduce import BY_DEVICE
from stepscope.protos import xplane_pb2
from stepscope.trace.op_names import op_label
from stepscope.trace.readers import load
from stepscope.viewer import TraceIndex, build_index, details, summarize
from tests.support.traces import shared

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
# The instruction's name: what stands before " = " in "%copy-done.2 = f32[...] copy-done(...)".
HLO_TEXT = re.compile(r"^%(\S+) = ")


@cache
def raw_texts() -> dict[str, set[str]]:
    """Each instruction name of HLO text -> the HLO texts that name it (one per program
    that has the instruction), from the raw XSpace."""
    texts: dict[str, set[str]] = {}
    for plane in xplane_pb2.XSpace.FromString(shared(TPU).read_bytes()).planes:
        for meta in plane.event_metadata.values():
            found = HLO_TEXT.match(meta.name)
            if found:
                texts.setdefault(meta.display_name or found.group(1), set()).add(meta.name)
    return texts


@cache
def raw_names() -> tuple[set[str], set[str]]:
    """(the names of the event types written as HLO text, every event's expected label),
    from the raw XSpace."""
    space = xplane_pb2.XSpace.FromString(shared(TPU).read_bytes())
    short: set[str] = set()
    labels: set[str] = set()
    for plane in space.planes:
        for meta in plane.event_metadata.values():
            found = HLO_TEXT.match(meta.name)
            if found:
                # XLA writes the instruction's name as the display name too, except for the
                # asynchronous copies it shows as "async-copy" (XProf's name): that one is kept.
                assert meta.display_name in (found.group(1), "async-copy") and found.group(1).startswith(("copy-start", meta.display_name))
                short.add(meta.display_name or found.group(1))
        for line in plane.lines:
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                found = HLO_TEXT.match(meta.name)
                labels.add((meta.display_name or found.group(1)) if found else meta.name)
    return short, labels


def test_the_label_of_hlo_text_is_the_instruction_name():
    assert op_label("%copy-done.2 = f32[8]{0} copy-done((f32[8]{0}, f32[8]{0:S(5)}, u32[]) %copy-start.2)") == "copy-done.2"
    assert op_label("fusion.3 = (f32[2]{0}, s32[]) fusion(f32[2]{0} %p), kind=kLoop") == "fusion.3"  # newer XLA: no "%"
    assert op_label("%whatever = f32[8]{0} add(...)", "add.1") == "add.1"  # a display name wins
    for plain in ("x = 3", "aten::mm", "ProfilerStep#3", "a = b c"):  # not HLO text: kept
        assert op_label(plain) == plain


def test_overview_top_ops_name_xla_ops_by_their_instruction():
    short, _ = raw_names()
    assert len(short) >= 10  # the file holds enough HLO text to mean something
    top = run_tool("overview_page", load(shared(TPU))).top_ops
    names = [row["name"] for row in top]
    assert names and not any(" = " in name or name.startswith("%") for name in names)
    assert set(names) <= short  # the TPU's top ops are all XLA instructions
    # Each with the HLO text its name shortens (one of its programs', where several share it).
    assert all(row["full_name"] in raw_texts()[row["name"]] for row in top)


def test_trace_viewer_names_and_range_summary_are_short_and_details_keep_the_text(tmp_path):
    short, labels = raw_names()
    profile = load(shared(TPU))
    index = build_index(profile)
    assert set(index.names) >= short
    assert not any(HLO_TEXT.match(name) for name in index.names)
    summary = summarize(index, 0, profile.span_ps, limit=100_000)
    assert {row["name"] for row in summary["names"]} == labels
    # A short name comes with the HLO text it shortens (saved with the index); others without.
    index.save(tmp_path / "index")
    loaded = summarize(TraceIndex.load(tmp_path / "index"), 0, profile.span_ps, limit=100_000)
    texts = raw_texts()
    assert loaded == summary and sum(row["name"] in texts for row in summary["names"]) >= 10
    for row in summary["names"]:
        assert row["full_name"] in texts[row["name"]] if row["name"] in texts else "full_name" not in row, row
    # The details of one copy-done: its short name, and the HLO text as the file has it.
    text = next(
        meta.name
        for plane in xplane_pb2.XSpace.FromString(shared(TPU).read_bytes()).planes
        for meta in plane.event_metadata.values()
        if meta.name.startswith("%copy-done")
    )
    name = HLO_TEXT.match(text).group(1)
    plane_index, plane = next((i, p) for i, p in enumerate(profile.planes) if text in p.metadata.names)
    row = int((plane.events.metadata_id == plane.metadata.names.index(text)).nonzero()[0][0])
    record = details(profile, [plane_index, row], index)
    assert (record["name"], record["full_name"], record["display_name"]) == (name, text, name)


def test_distributed_collectives_are_named_by_their_opcode():
    short, _ = raw_names()
    # "all-reduce.3" -> "all-reduce", as the distributed view groups calls.
    opcodes = {re.sub(r"[._]\d+$", "", name) for name in short}
    result = reduce_ranks("tpu", [rank_tables(load(shared(TPU)), "tpu")], by=BY_DEVICE)
    names = {row["name"] for row in result.collectives}
    assert names and names <= opcodes
    assert "all-reduce" in names  # the file's %all-reduce on chips 1-3
