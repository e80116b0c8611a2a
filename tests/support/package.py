"""What a user installs, installed as a user would: the sdist and wheel of ``make dist`` in
fresh virtual environments, whose commands run with nothing but the environment's own
``bin/`` on PATH (no Node.js, no C compiler, no test venv on ``sys.path``).

Environments are built once per test session and shared by pytest-xdist's workers: the
first worker to ask builds one under a file lock, the others wait and reuse it.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from tests.support.traces import ROOT

DIST = ROOT / "dist"
OLDEST = ROOT / "requirements" / "oldest.txt"
# What a package's install may take, a fresh venv's pip and index included.
INSTALL_TIMEOUT_S = 600
# The newest CPython the abi3 wheel is installed on (the oldest, 3.11, runs the test venv).
NEWEST_PYTHON = "3.13"


def dist_file(pattern: str) -> Path:
    """The one file of ``dist/`` matching ``pattern`` (``make dist`` builds them)."""
    found = sorted(DIST.glob(pattern))
    if len(found) != 1:
        pytest.fail(f"dist/ holds {len(found)} files matching {pattern} (run `make dist`, which `make test` does first)")
    return found[0]


def wheel() -> Path:
    return dist_file("stepscope-*.whl")


def sdist() -> Path:
    return dist_file("stepscope-*.tar.gz")


def python_of(version: str) -> str | None:
    """An interpreter of CPython ``version`` ("3.12") on this machine, or None."""
    candidates = [shutil.which(f"python{version}"), *sorted(glob.glob(f"/root/.pyenv/versions/{version}.*/bin/python{version}"))]
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.strip() == version:
            return candidate
    return None


def base_python() -> str:
    """The interpreter the test venv was made from (a venv of a venv would share its packages)."""
    return getattr(sys, "_base_executable", sys.executable)


@dataclass(frozen=True)
class Venv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment its commands run in: PATH is its bin/ alone."""
        kept = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        return {**kept, "PATH": str(self.root / "bin"), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", **extra}

    def run(self, *args: str | Path, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``args`` with the venv's own PATH; the first is a command of its bin/ or a path."""
        command = [str(self.root / "bin" / str(args[0])) if (self.root / "bin" / str(args[0])).exists() else str(args[0]), *map(str, args[1:])]
        return subprocess.run(command, capture_output=True, text=True, env=self.env(), timeout=timeout, cwd=cwd, check=False)

    def check(self, *args: str | Path, timeout: float = 300, cwd: Path | None = None) -> str:
        """``run``, failing the test with its output unless it exits 0; returns its stdout."""
        done = self.run(*args, timeout=timeout, cwd=cwd)
        assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def freeze(self) -> dict[str, str]:
        """Installed distribution -> version."""
        lines = self.check("python", "-m", "pip", "list", "--format=freeze").splitlines()
        return {name.lower(): version for name, _, version in (line.partition("==") for line in lines if "==" in line)}


def shared_venv(base: Path, name: str, python: str, installs: list[list[str | Path]]) -> Venv:
    """The venv ``name`` under ``base`` made with ``python``, then ``pip install`` of each
    argument list in order; built by the first caller (under a lock), reused by the rest."""
    venv = Venv(base / name)
    with FileLock(str(base / f"{name}.lock")):
        ready = venv.root / ".ready"
        if not ready.exists():
            shutil.rmtree(venv.root, ignore_errors=True)
            subprocess.run([python, "-m", "venv", str(venv.root)], check=True, timeout=INSTALL_TIMEOUT_S)
            for arguments in installs:
                # --no-compile: no .pyc for every module of numpy and grpc up front (minutes on
                # the 2-core CI machine); Python writes those it imports.
                venv.check("python", "-m", "pip", "install", "--quiet", "--no-compile", *arguments, timeout=INSTALL_TIMEOUT_S)
            ready.touch()
    return venv


def venv_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this session's, which every xdist worker shares (the parent of their base
    temps; without xdist, the session's own base temp)."""
    session = tmp_path_factory.getbasetemp()
    base = (session.parent if os.environ.get("PYTEST_XDIST_WORKER") else session) / "package-venvs"
    base.mkdir(exist_ok=True)
    return base
