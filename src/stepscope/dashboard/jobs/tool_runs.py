"""Tool runs with options other than the defaults (op_profile's ``device=all``, ``top_n=3``).

The analysis worker leaves every tool's result at its default options in the cache folder;
a request that sets options (``/api/data?...&top_n=3``, parsed by the registry) is run on
demand in the profile worker (``profile_jobs.tool_run``, which keeps the profile
loaded) and its two documents, JSON and tables, are kept here for the next requests (the
page asks for the data, then the tables, then maybe a CSV). Most are a few kB, but some are
not (graph_viewer's, of a big HLO module: ~150 MB), so what is kept is bounded by bytes,
least recently used first out: six graph_viewer answers took a server from 176 MB to
1,063 MB when the bound was a count.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from stepscope.dashboard.jobs.profile_jobs import ProfileJobs, tool_run

# Bytes of (profile, tool, options) results kept in the server's memory; a result larger
# than this is answered and not kept.
KEPT_BYTES = 64 << 20


class ToolRuns:
    def __init__(self, jobs: ProfileJobs) -> None:
        self._jobs = jobs
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str, tuple[tuple[str, Any], ...]], tuple[bytes, bytes]] = OrderedDict()
        self.kept_bytes = 0

    def documents(self, profile_path: str, analysis_key: str, tool: str, options: dict[str, Any]) -> tuple[bytes, bytes]:
        """(JSON, tables) of ``tool`` with ``options`` on the profile whose finished analysis
        is ``analysis_key`` (a changed file is a new key, so a result never outlives its
        profile). Runs in the caller's thread: call from a worker thread."""
        key = (analysis_key, tool, tuple(sorted(options.items())))
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        shown = ", ".join(f"{name}={value}" for name, value in key[2])
        answer: tuple[bytes, bytes] = self._jobs.run(f"{tool} ({shown}) of {profile_path}", tool_run, profile_path, tool, options)
        size = len(answer[0]) + len(answer[1])
        with self._lock:
            if size <= KEPT_BYTES and key not in self._kept:
                self._kept[key] = answer
                self.kept_bytes += size
            while self.kept_bytes > KEPT_BYTES:
                _, (document, tables) = self._kept.popitem(last=False)
                self.kept_bytes -= len(document) + len(tables)
        return answer
