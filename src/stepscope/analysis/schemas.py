"""Writes each tool's JSON Schema (``ToolSpec.schema``) as ``<dir>/<tool>.schema.json``.

The dashboard's TypeScript types are generated from these files (``web/scripts/
generate-types.mjs``), and both are committed: ``tests/analysis/test_schemas.py`` and the
web tests fail when regenerating would change them, so the Python results, the schemas
and the page's types cannot drift apart. Run ``make schemas`` after changing a result type.

    python -m stepscope.analysis.schemas web/src/generated/schemas
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from stepscope.analysis import Output, analysis_specs, specs
from stepscope.analysis.registry import ToolsAnswer, json_schema
from stepscope.trace.files import atomic_write

SUFFIX = ".schema.json"
# The registry's own answer (GET /api/tools), beside the tools' results.
TOOLS_ANSWER = "tools"


def schema_texts() -> dict[str, str]:
    """File name -> text, for every tool with a JSON result, every analysis over several
    profiles (the diff, the distributed view) and the tools listing."""
    schemas = {spec.name: spec.schema() for spec in specs(Output.TABLES)}
    schemas.update({entry.name: entry.schema() for entry in analysis_specs()})
    schemas[TOOLS_ANSWER] = json_schema(ToolsAnswer, "tools_answer", "GET /api/tools: every tool of the registry, in menu order.")
    return {f"{name}{SUFFIX}": json.dumps(schema, indent=2) + "\n" for name, schema in schemas.items()}


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    texts = schema_texts()
    for stale in folder.glob(f"*{SUFFIX}"):
        if stale.name not in texts:
            stale.unlink()
    written = []
    for name, text in texts.items():
        atomic_write(folder / name, text.encode())
        written.append(folder / name)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1])):
        print(path)
