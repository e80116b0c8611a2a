"""XProf's own converter on a profile file: what TensorBoard's profile plugin shows.

``xprof.convert.raw_to_tool_data.xspace_to_tool_data`` runs in-process (no server). XProf
may write caches beside its input, so each call converts a copy in a folder of its own.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from stepscope.trace import names
from tests.support.frameworks import read_xspace_independently


def xprof_tool(path: Path, tool: str) -> Any:
    """XProf's JSON for ``tool`` on the XSpace at ``path``."""
    from xprof.convert import raw_to_tool_data  # installed by requirements/test.txt

    with tempfile.TemporaryDirectory(prefix="xprof-") as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, {"use_saved_result": False})
    assert data, f"XProf returned no {tool} data"
    return json.loads(data)


def _rows(table: dict) -> list[dict]:
    columns = [column["id"] for column in table.get("cols") or []]
    return [dict(zip(columns, (cell.get("v") for cell in row["c"]))) for row in table.get("rows") or []]


def xprof_steps(path: Path) -> list[tuple[str, float]]:
    """(step name, step time in ms) of each step XProf's overview page lists, in order."""
    for table in xprof_tool(path, "overview_page"):
        rows = _rows(table)
        if rows and "stepnum" in rows[0]:
            return [(str(row["stepnum"]), float(row["stepTimeMs"])) for row in rows]
    return []


def xprof_framework_ops(path: Path) -> dict[str, dict]:
    """XProf's framework op stats rows by operation name, less its IDLE row."""
    document = xprof_tool(path, "framework_op_stats")
    table = document[0] if isinstance(document, list) else document
    rows = [row for row in _rows(table) if row["type"] != "IDLE"]
    by_name = {row["operation"]: row for row in rows}
    assert len(by_name) == len(rows), "XProf lists an operation twice"
    return by_name


def recorded_steps(path: Path) -> list[tuple[int, int]]:
    """(step number, window length in ps) of each recorded ``stepscope.step`` marker, reaching
    back over a ``stepscope.data.wait`` that ends in the gap before it; from the file's events
    by the independent reader (the line the writer adds for XProf set apart)."""
    events = [event for event in read_xspace_independently(path).events if event.line != names.XPROF_STEPS_LINE]
    markers = sorted((e for e in events if e.name == names.STEPSCOPE_STEP), key=lambda e: e.start_ps)
    waits = [e for e in events if e.name == names.STEPSCOPE_INPUT_WAIT]
    steps, previous_end = [], -(2**63)
    for marker in markers:
        end = marker.start_ps + marker.duration_ps
        starts = [w.start_ps for w in waits if previous_end < w.start_ps + w.duration_ps <= marker.start_ps]
        steps.append((marker.stats[names.STEP_NUM], end - min([marker.start_ps, *starts])))
        previous_end = end
    return steps
