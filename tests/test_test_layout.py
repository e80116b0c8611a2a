"""The tests' own layout: shared test code lives in ``tests/support/``, and test modules
never import one another.

Read from the source with ``ast``: every ``import`` and ``from ... import`` of every module
under ``tests/`` (at module level or inside functions, relative ones resolved), plus the
import lines of the scripts that tests write into strings and run as child processes.

- No module imports a ``test_*`` module: what two test modules share goes to
  ``tests/support/`` (importing a test module runs its module-level code and, in a child
  process, imports pytest with it).
- Test modules, conftest files and support modules import code of the tests only from
  ``tests.support`` (fixtures come from conftest files through pytest, never by import).
- Every module under ``tests/`` is a test module (``test_*.py``), a ``conftest.py``, a
  package's ``__init__.py``, or lives under ``tests/support/``; nothing under
  ``tests/support/`` is a test module or a conftest file (pytest collects none there).
- The tests mirror the source: the tests of ``src/stepscope/X/Y.py`` live in
  ``tests/X/test_Y*.py``, those of a top-level module at ``tests/`` top. What of that a
  program can decide is checked: every folder under ``tests/`` is a package of
  ``src/stepscope/`` (``tests/analysis/tools/`` for ``stepscope.analysis.tools``), but for
  the folders of ``NOT_MIRRORED``; and no test module at ``tests/`` top is named after a
  subpackage (``tests/test_cli_diff.py`` belongs in ``tests/cli/``). Which module a test
  module's name refers to is left to review (``test_hostile_files.py`` names no module).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.modules import modules

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SOURCE = ROOT / "src" / "stepscope"
SUPPORT = "tests.support"

# Folders of tests/ that mirror no package of src/stepscope/, each for its reason.
NOT_MIRRORED = {
    "support": "the code the tests share",
    "package": "the wheel and sdist as built and installed, which no module of src/ is",
}


FILES: dict[str, Path] = modules(ROOT, TESTS)


def is_test_module(module: str) -> bool:
    return module in FILES and FILES[module].name.startswith("test_")


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    in_string: bool

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line}{', in a script string' if self.in_string else ''})"


# An import line of a script held in a string: ``from X import a, b`` or ``import X, Y``.
_FROM_LINE = re.compile(r"^\s*from\s+(?P<base>\.*[\w.]*)\s+import\s+(?P<names>[\w\s,()*]+?)\s*(?:#.*)?$")
_IMPORT_LINE = re.compile(r"^\s*import\s+(?P<names>[\w.\s,]+?)\s*(?:#.*)?$")


def _names(text: str) -> list[str]:
    """``a, b as c, (d)`` -> ["a", "b", "d"]."""
    return [part.split()[0] for part in text.replace("(", " ").replace(")", " ").split(",") if part.strip()]


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[Import] = []

    def _resolve(self, base: str, level: int) -> str:
        if not level:
            return base
        package = self.package.split(".")
        package = package[: len(package) - (level - 1)]
        return ".".join(package + ([base] if base else []))

    def _add_from(self, base: str, names: list[str], line: int, in_string: bool) -> None:
        for name in names:
            # ``from tests.support import hostile`` imports the module tests.support.hostile;
            # ``from tests.support.traces import shared`` imports tests.support.traces.
            target = f"{base}.{name}" if f"{base}.{name}" in FILES else base
            self.found.append(Import(self.module, target, line, in_string))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append(Import(self.module, alias.name, node.lineno, False))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._resolve(node.module or "", node.level)
        self._add_from(base, [alias.name for alias in node.names], node.lineno, False)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or "import" not in node.value:
            return
        for offset, text in enumerate(node.value.splitlines()):
            line = node.lineno + offset
            if match := _FROM_LINE.match(text):
                dots = len(match["base"]) - len(match["base"].lstrip("."))
                self._add_from(self._resolve(match["base"].lstrip("."), dots), _names(match["names"]), line, True)
            elif match := _IMPORT_LINE.match(text):
                for name in _names(match["names"]):
                    self.found.append(Import(self.module, name, line, True))


def imports_of(module: str, source: str, is_package: bool = False) -> list[Import]:
    visitor = _Imports(module, is_package)
    visitor.visit(ast.parse(source))
    return visitor.found


IMPORTS = list(dict.fromkeys(edge for module, path in FILES.items() for edge in imports_of(module, path.read_text(), path.name == "__init__.py")))


def _of_the_tests(target: str) -> bool:
    return target == "tests" or target.startswith("tests.")


def test_the_imports_are_read():
    """The walker sees every kind of import (a broken walker would pass the rest)."""
    found = {(edge.source, edge.target, edge.in_string) for edge in IMPORTS}
    assert ("tests.trace.test_xspace_fast", "tests.support.xspaces", False) in found
    assert ("tests.trace.test_hostile_files", "tests.support.hostile", False) in found  # from tests.support import hostile
    assert ("tests.test_data", "tests.support.data_jobs", True) in found  # the child's script
    # (Spelled IMPORT here, so that the scan of this very file finds no import lines.)
    source = (
        "IMPORT tests.trace.test_xspace\n"
        "from tests.capture IMPORT test_session\n"
        "from .test_xspace_fast IMPORT SETTINGS\n"
        "def f():\n"
        "    from tests.support.dashboard IMPORT fake_jobs\n"
        "SCRIPT = f'x = {1}\\nfrom tests.trace IMPORT test_kineto as k\\n'\n"
    ).replace("IMPORT", "import")
    edges = {(edge.target, edge.in_string) for edge in imports_of("tests.trace.test_example", source)}
    assert edges == {
        ("tests.trace.test_xspace", False),
        ("tests.capture.test_session", False),
        ("tests.trace.test_xspace_fast", False),
        ("tests.support.dashboard.fake_jobs", False),
        ("tests.trace.test_kineto", True),
    }


def test_no_module_imports_a_test_module():
    wrong = [f"  {edge}" for edge in IMPORTS if is_test_module(edge.target)]
    assert not wrong, "imports of test modules (move what they share into tests/support/):\n" + "\n".join(wrong)


def test_shared_code_is_imported_from_tests_support_only():
    wrong = [f"  {edge}" for edge in IMPORTS if _of_the_tests(edge.target) and not (edge.target == SUPPORT or edge.target.startswith(SUPPORT + "."))]
    assert not wrong, "imports of test code from outside tests.support (move it there; fixtures reach tests through pytest):\n" + "\n".join(wrong)


def test_helper_modules_live_in_tests_support():
    outside, inside = [], []
    for module, path in FILES.items():
        in_support = module == SUPPORT or module.startswith(SUPPORT + ".")
        collected = path.name.startswith("test_") or path.name == "conftest.py"
        if not in_support and not collected and path.name != "__init__.py":
            outside.append(f"  {path.relative_to(ROOT)}")
        if in_support and collected:
            inside.append(f"  {path.relative_to(ROOT)}")
    assert not outside, "helper modules outside tests/support/ (move them there):\n" + "\n".join(outside)
    assert not inside, "test modules or conftest files under tests/support/ (it holds shared code only):\n" + "\n".join(inside)
    assert (TESTS / "support" / "__init__.py").exists()


def _packages(root: Path) -> set[Path]:
    """Every package folder under ``root`` (one holding a Python module: ``stepscope.trace``
    is a namespace package, with no ``__init__.py``), relative to it."""
    return {module.parent.relative_to(root) for module in root.rglob("*.py") if "__pycache__" not in module.parts} - {Path()}


def test_every_test_folder_mirrors_a_source_package():
    sources = _packages(SOURCE)
    assert Path("cli") in sources and Path("trace/formats/xspace") in sources  # the walk sees nested packages
    wrong = [f"  tests/{folder}/" for folder in sorted(_packages(TESTS)) if folder.parts[0] not in NOT_MIRRORED and folder not in sources]
    assert not wrong, "test folders with no package of src/stepscope/ of their name (name the folder after the package it tests):\n" + "\n".join(wrong)


def test_no_top_level_test_module_is_named_after_a_subpackage():
    subpackages = {folder.name for folder in _packages(SOURCE) if len(folder.parts) == 1}
    assert {"cli", "trace", "protos"} <= subpackages
    wrong = [
        f"  tests/{path.name} (move it to tests/{package}/)"
        for path in sorted(TESTS.glob("test_*.py"))
        for package in subpackages
        if path.stem == f"test_{package}" or path.stem.startswith(f"test_{package}_")
    ]
    assert not wrong, "test modules at tests/ top named after a subpackage of stepscope:\n" + "\n".join(wrong)
