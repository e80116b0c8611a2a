"""XProf reads stepscope's captures of the README's Quick start jobs fully: the steps
stepscope finds and the framework ops it lists, by XProf's own converter (what
TensorBoard's Profile tab shows).

Each job is the README's snippet as it stands, run on the CPU in a child process of its
own. Expected values come from the loop and from the recorded events, read with TSL's
protobuf classes (``read_xspace_independently``): the step count from the loop (512
samples in batches of 32 for PyTorch, ten steps for JAX, 320 samples in batches of 32 for
TensorFlow); a step's length from its ``stepscope.step`` marker reaching back over the
``stepscope.data.wait`` that ends in the gap before it; an op's occurrences and total time
from the events that are that op (PyTorch: category ``cpu_op``; XLA on the CPU: the
``hlo_op`` stat; TensorFlow: events named ``<op name>:<OpType>`` and tf.data's
``Iterator::`` stages). Self times, which need the nesting, are compared with stepscope's
framework_op_stats. XProf reports step times in ms and op times in us, from picoseconds;
the capture's times are whole nanoseconds, so 1 ns covers its rounding.

What XProf shows differently, by its own rules (docs/format.md, "XProf and TensorBoard"):
more than five steps lose their first and last (incomplete steps); PyTorch's op types and
those of TensorFlow ops whose names its grammar rejects are not shown; the StepHook job's
only step holds nothing XProf counts as work.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.formats.xspace.read import read_xspace
from tests.support.frameworks import read_xspace_independently, run_framework_script
from tests.support.reference.xspace import assert_same_profile
from tests.support.traces import ROOT
from tests.support.xprof import recorded_steps, xprof_framework_ops, xprof_steps
from tests.support.xspaces import without_xprof_hints

pytestmark = pytest.mark.framework

BLOCKS = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), re.MULTILINE | re.DOTALL)
NS_IN_MS, NS_IN_US = 1e-6, 1e-3
# The README job of each framework (the block that profiles into its logdir), its imports
# for the child's prelude, and the steps its loop runs.
JOBS = {
    "torch": ('stepscope.profile("logs/torch")', "import torch", 512 // 32),
    "jax": ('stepscope.profile("logs/jax")', "import jax", 10),
    "tensorflow": ('stepscope.profile("logs/tf")', "import tensorflow as tf", 320 // 32),
}
HOOK = 'StepHook("logs/hook", save_steps=50)'
MANIFEST = """
import json as _json
(OUT / "manifest.json").write_text(_json.dumps({"profiles": sorted(str(p.resolve()) for p in Path("logs").rglob("*.xplane.pb"))}))
"""


def readme_block(marker: str) -> str:
    (block,) = [block for block in BLOCKS if marker in block]
    return block


def run_job(tmp_path: Path, framework: str, imports: str, marker: str) -> list[Path]:
    manifest = run_framework_script(tmp_path, framework, imports, readme_block(marker) + MANIFEST)
    return [Path(path) for path in manifest["profiles"]]


@pytest.fixture(scope="module", params=list(JOBS))
def job(request, tmp_path_factory) -> tuple[str, Path, int]:
    """(framework, the capture, the loop's step count)."""
    marker, imports, steps = JOBS[request.param]
    (path,) = run_job(tmp_path_factory.mktemp(request.param), request.param, imports, marker)
    return request.param, path, steps


def test_xprof_finds_the_steps_stepscope_finds(job):
    framework, path, loop_steps = job
    steps = recorded_steps(path)
    assert [number for number, _ in steps] == list(range(loop_steps))
    overview = run_tool("overview_page", stepscope.load(path)).to_json()
    assert [(s["step"], s["step_time_ps"]) for s in overview["steps"]] == steps
    # XProf: the same steps, named after their root, less the first and last (it drops a
    # sequence's incomplete ends when it has more than five steps).
    assert loop_steps > 5
    shown = xprof_steps(path)
    assert [name for name, _ in shown] == [f"{names.STEPSCOPE_STEP} {number}" for number, _ in steps[1:-1]], framework
    for (number, length), (_, milliseconds) in zip(steps[1:-1], shown):
        assert milliseconds == pytest.approx(length / 1e9, abs=NS_IN_MS), (framework, number)


# A TensorFlow executor op event: "<op name>:<OpType>".
TF_OP = re.compile(r"^([^:\s][^:]*):([A-Za-z_]\w*)$")


def recorded_ops(framework: str, path: Path) -> dict[str, tuple[int, int]]:
    """Op name -> (occurrences, total ps) of the host events that are that framework's ops."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for event in read_xspace_independently(path).events:
        if event.plane != names.HOST_PLANE or event.line == names.XPROF_STEPS_LINE:
            continue
        name = None
        if framework == "torch" and event.type_stats.get(names.CATEGORY) == "cpu_op":
            name = event.name
        elif framework == "jax" and names.HLO_OP in event.stats:
            name = event.stats[names.HLO_OP]
        elif framework == "tensorflow" and (match := TF_OP.match(event.name)):
            name = match.group(1)
        elif framework == "tensorflow" and event.name.startswith("Iterator::"):
            name = event.name
        if name is not None:
            found[name][0] += 1
            found[name][1] += event.duration_ps
    return {name: (count, total) for name, (count, total) in found.items()}


def test_xprof_lists_the_framework_ops_stepscope_lists(job):
    framework, path, _ = job
    recorded = recorded_ops(framework, path)
    assert recorded, f"the {framework} job ran ops"
    ours = {row["name"]: row for row in run_tool("framework_op_stats", stepscope.load(path)).to_json()["rows"] if row["host_or_device"] == "Host"}
    theirs = xprof_framework_ops(path)
    assert set(ours) == set(recorded)
    # TensorFlow's allocator events carry a tf_op of their own where it records them; the
    # writer then adds none (XProf looks that stat up through one entry of its name), so
    # XProf lists only the ops it lists by name: not those its grammar rejects ('_' first).
    events = read_xspace_independently(path).events
    own_tf_op = any(e.name in ("MemoryAllocation", "MemoryDeallocation") and names.TF_OP in e.stats for e in events)
    assert set(theirs) == ({name for name in recorded if not name.startswith("_")} if own_tf_op else set(recorded))
    for name, (count, total_ps) in ((name, found) for name, found in recorded.items() if name in theirs):
        assert theirs[name]["occurrences"] == ours[name]["occurrences"] == count, name
        assert theirs[name]["total_time"] == pytest.approx(total_ps / 1e6, abs=NS_IN_US), name
        assert theirs[name]["total_self_time"] == pytest.approx(ours[name]["total_self_time_us"], abs=NS_IN_US), name
    # Types: XProf reads an op's type from "name:type" with the name ending at the first
    # ':' (but tf.data's "Iterator::..." stages, of type Dataset), and TensorFlow's names
    # must start with a letter, digit or '.'; PyTorch's ops are written with their names
    # only (most hold "::", and their kinds are stepscope's).
    for name, row in theirs.items():
        sayable = framework != "torch" and (name.startswith("Iterator::") or (":" not in name and not name.startswith("_")))
        assert row["type"] == (ours[name]["type"] if sayable else ""), name


def test_stepscope_reads_its_capture_as_before(job):
    """The hints are the only difference from what the writer wrote before it added them
    (tests/trace/test_xspace_write.py), and stepscope's tools see none of them."""
    _, path, _ = job
    stripped = path.parent / "stripped.xplane.pb.orig"
    stripped.write_bytes(without_xprof_hints(xplane_pb2.XSpace.FromString(path.read_bytes())).SerializeToString())
    expected = stepscope.load(stripped)
    data = path.read_bytes()
    for bulk in (True, False):  # the compiled decoder (big files) and protobuf's messages
        assert_same_profile(read_xspace(path, data, bulk=bulk), expected)
    for tool in ("overview_page", "framework_op_stats", "input_pipeline_analyzer"):
        assert run_tool(tool, stepscope.load(path)).to_json() == run_tool(tool, expected).to_json(), tool


def test_the_step_hook_jobs_steps_hold_nothing_xprof_counts_as_work(tmp_path: Path):
    """The README's plain-Python StepHook job: each capture holds one step whose only event
    is the "train_step" annotation around a sleep. XProf takes an event named train*/test*
    for a step marker, and keeps a CPU-only step only if host work ran in it: no step. (A
    step with any other annotated work is found: tests/trace/test_xprof_hints.py.)"""
    paths = run_job(tmp_path, "python", "import time", HOOK)
    assert len(paths) == 2  # due at steps 50 and 100, each capturing the next step
    for path, number in zip(paths, (51, 101)):
        assert [n for n, _ in recorded_steps(path)] == [number]
        events = Counter(e.name for e in read_xspace_independently(path).events if e.line != names.XPROF_STEPS_LINE)
        assert events == {names.STEPSCOPE_STEP: 1, "train_step": 1}
        assert [s["step"] for s in run_tool("overview_page", stepscope.load(path)).to_json()["steps"]] == [number]
        assert xprof_steps(path) == []
        assert xprof_framework_ops(path) == {}
