"""Stats whose bytes are a message stepscope knows, in words a person reads.

XLA writes some stats as serialized protobuf messages (a bytes value); shown as they are,
they say only "<12 bytes>". ``readable`` turns the ones registered in ``DECODERS`` into
text for the trace viewer's details; any other value, and bytes that do not parse, are
returned unchanged (and shown as their size, as before).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.message import DecodeError

from stepscope.protos import op_metrics_pb2
from stepscope.trace import names

# XLA's names of a TPU's memory spaces (PerformanceInfo.MemoryAccessed.MemorySpace).
MEMORY_SPACES = {1: "HBM", 2: "CMEM", 3: "VMEM"}


def memory_access_breakdown(data: bytes) -> str:
    """``write, HBM (memory space 1): 5,368,709,120 bytes; read, ...``: one part per entry,
    bytes as the exact integer (a uint64, never rounded through a float)."""
    message = op_metrics_pb2.MemoryAccessBreakdown.FromString(data)
    parts = []
    for entry in message.memory_accessed:
        operation = op_metrics_pb2.MemoryAccessed.OperationType.Name(entry.operation_type).lower()
        space = MEMORY_SPACES.get(entry.memory_space)
        where = f"{space} (memory space {entry.memory_space})" if space else f"memory space {entry.memory_space}"
        parts.append(f"{operation}, {where}: {entry.bytes_accessed:,} bytes")
    return "; ".join(parts) if parts else "none"


DECODERS: dict[str, Callable[[bytes], str]] = {names.MEMORY_ACCESS_BREAKDOWN: memory_access_breakdown}


def readable(name: str, value: Any) -> Any:
    """``value`` decoded when ``name`` is a registered message stat and it parses; else as is."""
    decoder = DECODERS.get(name)
    if decoder is None or not isinstance(value, (bytes, bytearray)):
        return value
    try:
        return decoder(bytes(value))
    except (DecodeError, ValueError):
        return value  # not the message it should be: shown as its size, as any bytes
