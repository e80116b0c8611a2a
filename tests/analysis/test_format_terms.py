"""Format terms stay in the readers: above ``stepscope.trace`` nothing branches on which
format a profile came from, and nothing names a format's own terms (Kineto's categories
and arg names), so a new format touches only ``trace/``.

Read from the source with ``ast``: in every module of the layers that analyse a profile
(analysis, engines, viewer)

- no comparison reads an attribute named ``format`` (``profile.format == "xspace"``,
  ``profile.format in ...``);
- no name or attribute starts with ``KINETO_`` (``names.KINETO_MEMORY_BYTES``);
- no string, outside docstrings, is one of Kineto's categories or arg names.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "stepscope"
LAYERS = ("analysis", "engines", "viewer")
# libkineto's activity types and the args the memory profile and op tables read.
KINETO_TERMS = frozenset(
    {
        "cpu_op",
        "Operator",
        "user_annotation",
        "python_function",
        "cuda_runtime",
        "cuda_driver",
        "cpu_instant_event",
        "gpu_memcpy",
        "gpu_memset",
        "gpu_user_annotation",
        "cuda_sync",
        "[memory]",
        "Addr",
        "Total Allocated",
        "Total Reserved",
        "Device Type",
        "Device Id",
        "External id",
        "Input Dims",
        "fwdbwd",
        "Wait Event",
        "distributedInfo",
    }
)


def _modules() -> list[Path]:
    return sorted(path for layer in LAYERS for path in (PACKAGE / layer).rglob("*.py"))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _format_terms(text: str, where: str) -> list[tuple[int, str]]:
    """(line, what) of each format term in a module's source."""
    tree = ast.parse(text, where)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(isinstance(part, ast.Attribute) and part.attr == "format" for part in [node.left, *node.comparators]):
                found.append((node.lineno, "a branch on a profile's format"))
        elif isinstance(node, ast.Name) and node.id.startswith("KINETO_"):
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr.startswith("KINETO_"):
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.alias) and (node.asname or node.name).startswith("KINETO_"):
            found.append((node.lineno, f"imports {node.name}"))
        elif isinstance(node, ast.Constant) and node.value in KINETO_TERMS and id(node) not in docstrings:
            found.append((node.lineno, f"the Kineto term {node.value!r}"))
    return sorted(found)


def test_the_scan_reads_the_layers():
    modules = _modules()
    assert len(modules) > 40
    assert PACKAGE / "analysis" / "steps" / "classify.py" in modules


def test_no_format_terms_above_the_readers():
    found = [f"{path.relative_to(PACKAGE)}:{line}: {what}" for path in _modules() for line, what in _format_terms(path.read_text(), str(path))]
    assert not found, "format terms past the readers (translate them in trace/, see trace/kinds.py):\n" + "\n".join(found)


def test_the_scan_finds_what_it_looks_for():
    """Each rule fires on a line that breaks it (a scan that finds nothing proves nothing)."""
    text = (
        '"""cpu_op in a docstring is fine."""\n'
        "from stepscope.trace.names import KINETO_MEMORY_BYTES\n"
        'if profile.format == "xspace":\n'
        "    x = names.KINETO_ADDR\n"
        'y = stats.get("Total Allocated")\n'
        'z = args.output == "json"\n'
    )
    assert _format_terms(text, "bad.py") == [
        (2, "imports KINETO_MEMORY_BYTES"),
        (3, "a branch on a profile's format"),
        (4, "KINETO_ADDR"),
        (5, "the Kineto term 'Total Allocated'"),
    ]
