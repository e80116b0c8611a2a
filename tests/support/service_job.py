"""A training process with stepscope's profiler server, for tests that capture it remotely."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

JOB = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import stepscope

    from stepscope.capture.annotations import current_recording

    port_file, seconds = Path(sys.argv[1]), float(sys.argv[2])
    stop_file = port_file.with_suffix(".stop")
    max_ms = int(sys.argv[3]) if len(sys.argv) > 3 else 600000
    after_capture = len(sys.argv) > 4 and sys.argv[4] == "after-capture"
    server = stepscope.start_server(0, max_duration_ms=max_ms)
    written = port_file.with_suffix(".writing")  # renamed into place: the test never reads half a port
    written.write_text(str(server.port))
    written.replace(port_file)
    # It steps for `seconds` at most, or until the test creates the stop file.
    # "after-capture": run `seconds` from the moment a capture starts recording (at most a
    # minute of waiting for it), so a test can end the job during a capture on any machine.
    limit = time.monotonic() + 60
    while after_capture and current_recording() is None and time.monotonic() < limit:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    step = 0
    recordings = []  # the captures that recorded a whole step, in order
    while time.monotonic() < deadline and not stop_file.exists():
        recording = current_recording()
        with stepscope.step(step):
            with stepscope.trace("compute"):
                time.sleep(0.002)
        step += 1
        # A whole step inside the n-th capture: the test waits on this mark, not on time.
        if recording is not None and current_recording() is recording and recording not in recordings:
            recordings.append(recording)
            port_file.with_suffix(f".recorded{len(recordings)}").write_text(str(step))
    print("job finished", step, time.time(), flush=True)
    """
)


# How long a job steps when the test does not say: until the test stops it (``finish``), and
# at most this long, so that a job a failed test left behind ends on its own.
UNTIL_STOPPED_S = 600.0
# The longest wait for the job's server to listen (starting Python and importing stepscope:
# about a second alone, much more on a loaded machine). A bound for a failure only.
START_TIMEOUT_S = 120.0


class Job:
    """A training process with a profiler server on an ephemeral loopback port.

    By default it steps until ``finish`` tells it to stop, so nothing the test does with it
    races the job's end, however slow the machine. ``seconds`` (with ``after_capture``): a
    job that ends on its own that long after a capture starts recording."""

    def __init__(self, tmp_path: Path, name: str, seconds: float = UNTIL_STOPPED_S, max_ms: int = 600_000, after_capture: bool = False) -> None:
        script = tmp_path / "job.py"
        script.write_text(JOB)
        port_file = tmp_path / f"{name}.port"
        self._port_file = port_file
        self._stop_file = port_file.with_suffix(".stop")
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(port_file), str(seconds), str(max_ms), "after-capture" if after_capture else "-"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not port_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"the job's profiler server never listened: {self.process.communicate()[1][-3000:]}")
            time.sleep(0.05)
        self.address = f"127.0.0.1:{port_file.read_text()}"

    def wait_for_a_recorded_step(self, capture: int) -> None:
        """Until the job has made a whole step inside its ``capture``-th capture (1: the first
        that recorded), so that capture's profile holds one, however late the job ran."""
        mark = self._port_file.with_suffix(f".recorded{capture}")
        deadline = time.monotonic() + START_TIMEOUT_S
        while not mark.exists():
            assert self.process.poll() is None and time.monotonic() < deadline, f"the job made no step during capture {capture}"
            time.sleep(0.01)

    def finish(self, stop: bool = True) -> str:
        """The job's stdout once it ended; ``stop``: tell it to stop stepping first (else it
        runs on for the rest of its ``seconds``)."""
        if stop:
            self._stop_file.write_text("stop")
        stdout, stderr = self.process.communicate(timeout=120)
        assert self.process.returncode == 0, stderr
        return stdout
