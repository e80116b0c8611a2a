"""stepscope.trace.jit loads numba without its BLAS probe (an import of scipy.linalg), and
leaves numba's linear algebra working for everyone else in the process. Each case runs in
a fresh interpreter: what is imported first is the point."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import util

import pytest

from tests.support.traces import shared

TPU = "xplane/tpu_v_inference_4chips.xplane.pb"

# A first bulk read (the compiled decoder), then a function of the user's own compiled with
# np.dot and np.convolve: their answers against numpy's.
SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    if sys.argv[2] == "numba first":
        import numba
    from stepscope.trace.formats.xspace.read import read_xspace
    path = Path(sys.argv[1])
    profile = read_xspace(path, path.read_bytes(), bulk=True)
    scipy_after_read = "scipy.linalg" in sys.modules
    import numba
    import numpy as np

    @numba.njit
    def user_code(a, b):
        return np.dot(a, b), np.convolve(a, b)

    a, b = np.arange(1.0, 6.0), np.array([0.5, -1.0, 2.0, 3.0, 0.25])
    dot, convolved = user_code(a, b)
    print(json.dumps({
        "events": profile.event_count,
        "scipy_after_read": scipy_after_read,
        "dot": [float(dot), float(np.dot(a, b))],
        "convolve": [convolved.tolist(), np.convolve(a, b).tolist()],
    }))
    """
)


def run(order: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(shared(TPU)), order], capture_output=True, text=True, timeout=300, check=True)
    result: dict = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_scipy_is_installed_so_the_probe_would_import_it():
    assert util.find_spec("scipy") is not None  # (JAX's dependency; without it the tests below prove nothing)


@pytest.mark.parametrize("order", ["stepscope first", "numba first"])
def test_numba_loaded_by_stepscope_skips_the_blas_probe_and_linear_algebra_still_works(order: str):
    result = run(order)
    assert result["events"] > 0
    # Only where stepscope imports numba first is the probe (and scipy) skipped.
    assert result["scipy_after_read"] is (order == "numba first")
    # dot = 1*0.5 + 2*-1 + 3*2 + 4*3 + 5*0.25 = 17.75, and numba's answers are numpy's.
    assert result["dot"] == [17.75, 17.75]
    ours, numpy_convolve = result["convolve"]
    assert ours == pytest.approx(numpy_convolve, rel=1e-12)
    assert numpy_convolve[0] == 0.5 and numpy_convolve[-1] == 1.25  # 1*0.5, 5*0.25
