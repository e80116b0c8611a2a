"""What a user's type checker sees of the annotation and capture API: ``stepscope.trace`` (a
C object, typed by ``capture/_spans.pyi`` and the ``Trace`` protocol), ``step``,
``trace.function``, ``data.stage`` and ``profile``. mypy --strict, as a user runs it (no
project configuration), on a file that uses them correctly and one that does not."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

GOOD = """\
from pathlib import Path

import stepscope
import stepscope.data


@stepscope.trace.function()
def load(n: int) -> list[int]:
    return list(range(n))


@stepscope.data.stage.function("collate")
def collate(items: list[int]) -> tuple[int, ...]:
    return tuple(items)


def train(logdir: Path) -> Path | None:
    with stepscope.profile(logdir) as session:
        for number in range(3):
            with stepscope.step(number, tokens=128), stepscope.trace("forward", layer=1):
                batch: tuple[int, ...] = collate(load(4))
            with stepscope.trace(name="backward"), stepscope.data.stage("decode"):
                pass
    with stepscope.profile(logdir, schedule=stepscope.schedule(wait=1, warmup=1, active=2)) as hook:
        hook.step()
    written: Path | None = session.path
    return written
"""

# Each line a wrong use; the error mypy must report there (code and line, counted from 1).
BAD = """\
import stepscope

stepscope.trace(7)
stepscope.trace()
stepscope.step("one")


@stepscope.trace.function()
def load(n: int) -> list[int]:
    return list(range(n))


load("four")
with stepscope.profile("logs") as session:
    session.step()
"""
EXPECTED = {
    (3, "arg-type"),  # trace's name is a str
    (4, "call-arg"),  # trace needs a name
    (5, "arg-type"),  # step's number is an int
    (13, "arg-type"),  # a traced function keeps its signature
    (15, "attr-defined"),  # without a schedule, profile gives a CaptureSession (no step())
}


def test_mypy_strict_passes_good_uses_and_reports_each_wrong_one(tmp_path: Path):
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "bad.py").write_text(BAD)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n")
    # In a process of its own, as a user runs it: mypy's main raises the interpreter's
    # recursion limit for good (to 2**14), which would change what every later test in this
    # worker meets (the JSON decoders' nesting limit is Python's recursion limit).
    command = [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"]
    run = subprocess.run([*command, str(tmp_path / "good.py"), str(tmp_path / "bad.py")], capture_output=True, text=True, timeout=600, check=False)
    stdout, stderr = run.stdout, run.stderr
    errors = [line for line in stdout.splitlines() if ": error: " in line]
    assert not [line for line in errors if "good.py" in line], stdout + stderr
    found = {(int(match[1]), match[2]) for line in errors if (match := re.search(r"bad\.py:(\d+): error: .*\[([a-z-]+)\]$", line))}
    assert found == EXPECTED, stdout + stderr
    assert len(errors) == len(EXPECTED), stdout
