"""Bad and drifted input files: what `stepscope.load` and the CLI do with them.

Two families:

- rejected input (empty, truncated, corrupt, NaN or negative durations, not a profile at all,
  JSON without trace events): ``load`` raises ``ProfileFormatError`` whose message is
  ``<path>: <problem>`` and says what is wrong; ``stepscope info`` prints exactly one line
  ``stepscope: error: ...`` and exits 2; nothing touches the input, and ``stepscope convert``
  writes no output;
- tolerated drift (raw control characters, invalid UTF-8, integers past int64, a JSON Array
  Format trace without its closing bracket): the profile loads, validates, carries a warning
  in ``profile.info["warnings"]`` and keeps the affected value.

Every bad file is made in ``tmp_path``, mostly by damaging a copy of a real profile from
``../shared/traces``.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope import ProfileFormatError
from stepscope.cli import main
from stepscope.protos import xplane_pb2
from tests.support.cli import assert_one_error_line
from tests.support.traces import shared

ALEXNET = "kineto/alexnet_small.pt.trace.json.gz"
CPU_ONLY = "kineto/cpu_only_rank34.pt.trace.json.gz"
XPLANE = "xplane/tpu_v_inference_4chips.xplane.pb"
# An mtime far in the past, so that any write to an input shows up as a changed mtime.
OLD_MTIME_NS = 1_000_000_000 * 1_000_000_000


# --- helpers --------------------------------------------------------------------------------


def raw_bytes(name: str) -> bytes:
    """A shared trace's bytes, gunzipped."""
    data = shared(name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def trace_document(name: str) -> dict[str, Any]:
    """A shared Kineto trace as a Python dict (the standard library reads it)."""
    return json.loads(raw_bytes(name))


def dump(document: Any) -> bytes:
    """JSON as Python writes it: big ints exactly, NaN as the bare ``NaN`` literal."""
    return json.dumps(document).encode()


def stepscope_command() -> list[str]:
    script = Path(sys.executable).with_name("stepscope")
    return [str(script)] if script.exists() else [sys.executable, "-m", "stepscope.cli"]


def run_cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    return subprocess.run(
        [*stepscope_command(), *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_cli_in_process(*args: str | Path, capsys: pytest.CaptureFixture[str]) -> subprocess.CompletedProcess[str]:
    """``stepscope ARGS`` through the console script's entry point, in this process (fast).

    An exception escaping ``main`` is what the user would see as a traceback.
    """
    capsys.readouterr()
    try:
        code = main([str(arg) for arg in args])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:
        pytest.fail(f"stepscope {' '.join(map(str, args))} raised {type(error).__name__} (a traceback): {error}")
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


@dataclass(frozen=True)
class Snapshot:
    """A file's bytes and mtime, and the names in its folder, to check nothing was written."""

    data: bytes
    mtime_ns: int
    siblings: frozenset[str]

    @classmethod
    def of(cls, path: Path) -> Snapshot:
        return cls(path.read_bytes(), path.stat().st_mtime_ns, frozenset(p.name for p in path.parent.iterdir()))

    def assert_unchanged(self, path: Path) -> None:
        assert path.read_bytes() == self.data, f"{path} was modified"
        assert path.stat().st_mtime_ns == self.mtime_ns, f"{path}'s mtime changed"
        assert frozenset(p.name for p in path.parent.iterdir()) == self.siblings, "files appeared beside the input"


def write_input(tmp_path: Path, name: str, data: bytes) -> Path:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    os.utime(path, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
    return path


def events_named(profile: stepscope.Profile, name: str) -> list[tuple[stepscope.Plane, int]]:
    """(plane, row) of every event called ``name``."""
    found = []
    for plane in profile.planes:
        ids = [index for index, meta_name in enumerate(plane.metadata.names) if meta_name == name]
        found.extend((plane, row) for row in range(len(plane.events)) if int(plane.events.metadata_id[row]) in ids)
    return found


def stat_value(plane: stepscope.Plane, row: int, stat_name: str) -> Any:
    values = [stat.value for stat in plane.event_stats(row) if stat.name == stat_name]
    assert values, f"event has no stat {stat_name!r}: {plane.event_stats(row)}"
    return values[-1]


def warnings_of(profile: stepscope.Profile) -> list[str]:
    warnings = profile.info.get("warnings", [])
    assert all(isinstance(w, str) for w in warnings), warnings
    return warnings


def cut(data: bytes, pattern: bytes, occurrence: int = 5, extra: int = 0) -> bytes:
    """``data`` cut ``extra`` bytes after the start of the ``occurrence``-th ``pattern``."""
    matches = [m.start() for m in re.finditer(re.escape(pattern), data)]
    assert len(matches) > occurrence, f"pattern {pattern!r} not found often enough"
    return data[: matches[occurrence] + extra]


# --- rejected input ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BadCase:
    file_name: str
    make: Callable[[], bytes]
    # What the problem part of the message must say (a regex, case-insensitive).
    problem: str
    # Also run the real `stepscope` executable on it (one file of each kind of damage).
    subprocess: bool = False


def _kineto_with(name: str, edit: Callable[[dict[str, Any]], None]) -> bytes:
    document = trace_document(name)
    edit(document)
    return dump(document)


def _set_event(index: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        document["traceEvents"][index].update(fields)

    return edit


def _xplane_with(edit: Callable[[xplane_pb2.XSpace], None]) -> bytes:
    space = xplane_pb2.XSpace()
    space.ParseFromString(raw_bytes(XPLANE))
    edit(space)
    return space.SerializeToString()


def _negative_xplane_duration(space: xplane_pb2.XSpace) -> None:
    event = next(event for plane in space.planes for line in plane.lines for event in line.events)
    event.duration_ps = -1_000


def _overwrite_middle(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + b"\xff" * 64 + data[middle + 64 :]


def _huge_first_length(data: bytes) -> bytes:
    # Field 1 (planes), then a 9-byte varint length far past the end of the file.
    return b"\x0a" + b"\xff" * 8 + b"\x7f" + data[10:]


def _without_events(document: dict[str, Any]) -> None:
    del document["traceEvents"]


def _metadata_only(document: dict[str, Any]) -> None:
    document["traceEvents"] = [e for e in document["traceEvents"] if e.get("ph") == "M"]


def _random_bytes(seed: int, size: int = 4096) -> bytes:
    return random.Random(seed).randbytes(size)


_PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82"
)


def _half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _unclosed_array(events: list[bytes]) -> bytes:
    """The JSON Array Format without its closing bracket (as a process killed mid-trace leaves it)."""
    return b"[\n" + b",\n".join(events)


def _bad_crc(gz: bytes) -> bytes:
    return gz[:-8] + bytes(b ^ 0xFF for b in gz[-8:-4]) + gz[-4:]


_NAN_CHROME = b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": NaN, "pid": 1, "tid": 1}]}'
_TEXT = b"This is not a trace.\nJust some notes.\n"

BAD_CASES: dict[str, BadCase] = {
    # empty
    "empty-json": BadCase("empty.pt.trace.json", lambda: b"", r"\bempty\b", subprocess=True),
    "empty-xplane": BadCase("empty.xplane.pb", lambda: b"", r"\bempty\b"),
    "whitespace-only": BadCase("blank.trace.json", lambda: b" \n\t\r\n ", r"\bempty\b"),
    "empty-gzip": BadCase("empty.pt.trace.json.gz", lambda: gzip.compress(b""), r"\bempty\b"),
    # truncated JSON, cut inside each kind of token of a real Kineto trace
    "truncated-json-half": BadCase("half.pt.trace.json", lambda: _half(raw_bytes(ALEXNET)), r"truncated", subprocess=True),
    "truncated-json-in-string": BadCase("in_string.pt.trace.json", lambda: cut(raw_bytes(ALEXNET), b'"name": "', extra=12), r"truncated"),
    "truncated-json-in-key": BadCase("in_key.pt.trace.json", lambda: cut(raw_bytes(CPU_ONLY), b'"name"', extra=3), r"truncated"),
    "truncated-json-in-number": BadCase("in_number.pt.trace.json", lambda: cut(raw_bytes(CPU_ONLY), b'"ts": ', extra=9), r"truncated"),
    "truncated-json-after-colon": BadCase("after_colon.pt.trace.json", lambda: cut(raw_bytes(CPU_ONLY), b'"dur": ', extra=7), r"truncated"),
    "truncated-json-between-events": BadCase("between_events.pt.trace.json", lambda: cut(raw_bytes(CPU_ONLY), b"},\n  {", extra=2), r"truncated"),
    "truncated-json-last-brace": BadCase("last_brace.pt.trace.json", lambda: raw_bytes(CPU_ONLY).rstrip()[:-1], r"truncated"),
    "truncated-array-inside-event": BadCase("array.trace.json", lambda: _unclosed_array(_array_events())[:-20], r"truncated"),
    "truncated-gzip": BadCase("cut.pt.trace.json.gz", lambda: _half(shared(ALEXNET).read_bytes()), r"truncated", subprocess=True),
    "corrupt-gzip-crc": BadCase("crc.pt.trace.json.gz", lambda: _bad_crc(shared(CPU_ONLY).read_bytes()), r"corrupt"),
    # truncated / corrupt protobuf
    "truncated-xplane-half": BadCase("half.xplane.pb", lambda: _half(raw_bytes(XPLANE)), r"truncated", subprocess=True),
    "truncated-xplane-last-byte": BadCase("short.xplane.pb", lambda: raw_bytes(XPLANE)[:-1], r"truncated"),
    "truncated-xplane-gzip": BadCase("cut.xplane.pb.gz", lambda: gzip.compress(raw_bytes(XPLANE))[:50_000], r"truncated"),
    "corrupt-xplane-overwritten": BadCase("overwritten.xplane.pb", lambda: _overwrite_middle(raw_bytes(XPLANE)), r"corrupt", subprocess=True),
    "corrupt-xplane-length": BadCase("length.xplane.pb", lambda: _huge_first_length(raw_bytes(XPLANE)), r"corrupt|truncated"),
    # NaN and negative durations
    "nan-duration-kineto": BadCase(
        "nan.pt.trace.json",
        lambda: _kineto_with(CPU_ONLY, _set_event(6, dur=float("nan"))),
        r"duration",
        subprocess=True,
    ),
    "nan-duration-chrome": BadCase("nan.trace.json", lambda: _NAN_CHROME, r"duration"),
    "negative-duration-kineto": BadCase(
        "negative.pt.trace.json",
        lambda: _kineto_with(CPU_ONLY, _set_event(6, dur=-2.503)),
        r"negative duration",
        subprocess=True,
    ),
    "negative-duration-xplane": BadCase("negative.xplane.pb", lambda: _xplane_with(_negative_xplane_duration), r"negative duration"),
    # something else entirely
    "png": BadCase("image.pt.trace.json", lambda: _PNG, r"not a (profile|trace)", subprocess=True),
    "random-bytes": BadCase("random.xplane.pb", lambda: _random_bytes(1), r"not a (profile|trace|valid)", subprocess=True),
    "random-bytes-gzip": BadCase("random.pt.trace.json.gz", lambda: gzip.compress(_random_bytes(2)), r"not a (profile|trace|valid)"),
    "plain-text": BadCase("notes.trace.json", lambda: _TEXT, r"not a (profile|trace)", subprocess=True),
    # JSON without trace events
    "json-object-without-events": BadCase("object.trace.json", lambda: b'{"foo": 1, "bar": [1, 2]}', r"events"),
    "json-empty-event-list": BadCase("empty_list.trace.json", lambda: b'{"traceEvents": []}', r"events"),
    "json-empty-array": BadCase("empty_array.trace.json", lambda: b"[]", r"events"),
    "json-events-not-a-list": BadCase("not_list.trace.json", lambda: b'{"traceEvents": 5}', r"events"),
    "json-array-of-numbers": BadCase("numbers.trace.json", lambda: b"[1, 2, 3]", r"events"),
    "kineto-header-only": BadCase("header.pt.trace.json", lambda: _kineto_with(CPU_ONLY, _without_events), r"events", subprocess=True),
    "kineto-metadata-only": BadCase("metadata.pt.trace.json", lambda: _kineto_with(CPU_ONLY, _metadata_only), r"events"),
}


@pytest.fixture(params=list(BAD_CASES), ids=list(BAD_CASES))
def bad_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, BadCase]:
    case = BAD_CASES[request.param]
    return write_input(tmp_path, case.file_name, case.make()), case


def test_load_rejects_with_a_message_naming_file_and_problem(bad_file: tuple[Path, BadCase]) -> None:
    path, case = bad_file
    before = Snapshot.of(path)
    with pytest.raises(ProfileFormatError) as caught:
        stepscope.load(path)
    error = caught.value
    assert error.path == str(path)
    assert str(error) == f"{path}: {error.problem}"
    assert re.search(case.problem, error.problem, re.IGNORECASE), f"message does not say /{case.problem}/: {error}"
    before.assert_unchanged(path)


def test_cli_info_prints_one_error_line_and_exits_2(bad_file: tuple[Path, BadCase], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = bad_file
    before = Snapshot.of(path)
    result = run_cli_in_process("info", path, capsys=capsys)
    # The wording of the problem is checked through load() above; here, the CLI's contract.
    assert_one_error_line(result, f"{path}: ")
    assert result.stdout == ""
    before.assert_unchanged(path)


def test_cli_convert_writes_nothing(bad_file: tuple[Path, BadCase], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = bad_file
    before = Snapshot.of(path)
    out_dir = path.parent.parent / "out"
    out_dir.mkdir()
    for target in (out_dir / "converted.xplane.pb", out_dir / "converted.json.gz"):
        result = run_cli_in_process("convert", path, target, capsys=capsys)
        assert_one_error_line(result, f"{path}: ")
        assert not target.exists()
        assert list(out_dir.iterdir()) == [], "convert left files (temporaries?) behind"
    before.assert_unchanged(path)


@pytest.mark.parametrize("case_id", [key for key, case in BAD_CASES.items() if case.subprocess])
def test_stepscope_executable_on_bad_file(tmp_path: Path, case_id: str) -> None:
    """The real executable: one stderr line, no traceback, exit 2, no output file, input untouched."""
    case = BAD_CASES[case_id]
    path = write_input(tmp_path, case.file_name, case.make())
    before = Snapshot.of(path)
    assert_one_error_line(run_cli("info", path, cwd=tmp_path), f"{path}: ")
    target = tmp_path / "out" / "converted.json"
    assert_one_error_line(run_cli("convert", path, target, cwd=tmp_path), f"{path}: ")
    assert not target.parent.exists() or list(target.parent.iterdir()) == []
    before.assert_unchanged(path)


def test_cli_info_json_format_error_is_one_line(tmp_path: Path) -> None:
    path = write_input(tmp_path, "cut.pt.trace.json", raw_bytes(CPU_ONLY)[:5000])
    result = run_cli("info", path, "--format", "json", cwd=tmp_path)
    assert_one_error_line(result, str(path))
    assert result.stdout == ""


def test_load_of_a_directory_is_a_format_error(tmp_path: Path) -> None:
    folder = tmp_path / "run.pt.trace.json"
    folder.mkdir()
    with pytest.raises(ProfileFormatError, match=re.escape(str(folder)) + ": .*directory"):
        stepscope.load(folder)


# --- tolerated drift ------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftCase:
    file_name: str
    make: Callable[[], bytes]
    warning: str  # regex a warning must match (case-insensitive)
    check: Callable[[stepscope.Profile], None]  # the affected value came through


CONTROL_NAME = "ctl\x01name\x1fend"
CONTROL_ARG = "arg\x02\x1bvalue"


def _with_control_characters() -> bytes:
    document = trace_document(CPU_ONLY)
    document["traceEvents"][6]["name"] = "CTLNAME"
    document["traceEvents"][6]["args"]["note"] = "CTLARG"
    data = dump(document)
    return data.replace(b"CTLNAME", CONTROL_NAME.encode()).replace(b"CTLARG", CONTROL_ARG.encode())


def _check_control_characters(profile: stepscope.Profile) -> None:
    [(plane, row)] = events_named(profile, CONTROL_NAME)
    assert stat_value(plane, row, "note") == CONTROL_ARG


WHITESPACE_NAME = "tab\tand\nnewline"


def _with_raw_whitespace() -> bytes:
    document = trace_document(CPU_ONLY)
    document["traceEvents"][6]["name"] = "WSNAME"
    return dump(document).replace(b"WSNAME", WHITESPACE_NAME.encode())


def _check_raw_whitespace(profile: stepscope.Profile) -> None:
    assert len(events_named(profile, WHITESPACE_NAME)) == 1


def _with_invalid_utf8() -> bytes:
    document = trace_document(CPU_ONLY)
    document["traceEvents"][6]["name"] = "UTFNAME"
    document["traceEvents"][6]["args"]["note"] = "UTFARG"
    data = dump(document)
    return data.replace(b"UTFNAME", b"bad\xff\xfename").replace(b"UTFARG", b"cut \xc3 sequence")


def _check_invalid_utf8(profile: stepscope.Profile) -> None:
    names = {name for plane in profile.planes for name in plane.metadata.names}
    replaced = [name for name in names if name.startswith("bad") and name.endswith("name") and "\ufffd" in name]
    assert len(replaced) == 1, sorted(names)
    [(plane, row)] = events_named(profile, replaced[0])
    note = stat_value(plane, row, "note")
    assert note.startswith("cut ") and note.endswith(" sequence") and "\ufffd" in note


BIG = {"past_int64": 2**63, "past_uint64": 2**64 + 1, "huge": 10**30, "below_int64": -(2**63) - 1}


def _with_big_int_args() -> bytes:
    document = trace_document(CPU_ONLY)
    document["traceEvents"][6]["name"] = "big ints"
    document["traceEvents"][6]["args"].update(BIG)
    document["traceEvents"][6]["args"]["External id"] = 2**64 + 5
    return dump(document)


def _same_int(value: Any, expected: int) -> bool:
    """An int past int64 may come through as the exact int or its decimal string."""
    return (isinstance(value, int) and not isinstance(value, bool) and value == expected) or value == str(expected)


def _check_big_int_args(profile: stepscope.Profile) -> None:
    [(plane, row)] = events_named(profile, "big ints")
    for key, expected in BIG.items():
        assert _same_int(stat_value(plane, row, key), expected), (key, stat_value(plane, row, key))
    assert _same_int(stat_value(plane, row, "external_id"), 2**64 + 5)


def _with_big_flow_ids() -> bytes:
    document = trace_document(ALEXNET)
    for event in document["traceEvents"]:
        if event.get("ph") in ("s", "t", "f") and isinstance(event.get("id"), int):
            event["id"] += 2**64
    return dump(document)


def _check_big_flow_ids(profile: stepscope.Profile) -> None:
    # Every arrow of the original is still drawn: offsetting all ids changes no pairing.
    assert len(profile.flows) == len(stepscope.load(shared(ALEXNET)).flows)


BIG_TID = 2**64 + 3


def _with_big_thread_id() -> bytes:
    document = trace_document(CPU_ONLY)
    for event in document["traceEvents"]:
        if event.get("tid") == 3553:
            event["tid"] = BIG_TID
    return dump(document)


def _check_big_thread_id(profile: stepscope.Profile) -> None:
    rows = events_named(profile, "gloo:all_reduce")
    assert len(rows) == 10
    lines = {plane.lines[int(plane.events.line[row])].name for plane, row in rows}
    assert len(lines) == 2, lines  # the big thread is still a thread of its own


def _array_events() -> list[bytes]:
    return [dump(event) for event in trace_document(CPU_ONLY)["traceEvents"]]


def _check_array(profile: stepscope.Profile) -> None:
    reference = stepscope.load(shared(CPU_ONLY))
    assert profile.event_count == reference.event_count
    names = sorted(name for plane in profile.planes for name in plane.metadata.names)
    assert names == sorted(name for plane in reference.planes for name in plane.metadata.names)


_UNCLOSED = r"bracket|\]|unterminated|closing|unclosed|truncat|incomplete"

DRIFT_CASES: dict[str, DriftCase] = {
    "control-characters": DriftCase("control.pt.trace.json", _with_control_characters, r"control", _check_control_characters),
    "raw-tab-and-newline": DriftCase("whitespace.pt.trace.json", _with_raw_whitespace, r".", _check_raw_whitespace),
    "invalid-utf8": DriftCase("utf8.pt.trace.json", _with_invalid_utf8, r"utf-?8", _check_invalid_utf8),
    "big-int-args": DriftCase("big_args.pt.trace.json", _with_big_int_args, r"int64|integer", _check_big_int_args),
    "big-flow-ids": DriftCase("big_flows.pt.trace.json", _with_big_flow_ids, r"int64|integer", _check_big_flow_ids),
    "big-thread-id": DriftCase("big_tid.pt.trace.json", _with_big_thread_id, r"int64|integer", _check_big_thread_id),
    "array-without-closing-bracket": DriftCase("unclosed.pt.trace.json", lambda: _unclosed_array(_array_events()) + b"\n", _UNCLOSED, _check_array),
    "array-without-closing-bracket-trailing-comma": DriftCase(
        "unclosed_comma.pt.trace.json", lambda: _unclosed_array(_array_events()) + b",\n", _UNCLOSED, _check_array
    ),
}


@pytest.fixture(params=list(DRIFT_CASES), ids=list(DRIFT_CASES))
def drifted_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, DriftCase]:
    case = DRIFT_CASES[request.param]
    return write_input(tmp_path, case.file_name, case.make()), case


def test_drifted_file_loads_validates_and_keeps_the_value(drifted_file: tuple[Path, DriftCase]) -> None:
    path, case = drifted_file
    before = Snapshot.of(path)
    profile = stepscope.load(path)
    profile.validate()
    case.check(profile)
    before.assert_unchanged(path)


def test_drifted_file_is_loaded_with_a_warning(drifted_file: tuple[Path, DriftCase]) -> None:
    path, case = drifted_file
    warnings = warnings_of(stepscope.load(path))
    assert any(re.search(case.warning, w, re.IGNORECASE) for w in warnings), f"no warning matching /{case.warning}/ in {warnings}"


def test_drifted_file_converts(drifted_file: tuple[Path, DriftCase], capsys: pytest.CaptureFixture[str]) -> None:
    """What loads can be written: ``stepscope convert`` to XSpace and to JSON succeeds."""
    path, case = drifted_file
    before = Snapshot.of(path)
    out_dir = path.parent.parent / "out"
    out_dir.mkdir()
    for target in (out_dir / "converted.xplane.pb", out_dir / "converted.json.gz"):
        result = run_cli_in_process("convert", path, target, capsys=capsys)
        assert result.returncode == 0, result.stderr
        assert "stepscope: error" not in result.stderr
        converted = stepscope.load(target)
        converted.validate()
        case.check(converted)
    before.assert_unchanged(path)


def test_array_format_cut_inside_an_event_is_still_rejected(tmp_path: Path) -> None:
    """Only a missing bracket is tolerated, not a missing half of the last event."""
    events = _array_events()
    path = write_input(tmp_path, "cut.pt.trace.json", b"[\n" + b",\n".join(events[:3]) + b",\n" + events[3][:25])
    with pytest.raises(ProfileFormatError, match=re.escape(f"{path}: ")):
        stepscope.load(path)


# --- XSpace that parses but is semantically odd -----------------------------------------------


def _small_space(plane_name: str = "/host:CPU") -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace()
    plane = space.planes.add()
    plane.id = 1
    plane.name = plane_name
    plane.event_metadata[1].id = 1
    plane.event_metadata[1].name = "op"
    return space


def _add_line(space: xplane_pb2.XSpace, timestamp_ns: int, events: list[tuple[int, int]]) -> None:
    plane = space.planes[0]
    line = plane.lines.add()
    line.id = len(plane.lines)
    line.name = f"line {line.id}"
    line.timestamp_ns = timestamp_ns
    for offset_ps, duration_ps in events:
        event = line.events.add()
        event.metadata_id = 1
        event.offset_ps = offset_ps
        event.duration_ps = duration_ps


def _far_apart_lines() -> bytes:
    space = _small_space()
    _add_line(space, 1_000, [(0, 10)])
    _add_line(space, 2**62, [(0, 10)])
    return space.SerializeToString()


def _end_past_int64() -> bytes:
    space = _small_space()
    _add_line(space, 1_000, [(0, 10), (2**63 - 1, 10)])
    return space.SerializeToString()


def _late_event_overflowing() -> bytes:
    space = _small_space()
    _add_line(space, 1_000, [(0, 10), (2**62, 2**62 + 10)])
    return space.SerializeToString()


@pytest.mark.parametrize(
    "make",
    [_far_apart_lines, _end_past_int64, _late_event_overflowing],
    ids=["far-apart-lines", "end-past-int64", "overflowing-event"],
)
def test_xspace_with_out_of_range_times_loads_valid_or_is_rejected(tmp_path: Path, make: Callable[[], bytes]) -> None:
    """Times whose picosecond values overflow int64: a clear ProfileFormatError, or a valid profile."""
    path = write_input(tmp_path, "odd.xplane.pb", make())
    try:
        profile = stepscope.load(path)
    except ProfileFormatError as error:
        assert str(error).startswith(f"{path}: ")
        return
    profile.validate()


@pytest.mark.parametrize("first_bytes", [b"\n{", b"\n["], ids=["newline-brace", "newline-bracket"])
def test_valid_xspace_whose_first_bytes_look_like_json_loads(tmp_path: Path, first_bytes: bytes) -> None:
    """A first plane of 123 (b'{') or 91 (b'[') bytes starts the file with b'\\n{' / b'\\n[';
    it is still XSpace, not JSON."""
    for padding in range(200):
        space = _small_space("/host:CPU" + "x" * padding)
        _add_line(space, 1_000, [(0, 10), (20, 5)])
        data = space.SerializeToString()
        if data[:2] == first_bytes:
            break
    else:
        pytest.fail(f"no plane size gives first bytes {first_bytes!r}")
    path = write_input(tmp_path, "host.xplane.pb", data)
    profile = stepscope.load(path)
    profile.validate()
    assert profile.event_count == 2


# --- CLI usage errors -------------------------------------------------------------------------


@pytest.mark.parametrize("name", [CPU_ONLY, XPLANE])
def test_convert_onto_its_own_input_is_refused(tmp_path: Path, name: str) -> None:
    path = write_input(tmp_path, Path(name).name, shared(name).read_bytes())
    before = Snapshot.of(path)
    for target in (path, path.parent / "." / path.name):
        result = run_cli("convert", path, target, cwd=tmp_path)
        assert_one_error_line(result, str(target))
        before.assert_unchanged(path)


def test_convert_onto_its_own_input_by_relative_name_is_refused(tmp_path: Path) -> None:
    path = write_input(tmp_path, "trace.pt.trace.json.gz", shared(CPU_ONLY).read_bytes())
    before = Snapshot.of(path)
    result = run_cli("convert", "in/trace.pt.trace.json.gz", path, cwd=tmp_path)
    assert_one_error_line(result)
    before.assert_unchanged(path)


def test_convert_to_unknown_suffix_fails_before_reading(tmp_path: Path) -> None:
    good = write_input(tmp_path, "good.pt.trace.json.gz", shared(CPU_ONLY).read_bytes())
    corrupt = write_input(tmp_path, "corrupt.xplane.pb", raw_bytes(XPLANE)[:1000])
    missing = tmp_path / "in" / "missing.pt.trace.json"
    before = Snapshot.of(good)
    for source in (good, corrupt, missing):
        target = tmp_path / "out.txt"
        result = run_cli("convert", source, target, cwd=tmp_path)
        line = assert_one_error_line(result, str(target))
        # The complaint is about the output's name, not about the input it never read.
        assert "unknown output format" in line, line
        assert str(source) not in line, line
        assert not target.exists()
    before.assert_unchanged(good)


def test_convert_missing_input_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "missing.pt.trace.json"
    result = run_cli("convert", missing, tmp_path / "out.json", cwd=tmp_path)
    assert_one_error_line(result, str(missing))
    assert not (tmp_path / "out.json").exists()


def test_info_on_empty_directory_exits_2(tmp_path: Path) -> None:
    empty = tmp_path / "logdir"
    empty.mkdir()
    with pytest.raises(ProfileFormatError, match=re.escape(str(empty)) + ": .*no profiles"):
        stepscope.discover(empty)
    result = run_cli("info", empty, cwd=tmp_path)
    assert_one_error_line(result, str(empty), "no profiles")
    assert list(empty.iterdir()) == []


def test_info_on_directory_without_profiles_exits_2(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    (logdir / "plugins" / "profile" / "2024_01_01_00_00_00").mkdir(parents=True)
    (logdir / "notes.txt").write_text("no profiles here\n")
    (logdir / "metrics.json").write_text('{"loss": 1.0}\n')
    (logdir / "plugins" / "profile" / "2024_01_01_00_00_00" / "host.txt").write_text("x\n")
    with pytest.raises(ProfileFormatError, match="no profiles"):
        stepscope.discover(logdir)
    result = run_cli("info", logdir, cwd=tmp_path)
    assert_one_error_line(result, str(logdir), "no profiles")


def test_info_on_missing_path_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "host.xplane.pb"
    with pytest.raises(ProfileFormatError, match=re.escape(str(missing))):
        stepscope.load(missing)
    result = run_cli("info", missing, cwd=tmp_path)
    assert_one_error_line(result, str(missing), "does not exist")
    assert not missing.parent.exists()
