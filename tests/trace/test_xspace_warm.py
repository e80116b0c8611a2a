"""The readers' warm-up (``stepscope.trace.readers.warm``: the XSpace sample of
``stepscope.trace.formats.xspace.warm``): after it, reading real profiles and building
their trace viewer index import no module the warm-up did not, so a warmed dashboard
worker's first job pays for none.

The check runs in a fresh interpreter (what a process has imported is the point): the
warm-up and its index, the modules imported, then the real profiles, then the modules again.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import stepscope
from stepscope.trace.formats.xspace import warm
from stepscope.trace.readers import load
from tests.support.traces import shared

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"
KINETO = "kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"  # 4k flows, once written as XSpace

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from stepscope.trace.readers import load, warm

    before = set(sys.modules)
    from stepscope.viewer import build_index  # what a worker imports to warm up (its details decode protobuf)

    build_index(warm())
    warmed = set(sys.modules)
    counts = [build_index(load(path)).event_count for path in sys.argv[1:]]
    print(json.dumps({"warm-up": sorted(warmed - before), "after": sorted(set(sys.modules) - warmed), "counts": counts}))
    """
)


def test_the_sample_reads_as_built():
    profile = warm.warm()
    host, device = profile.planes
    # Three nested events on the host line (10, 5 and 1 ns from 0, 1 and 2 ns), one kernel.
    assert (host.name, device.name) == ("/host:CPU", "/device:GPU:0")
    assert host.events.start_ps.tolist() == [0, 1_000, 2_000] and host.events.duration_ps.tolist() == [10_000, 5_000, 1_000]
    assert device.events.start_ps.tolist() == [3_000]
    # The flow: out of the launch (host row 2), into the kernel (device row 0), id 7.
    flows = profile.flows
    assert (flows.flow_id.tolist(), flows.src_plane.tolist(), flows.src_event.tolist(), flows.dst_plane.tolist(), flows.dst_event.tolist()) == (
        [7],
        [0],
        [2],
        [1],
        [0],
    )
    assert host.events.correlation_id.tolist()[2] == device.events.correlation_id.tolist()[0] == 7


def test_real_profiles_import_nothing_beyond_the_warm_up(tmp_path: Path):
    written = tmp_path / "a100.xplane.pb"
    stepscope.save(load(shared(KINETO)), written)  # stepscope's writer: flows, every stat kind Kineto has
    zipped = tmp_path / "tpu.xplane.pb.gz"
    zipped.write_bytes(gzip.compress(shared(TPU).read_bytes()))  # read into a bytearray
    paths = [shared(TPU), written, zipped]
    done = subprocess.run([sys.executable, "-c", SCRIPT, *map(str, paths)], capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(count > 0 for count in result["counts"])
    # The warm-up imported the reader's modules (protobuf's, the hot ids, the flow pairing
    # and the nesting among them), and reading the real profiles imported nothing.
    for module in ("google.protobuf.message", "stepscope.trace.formats.xspace.hot_ids", "stepscope.trace.formats.xspace.arrows", "stepscope.trace.presorted"):
        assert module in result["warm-up"], module
    assert result["after"] == []
