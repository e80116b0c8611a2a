"""``stepscope serve``: the dashboard on uvicorn, bound to 127.0.0.1 unless asked otherwise."""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from stepscope.dashboard.api.app import create_app
from stepscope.dashboard.api.security import TOKEN_PARAM, Access, is_loopback, is_wildcard
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache, default_cache_dir
from stepscope.errors import StepscopeError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9001


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def startup_line(logdir: Path, host: str, port: int, access: Access, allow_hosts: Sequence[str] = ()) -> str:
    """What ``serve`` prints first (one line; tests and scripts read the URL from it). A
    wildcard bind shows a name people can reach: the first --allow-host, else this
    machine's host name."""
    shown = (allow_hosts[0] if allow_hosts else socket.gethostname()) if is_wildcard(host) else host
    url = url_for(shown.strip("[]"), port)
    notes = []
    if access.token is not None:
        url += f"?{TOKEN_PARAM}={access.token}"
        notes.append("token required: open this address once and the browser keeps it in a cookie")
    elif not is_loopback(host):
        notes.append("no token: anyone who reaches the port can read the profiles and start captures")
    if access.hosts is not None and not is_loopback(host):
        notes.append(f"answering Host names {', '.join(sorted(access.hosts))}")
    return f"stepscope: serving {logdir} at {url}" + (f" ({'; '.join(notes)})" if notes else "")


def serve(
    logdir: str | Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    cache_dir: str | Path | None = None,
    allow_hosts: Sequence[str] = (),
    token: bool | None = None,
    frame_ancestors: Sequence[str] = (),
) -> None:
    """Serves until interrupted. The socket is bound here, before uvicorn starts, so the
    printed URL carries the real port (``--port 0`` picks a free one) and a taken port is
    one clear error rather than a traceback from inside the server. ``allow_hosts`` and
    ``token``: see ``Access.for_bind`` (None: a token exactly when beyond loopback);
    ``frame_ancestors``: the pages that may frame it (``Access.frame_ancestors``)."""
    logdir = Path(logdir)
    if not logdir.is_dir():
        raise StepscopeError(f"{logdir}: not a directory (give the log directory the profiles are written to)")
    Access.for_bind(host, port, allow_hosts, token, frame_ancestors)  # a refused combination fails before binding
    try:
        sock = socket.create_server((host.strip("[]"), port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as error:
        raise StepscopeError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    bound_port = sock.getsockname()[1]
    access = Access.for_bind(host, bound_port, allow_hosts, token, frame_ancestors)
    cache = AnalysisCache(Path(cache_dir) if cache_dir else default_cache_dir())
    app = create_app(logdir, cache, access)
    print(startup_line(logdir, host, bound_port, access, allow_hosts), flush=True)
    if not is_loopback(host):
        who = "whoever has the token" if access.token else "anyone who reaches the port"
        print(f"stepscope: warning: listening beyond this machine; {who} can read the profiles and start captures", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])
