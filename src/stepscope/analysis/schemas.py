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

from stepscope.analysis import Output, specs
from stepscope.analysis.diff.compare import DiffResult
from stepscope.analysis.distributed.result import DistributedResult
from stepscope.analysis.registry import ToolsAnswer, json_schema
from stepscope.trace.files import atomic_write

SUFFIX = ".schema.json"
# The registry's own answer (GET /api/tools), beside the tools' results.
TOOLS_ANSWER = "tools"
# The diff of two runs (GET /api/diff, ``stepscope diff --format json``): not a registry
# tool, since it takes two runs, so its schema is written here beside theirs.
DIFF = "diff"
# The distributed view of a run of many ranks (stepscope distributed --format json): not a
# registry tool either (it takes every host of a run), so its schema is written here too.
DISTRIBUTED = "distributed"


def schema_texts() -> dict[str, str]:
    """File name -> text, for every tool with a JSON result, the tools listing, the diff and the distributed view."""
    schemas = {spec.name: spec.schema() for spec in specs(Output.TABLES)}
    schemas[TOOLS_ANSWER] = json_schema(ToolsAnswer, "tools_answer", "GET /api/tools: every tool of the registry, in menu order.")
    schemas[DIFF] = json_schema(DiffResult, DIFF, "GET /api/diff and stepscope diff --format json: what changed between two runs.")
    schemas[DISTRIBUTED] = json_schema(
        DistributedResult, DISTRIBUTED, "stepscope distributed --format json: a run of many ranks as one (rank x step, stragglers, collectives)."
    )
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
