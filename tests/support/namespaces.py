"""A private network namespace (``unshare -n``) with only loopback up, for servers that
listen on every interface and cannot be told otherwise (Ray's; JAX's and TensorFlow's
profiler servers in tests/capture): inside it nothing is exposed beyond this machine's
loopback."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

# Brings the namespace's loopback up, then runs the command given after it.
_LOOPBACK_THEN = 'ip link set lo up && exec "$0" "$@"'


def _namespaces_work() -> str | None:
    """None when ``unshare -n`` with loopback up works here, else why not."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is not installed"
    try:
        done = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unshare -n failed to run: {error}"
    if done.returncode != 0:
        return f"unshare -n is not permitted here (exit {done.returncode}: {done.stderr.strip()})"
    return None


NAMESPACE_PROBLEM = _namespaces_work()


def in_namespace(command: Sequence[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``command`` run in a fresh network namespace (loopback only), output captured."""
    return subprocess.run(["unshare", "-n", "sh", "-c", _LOOPBACK_THEN, *command], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
