"""The package's import graph has no cycles, and its layers only point down.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import`` at
module level, inside functions (the lazy imports that keep protobuf, grpc or a framework out
of ``import stepscope``) and under ``if TYPE_CHECKING:``, plus every string that names one
of the package's submodules (what ``importlib.import_module`` and the tracer registry load).

- Cycles: among the imports that run (not those under ``TYPE_CHECKING``, which never do).
- Layers, as docs/contributing.md ("The layers") draws the data flow ("each stage consumes
  one type and produces the next; nothing downstream reaches back"), for every import,
  type-only ones included:

      layer                        may import (and itself, and the base)
      cli (the package), demo,     anything
      __main__, notebook
      dashboard (server, the       dashboard.api, dashboard.jobs, and what they may
      TensorBoard plugin, wsgi)
      dashboard.api                dashboard.jobs, and what it may
      dashboard.jobs               dashboard.errors, viewer, render, analysis, engines, capture,
                                   api, trace, its registries
      dashboard.errors (api_errors: raised by both sides)
      viewer                       analysis, trace
      render                       analysis, trace
      engines                      analysis, trace, its registries (they load each rank's file)
      analysis                     trace (the model, not its codecs or registries)
      capture                      trace, its codecs and registries
      api (stepscope/__init__, data, keras: the public names and capture's integrations)
                                   capture, trace, its registries
      trace.readers, trace.writers trace.formats, trace
      trace.store (the profile store)
      trace.formats.<format>       trace (the model); never another format
      trace                        nothing above it
      errors, sizes, jsonform,     the base
      protos, _kernels (the C,
      read through its stub)

- Roles inside analysis: its building blocks (the core modules at its top, steps, ops,
  memory, xla, findings, paths) never import a tool (``analysis.tools``) or a multi-profile
  analysis (``analysis.diff``, ``analysis.distributed``), and a tool never imports another
  tool: what two tools share lives in a building block. ``stepscope.analysis`` itself
  imports every tool (that registers them).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.modules import modules

SOURCE = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SOURCE / "stepscope"

BASE = "base"
# Layer -> the layers it may import besides itself and the base.
ALLOWED: dict[str, frozenset[str]] = {
    BASE: frozenset(),
    "trace": frozenset(),
    "trace.formats": frozenset({"trace"}),
    "trace.registries": frozenset({"trace", "trace.formats"}),
    "capture": frozenset({"trace", "trace.formats", "trace.registries"}),
    "analysis": frozenset({"trace"}),
    "render": frozenset({"analysis", "trace"}),
    "viewer": frozenset({"analysis", "trace"}),
    "api": frozenset({"capture", "trace", "trace.registries"}),
    "engines": frozenset({"analysis", "trace", "trace.registries"}),
    "dashboard.errors": frozenset(),
    "dashboard.jobs": frozenset({"dashboard.errors", "viewer", "render", "analysis", "engines", "capture", "api", "trace", "trace.registries"}),
    "dashboard.api": frozenset(
        {"dashboard.jobs", "dashboard.errors", "viewer", "render", "analysis", "engines", "capture", "api", "trace", "trace.registries"}
    ),
    "dashboard": frozenset(
        {"dashboard.api", "dashboard.jobs", "dashboard.errors", "viewer", "render", "analysis", "engines", "capture", "api", "trace", "trace.registries"}
    ),
    "top": frozenset(
        {
            "dashboard",
            "dashboard.api",
            "dashboard.jobs",
            "dashboard.errors",
            "viewer",
            "render",
            "analysis",
            "engines",
            "capture",
            "api",
            "trace",
            "trace.registries",
            "trace.formats",
        }
    ),
}


# Imports that point up (and close a cycle) on purpose, each with its reason; each runs only
# when its function is called. An entry that no longer matches an import fails the test:
# delete it.
DISPLAY = "IPython's display protocol (__repr__, _repr_html_) must be a method of the class; what it shows is presentation"
KEPT: dict[tuple[str, str, str], str] = {
    ("stepscope.trace.model", "stepscope.render.display", "function"): DISPLAY,
    ("stepscope.analysis.registry", "stepscope.render.display", "function"): DISPLAY,
    ("stepscope.analysis.tables", "stepscope.render.display", "function"): DISPLAY,
    ("stepscope", "stepscope.notebook", "string"): "the lazy attribute stepscope.notebook: imported on first use, like every public name",
}


def layer(module: str) -> str:
    parts = module.split(".")
    if module in ("stepscope", "stepscope.data", "stepscope.keras"):
        return "api"
    if module in ("stepscope.demo", "stepscope.__main__", "stepscope.notebook") or parts[1] == "cli":
        return "top"
    if module in ("stepscope.errors", "stepscope.sizes", "stepscope.jsonform", "stepscope._kernels") or parts[1] == "protos":
        return BASE
    if parts[1] == "dashboard":
        if module == "stepscope.dashboard.api_errors":
            return "dashboard.errors"
        return f"dashboard.{parts[2]}" if len(parts) > 2 and parts[2] in ("api", "jobs") else "dashboard"
    if parts[1] == "trace":
        if len(parts) > 2 and parts[2] == "formats":
            return "trace.formats"
        if module in ("stepscope.trace.readers", "stepscope.trace.writers", "stepscope.trace.store"):
            return "trace.registries"
        return "trace"
    if parts[1] in ALLOWED:
        return parts[1]
    raise AssertionError(f"{module} belongs to no layer: place it in tests/test_layers.py")


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    kind: str  # "module", "function", "typing" (under TYPE_CHECKING) or "string"

    def __str__(self) -> str:
        return f"{self.source} -> {self.target} (line {self.line}, {self.kind})"


MODULES: dict[str, Path] = modules(SOURCE, PACKAGE)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, is_stub: bool = False) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[Import] = []
        self._functions = 0
        self._typing = 1 if is_stub else 0  # a stub's imports never run: all of them are types

    def _kind(self) -> str:
        return "typing" if self._typing else ("function" if self._functions else "module")

    def _add(self, target: str | None, line: int, kind: str | None = None) -> None:
        edge = Import(self.module, target, line, kind or self._kind()) if target not in (None, self.module) else None
        if edge is not None and edge not in self.found:  # (one per statement, not per name)
            self.found.append(edge)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._functions += 1
        self.generic_visit(node)
        self._functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self._typing += 1
        for child in node.body:
            self.visit(child)
        self._typing -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(_known(alias.name), node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.package.split(".")
            package = package[: len(package) - (node.level - 1)]
            base = ".".join(package + ([base] if base else []))
        for alias in node.names:
            self._add(_known(f"{base}.{alias.name}") or _known(base), node.lineno)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "." in node.value and node.value in MODULES:  # not "stepscope" itself
            self._add(node.value, node.lineno, "string")


def _known(name: str) -> str | None:
    return name if name in MODULES else None


def imports() -> list[Import]:
    found = []
    for module, path in MODULES.items():
        visitor = _Imports(module, path.name == "__init__.py", path.suffix == ".pyi")
        visitor.visit(ast.parse(path.read_text(), str(path)))
        found += visitor.found
    return found


IMPORTS = imports()
CHECKED = [edge for edge in IMPORTS if (edge.source, edge.target, edge.kind) not in KEPT]


def test_every_kept_import_exists():
    found = {(edge.source, edge.target, edge.kind) for edge in IMPORTS}
    assert set(KEPT) <= found, f"kept imports that no longer exist (delete them from KEPT): {sorted(set(KEPT) - found)}"


def _cycles(edges: list[Import]) -> Iterator[list[Import]]:
    """The imports within each strongly connected component of more than one module."""
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for edge in edges:
        graph[edge.source].add(edge.target)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in graph:  # Tarjan's algorithm, iteratively (no recursion limit to meet)
        if root in order:
            continue
        work = [(root, iter(sorted(graph[root])))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in order:
                    order[successor] = low[successor] = len(order)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], order[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
    for component in components:
        yield [edge for edge in edges if edge.source in component and edge.target in component]


def test_the_graph_is_read():
    """The walker sees the imports of every kind (a broken walker would pass the rest)."""
    found = {(edge.source, edge.target, edge.kind) for edge in IMPORTS}
    assert ("stepscope.trace.readers", "stepscope.trace.formats.xspace.schema", "module") in found
    assert ("stepscope.trace.readers", "stepscope.trace.formats.xspace.read", "function") in found
    assert ("stepscope", "stepscope.capture.client", "string") in found
    assert any(edge.kind == "typing" for edge in IMPORTS)


def test_no_import_cycles():
    running = [edge for edge in CHECKED if edge.kind != "typing"]
    cycles = ["\n".join(f"  {edge}" for edge in edges) for edges in _cycles(running)]
    assert not cycles, "import cycles (move the shared names into a lower module):\n" + "\n\n".join(cycles)


def test_layers_only_point_down():
    wrong = []
    for edge in CHECKED:
        source, target = layer(edge.source), layer(edge.target)
        if source != target and target != BASE and target not in ALLOWED[source]:
            wrong.append(f"  {edge}: {source} may not import {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


ANALYSIS = "stepscope.analysis"
TOOLS = f"{ANALYSIS}.tools"
# The packages that sit on top of the building blocks: a building block imports none of them.
ON_TOP = (TOOLS, f"{ANALYSIS}.diff", f"{ANALYSIS}.distributed")
# Imports against the roles on purpose, each with its reason. An entry that no longer
# matches an import fails the test: delete it.
ROLES_KEPT: dict[tuple[str, str], str] = {}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _tool(module: str) -> str | None:
    """The tool a module belongs to (``analysis.tools.<tool>``, or a module of its package)."""
    parts = module.split(".")
    return parts[3] if _under(module, TOOLS) and len(parts) > 3 else None


def against_roles(edges: list[Import]) -> list[str]:
    """The imports that break the roles inside analysis (see the module's docstring)."""
    wrong = []
    for edge in edges:
        source, target = edge.source, edge.target
        if not _under(source, ANALYSIS) or source in (ANALYSIS, TOOLS) or (source, target) in ROLES_KEPT:
            continue
        if not any(_under(source, package) for package in ON_TOP) and any(_under(target, package) for package in ON_TOP):
            wrong.append(f"  {edge}: a building block may not import a tool, diff or distributed")
        elif _tool(source) and _tool(target) and _tool(source) != _tool(target):
            wrong.append(f"  {edge}: a tool may not import another tool (share through a building block)")
    return wrong


def test_every_kept_role_import_exists():
    found = {(edge.source, edge.target) for edge in IMPORTS}
    assert set(ROLES_KEPT) <= found, f"kept imports that no longer exist (delete them from ROLES_KEPT): {sorted(set(ROLES_KEPT) - found)}"


def test_analysis_roles():
    wrong = against_roles(IMPORTS)
    assert not wrong, "imports against the roles inside analysis:\n" + "\n".join(wrong)


def test_the_roles_rule_catches_a_violation():
    """Synthetic imports (the modules exist; the imports do not): each breaks one rule, and
    the rule finds it; a building block importing the core, and a tool a building block, pass."""
    step_imports_tool = Import(f"{ANALYSIS}.steps.steps", f"{TOOLS}.overview_page", 1, "module")
    ops_imports_diff = Import(f"{ANALYSIS}.ops.ops", f"{ANALYSIS}.diff.compare", 2, "function")
    core_imports_distributed = Import(f"{ANALYSIS}.opstats", f"{ANALYSIS}.distributed", 3, "typing")
    tool_imports_tool = Import(f"{TOOLS}.kernel_stats", f"{TOOLS}.overview_page", 4, "module")
    allowed = [
        Import(f"{TOOLS}.kernel_stats", f"{ANALYSIS}.ops.kernels", 5, "module"),
        Import(f"{ANALYSIS}.findings.verdict", f"{ANALYSIS}.opstats", 6, "module"),
        Import(f"{ANALYSIS}.diff.compare", f"{TOOLS}.overview_page", 7, "module"),
    ]
    for edge in (*allowed, step_imports_tool, ops_imports_diff, core_imports_distributed, tool_imports_tool):
        assert edge.source in MODULES and edge.target in MODULES, edge
    assert against_roles(allowed) == []
    wrong = against_roles([step_imports_tool, ops_imports_diff, core_imports_distributed, tool_imports_tool])
    assert [line.split(": ", 1)[1] for line in wrong] == [
        *["a building block may not import a tool, diff or distributed"] * 3,
        "a tool may not import another tool (share through a building block)",
    ]
    assert [line.split(" (line")[0].strip() for line in wrong] == [
        str(edge).split(" (line")[0] for edge in (step_imports_tool, ops_imports_diff, core_imports_distributed, tool_imports_tool)
    ]


def test_a_format_imports_no_other_format():
    def format_of(module: str) -> str | None:
        parts = module.split(".")
        return parts[3] if parts[:3] == ["stepscope", "trace", "formats"] and len(parts) > 3 else None

    wrong = [f"  {edge}" for edge in IMPORTS if format_of(edge.source) and format_of(edge.target) and format_of(edge.source) != format_of(edge.target)]
    assert not wrong, "a codec imports another codec:\n" + "\n".join(wrong)
