"""The package tests' environments: fresh venvs holding what ``make dist`` built, one per
way a user meets stepscope (see ``tests.support.package``)."""

from __future__ import annotations

import pytest

from tests.support.dashboard.browser import chromium, watched_page
from tests.support.package import NEWEST_PYTHON, OLDEST, Venv, base_python, python_of, sdist, shared_venv, venv_base, wheel


@pytest.fixture(scope="session")
def fresh(tmp_path_factory) -> Venv:
    """The wheel, as ``pip install stepscope`` gives it, on this Python (3.11)."""
    return shared_venv(venv_base(tmp_path_factory), "wheel", base_python(), [[wheel()]])


@pytest.fixture(scope="session")
def with_tensorboard(tmp_path_factory) -> Venv:
    """The wheel, then TensorBoard (the seeds' flow: ``pip install``, ``tensorboard --logdir``)."""
    return shared_venv(venv_base(tmp_path_factory), "wheel-tensorboard", base_python(), [[wheel()], ["tensorboard"]])


@pytest.fixture(scope="session")
def oldest(tmp_path_factory) -> Venv:
    """The oldest release of every dependency pyproject.toml accepts, then the wheel."""
    return shared_venv(venv_base(tmp_path_factory), "oldest", base_python(), [["--only-binary=:all:", "-r", OLDEST], [wheel()]])


@pytest.fixture(scope="session")
def from_sdist(tmp_path_factory) -> Venv:
    """The sdist, built and installed where neither npm nor a C compiler is on PATH."""
    return shared_venv(venv_base(tmp_path_factory), "sdist", base_python(), [[sdist()]])


@pytest.fixture(scope="session")
def newer(tmp_path_factory) -> Venv:
    """The same abi3 wheel on the newest CPython here (3.13; 3.11 is ``fresh``'s)."""
    python = python_of(NEWEST_PYTHON)
    if python is None:
        pytest.skip(f"no CPython {NEWEST_PYTHON} on this machine")
    return shared_venv(venv_base(tmp_path_factory), f"wheel-{NEWEST_PYTHON}", python, [[wheel()]])


@pytest.fixture(scope="package")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser):
    with watched_page(browser) as opened:
        yield opened
