"""The dashboard inside a notebook: ``stepscope.notebook.show(logdir_or_profile)``.

``show`` starts the dashboard's server, the one ``stepscope serve`` runs, as a child process
on 127.0.0.1 and a free port, and returns an IPython ``IFrame`` of its page. A child
process, not a thread of the kernel: the dashboard starts its analysis workers with
``spawn``, which needs an importable ``__main__`` (a kernel has none that a worker can
re-import), and a crash or a long analysis never touches the kernel. ``stop()`` (also run
at interpreter exit) ends every server this module started and removes the temporary
logdirs it wrote.

A profile given as an object is written to a temporary logdir first
(``<tmp>/plugins/profile/notebook/<host>.xplane.pb``). IPython is imported only by ``show``.

The iframe's address is 127.0.0.1 as the kernel's machine sees it: the browser showing the
notebook must be on that machine. With a remote Jupyter, forward the port
(``ssh -L PORT:127.0.0.1:PORT host``, with ``show(..., port=PORT)``); the server never
listens beyond loopback.
"""

from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepscope.errors import StepscopeError
from stepscope.trace.logdir import make_path
from stepscope.trace.model import Profile
from stepscope.trace.writers import save

LOOPBACK = "127.0.0.1"
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
DEFAULT_HEIGHT = 800
OUTPUT_LINES = 50  # of a server's output kept (its startup line, warnings, a failure's reason)
SESSION = "notebook"  # the session folder a profile object is written to
# The pages that may frame the dashboard: a notebook served from this machine (Jupyter on
# localhost:8888, or a remote one reached through ``ssh -L``) and VS Code's notebook view.
FRAME_ANCESTORS = ("http://localhost:*", "http://127.0.0.1:*", "https://localhost:*", "https://127.0.0.1:*", "vscode-webview:")
URL = re.compile(r" at (http://\S+)")  # in the server's first line (``dashboard.server.startup_line``)


@dataclass
class Server:
    """One dashboard server this module started; ``output``: the last lines it printed."""

    logdir: Path
    url: str
    process: subprocess.Popen[str]
    output: deque[str]

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


_servers: dict[Path, Server] = {}  # by logdir
_written: weakref.WeakKeyDictionary[Profile, Path] = weakref.WeakKeyDictionary()  # profile -> its temporary logdir
_temporary: list[Path] = []  # every temporary logdir written, removed by stop()
_lock = threading.Lock()


def show(logdir_or_profile: str | Path | Profile, height: int = DEFAULT_HEIGHT, port: int = 0, cache_dir: str | Path | None = None) -> Any:
    """The dashboard of a logdir (or of a loaded profile) as an ``IPython.display.IFrame``.

    One server per logdir, reused by later calls while it runs; ``port=0`` picks a free
    port. ``cache_dir``: the dashboard's analysis cache (``stepscope serve --cache-dir``)."""
    try:
        from IPython.display import IFrame
    except ImportError:
        raise StepscopeError("stepscope.notebook.show needs IPython: pip install ipython (or run it in Jupyter)") from None
    server = start(logdir_or_profile, port, cache_dir)
    return IFrame(server.url, width="100%", height=height)


def start(logdir_or_profile: str | Path | Profile, port: int = 0, cache_dir: str | Path | None = None) -> Server:
    """The running server of the logdir (or profile), started if there is none."""
    with _lock:
        if isinstance(logdir_or_profile, Profile):
            logdir = _written.get(logdir_or_profile)
            if logdir is None:
                logdir = Path(tempfile.mkdtemp(prefix="stepscope-notebook-"))
                _temporary.append(logdir)
                save(logdir_or_profile, make_path(logdir, SESSION, logdir_or_profile.host))
                _written[logdir_or_profile] = logdir
        else:
            logdir = Path(logdir_or_profile).resolve()
            if not logdir.is_dir():
                raise StepscopeError(f"{logdir_or_profile}: not a directory (give a log directory, or a profile: stepscope.load(path))")
        running = _servers.get(logdir)
        if running is not None and running.alive():
            return running
        server = _launch(logdir, port, cache_dir)
        _servers[logdir] = server
        return server


def _launch(logdir: Path, port: int, cache_dir: str | Path | None) -> Server:
    command = [sys.executable, "-m", "stepscope", "serve", "--logdir", str(logdir), "--host", LOOPBACK, "--port", str(port)]
    command += [argument for source in FRAME_ANCESTORS for argument in ("--frame-ancestor", source)]
    if cache_dir is not None:
        command += ["--cache-dir", str(cache_dir)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: deque[str] = deque(maxlen=OUTPUT_LINES)
    urls: list[str] = []
    answered = threading.Event()

    def read() -> None:  # until the URL line, then drained (a full pipe would block the server)
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            match = URL.search(line)
            if match is not None and not urls:
                urls.append(match.group(1))
                answered.set()
        answered.set()  # the server ended before saying where it listens

    threading.Thread(target=read, name="stepscope-notebook-output", daemon=True).start()
    if not answered.wait(STARTUP_TIMEOUT_S) or not urls:
        process.kill()
        process.wait()
        said = lines[-1] if lines else f"nothing in {STARTUP_TIMEOUT_S:.0f} s"
        raise StepscopeError(f"{logdir}: the dashboard did not start (it said: {said})")
    return Server(logdir, urls[0], process, lines)


def stop() -> None:
    """Stops every dashboard server ``show`` started and removes its temporary logdirs."""
    with _lock:
        servers = list(_servers.values())
        temporary = list(_temporary)
        _servers.clear()
        _written.clear()
        _temporary.clear()
    for server in servers:
        server.stop()
    for logdir in temporary:
        shutil.rmtree(logdir, ignore_errors=True)


atexit.register(stop)
