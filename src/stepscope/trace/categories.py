"""Trace-event categories as event kinds: the terms of Kineto's ``cat``, which Chrome trace
JSON of GPU work (Kineto's own, HTA's, an export of one) and stepscope's XSpace (the
``category`` stat) carry, translated into ``kinds.EventKind``.

The readers of those formats call ``event_kinds`` once per event type; nothing past them
reads a category to decide what an event is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from stepscope.trace import names
from stepscope.trace.kinds import EventKind
from stepscope.trace.op_names import KINETO_OP_CATEGORIES

# libkineto's activity types, today's names and the 2021 schema's.
CATEGORY_KINDS: Final[dict[str, EventKind]] = {
    **dict.fromkeys(KINETO_OP_CATEGORIES, EventKind.FRAMEWORK_OP),
    "user_annotation": EventKind.ANNOTATION,
    names.KINETO_PYTHON_CATEGORY: EventKind.PYTHON,
    "cuda_runtime": EventKind.RUNTIME,
    "cuda_driver": EventKind.RUNTIME,
    "Runtime": EventKind.RUNTIME,
    "cpu_instant_event": EventKind.PROFILER,
    "external_correlation": EventKind.PROFILER,
    "overhead": EventKind.PROFILER,
    "Trace": EventKind.PROFILER_SPAN,
    **dict.fromkeys(names.KINETO_KERNEL_CATEGORIES, EventKind.KERNEL),
    **dict.fromkeys(names.KINETO_MEMCPY_CATEGORIES, EventKind.MEMCPY),
    **dict.fromkeys(names.KINETO_MEMSET_CATEGORIES, EventKind.MEMSET),
    "gpu_user_annotation": EventKind.DEVICE_ANNOTATION,
    names.KINETO_CUDA_SYNC: EventKind.SYNC,
}
# Event names that say the kind whatever the category: Kineto's allocation instants, and
# TensorFlow's allocator events (JAX's trace.json, an XSpace) in any format.
NAME_KINDS: Final[dict[str, EventKind]] = {
    names.KINETO_MEMORY_EVENT: EventKind.MEMORY_DELTA,
    names.MEMORY_ALLOCATION: EventKind.ALLOCATION,
    names.MEMORY_DEALLOCATION: EventKind.DEALLOCATION,
}


# (category, name) pairs of a kind of their own.
PAIR_KINDS: Final[dict[tuple[str, str], EventKind]] = {(names.KINETO_CUDA_SYNC, names.KINETO_WAIT_EVENT): EventKind.STREAM_WAIT}


def event_kind(name: str, category: str) -> EventKind:
    """The kind of an event type from its name and its trace-event category."""
    return NAME_KINDS.get(name) or PAIR_KINDS.get((category, name)) or CATEGORY_KINDS.get(category, EventKind.OTHER)


def event_kinds(event_names: Sequence[str], categories: Sequence[str]) -> list[EventKind]:
    return [event_kind(name, category) for name, category in zip(event_names, categories)]
