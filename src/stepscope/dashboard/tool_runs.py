"""Tool runs with options other than the defaults (op_profile's ``device=all``, ``top_n=3``).

The analysis worker leaves every tool's result at its default options in the cache folder;
a request that sets options (``/api/data?...&top_n=3``, parsed by the registry) is run on
demand in the profile worker (``profile_jobs.tool_run``, which keeps the profile
loaded) and its two documents, JSON and tables, are kept here for the next requests (the
page asks for the data, then the tables, then maybe a CSV). Small: results of one tool on
one profile, most of them a few kB.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from stepscope.dashboard.profile_jobs import ProfileJobs, tool_run

KEPT_RUNS = 32  # (profile, tool, options) results kept in the server's memory


class ToolRuns:
    def __init__(self, jobs: ProfileJobs) -> None:
        self._jobs = jobs
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str, tuple[tuple[str, Any], ...]], tuple[bytes, bytes]] = OrderedDict()

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
        with self._lock:
            self._kept[key] = answer
            while len(self._kept) > KEPT_RUNS:
                self._kept.popitem(last=False)
        return answer
