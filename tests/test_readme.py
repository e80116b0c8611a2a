"""Every code block of the README runs, in order, in one scratch folder, as a user pasting
them would run them: python blocks as programs, sh blocks line by line, and a CI workflow's
(yaml) stepscope steps as sh lines (its other steps need a repository and a network). What a
block says it makes (profiles, reports) is checked after it. The docs cannot rot without
this failing."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import stepscope
from stepscope.trace import names
from tests.support.dashboard.tensorboard import TensorBoardServer
from tests.support.package import wheel
from tests.support.traces import ROOT

README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")
BLOCKS = BLOCK.findall(README.read_text())
README_PORT = 6009  # the README's profiler server's port


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# The port the README's job and capture use here: a free one, not 6009, which another run of
# this test (another checkout on the same machine) may hold, its job then answering ours.
SERVER_PORT = _free_port()
# Put before the README's profiler-server job: collects garbage every 0.2 s from the start.
COLLECT_GARBAGE = (
    "import gc as _gc, threading as _threading, time as _time\n"
    "def _collect():\n"
    "    while True:\n"
    "        _time.sleep(0.2)\n"
    "        _gc.collect()\n"
    "_threading.Thread(target=_collect, daemon=True).start()\n"
)

pytestmark = pytest.mark.framework


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    state = {"cwd": tmp_path_factory.mktemp("readme"), "background": []}
    yield state
    for process in state["background"]:
        process.kill()
        process.wait()


def environment() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}


def profiles(folder: Path) -> list[Path]:
    return sorted(folder.glob("plugins/profile/*/*.xplane.pb"))


def run_python(code: str, cwd: Path, background: list) -> None:
    script = cwd / f"block_{len(list(cwd.glob('block_*.py')))}.py"
    script.write_text(code)
    if f"start_server({SERVER_PORT})" in code:  # a job to capture: it runs beside the next blocks
        # As a long-lived job meets it: garbage is collected all along (a server whose only
        # reference was dropped used to stop within seconds), and the capture comes later.
        script.write_text(COLLECT_GARBAGE + code)
        background.append(subprocess.Popen([sys.executable, str(script)], cwd=cwd, env=environment()))
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", SERVER_PORT)) == 0:
                    break
            assert time.monotonic() < deadline, "the job's profiler server never listened"
            time.sleep(0.1)
        time.sleep(3)
        return
    result = subprocess.run([sys.executable, str(script)], cwd=cwd, env=environment(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{script.name}:\n{code}\n{result.stderr[-3000:]}"
    if "StepHook" in code:
        assert len(profiles(cwd / "logs/hook")) == 2  # as its comment says: steps 50 and 100
    if "schedule=" in code:  # as its comment says: two profiles, of steps 2-4 and 7-9
        assert result.stdout.split() == [str(path.relative_to(cwd)) for path in profiles(cwd / "logs/schedule")]
        assert [sorted(stepscope.load(path).plane(names.HOST_PLANE).events.step_num.tolist()) for path in profiles(cwd / "logs/schedule")] == [
            [-1] * 3 + [2, 3, 4],
            [-1] * 3 + [7, 8, 9],
        ]


def written_runs(logdir: Path) -> set[str]:
    """The first folder under ``logdir`` of every profile the blocks so far wrote there."""
    return {path.relative_to(logdir).parts[0] for path in logdir.rglob("*.xplane.pb")}


def run_serve(line: str, cwd: Path) -> None:
    """`stepscope serve`: start it on a free port, see it answer with the logdir's runs, stop."""
    process = subprocess.Popen([*line.split(), "--port", "0"], cwd=cwd, env=environment(), stdout=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://\S+", process.stdout.readline()).group(0)
        with urllib.request.urlopen(url + "api/runs", timeout=30) as answer:
            runs = {run["name"].split("/")[0] for run in json.load(answer)["runs"]}
        assert runs == written_runs(cwd / line.split("--logdir")[1].split()[0]) != set()
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_tensorboard(line: str, cwd: Path) -> None:
    """`tensorboard --logdir DIR`: TensorBoard lists stepscope's tab, whose API answers with
    the logdir's runs (the tab itself is opened in Chromium by tests/dashboard and tests/package)."""
    logdir = cwd / line.split("--logdir")[1].split()[0]
    tensorboard = TensorBoardServer(logdir, cwd / "tensorboard-cache", cwd / "tensorboard.log", env=environment())
    try:
        assert tensorboard.get("/data/plugins_listing").json()["stepscope"]["enabled"] is True
        runs = {run["name"].split("/")[0] for run in tensorboard.get("/api/runs").json()["runs"]}
        assert runs == written_runs(logdir) != set()
    finally:
        tensorboard.stop()


def check_install(line: str) -> None:
    """`pip install stepscope`: not run here (it would replace the test venv's editable
    install); what it installs is what `make dist` built, which tests/package installs."""
    assert line.split() == ["pip", "install", "stepscope"]
    assert wheel().name.startswith("stepscope-")


def run_sh(code: str, cwd: Path) -> None:
    makefile = (ROOT / "Makefile").read_text()
    for line in code.splitlines():
        command = line.split(" #")[0].strip()
        if not command:
            continue
        if command.startswith("make "):
            target = command.split()[1]
            assert re.search(rf"^{target}:", makefile, re.MULTILINE), f"no make target {target}"
        elif command.startswith("stepscope serve"):
            run_serve(command, cwd)
        elif command.startswith("tensorboard "):
            run_tensorboard(command, cwd)
        elif command.startswith("pip install"):
            check_install(command)
        else:
            result = subprocess.run(["bash", "-c", command], cwd=cwd, env=environment(), capture_output=True, text=True, timeout=600)
            assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
            if command.startswith("stepscope capture"):
                assert len(profiles(cwd / "logs/remote")) == 1
            if "--output" in command:
                output = cwd / command.split("--output")[1].split()[0]
                if command.startswith("stepscope diff"):
                    check_junit(command, output)
                else:
                    assert output.read_text().startswith(REPORT_STARTS[_format(command)])


# How a report written with --output starts, by --format: CSV, every tool's tables; HTML, a
# whole page; Markdown, its title.
REPORT_STARTS = {"csv": "# overview_page.", "html": "<!doctype html>", "markdown": "## stepscope report"}


def _format(command: str) -> str:
    words = shlex.split(command)
    return words[words.index("--format") + 1]


def check_junit(command: str, output: Path) -> None:
    """`stepscope diff ... --format junit --output FILE`: one testcase per --fail-if rule."""
    words = shlex.split(command)
    rules = [words[i + 1] for i, word in enumerate(words) if word == "--fail-if"]
    cases = ET.parse(output).getroot().find("testsuite").findall("testcase")
    assert [case.get("name") for case in cases] == rules


def run_workflow(code: str, cwd: Path) -> None:
    """A GitHub Actions workflow: its `run: stepscope ...` steps, as sh lines."""
    steps = [match.group(1) for match in re.finditer(r"^\s*- run: (stepscope .*)$", code, re.MULTILINE)]
    assert steps, "the workflow runs no stepscope command"
    run_sh("\n".join(steps), cwd)


def test_readme_has_code_blocks_of_known_languages():
    assert len(BLOCKS) >= 10
    assert {language for language, _ in BLOCKS} <= {"python", "sh", "yaml"}


RUNNERS = {
    "python": lambda code, state: run_python(code, state["cwd"], state["background"]),
    "yaml": lambda code, state: run_workflow(code, state["cwd"]),
    "sh": lambda code, state: run_sh(code, state["cwd"]),
}


def test_readme_blocks_run_in_order(scratch):
    """Every block, top to bottom, in one folder: they build on one another (the torch
    block writes the logs the later ones read), so one test runs them all (parametrized,
    pytest-xdist would spread them over workers with a folder each)."""
    for index, (language, code) in enumerate(BLOCKS):
        try:
            RUNNERS[language](code.replace(str(README_PORT), str(SERVER_PORT)), scratch)
        except AssertionError as error:
            raise AssertionError(f"README block {index} ({language}, from line {code.splitlines()[0][:60]!r}): {error}") from error


def test_readme_links_exist():
    targets = [target for target in LINK.findall(README.read_text()) if "://" not in target]
    assert targets
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert missing == []
