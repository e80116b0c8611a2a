"""Regenerate the committed ``*_pb2.py`` modules from the ``.proto`` sources.

The generated code is committed so that installing stepscope needs no protoc; a test runs
:func:`generate` into a temporary folder and fails when the committed files differ.
Run with ``python -m stepscope.protos.generate`` (or ``make protos``).
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PROTO_DIR.parent.parent  # the folder that holds the `stepscope` package
PROTO_FILES = ("xplane.proto", "profiler_options.proto", "profiler_service.proto", "capture_status.proto", "hlo.proto")


def generate(out_root: Path) -> list[Path]:
    """Writes ``stepscope/protos/*_pb2.py`` under ``out_root``; returns the files written."""
    from grpc_tools import protoc  # test-only dependency: the pinned protoc

    out_root.mkdir(parents=True, exist_ok=True)
    sources = [f"stepscope/protos/{name}" for name in PROTO_FILES]
    status = protoc.main(["protoc", f"-I{SOURCE_ROOT}", f"--python_out={out_root}", *sources])
    if status != 0:
        raise RuntimeError(f"protoc failed with status {status}")
    return [out_root / "stepscope" / "protos" / name.replace(".proto", "_pb2.py") for name in PROTO_FILES]


if __name__ == "__main__":
    for path in generate(SOURCE_ROOT):
        print(path)
    sys.exit(0)
