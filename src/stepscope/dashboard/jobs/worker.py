"""What the analysis worker process does with one profile: load it, produce every tool of
the registry, and leave the results as files the server hands out without parsing them
again. What a tool leaves depends on its output kind (``PRODUCERS``): a ``TABLES`` tool its
JSON and tables, the ``INDEX`` tool (the trace viewer) its index folder and, as its JSON,
the index's tracks.

It runs in a separate process (``analysis_cache``) because loading a large profile is
CPU-bound Python: in a thread it would hold the GIL and stall every other request. The
worker reports progress through a small JSON file the server reads when the page polls.
A worker killed half way leaves its staging folder (``.<key>.<pid>.*``) behind;
``remove_abandoned_staging`` removes those whose process is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import msgspec

from stepscope import jsonform
from stepscope.analysis import Output, ToolSpec, analysis_specs, specs
from stepscope.analysis.distributed import rank_tables_of
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.tables import Column, Table
from stepscope.errors import StepscopeError
from stepscope.trace import readers
from stepscope.trace.files import atomic_write
from stepscope.trace.model import Profile
from stepscope.trace.store import load_profile
from stepscope.viewer import build_index

# Result files in a profile's cache folder (the INDEX tool's: an index folder, and its
# tracks as the tool's JSON).
INDEX_FOLDER = "trace_index"
TOOL_SUFFIX = ".json"
TABLES_SUFFIX = ".tables.json"
ERROR_FILE = "error.json"  # beside the folder: <key>.error.json
PROGRESS_FILE = "progress.json"  # beside the folder: <key>.progress.json
RANK_FILE = "distributed.rank.json"  # the distributed view's map step: RankTables, or {"error": ...}
# {tool: why it has nothing to show, or ""}: every registry tool's ``why_not`` and, for the
# analyses over several profiles with a rule (the distributed view), theirs for a run of
# this profile alone.
APPLIES_FILE = "applies.json"
# The HTTP status a tool's document {"error": ..., "status": N} is served with: a tool that
# rejected the profile (StepscopeError) is the input's fault; any other failure is a 500.
INPUT_ERROR_STATUS = 422
CHECKSUMS_FILE = "checksums.json"  # {file name: [size, crc32]} of the folder's other files, written last

# Share of the progress bar given to loading the profile; the tools share the rest.
LOAD_SHARE = 0.5


class ProgressJson(TypedDict):
    """An analysis's progress as the page reads it (the body of a 202)."""

    state: str
    progress: float
    message: str


class ColumnJson(TypedDict):
    key: str
    label: str
    kind: str


class TableJson(TypedDict):
    name: str
    columns: list[ColumnJson]
    rows: list[list[object]]  # the cells: JSON numbers, strings, booleans, null


class TablesJson(TypedDict):
    """``<tool>.tables.json``: a result's tables (``/api/tables``, ``/api/csv``)."""

    tables: list[TableJson]


@dataclass(frozen=True)
class Progress:
    state: str  # "queued" | "loading" | "analysing"
    fraction: float
    message: str

    def to_json(self) -> ProgressJson:
        return {"state": self.state, "progress": round(self.fraction, 3), "message": self.message}


def write_progress(path: Path, progress: Progress) -> None:
    atomic_write(path, _dump(progress.to_json()))


def read_progress(path: Path) -> Progress | None:
    try:
        data = json.loads(path.read_bytes())
        return Progress(data["state"], float(data["progress"]), data["message"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def tables_json(tables: list[Table]) -> TablesJson:
    return {
        "tables": [
            {
                "name": table.name,
                "columns": [{"key": c.key, "label": c.label, "kind": c.kind} for c in table.columns],
                "rows": [list(row) for row in table.rows],
            }
            for table in tables
        ]
    }


def table_from_json(document: TableJson) -> Table:
    columns = tuple(Column(c["key"], c["label"], c["kind"]) for c in document["columns"])
    return Table(document["name"], columns, [tuple(row) for row in document["rows"]])


def _dump(value: object) -> bytes:
    return jsonform.encode(value)


def tool_documents(spec: ToolSpec, stats: OpStats, **options: Any) -> tuple[bytes, bytes]:
    """A ``TABLES`` tool's JSON and tables documents, encoded."""
    result = spec.run(stats, **options)
    return _dump(result.to_json()), _dump(tables_json(result.tables()))


def _produce_tables(spec: ToolSpec, stats: OpStats, staging: Path) -> None:
    try:
        document, tables = tool_documents(spec, stats)
    except MemoryError:  # the worker's cap, not the tool: the whole analysis stops
        raise
    except StepscopeError as error:  # the profile's fault (a damaged XLA program): its one line, 422
        document = tables = _dump({"error": str(error), "status": INPUT_ERROR_STATUS})
    except Exception as error:  # a bug in one tool must not hide the others
        document = tables = _dump({"error": f"{Path(stats.profile.source).name}: {spec.name} failed: {type(error).__name__}: {error}"})
    (staging / f"{spec.name}{TOOL_SUFFIX}").write_bytes(document)
    (staging / f"{spec.name}{TABLES_SUFFIX}").write_bytes(tables)


def _produce_index(spec: ToolSpec, stats: OpStats, staging: Path) -> None:
    index = build_index(stats.profile)
    index.save(staging / INDEX_FOLDER)
    (staging / f"{spec.name}{TOOL_SUFFIX}").write_bytes(_dump(index.tracks_json()))
    (staging / f"{spec.name}{TABLES_SUFFIX}").write_bytes(_dump({"tables": []}))


# What the worker leaves for a tool, by its output kind.
PRODUCERS: dict[Output, Callable[[ToolSpec, OpStats, Path], None]] = {
    Output.TABLES: _produce_tables,
    Output.INDEX: _produce_index,
}


def warm_up() -> None:
    """What a worker does as it starts (``pools.WorkerPool``'s ``warm``): reads a small
    XSpace and builds its index, which imports the reader, protobuf and the analysis
    modules the index needs (0.33-0.36 s of a fresh process, measured), so that the first
    profile a user opens does not wait for them."""
    build_index(readers.warm())


def analyse(profile_path: str, folder: str, progress_path: str) -> None:
    """Writes ``<tool>.json`` and ``<tool>.tables.json`` for every tool into ``folder``
    (and the index folder of the ``INDEX`` tool).

    The files are written into a temporary folder renamed to ``folder`` at the end, so a
    folder that exists is complete. A ``TABLES`` tool that fails leaves ``{"error": ...}``
    as its JSON (the other tools still work); a profile that cannot be read raises (the
    caller keeps the message).
    """
    target, progress_file, started = Path(folder), Path(progress_path), time.monotonic()
    write_progress(progress_file, Progress("loading", 0.02, f"reading {Path(profile_path).name}"))
    profile = load_profile(profile_path)  # from the store the workers share, built on the first read
    remove_abandoned_staging(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", dir=target.parent))
    try:
        tools = specs()
        stats = OpStats(profile)  # what the tools share, built once for all of them
        for number, spec in enumerate(tools):
            fraction = LOAD_SHARE + (0.97 - LOAD_SHARE) * number / len(tools)
            elapsed = time.monotonic() - started
            write_progress(progress_file, Progress("analysing", fraction, f"{spec.name} ({number + 1}/{len(tools)}, {elapsed:.0f} s)"))
            PRODUCERS[spec.output](spec, stats, staging)
        write_rank_tables(stats, staging)
        write_applies(profile, staging)
        write_checksums(staging)
        os.chmod(staging, 0o755)
        try:
            os.replace(staging, target)
        except OSError:  # another server finished the same profile first: keep its folder
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_applies(profile: Profile, staging: Path) -> None:
    """What each tool has to show for the profile (``APPLIES_FILE``), from the registry's
    rules: a glance at planes, lines and event types (microseconds; the tools' runs are
    the analysis)."""
    reasons = {spec.name: spec.why_not(profile) for spec in specs()}
    reasons.update({entry.name: entry.why_not(profile) for entry in analysis_specs() if entry.applies is not None})
    (staging / APPLIES_FILE).write_bytes(_dump(reasons))


def write_rank_tables(stats: OpStats, staging: Path) -> None:
    """The profile's rank tables: the distributed view's map step, done here with the
    ``OpStats`` the tools share (``dashboard.api.distributed_view`` reduces a run's). The host
    is left empty: the worker knows the file, not the run's name for it, which the server
    fills in. A failure is kept as the rank's error, as a failing tool's is, and never
    costs the profile its other tools."""
    try:
        document = msgspec.json.encode(rank_tables_of(stats, ""))
    except MemoryError:  # the worker's cap, as for a tool: the whole analysis stops
        raise
    except Exception as error:
        document = _dump({"error": f"{stats.profile.source}: the distributed view's tables failed ({type(error).__name__}: {error})"})
    (staging / RANK_FILE).write_bytes(document)


def checksum(data: bytes) -> list[int]:
    """What ``CHECKSUMS_FILE`` records of a file: [size, CRC-32] (CRC-32: ~1 GB/s, so
    checking even a 100 MB graph_viewer answer costs less than sending it)."""
    return [len(data), zlib.crc32(data)]


def write_checksums(staging: Path) -> None:
    """Records the size and CRC-32 of every file at the top of the folder, so the server can
    tell a damaged cached answer (truncated, replaced) from a good one before serving it."""
    sums = {file.name: checksum(file.read_bytes()) for file in sorted(staging.iterdir()) if file.is_file()}
    (staging / CHECKSUMS_FILE).write_bytes(_dump(sums))


def remove_abandoned_staging(target: Path) -> None:
    """Removes the staging folders of ``target`` (``.<name>.<pid>.<random>``) left by
    workers that were killed: those whose process no longer exists."""
    for staging in target.parent.glob(f".{target.name}.*"):
        pid = staging.name.removeprefix(f".{target.name}.").partition(".")[0]
        if staging.is_dir() and pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(staging, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, as another user's process
        pass
    return True
