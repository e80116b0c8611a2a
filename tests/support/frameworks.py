"""Helpers for tests that run real framework profilers (torch, JAX, TensorFlow) on the CPU.

Each framework runs in a subprocess of its own, so that TensorFlow, JAX and torch never
share a process (they bundle different copies of the same native libraries), and a
framework that crashes fails one test, not the session. The script writes what it did
(steps, wall-clock window, thread ids) to ``manifest.json``; the tests derive every
expected number from that manifest and from the files read independently of stepscope:
trace JSON with the standard library, XSpace with TSL's own generated protobuf class.
"""

from __future__ import annotations

import collections
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

# What the child prints before anything else when its framework does not import.
IMPORT_FAILED = "FRAMEWORK-IMPORT-FAILED:"

# Prepended to every child script: imports the framework, or says clearly that it could not.
_PRELUDE = """\
import json, os, sys, time, threading
try:
    {imports}
except Exception as error:  # noqa: BLE001 - any import failure is reported the same way
    print("{marker}", "{framework}", type(error).__name__, error, flush=True)
    raise SystemExit(3)
"""


def run_framework_script(tmp_path: Path, framework: str, imports: str, body: str, timeout: float = 240, switches: dict[str, str] | None = None) -> dict:
    """Runs ``imports`` + ``body`` with this interpreter in a fresh process; returns its manifest.

    The body sees ``OUT`` (a Path to an empty folder under tmp_path) and must write
    ``OUT / "manifest.json"``. A framework that fails to import fails the test with a
    clear message (the frameworks are test dependencies: never skipped). ``switches``:
    more environment variables (a framework's settings).
    """
    out = tmp_path / f"{framework}_out"
    out.mkdir()
    script = tmp_path / f"run_{framework}.py"
    prelude = _PRELUDE.format(
        imports=textwrap.indent(textwrap.dedent(imports).strip(), "    ").lstrip(),
        marker=IMPORT_FAILED,
        framework=framework,
    )
    script.write_text(prelude + "from pathlib import Path\nOUT = Path(sys.argv[1])\n" + textwrap.dedent(body))
    env = dict(os.environ)
    env.update(
        {
            "JAX_PLATFORMS": "cpu",  # no accelerator probing
            "CUDA_VISIBLE_DEVICES": "",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONUNBUFFERED": "1",
            **(switches or {}),
        }
    )
    try:
        done = subprocess.run(
            [sys.executable, str(script), str(out)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"the {framework} profiling script ran past {timeout} s:\n{_tail(error.stdout)}\n{_tail(error.stderr)}")
    if IMPORT_FAILED in done.stdout:
        line = next(line for line in done.stdout.splitlines() if IMPORT_FAILED in line)
        pytest.fail(f"{framework} is a test dependency but does not import here: {line}")
    if done.returncode != 0:
        pytest.fail(
            f"the {framework} profiling script failed (exit {done.returncode}):\n--- stdout ---\n{_tail(done.stdout)}\n--- stderr ---\n{_tail(done.stderr)}"
        )
    manifest = out / "manifest.json"
    if not manifest.exists():
        pytest.fail(f"the {framework} profiling script wrote no manifest:\n{_tail(done.stderr)}")
    return json.loads(manifest.read_text())


def _tail(text: str | bytes | None, size: int = 4000) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return (text or "")[-size:]


def find_files(root: Path, suffix: str) -> list[Path]:
    """Every file under ``root`` whose name ends with ``suffix``, with os.walk (not stepscope)."""
    found = []
    for folder, _, files in os.walk(root):
        found.extend(Path(folder) / name for name in files if name.endswith(suffix))
    return sorted(found)


# --- trace JSON, read with the standard library ------------------------------------------------


def read_json_exact(path: Path) -> dict:
    """Trace JSON with every non-integer number as a Decimal holding the file's exact text."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as stream:
        return json.load(stream, parse_float=Decimal)


def exact_ns(microseconds: int | Decimal) -> int:
    """A JSON microsecond value as integer nanoseconds; the value must be whole nanoseconds."""
    ns = Decimal(microseconds) * 1000
    assert ns == ns.to_integral_value(), f"{microseconds} us is not a whole number of nanoseconds"
    return int(ns)


def nearest_ns(microseconds: int | Decimal) -> int:
    """A JSON microsecond value rounded to the nearest nanosecond (half to even)."""
    return int((Decimal(microseconds) * 1000).to_integral_value(ROUND_HALF_EVEN))


# --- XSpace, read with TSL's own protobuf class --------------------------------------------------


def tsl_xplane_pb2() -> ModuleType:
    """TSL's generated ``xplane_pb2`` (message package ``tensorflow.profiler``), the class that
    TensorFlow, JAX and XProf write XSpace with.

    The module is loaded from its file inside the installed tensorflow package without
    running ``tensorflow/__init__`` (which would load all of TensorFlow into the test
    process). It registers ``tsl/profiler/protobuf/xplane.proto`` in the default descriptor
    pool; stepscope's copy is ``stepscope/protos/xplane.proto`` in package
    ``stepscope.xspace``, so the two never clash.
    """
    name = "tsl_profiler_xplane_pb2_for_tests"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("tensorflow (which ships TSL's xplane_pb2, the independent XSpace reader) is not installed")
    candidates = [Path(location) / "tsl" / "profiler" / "protobuf" / "xplane_pb2.py" for location in spec.submodule_search_locations]
    path = next((candidate for candidate in candidates if candidate.exists()), None)
    if path is None:
        pytest.fail(f"TSL's xplane_pb2.py is not in the tensorflow package (looked at {candidates})")
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


@dataclass
class XEventRecord:
    plane: str
    line: str
    name: str
    start_ps: int  # line.timestamp_ns * 1000 + offset_ps: the file's own clock
    duration_ps: int
    stats: dict[str, Any] = field(default_factory=dict)
    type_stats: dict[str, Any] = field(default_factory=dict)  # its event metadata's


@dataclass
class XSpaceSummary:
    hostnames: list[str]
    plane_names: list[str]
    line_names: dict[str, list[str]]  # plane -> names of its lines that hold events
    events: list[XEventRecord]
    plane_stats: dict[str, dict[str, Any]]

    def named(self, name: str) -> list[XEventRecord]:
        return sorted((event for event in self.events if event.name == name), key=lambda event: event.start_ps)

    def name_counts(self) -> collections.Counter:
        return collections.Counter((event.plane, event.name) for event in self.events)

    def name_durations(self) -> dict[tuple[str, str], int]:
        totals: dict[tuple[str, str], int] = collections.defaultdict(int)
        for event in self.events:
            totals[(event.plane, event.name)] += event.duration_ps
        return dict(totals)


def read_xspace_independently(path: Path) -> XSpaceSummary:
    """Every event of an ``.xplane.pb`` with its name and stats, through TSL's classes."""
    pb2 = tsl_xplane_pb2()
    space = pb2.XSpace()
    space.ParseFromString(path.read_bytes())

    def value(stat: Any, stat_names: dict[int, str]) -> Any:
        kind = stat.WhichOneof("value")
        if kind == "ref_value":
            return stat_names.get(stat.ref_value, "")
        return None if kind is None else getattr(stat, kind)

    events: list[XEventRecord] = []
    line_names: dict[str, list[str]] = {}
    plane_stats: dict[str, dict[str, Any]] = {}
    for plane in space.planes:
        stat_names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        plane_stats[plane.name] = {stat_names.get(s.metadata_id, ""): value(s, stat_names) for s in plane.stats}
        line_names[plane.name] = [line.name for line in plane.lines if line.events]
        events.extend(
            XEventRecord(
                plane=plane.name,
                line=line.name,
                name=plane.event_metadata[event.metadata_id].name,
                start_ps=line.timestamp_ns * 1000 + event.offset_ps,
                duration_ps=event.duration_ps,
                stats={stat_names.get(s.metadata_id, ""): value(s, stat_names) for s in event.stats},
                type_stats={stat_names.get(s.metadata_id, ""): value(s, stat_names) for s in plane.event_metadata[event.metadata_id].stats},
            )
            for line in plane.lines
            for event in line.events
        )
    return XSpaceSummary(
        hostnames=list(space.hostnames),
        plane_names=[plane.name for plane in space.planes],
        line_names=line_names,
        events=events,
        plane_stats=plane_stats,
    )
