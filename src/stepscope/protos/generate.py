"""Regenerate the committed ``*_pb2.py`` modules from the ``.proto`` sources.

The generated code is committed so that installing stepscope needs no protoc; a test runs
:func:`generate` into a temporary folder and fails when the committed files differ.
Run with ``python -m stepscope.protos.generate`` (or ``make protos``).

The protoc is the one of grpcio-tools 1.63.2 (protobuf 26.1, Python gencode 5.26.1), the
oldest runtime stepscope supports: protobuf's generated code works with runtimes from its
own version up, and code from protoc 27 on also refuses older runtimes
(``runtime_version.ValidateProtobufRuntimeVersion``), which would make pip upgrade protobuf
under a user's TensorFlow or refuse to install. It is installed apart from the test
environment (``make`` puts it in ``.venv/protoc`` with ``pip install --no-deps --target``):
grpcio-tools 1.63 requires protobuf < 6, which TensorFlow beside it does not accept, and
protoc itself is compiled code that needs no protobuf runtime.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PROTO_DIR.parent.parent  # the folder that holds the `stepscope` package
PROTO_FILES = (
    "xplane.proto",
    "profiler_options.proto",
    "profiler_service.proto",
    "capture_status.proto",
    "hlo.proto",
    "perfetto_trace.proto",
    "op_metrics.proto",
)
# Where make installs the pinned protoc (requirements/protoc.txt); STEPSCOPE_PROTOC_PATH overrides.
PROTOC_PATH = Path(os.environ.get("STEPSCOPE_PROTOC_PATH", SOURCE_ROOT.parent / ".venv" / "protoc"))


def generate(out_root: Path) -> list[Path]:
    """Writes ``stepscope/protos/*_pb2.py`` under ``out_root``; returns the files written."""
    if not (PROTOC_PATH / "grpc_tools").is_dir():
        raise RuntimeError(f"{PROTOC_PATH}: the pinned protoc is not installed there (make venv installs requirements/protoc.txt)")
    out_root.mkdir(parents=True, exist_ok=True)
    sources = [f"stepscope/protos/{name}" for name in PROTO_FILES]
    command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{SOURCE_ROOT}", f"--python_out={out_root}", *sources]
    done = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(PROTOC_PATH)}, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"protoc failed with status {done.returncode}: {done.stderr.strip()}")
    return [out_root / "stepscope" / "protos" / name.replace(".proto", "_pb2.py") for name in PROTO_FILES]


if __name__ == "__main__":
    for path in generate(SOURCE_ROOT):
        print(path)
    sys.exit(0)
