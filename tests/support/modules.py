"""Python modules of a source tree by dotted name: what the layer tests read."""

from __future__ import annotations

from pathlib import Path


def modules(root: Path, folder: Path) -> dict[str, Path]:
    """Every module under ``folder`` by its dotted name relative to ``root``
    (``root/a/b/__init__.py`` is ``a.b``); a compiled one by its stub (``a/_c.pyi``)."""
    found = {}
    for path in sorted([*folder.rglob("*.py"), *(stub for stub in folder.rglob("*.pyi") if not stub.with_suffix(".py").exists())]):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found
