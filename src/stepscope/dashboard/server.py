"""``stepscope serve``: the dashboard on uvicorn, bound to 127.0.0.1 unless asked otherwise."""

from __future__ import annotations

import ipaddress
import socket
import sys
from pathlib import Path

import uvicorn

from stepscope.dashboard.analysis_cache import AnalysisCache, default_cache_dir
from stepscope.dashboard.app import LOOPBACK_NAMES, create_app
from stepscope.errors import StepscopeError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9001


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(logdir: str | Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, cache_dir: str | Path | None = None) -> None:
    """Serves until interrupted. The socket is bound here, before uvicorn starts, so the
    printed URL carries the real port (``--port 0`` picks a free one) and a taken port is
    one clear error rather than a traceback from inside the server."""
    logdir = Path(logdir)
    if not logdir.is_dir():
        raise StepscopeError(f"{logdir}: not a directory (give the log directory the profiles are written to)")
    try:
        sock = socket.create_server((host.strip("[]"), port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as error:
        raise StepscopeError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    bound_port = sock.getsockname()[1]
    cache = AnalysisCache(Path(cache_dir) if cache_dir else default_cache_dir())
    allowed = [*LOOPBACK_NAMES] if _is_loopback(host) else None
    app = create_app(logdir, cache, allowed_hosts=allowed)
    print(f"stepscope: serving {logdir} at {url_for(host, bound_port)}", flush=True)
    if not _is_loopback(host):
        print("stepscope: warning: listening beyond this machine; anyone who reaches the port can read the profiles and start captures", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])
