"""Hostile input, round 2 (issue 40): the surfaces beyond the profile readers, each met as a
user meets it: ``file://`` URLs through the real CLI, the profiler server inside a real
training job, and the dashboard's cache and logdir through a real ``stepscope serve``.

Every answer is one line (exit status 2 on the CLI, a JSON error or a rebuilt analysis on
the server); nothing hangs (each child process has a timeout), nothing dies.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import hostile

TIMEOUT_S = 60


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stepscope.cli", *args], capture_output=True, text=True, timeout=TIMEOUT_S)


def _one_line_error(result: subprocess.CompletedProcess, says: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"stepscope: error: {says}"]


# --- item 7: file:// URLs get the local checks ---------------------------------------------

FIFO_PROBLEM = "is a named pipe (FIFO), not a regular file; profiles are read from regular files only"
DEVICE_PROBLEM = "is a character device, not a regular file; profiles are read from regular files only"


@pytest.mark.parametrize(("make", "problem"), [(hostile.fifo, FIFO_PROBLEM), (hostile.device_file, DEVICE_PROBLEM)])
def test_a_file_url_that_is_no_regular_file_is_one_line(tmp_path, make, problem):
    """A FIFO URL gave `distributed` an IndexError traceback; a link to /dev/zero was read."""
    url = f"file://{make(tmp_path / 'rank0.trace.json')}"
    _one_line_error(_cli("distributed", url), f"{url}: {problem}")


def test_a_file_url_folder_skips_what_is_no_regular_file(tmp_path):
    """A folder URL with two ranks, a FIFO and a link to /dev/zero beside them: the two
    ranks are read, the others never opened (a FIFO opened for sniffing would hang)."""
    for rank in (0, 1):
        hostile.xspace_of_events(tmp_path / f"rank{rank}.xplane.pb", 10)
    hostile.fifo(tmp_path / "rank2.trace.json")
    hostile.device_file(tmp_path / "rank3.trace.json")
    result = _cli("distributed", f"file://{tmp_path}", "--format", "json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert '"rank0"' in result.stdout and '"rank1"' in result.stdout
    assert "rank2" not in result.stdout and "rank3" not in result.stdout
