"""The compiled kernels (``stepscope._kernels``, C) and their choice (``stepscope.trace.kernels``):

- the test venv builds the extension, and every kernel's module then calls the C;
  ``STEPSCOPE_PURE_PYTHON=1`` (anything but "" or "0", as for the annotations) gives the
  Python functions instead;
- the numbers the C repeats (error codes, state slots, stat kinds, the flow packing) are
  the Python's;
- nothing in the package imports numba, and the package does not depend on it;
- arguments the C cannot use (another dtype, not an array, too short, read-only, not
  contiguous, indexes out of range) raise TypeError or ValueError, never crash;
- the C releases the GIL while it runs.

The C's answers are compared with the Python's in test_kernels_wire.py (the decoder),
test_xspace_write.py (the encoder), test_presorted.py (nesting), test_xspace_arrows.py
(flows), test_xspace_hot_ids.py, tests/viewer/test_lod_kernel.py and
tests/analysis/paths/test_schedule.py (the critical path's schedule).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import tomllib

import numpy as np
import pytest

from stepscope import _kernels
from stepscope.trace import kernels
from stepscope.trace.formats.xspace import schema, wire
from tests.support.kernels import KERNELS
from tests.support.traces import ROOT, shared
from tests.support.xspaces import ld, tag

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"


def run_child(script: str, env: dict[str, str] | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- the choice ------------------------------------------------------------------------------


def test_the_test_venv_runs_the_c_kernels():
    assert kernels.COMPILED and kernels.native is _kernels
    assert set(kernels.PYTHON) == set(KERNELS)
    for name, (module, function) in KERNELS.items():
        assert getattr(sys.modules[module], function) is getattr(_kernels, name), name
        assert kernels.PYTHON[name].__module__ == module and kernels.PYTHON[name].__name__ == function


CHOICE = """
import json
from tests.support.kernels import KERNELS, kernels
import sys
print(json.dumps({"compiled": kernels.COMPILED, "python": [name for name, (module, function) in KERNELS.items()
    if getattr(sys.modules[module], function) is kernels.PYTHON[name]]}))
"""


@pytest.mark.parametrize(("setting", "compiled"), [("1", False), ("yes", False), ("0", True), ("", True)])
def test_stepscope_pure_python_chooses_the_python_kernels(setting: str, compiled: bool):
    result = run_child(CHOICE, {kernels.PURE_PYTHON_ENV: setting})
    assert result == {"compiled": compiled, "python": [] if compiled else list(KERNELS)}


def test_the_c_repeats_the_pythons_numbers():
    def named(module, *prefixes: str) -> dict[str, int]:
        return {name: getattr(module, name) for name in dir(module) if name.startswith(prefixes)}

    errors = ("TRUNCATED", "LONG_VARINT", "BAD_TAG", "BAD_WIRE_TYPE", "BAD_GROUP", "BAD_LENGTH", "TOO_DEEP")
    assert {name: getattr(_kernels, name) for name in errors} == {name: getattr(wire, name) for name in errors}
    assert set(wire.ERRORS) == set(range(1, 8))  # (the seven codes)
    assert (_kernels.DEPTH_LIMIT, _kernels.ROOM) == (wire.DEPTH_LIMIT, wire.ROOM)
    # 12 state slots and the state's size, 5 output groups; 7 stat kinds.
    assert named(_kernels, "STATE_", "ROOM_") == named(wire, "STATE_", "ROOM_") and len(named(wire, "STATE_", "ROOM_")) == 13 + 5
    assert named(_kernels, "KIND_") == named(schema, "KIND_") and len(named(schema, "KIND_")) == 7
    flow = ("FLOW_IN", "FLOW_OUT", "FLOW_ID_MASK")  # (FLOW_IN_OUT is both bits: the C tests each)
    assert {name: getattr(_kernels, name) for name in flow} == {name: getattr(schema, name) for name in flow}


# --- no numba ----------------------------------------------------------------------------------


NO_NUMBA = f"""
import json, pathlib, sys, tempfile
import stepscope
from stepscope.viewer import build_index, query
profile = stepscope.load({str(shared(TPU))!r})
stepscope.save(profile, pathlib.Path(tempfile.mkdtemp()) / "again.xplane.pb")
index = build_index(profile)
query(index, 0, index.span_ps, 800)
print(json.dumps({{"loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite")), "kernels": "stepscope._kernels" in sys.modules}}))
"""


def test_reading_writing_and_viewing_import_no_numba():
    assert run_child(NO_NUMBA) == {"loaded": [], "kernels": True}


def test_the_package_does_not_depend_on_numba():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    assert not [r for r in requirements if r.split(">")[0].split("=")[0].strip().lower() in ("numba", "llvmlite")]
    assert not list((ROOT / "src").rglob("jit.py"))


# --- arguments the C cannot use ------------------------------------------------------------------

I64 = np.int64


def empty(n: int = 0, dtype=I64) -> np.ndarray:
    return np.zeros(n, dtype=dtype)


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


SPACE = np.frombuffer(ld(1, ld(2, b"/host:CPU")), dtype=np.uint8)  # one plane, named


def scan(**changes):
    args = {"buf": SPACE, "start": 0, "end": len(SPACE), "depth": 100, "out": np.zeros((5, 4), dtype=I64)} | changes
    return _kernels.scan_fields(*args.values())


def decode(**changes):
    lines = {"line_start": np.array([0]), "line_end": np.array([len(SPACE)])}
    outputs = {
        "event_metadata": empty(4),
        "event_offset": empty(4),
        "event_duration": empty(4),
        "event_line": empty(4, np.int32),
        "stat_event": empty(4),
        "stat_metadata": empty(4),
        "stat_kind": empty(4, np.int8),
        "stat_bits": empty(4),
        "out_text": empty(4, np.uint8),
        "out_text_offsets": empty(5),
        "out_heads": np.zeros((4, 3), dtype=I64),
        "out_line_events": empty(1),
    }
    args = {"buf": SPACE, **lines, "state": wire.new_state(), **outputs} | changes
    return _kernels.decode_lines(*args.values())


def sizes_args(**changes) -> dict:
    # One event with one str stat, text 0 ("ab").
    return {
        "metadata": np.array([1]),
        "offset": np.array([0]),
        "duration": np.array([5]),
        "entry_row": np.array([0]),
        "entry_id": np.array([1]),
        "entry_kind": np.array([3], dtype=np.int8),
        "entry_bits": np.array([0]),
        "text_offsets": np.array([0, 2]),
        "event_size": empty(1),
        "stat_size": empty(1),
    } | changes


def fill(**changes):
    args = sizes_args()
    total = _kernels.encode_sizes(*args.values())
    fill_args = {
        **{k: v for k, v in args.items() if k not in ("text_offsets", "event_size", "stat_size")},
        "text_blob": np.frombuffer(b"ab", dtype=np.uint8),
        "text_offsets": args["text_offsets"],
        "event_size": args["event_size"],
        "stat_size": args["stat_size"],
        "buffer": empty(total, np.uint8),
        "event_end": empty(1),
    } | changes
    return _kernels.encode_fill(*fill_args.values())


def nest(**changes):
    args = {"line": empty(3, np.int32), "start": np.array([0, 1, 2]), "duration": np.array([9, 1, 1]), "depth": empty(3, np.int32), "parent": empty(3)}
    return _kernels.nest(*(args | changes).values())


def walk(**changes):
    # Plane 0: endpoint 0 out of flow 1, endpoint 1 into it (an arrow; see arrows.py).
    encoded = np.array([(1 << 2) | 2, (1 << 2) | 1], dtype=np.uint64)
    args = {
        "parts": np.array([0], dtype=np.int32),
        "bounds": np.array([0, 2]),
        "rows": np.array([0, 1]),
        "encoded": encoded,
        "slots": empty(),
        "first": np.array([-1, 0]),
        "fill": True,
        "flow_ids": empty(1),
        "src_plane": empty(1, np.int32),
        "src_event": empty(1),
        "dst_plane": empty(1, np.int32),
        "dst_event": empty(1),
    } | changes
    return _kernels.walk_arrows(*args.values())


def scatter(**changes):
    args = {
        "event": np.array([0, 2]),
        "key": np.array([3, 3], dtype=np.int32),
        "kind": np.array([0, 0], dtype=np.int8),
        "bits": np.array([7, 8]),
        "code": 3,
        "int64": 0,
        "uint64": 1,
        "column": empty(3),
    } | changes
    return _kernels.scatter_ids(*args.values())


def lod_out(events: int = 3, runs: int = 3, busy=np.float32) -> list[np.ndarray]:
    """lod_lanes' ``out``: room for that many events and runs, one lane's counts."""
    event_columns = [empty(events, t) for t in (np.float64, np.float64, np.int32, np.int32)]
    run_columns = [empty(runs, t) for t in (np.float32, np.float32, np.uint32, busy)]
    return [*event_columns, *run_columns, np.zeros((2, 1), dtype=I64)]


def lod(**changes):
    # One lane of three events 0-10, 20-30, 40-50 ps, drawn 0-60 ps on 6 pixels (every
    # event is wide: at least one 10-ps pixel).
    args = {
        "key": np.array([0, 20, 40]),
        "duration": np.array([10, 10, 10]),
        "busy_before": np.array([0, 10, 20, 30]),
        "lane_shift": empty(1),
        "ids": empty(),
        "name_id": np.array([5, 6, 7], dtype=np.int32),
        "lanes": empty(1),
        "first": np.array([0]),
        "stop": np.array([3]),
        "edges": np.arange(0, 70, 10),
        "min_event": 10,
        "out": lod_out(),
    } | changes
    return _kernels.lod_lanes(*args.values())


def schedule(**changes):
    # Nodes 0 and 1; node 1's one in-edge from node 0, weight 2: node 0 [4, 7), node 1 at 7 + 2 + 1.
    args = {
        "offsets": np.array([0, 0, 1]),
        "src": np.array([0]),
        "weight": np.array([2]),
        "residual": np.array([0, 1]),
        "fixed": np.array([3, 5]),
        "starts": np.array([4, 0]),
    } | changes
    return _kernels.schedule_starts(*args.values())


def chain(**changes):
    # Node 1's predecessor is node 0 (none before it); node 1 starts at 5, after floor 0.
    args = {"pred": np.array([-1, 0]), "starts": np.array([0, 5]), "node": 1, "floor": 0, "out": empty(2)} | changes
    return _kernels.walk_chain(*args.values())


def test_the_arguments_given_here_are_right():
    """What the cases below change one thing of: each call works as given, and gives what it should."""
    assert scan() == (1, 0, 0)  # one field (the plane), no error
    assert decode() == (0, 0)
    # 22 0e [08 01  10 00  18 05  22 06 [08 01  2a 02 'a' 'b']]: 16 bytes
    assert _kernels.encode_sizes(*sizes_args().values()) == 16
    assert fill() == 16
    assert nest() is None
    starts = np.array([4, 0])
    assert schedule(starts=starts) is None and starts.tolist() == [4, 10]
    out = empty(2)
    assert chain(out=out) == 2 and out.tolist() == [1, 0]
    assert walk() == 1
    assert scatter() == 2
    out = lod_out()
    assert lod(out=out) == (3, 0)  # three wide events, no run
    assert out[0].tolist() == [0, 20, 40] and out[3].tolist() == [5, 6, 7] and out[8].tolist() == [[3], [0]]


ARGUMENT_CASES = {
    # wrong dtype or not an array: TypeError
    "scan: buf of int64": (scan, {"buf": np.zeros(4, dtype=I64)}, TypeError, "argument 'buf' must be a numpy array of uint8"),
    "scan: out of int32": (scan, {"out": np.zeros((5, 4), dtype=np.int32)}, TypeError, "argument 'out' must be a numpy array of int64"),
    "scan: out a list": (scan, {"out": [[0] * 4] * 5}, TypeError, "argument 'out' must be a numpy array of int64, not list"),
    "decode: event_line of int64": (decode, {"event_line": empty(4)}, TypeError, "'event_line' must be a numpy array of int32"),
    "decode: stat_kind of uint8": (decode, {"stat_kind": empty(4, np.uint8)}, TypeError, "'stat_kind' must be a numpy array of int8"),
    "nest: start of float64": (nest, {"start": np.array([0.0, 1.0, 2.0])}, TypeError, "'start' must be a numpy array of int64"),
    "walk: encoded of int64": (walk, {"encoded": np.array([6, 5])}, TypeError, "'encoded' must be a numpy array of uint64"),
    "lod: run busy of float64": (lod, {"out": lod_out(busy=np.float64)}, TypeError, "'out[7] (run busy)' must be a numpy array of float32"),
    # read-only outputs: ValueError
    "scan: read-only out": (scan, {"out": read_only(np.zeros((5, 4), dtype=I64))}, ValueError, "argument 'out' is read-only"),
    "decode: read-only state": (decode, {"state": read_only(wire.new_state())}, ValueError, "argument 'state' is read-only"),
    "fill: read-only buffer": (fill, {"buffer": read_only(empty(16, np.uint8))}, ValueError, "argument 'buffer' is read-only"),
    "scatter: read-only column": (scatter, {"column": read_only(empty(3))}, ValueError, "argument 'column' is read-only"),
    # shapes, contiguity, lengths: ValueError
    "scan: out of 4 rows": (scan, {"out": np.zeros((4, 4), dtype=I64)}, ValueError, "out must have 5 rows"),
    "scan: out not contiguous": (scan, {"out": np.zeros((5, 8), dtype=I64)[:, ::2]}, ValueError, "'out' must be C-contiguous"),
    "scan: end past buf": (scan, {"end": len(SPACE) + 1}, ValueError, "start and end must be positions in buf"),
    "scan: depth past 100": (scan, {"depth": 101}, ValueError, "depth is past protobuf's limit"),
    "decode: a line past buf": (decode, {"line_end": np.array([len(SPACE) + 1])}, ValueError, "a line's range is not within buf"),
    "decode: short event column": (decode, {"event_line": empty(3, np.int32)}, ValueError, "the event columns differ in length"),
    "decode: no line counts": (decode, {"out_line_events": empty(0)}, ValueError, "out_line_events is shorter than the lines"),
    "decode: short state": (decode, {"state": wire.new_state()[:5]}, ValueError, "state does not fit"),
    "decode: state past the outputs": (decode, {"state": np.array([0, -1, 5, *[0] * 9])}, ValueError, "state does not fit"),
    "sizes: short stat_size": (lambda **c: _kernels.encode_sizes(*sizes_args(stat_size=empty(0)).values()), {}, ValueError, "one entry per event and per stat"),
    "sizes: text number past text_offsets": (
        lambda **c: _kernels.encode_sizes(*sizes_args(entry_bits=np.array([1])).values()),
        {},
        ValueError,
        "a text stat's number is not in text_offsets",
    ),
    "fill: buffer one byte short": (fill, {"buffer": empty(15, np.uint8)}, ValueError, "the buffer is too small"),
    "fill: text past text_blob": (fill, {"text_blob": np.frombuffer(b"a", dtype=np.uint8)}, ValueError, "a text is not in text_blob"),
    "nest: short parent": (nest, {"parent": empty(2)}, ValueError, "the columns differ in length"),
    "walk: output one short": (walk, {"flow_ids": empty(0)}, ValueError, "the outputs are too short"),
    "walk: first endpoint past the endpoints": (walk, {"first": np.array([-1, 5])}, ValueError, "out of range"),
    "walk: slot past first": (walk, {"first": np.array([-1])}, ValueError, "out of range"),
    "walk: bounds short": (walk, {"bounds": np.array([0])}, ValueError, "bounds must have one entry more than parts"),
    "first_outs: slot past first": (
        lambda **c: _kernels.first_outs(np.array([(9 << 2) | 2], dtype=np.uint64), empty(), empty(3)),
        {},
        ValueError,
        "slot is not in first",
    ),
    "scatter: event past column": (scatter, {"column": empty(2)}, ValueError, "a stat's event is not a row of column"),
    "lod: stop past key": (lod, {"stop": np.array([4])}, ValueError, "a lane's first:stop is not a slice of key"),
    "lod: lane past lane_shift": (lod, {"lanes": np.array([1])}, ValueError, "a lane is not in lane_shift"),
    "lod: row past name_id": (lod, {"name_id": np.array([5, 6], dtype=np.int32)}, ValueError, "no index row or name"),
    "lod: room for 2 of the 3 events": (lod, {"out": lod_out(events=2)}, ValueError, "out is too short"),
    "lod: out of 8 columns": (lod, {"out": [empty(3)] * 8}, TypeError, "must be a sequence of 9 arrays"),
    "schedule: starts of int32": (schedule, {"starts": np.array([4, 0], dtype=np.int32)}, TypeError, "'starts' must be a numpy array of int64"),
    "schedule: read-only starts": (schedule, {"starts": read_only(np.array([4, 0]))}, ValueError, "argument 'starts' is read-only"),
    "schedule: short offsets": (schedule, {"offsets": np.array([0, 0])}, ValueError, "offsets must have one entry more than starts"),
    "schedule: short fixed": (schedule, {"fixed": np.array([3])}, ValueError, "residual, fixed and starts differ in length"),
    "schedule: short weight": (schedule, {"weight": empty(0)}, ValueError, "src and weight differ in length"),
    "schedule: offset past src": (schedule, {"offsets": np.array([0, 0, 2])}, ValueError, "offsets are not a rising sequence"),
    "chain: pred of int32": (chain, {"pred": np.array([-1, 0], dtype=np.int32)}, TypeError, "'pred' must be a numpy array of int64"),
    "chain: read-only out": (chain, {"out": read_only(empty(2))}, ValueError, "argument 'out' is read-only"),
    "chain: short starts": (chain, {"starts": np.array([0])}, ValueError, "pred and starts differ in length"),
    "chain: node past the end": (chain, {"node": 2}, ValueError, "a node of the chain is out of range"),
    "chain: predecessor past the end": (chain, {"pred": np.array([-1, 7])}, ValueError, "a node of the chain is out of range"),
    "chain: a cycle": (chain, {"pred": np.array([1, 0]), "starts": np.array([5, 5])}, ValueError, "the chain is longer than out"),
    "chain: short out": (chain, {"out": empty(1)}, ValueError, "the chain is longer than out"),
    "schedule: falling offsets": (schedule, {"offsets": np.array([0, 1, 0])}, ValueError, "offsets are not a rising sequence"),
    "schedule: source past the nodes": (schedule, {"src": np.array([2])}, ValueError, "an edge's source is out of range"),
    "lod: one pixel edge": (lod, {"edges": np.array([0])}, ValueError, "edges must have at least 2 entries"),
}


@pytest.mark.parametrize("case", list(ARGUMENT_CASES.values()), ids=list(ARGUMENT_CASES))
def test_arguments_the_c_cannot_use_raise(case):
    call, changes, error, message = case
    with pytest.raises(error, match=re.escape(message)):
        call(**changes)


# --- the GIL -------------------------------------------------------------------------------------


def test_the_c_releases_the_gil_while_it_runs():
    """A thread in a long C call (scan_fields over one group of 8M fields: 16 MB to skip)
    leaves the GIL to this thread, which counts while it waits. Holding the GIL, the call
    would let no Python run here until it returned: no count inside the middle half of
    the call's time."""
    group = tag(1, 3) + b"\x08\x01" * (8 << 20) + tag(1, 4)
    buf = np.frombuffer(group, dtype=np.uint8)
    out = np.zeros((5, 1), dtype=I64)
    span: list[float] = []
    entering = threading.Event()

    def call() -> None:
        entering.set()
        span.append(time.perf_counter())
        assert _kernels.scan_fields(buf, 0, len(buf), 100, out) == (1, 0, 0)
        span.append(time.perf_counter())

    worker = threading.Thread(target=call)
    seen = []
    worker.start()
    entering.wait()
    while worker.is_alive():
        seen.append(time.perf_counter())
    worker.join()
    start, end = span
    quarter = (end - start) / 4
    inside = [t for t in seen if start + quarter < t < end - quarter]
    assert out[:, 0].tolist() == [1, 3, 0, 1, len(buf)]  # (the group: field 1, wire type 3, its tag one byte, its value to the end)
    assert end - start > 0.005, "the call was too short to tell"
    assert inside, f"no Python ran here during the middle half of a {end - start:.3f} s call"
