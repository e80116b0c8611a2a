"""What ``make dist`` builds holds what a user's install needs, and what a registry accepts.

The wheel: one abi3 binary for every CPython from 3.11, tagged manylinux (auditwheel), the
dashboard's page and every asset it links, the metadata pyproject.toml declares (read here
with tomllib, not through setuptools), and no C sources. The sdist: the web/ sources and
the built page (so building from it needs no Node.js), the C sources, what a user checks
first (LICENSE, CHANGELOG), and no tests or node_modules.
"""

from __future__ import annotations

import re
import tarfile
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

import stepscope
from tests.support.package import sdist, wheel
from tests.support.traces import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
PAGE = "stepscope/dashboard/static/index.html"


def _parsed(requirement: str) -> tuple[str, SpecifierSet]:
    parsed = Requirement(requirement)
    return parsed.name, parsed.specifier


def _metadata(names: list[str], archive: zipfile.ZipFile) -> tuple[object, str]:
    (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
    (wheel_file,) = [name for name in names if name.endswith(".dist-info/WHEEL")]
    return HeaderParser().parsestr(archive.read(metadata).decode()), archive.read(wheel_file).decode()


def test_the_wheel_is_one_abi3_manylinux_build_with_the_page_and_the_declared_metadata():
    path = wheel()
    # {name}-{version}-{python tag}-{abi tag}-{platform tag}.whl
    name, version, python_tag, abi_tag, platform_tag = path.name.removesuffix(".whl").split("-")
    assert (name, version, python_tag, abi_tag) == ("stepscope", stepscope.__version__, "cp311", "abi3")
    assert re.fullmatch(r"(manylinux\w*_x86_64\.?)+", platform_tag), platform_tag
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        page = archive.read(PAGE).decode()
        metadata, wheel_file = _metadata(names, archive)
    # Every asset the page links (src="./assets/..." / href="./assets/...") is in the wheel.
    linked = re.findall(r'(?:src|href)="\./(assets/[^"]+)"', page)
    assert linked and all(f"stepscope/dashboard/static/{asset}" in names for asset in linked), linked
    assert "stepscope/capture/_spans.abi3.so" in names
    # What users' type checkers read: the marker and the compiled modules' stubs.
    assert {"stepscope/py.typed", "stepscope/_kernels.pyi", "stepscope/capture/_spans.pyi"} <= set(names)
    assert {"stepscope/render/static/report.js", "stepscope/render/report.css"} <= set(names)  # report --format html
    assert [name for name in names if name.endswith(".c")] == []
    assert "Root-Is-Purelib: false" in wheel_file and f"Tag: cp311-abi3-{platform_tag.split('.')[0]}" in wheel_file
    assert metadata["Version"] == stepscope.__version__
    assert metadata["License-Expression"] == PYPROJECT["license"] == "Apache-2.0"
    assert metadata["Requires-Python"] == PYPROJECT["requires-python"]
    assert set(metadata.get_all("Classifier")) == set(PYPROJECT["classifiers"])
    required = {_parsed(requirement) for requirement in metadata.get_all("Requires-Dist") if "extra ==" not in requirement}
    assert required == {_parsed(requirement) for requirement in PYPROJECT["dependencies"]}
    assert f"stepscope-{version}.dist-info/licenses/LICENSE" in names


def test_the_sdist_carries_the_web_sources_the_built_page_and_the_c_sources():
    path = sdist()
    top = path.name.removesuffix(".tar.gz")
    assert top == f"stepscope-{stepscope.__version__}"
    with tarfile.open(path) as archive:
        names = {Path(name).relative_to(top).as_posix() for name in archive.getnames() if name != top}
    for needed in (
        "LICENSE",
        "CHANGELOG.md",
        "README.md",
        "pyproject.toml",
        "setup.py",
        "MANIFEST.in",
        "web/package.json",
        "web/package-lock.json",
        "web/index.html",
        "web/src/main.ts",
        "web/vite.config.ts",
        "web/report/main.ts",
        "web/vite.report.config.ts",
        f"src/{PAGE}",
        "src/stepscope/render/static/report.js",
        "src/stepscope/capture/_spans.c",
    ):
        assert needed in names, needed
    assert not [name for name in names if "node_modules" in name or name.startswith("tests/") or name.endswith((".so", ".pyc"))]
