"""The JSON reader decodes events in batches (``columns.BATCH_EVENTS``) to bound its memory;
the profile must not depend on where the batches split.

Reference: the same file read as one batch (the batch size set past its event count), so
no batch boundary exists. Both profiles are written as XSpace and compared byte for byte,
which covers every plane, line, event, stat and metadata the writer keeps.
"""

from __future__ import annotations

import pytest

import stepscope
from stepscope.trace.formats.chrome import columns
from tests.support.traces import LARGEST_KINETO, shared

# The two largest shared traces (~70k events each: several batches at the default size),
# and a small one read in batches of a few events (many boundaries, a short last batch).
CASES = [(f"kineto/{name}.pt.trace.json.gz", columns.BATCH_EVENTS) for name in LARGEST_KINETO] + [("kineto/alexnet_small.pt.trace.json.gz", 7)]


@pytest.mark.parametrize(("name", "batch"), CASES)
def test_the_profile_does_not_depend_on_the_batch_size(name, batch, tmp_path, monkeypatch):
    path = shared(name)
    monkeypatch.setattr(columns, "BATCH_EVENTS", 10**9)
    whole = stepscope.load(path)
    monkeypatch.setattr(columns, "BATCH_EVENTS", batch)
    batched = stepscope.load(path)
    assert whole.event_count > batch  # more than one batch: the test crosses a boundary
    stepscope.save(whole, tmp_path / "whole.xplane.pb")
    stepscope.save(batched, tmp_path / "batched.xplane.pb")
    assert (tmp_path / "batched.xplane.pb").read_bytes() == (tmp_path / "whole.xplane.pb").read_bytes()
