"""Where the repository and the real profiles (``../shared/traces``) are, and reading them plainly."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from stepscope.trace.crop import crop
from stepscope.trace.model import Profile

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/support/traces.py)
SHARED_TRACES = ROOT.parent / "shared" / "traces"
KINETO_TRACES = sorted((SHARED_TRACES / "kineto").glob("*.pt.trace.json.gz"))
XPLANE_TRACES = sorted((SHARED_TRACES / "xplane").glob("*.xplane.pb"))
ALL_SHARED_TRACES = KINETO_TRACES + XPLANE_TRACES
# The two largest Kineto traces (53k and 45k events). Each brings a shape of its own as
# Kineto JSON (the 2021 schema; float nanosecond times), none once written as XSpace and
# read back: there a100_ddp_cnn (27k events, 4k flows) and the TPU trace already cover it,
# so slow exhaustive comparisons of that form may take ``middle_fifth`` of these two.
LARGEST_KINETO = ("v100_resnet50_dataloader4_legacy_schema", "v100_resnet_ns_resolution")


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


def middle_fifth(profile: Profile) -> Profile:
    """A real crop of ``profile`` (``stepscope.trace.crop``, as an exported range): the
    events that overlap the time between the 40th and 60th percentile of all starts."""
    starts = np.concatenate([plane.events.start_ps for plane in profile.planes])
    low, high = np.quantile(starts, [0.4, 0.6]).astype(np.int64).tolist()
    return crop(profile, low, high)
