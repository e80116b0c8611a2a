"""The trace viewer's server side: an index of a profile's events per track and lane, and
level-of-detail queries over it that stay fast at tens of millions of events.

- :func:`build_index` lays a Profile out (tracks, lanes, sorted columns); ``TraceIndex.save``
  / ``TraceIndex.load`` keep it in a folder of memory-mapped ``.npy`` files.
- :func:`query` answers a time range at a pixel width in a compact binary form
  (:mod:`stepscope.viewer.encoding` documents it; :func:`decode` reads it back).
- :func:`find` steps through the events whose name contains a text; :func:`details`,
  :func:`flows_for` and :func:`summarize` feed the details pane.
"""

from stepscope.viewer.details import details, flows_for, summarize
from stepscope.viewer.encoding import decode
from stepscope.viewer.index import STEPS_PLANE, TraceIndex, Track, build_index
from stepscope.viewer.query import MAX_WIDTH_PX, Match, find, query

__all__ = [
    "MAX_WIDTH_PX",
    "STEPS_PLANE",
    "Match",
    "TraceIndex",
    "Track",
    "build_index",
    "decode",
    "details",
    "find",
    "flows_for",
    "query",
    "summarize",
]
