"""The compare view's diff (``GET /api/diff``): two hosts' cached tool results, subtracted.

A diff reads only the four tool results each run's pages already show (``diff.RunResults``:
overview_page, framework_op_stats, kernel_stats, memory_profile), so the dashboard never
loads a profile again for it: it waits for both analyses (the analysis cache, as
``/api/data`` does), decodes the cached JSON into the result types and subtracts them.
That is a few milliseconds of arithmetic and a bootstrap over the steps, done in the
request's worker thread; the answer (JSON and tables, encoded) is kept per pair of
finished analyses, so the page's data, tables and CSV requests compute it once, and a
rewritten profile (a new analysis key) is never answered from an old diff.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

import msgspec

from stepscope import jsonform
from stepscope.analysis.diff.compare import RunResults, diff_results
from stepscope.analysis.registry import spec
from stepscope.dashboard.api_errors import ProfileFailed
from stepscope.dashboard.jobs.analysis_cache import Ready
from stepscope.dashboard.jobs.worker import tables_json

KEPT_DIFFS = 16  # (base, new) answers kept in the server's memory


def run_results(ready: Ready, label: str) -> RunResults:
    """One host's cached results as typed results; a tool that failed on it (its cached
    JSON is ``{"error": ...}``) makes the diff fail with that reason (422)."""
    results: dict[str, Any] = {}
    for field, tool in RunResults.TOOLS.items():
        document = json.loads(ready.tool_document(tool))
        if "error" in document:
            raise ProfileFailed(f"{label}: {document['error']}")
        kind = spec(tool).result
        assert kind is not None  # the four are tables tools, with result types
        results[field] = msgspec.convert(document, kind)
    return RunResults(**results)


class Diffs:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], tuple[bytes, bytes]] = OrderedDict()

    def documents(self, base: Ready, new: Ready, base_label: str, new_label: str) -> tuple[bytes, bytes]:
        """(JSON, tables) of the diff of two finished analyses (labels: "run/host")."""
        key = (base.folder.name, new.folder.name)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        result = diff_results(run_results(base, base_label), run_results(new, new_label), base_label, new_label)
        answer: tuple[bytes, bytes] = (jsonform.encode(result.to_json()), jsonform.encode(tables_json(result.tables())))
        with self._lock:
            self._kept[key] = answer
            while len(self._kept) > KEPT_DIFFS:
                self._kept.popitem(last=False)
        return answer
