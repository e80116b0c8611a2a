"""A profile's events and a tool's tables as DataFrames and Arrow tables (trace/frames.py).

Expected numbers come from the trace file read with json and gzip: one row per complete
("X") or instant ("i") event, their durations, names, categories and linking ids.
"""

from __future__ import annotations

import sys
from collections import Counter

import pandas as pd
import pyarrow as pa
import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.analysis.tables import Column, Table
from stepscope.errors import StepscopeError
from stepscope.trace.frames import EVENT_FRAME_COLUMNS
from tests.support.traces import read_json, shared

ALEXNET = shared("kineto/alexnet_small.pt.trace.json.gz")
A100 = shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz")


def kineto_events(path) -> list[dict]:
    return [event for event in read_json(path)["traceEvents"] if event.get("ph") in ("X", "i")]


def test_the_event_frame_has_a_row_per_event_with_its_numbers():
    events = kineto_events(ALEXNET)
    frame = stepscope.load(ALEXNET).to_pandas()
    assert list(frame.columns) == list(EVENT_FRAME_COLUMNS)
    assert len(frame) == len(events)
    # Durations in integer ps: Kineto's "dur" is in us (whole us in this file; instants have none).
    assert frame["duration_ps"].dtype == "int64" and frame["start_ps"].dtype == "int64"
    assert int(frame["duration_ps"].sum()) == sum(event.get("dur", 0) for event in events) * 1_000_000
    ends = [event["ts"] + event.get("dur", 0) for event in events]
    assert int((frame["start_ps"] + frame["duration_ps"]).max() - frame["start_ps"].min()) == (max(ends) - min(e["ts"] for e in events)) * 1_000_000
    assert frame.groupby("name").size().to_dict() == Counter(event["name"] for event in events)
    kernels = frame[frame["category"] == "kernel"]
    assert len(kernels) == sum(event.get("cat") == "kernel" for event in events)
    # Ids: nullable integers, missing where the event has none.
    for column, arg in (("correlation_id", "correlation"), ("external_id", "External id")):
        assert str(frame[column].dtype) == "Int64"
        assert int(frame[column].notna().sum()) == sum(arg in event.get("args", {}) for event in events)
    first_kernel = next(event for event in events if event.get("cat") == "kernel")
    assert first_kernel["args"]["correlation"] in set(kernels["correlation_id"].dropna())


def test_the_event_arrow_table_matches_the_frame():
    profile = stepscope.load(ALEXNET)
    table, frame = profile.to_arrow(), profile.to_pandas()
    assert table.num_rows == len(frame) and table.column_names == list(frame.columns)
    assert table.schema.field("duration_ps").type == pa.int64() and table.schema.field("name").type == pa.string()
    assert table.column("correlation_id").null_count == int(frame["correlation_id"].isna().sum()) > 0
    assert pa.compute.sum(table.column("duration_ps")).as_py() == int(frame["duration_ps"].sum())


def test_a_tool_table_keeps_its_counts_and_durations():
    """kernel_stats' table against the file's kernel events: launches and summed duration."""
    kernels = [event for event in kineto_events(A100) if event.get("cat") == "kernel"]
    frame = run_tool("kernel_stats", stepscope.load(A100)).table("kernels").to_pandas()
    assert frame["occurrences"].dtype == "int64" and int(frame["occurrences"].sum()) == len(kernels)
    assert frame["total_duration_ps"].dtype == "int64"
    assert int(frame["total_duration_ps"].sum()) == pytest.approx(sum(event["dur"] for event in kernels) * 1_000_000, abs=len(kernels))
    assert frame["total_duration_us"].dtype == "float64" and frame["is_kernel_using_tensor_core"].dtype == "bool"


def test_table_dtypes_and_missing_values():
    columns = (Column("count", "Count"), Column("share", "Share"), Column("name", "Name", "string"), Column("ok", "OK", "bool"), Column("empty", "Empty"))
    table = Table("t", columns, [(3, 0.5, "a", True, None), (None, None, None, None, None), (2**40, 1, "c", False, None)])
    frame = table.to_pandas()
    assert str(frame["count"].dtype) == "Int64" and frame["count"].tolist() == [3, pd.NA, 2**40]
    assert frame["share"].dtype == "float64" and frame["share"].isna().tolist() == [False, True, False]  # 1 and 0.5: floats
    assert frame["name"].isna().tolist() == [False, True, False] and frame["name"][2] == "c"
    assert str(frame["ok"].dtype) == "boolean" and frame["ok"].tolist() == [True, pd.NA, False]
    assert frame["empty"].isna().all()
    arrow = table.to_arrow()
    assert arrow.schema.field("count").type == pa.int64() and arrow.column("count").to_pylist() == [3, None, 2**40]
    assert arrow.schema.field("ok").type == pa.bool_() and arrow.column("ok").null_count == 1
    assert Table("none", columns, []).to_pandas().shape == (0, len(columns))


@pytest.mark.parametrize(("module", "hint"), [("pandas", "pip install pandas"), ("pyarrow", "pip install pyarrow")])
def test_a_missing_library_is_one_clear_line(monkeypatch, module, hint):
    monkeypatch.setitem(sys.modules, module, None)  # what an absent package imports as
    table = Table("t", (Column("x", "X"),), [(1,)])
    with pytest.raises(StepscopeError, match=rf"^{module} is not installed: {hint} \(or stepscope\["):
        table.to_pandas() if module == "pandas" else table.to_arrow()
