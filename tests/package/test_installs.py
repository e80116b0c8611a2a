"""The wheel and the sdist, installed into fresh environments whose PATH holds neither Node.js
nor a C compiler, work as the README says: the command, a capture, the compiled annotations
(or, from the sdist without a compiler, the pure-Python ones), and reports whose numbers
are those of the source tree's stepscope on the same file, on this Python and on 3.13
(the one abi3 wheel), and beside the oldest release of every dependency.
"""

from __future__ import annotations

import functools
import gzip
import json
import subprocess
import sys
from pathlib import Path

import stepscope
from tests.support.package import NEWEST_PYTHON, OLDEST, Venv, wheel
from tests.support.traces import shared

GPU_TRACE = shared("kineto/v100_resnet_ns_resolution.pt.trace.json.gz")
TPU_PROFILE = shared("xplane/tpu_v_inference_4chips.xplane.pb")

# A job as the README writes one: ten steps of 2 ms of work each.
JOB = """
import sys, time
import stepscope
from stepscope.capture import annotations

with stepscope.profile(sys.argv[1]) as session:
    for number in range(10):
        with stepscope.step(number), stepscope.trace("work", index=number):
            time.sleep(0.002)
print(session.path)
print(annotations.COMPILED)
"""


def _profiler_steps(path: Path) -> int:
    """The ProfilerStep#N events of a Kineto trace, counted from its JSON."""
    with gzip.open(path) as stream:
        events = json.load(stream)["traceEvents"]
    return len({event["name"] for event in events if event.get("ph") == "X" and str(event.get("name", "")).startswith("ProfilerStep#")})


@functools.cache
def _tree_report(*args: str | Path) -> str:
    """What the source tree's stepscope prints (the test venv's editable install)."""
    return subprocess.run([sys.executable, "-m", "stepscope", *map(str, args)], capture_output=True, text=True, check=True).stdout


def _captures(venv: Venv, tmp_path: Path) -> bool:
    """Runs JOB in ``venv``; checks its profile from the outside; returns whether the
    annotations were the compiled ones."""
    path, compiled = venv.check("python", "-c", JOB, tmp_path / "logs").split()
    overview = json.loads(venv.check("stepscope", "report", path, "--tool", "overview_page", "--format", "json"))["overview_page"]
    assert [step["step"] for step in overview["steps"]] == list(range(10))
    assert min(step["step_time_ps"] for step in overview["steps"]) >= 2_000_000_000  # each step sleeps 2 ms
    return compiled == "True"


def _same_reports(venv: Venv) -> None:
    """Every tool's JSON on a GPU and a TPU profile is the source tree's, byte for byte."""
    for path in (GPU_TRACE, TPU_PROFILE):
        ours = venv.check("stepscope", "report", path, "--tool", "all", "--format", "json", timeout=600)
        assert ours == _tree_report("report", path, "--tool", "all", "--format", "json"), path.name


def test_the_wheel_installs_and_runs_without_node_or_a_compiler(fresh: Venv, tmp_path: Path):
    assert fresh.check("stepscope", "--version").strip() == f"stepscope {stepscope.__version__}"
    assert fresh.check("python", "-m", "stepscope", "--version").strip() == f"stepscope {stepscope.__version__}"
    assert _captures(fresh, tmp_path)  # the wheel's compiled annotations
    overview = json.loads(fresh.check("stepscope", "report", GPU_TRACE, "--tool", "overview_page", "--format", "json"))["overview_page"]
    assert len(overview["steps"]) == _profiler_steps(GPU_TRACE)
    _same_reports(fresh)
    # The HTML report's script comes with the wheel: the same file as the source tree's.
    assert fresh.check("stepscope", "report", GPU_TRACE, "--format", "html") == _tree_report("report", GPU_TRACE, "--format", "html")


def test_the_oldest_dependencies_give_the_same_numbers(oldest: Venv, tmp_path: Path):
    installed = oldest.freeze()
    pinned = dict(line.split("==") for line in OLDEST.read_text().splitlines() if line and not line.startswith("#"))
    # pip kept every pinned release: the wheel accepts them all.
    assert {name: installed[name] for name in pinned} == pinned
    assert installed["stepscope"] == stepscope.__version__
    assert _captures(oldest, tmp_path)
    _same_reports(oldest)


def test_one_abi3_wheel_serves_newer_pythons(newer: Venv, tmp_path: Path):
    version = newer.check("python", "-c", "import sys; print('%d.%d' % sys.version_info[:2])").strip()
    assert version == NEWEST_PYTHON
    assert newer.freeze()["stepscope"] == stepscope.__version__
    assert _captures(newer, tmp_path)  # the cp311-abi3 binary loads and records (vectorcall on 3.12+)
    overview = json.loads(newer.check("stepscope", "report", GPU_TRACE, "--tool", "overview_page", "--format", "json"))["overview_page"]
    assert len(overview["steps"]) == _profiler_steps(GPU_TRACE)


def test_the_sdist_installs_without_node_or_a_compiler(from_sdist: Venv, tmp_path: Path):
    """Its page was built when the sdist was made; its C extensions are optional, so without
    a compiler the pure-Python annotations record the same steps."""
    page = from_sdist.check(
        "python", "-c", "import stepscope.dashboard, pathlib; print(pathlib.Path(stepscope.dashboard.__file__).parent / 'static' / 'index.html')"
    )
    assert Path(page.strip()).is_file()
    assert not _captures(from_sdist, tmp_path)
    assert wheel().name.startswith(f"stepscope-{from_sdist.freeze()['stepscope']}-")
