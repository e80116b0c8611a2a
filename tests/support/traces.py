"""Where the repository and the real profiles (``../shared/traces``) are, and reading them plainly."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/support/traces.py)
SHARED_TRACES = ROOT.parent / "shared" / "traces"
KINETO_TRACES = sorted((SHARED_TRACES / "kineto").glob("*.pt.trace.json.gz"))
XPLANE_TRACES = sorted((SHARED_TRACES / "xplane").glob("*.xplane.pb"))
ALL_SHARED_TRACES = KINETO_TRACES + XPLANE_TRACES


def shared(name: str) -> Path:
    """A file under ../shared/traces, e.g. shared("kineto/alexnet_small.pt.trace.json.gz")."""
    path = SHARED_TRACES / name
    if not path.exists():
        pytest.fail(f"shared trace {path} is missing; tests read the real profiles in ../shared/traces")
    return path


def read_json(path: Path) -> dict:
    """A trace JSON file read with the standard library: the independent reference."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as stream:
        return json.load(stream)
