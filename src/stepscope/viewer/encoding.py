"""The binary form of a trace viewer query's answer, and a decoder for tests and tools.

A response is one buffer: a small JSON header, then typed arrays a browser wraps without
copying (``new Float64Array(buffer, offset, length)``). Every number is little-endian.

Layout (byte offsets from the start of the buffer)::

    0   4 bytes  magic, ASCII "SSTV"
    4   uint32   format version, 1
    8   uint32   H, the header's length in bytes
    12  uint32   0 (reserved)
    16  H bytes  the header, UTF-8 JSON
        zero bytes up to the next multiple of 8
        the arrays, each at the offset the header gives (a multiple of 8)

The header::

    {
      "version": 1,
      "start_ps": int, "end_ps": int,     # the range answered, ps from the profile start
      "width_px": int,                    # pixels used (the request's, capped at 16384)
      "pixel_ps": float,                  # (end_ps - start_ps) / width_px
      "min_event_ps": int,                # events this long or longer come one by one
      "profile_start_ns": int,            # epoch ns of profile time 0
      "span_ps": int,                     # the profile's extent, from 0
      "name_filter": str | null,
      "counts": {"lanes": L, "events": E, "runs": R,
                 "overlapping": int},     # events overlapping the range (E + sum of run counts)
      "tracks": [{"id", "section", "name", "plane", "line", "event_count",
                  "max_depth", "first_lane"}],   # the tracks that have lanes below
      "names": {"<name id>": "text"},     # the names of this response's events
      "arrays": [{"name", "type", "offset", "length"}]   # in the order listed below
    }

The arrays (``type`` is one of int32, uint32, float32, float64):

==================  =========  ======  ===================================================
name                type       length  meaning
==================  =========  ======  ===================================================
lane_track          int32      L       track id of each lane that has items (in no set order)
lane_depth          int32      L       its depth in the track (0 = top row)
lane_events         int32      L+1     lane k's events are rows lane_events[k]..[k+1]-1
lane_runs           int32      L+1     lane k's runs are rows lane_runs[k]..[k+1]-1
event_start         float64    E       start, ps relative to start_ps (may be negative);
                                       exact integers below 2**53 ps (2.5 hours)
event_duration      float64    E       duration, ps
event_id            int32      E       the event's index id: ask details / flows with it
event_name          int32      E       a key of header "names"
run_start           float32    R       first start of the merged events, ps relative to
                                       start_ps (>= -pixel_ps)
run_end             float32    R       last end, ps relative to start_ps
run_count           uint32     R       how many events the run merges
run_busy            float32    R       sum of their durations / (run_end - run_start);
                                       0 when run_end == run_start (instants only)
==================  =========  ======  ===================================================

Within a lane, events and runs are sorted by start. Runs carry no name: they stand for
events narrower than a pixel, merged per pixel (see :mod:`stepscope.viewer.lod`).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

MAGIC = b"SSTV"
VERSION = 1
_PREAMBLE = struct.Struct("<4sIII")
_TYPES: dict[str, np.dtype] = {
    "int32": np.dtype("<i4"),
    "uint32": np.dtype("<u4"),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
}
# (name, type) in the order they are written.
LAYOUT: list[tuple[str, str]] = [
    ("lane_track", "int32"),
    ("lane_depth", "int32"),
    ("lane_events", "int32"),
    ("lane_runs", "int32"),
    ("event_start", "float64"),
    ("event_duration", "float64"),
    ("event_id", "int32"),
    ("event_name", "int32"),
    ("run_start", "float32"),
    ("run_end", "float32"),
    ("run_count", "uint32"),
    ("run_busy", "float32"),
]


def _align(size: int) -> int:
    return (size + 7) & ~7


@dataclass(frozen=True)
class RawJson:
    """A header value already encoded as JSON text (``json.dumps`` with the separators and
    ``ensure_ascii`` used here): spliced in as it is. A query's track list is the same
    text for every query of an index, so it is encoded once, not 2,000 dicts a query."""

    text: str


def _header_text(header: dict[str, Any]) -> str:
    """``json.dumps(header)`` in the compact form, with RawJson values spliced in."""
    items = []
    for key, value in header.items():
        text = value.text if isinstance(value, RawJson) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        items.append(json.dumps(key) + ":" + text)
    return "{" + ",".join(items)


def allocate(header: dict[str, Any], lengths: dict[str, int]) -> tuple[bytearray, dict[str, np.ndarray]]:
    """The buffer for ``header`` (without "arrays"/"version", added here) and arrays of the
    given lengths (every name of LAYOUT), zero-filled, with a writable view in its wire
    type for each array: the caller writes the values straight into place (a ufunc's
    ``out=``), converting as it goes, with no temporary copy of a 12 MB answer."""
    # The offsets depend on the header's length, which depends on the offsets' digits:
    # lay out with a guess, then again until the header's length stops changing. Only the
    # small "arrays" list is re-encoded.
    fixed = _header_text({"version": VERSION, **header})
    descriptors: list[dict[str, Any]] = []
    text = b""
    header_room = len(fixed)
    while True:
        offset = _align(_PREAMBLE.size + header_room)
        descriptors = []
        for name, kind in LAYOUT:
            descriptors.append({"name": name, "type": kind, "offset": offset, "length": lengths[name]})
            offset = _align(offset + lengths[name] * _TYPES[kind].itemsize)
        text = (fixed + ',"arrays":' + json.dumps(descriptors, separators=(",", ":")) + "}").encode()
        if _align(_PREAMBLE.size + len(text)) == _align(_PREAMBLE.size + header_room):
            break
        header_room = len(text)
    last = descriptors[-1]
    buffer = bytearray(_align(last["offset"] + last["length"] * _TYPES[last["type"]].itemsize))
    _PREAMBLE.pack_into(buffer, 0, MAGIC, VERSION, len(text), 0)
    buffer[_PREAMBLE.size : _PREAMBLE.size + len(text)] = text
    views = {d["name"]: np.frombuffer(buffer, dtype=_TYPES[d["type"]], count=d["length"], offset=d["offset"]) for d in descriptors}
    return buffer, views


def decode(data: bytes) -> dict[str, Any]:
    """A response as ``{"header": dict, <array name>: ndarray, ...}``; arrays are views into
    ``data``. Checks the magic, version and that every array lies inside the buffer."""
    if len(data) < _PREAMBLE.size:
        raise ValueError("not a trace viewer response: too short")
    magic, version, length, _ = _PREAMBLE.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise ValueError(f"not a trace viewer response of version {VERSION} (magic {magic!r}, version {version})")
    header = json.loads(bytes(data[_PREAMBLE.size : _PREAMBLE.size + length]))
    result: dict[str, Any] = {"header": header}
    for descriptor in header["arrays"]:
        dtype = _TYPES[descriptor["type"]]
        offset, count = descriptor["offset"], descriptor["length"]
        if offset % 8 or offset + count * dtype.itemsize > len(data):
            raise ValueError(f"array {descriptor['name']} lies outside the response or is misaligned")
        result[descriptor["name"]] = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return result
