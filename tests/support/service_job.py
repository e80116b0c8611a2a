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
    port_file.write_text(str(server.port))
    # It steps for `seconds` at most, or until the test creates the stop file.
    # "after-capture": run `seconds` from the moment a capture starts recording (at most a
    # minute of waiting for it), so a test can end the job during a capture on any machine.
    limit = time.monotonic() + 60
    while after_capture and current_recording() is None and time.monotonic() < limit:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    step = 0
    while time.monotonic() < deadline and not stop_file.exists():
        with stepscope.step(step):
            with stepscope.trace("compute"):
                time.sleep(0.002)
        step += 1
    print("job finished", step, time.time(), flush=True)
    """
)


class Job:
    """A training process with a profiler server on an ephemeral loopback port.

    ``seconds`` is how long it steps at most: long enough to outlast what the test does
    with it (so a capture that waited for the job's end would show), while ``finish`` tells
    it to stop once the test is done with it, so the test does not wait out the rest."""

    def __init__(self, tmp_path: Path, name: str, seconds: float, max_ms: int = 600_000, after_capture: bool = False) -> None:
        script = tmp_path / "job.py"
        script.write_text(JOB)
        port_file = tmp_path / f"{name}.port"
        self._stop_file = port_file.with_suffix(".stop")
        self.process = subprocess.Popen(
            [sys.executable, str(script), str(port_file), str(seconds), str(max_ms), "after-capture" if after_capture else "-"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(200):
            if port_file.exists() and port_file.read_text():
                break
            time.sleep(0.05)
        self.address = f"127.0.0.1:{port_file.read_text()}"

    def finish(self, stop: bool = True) -> str:
        """The job's stdout once it ended; ``stop``: tell it to stop stepping first (else it
        runs on for the rest of its ``seconds``)."""
        if stop:
            self._stop_file.write_text("stop")
        stdout, stderr = self.process.communicate(timeout=120)
        assert self.process.returncode == 0, stderr
        return stdout
