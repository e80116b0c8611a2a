"""XSpace's terms as event kinds (``kinds.EventKind``).

An XSpace says what an event is by its name and line, as TensorFlow and XLA write them:
TensorFlow's executor names its op events ``<op name>:<op type>``, tf.data its iterator
stages ``Iterator::...``, the allocators record ``MemoryAllocation`` events. A trace that
stepscope wrote as XSpace from Kineto or Chrome JSON keeps its categories as the
``category`` stat, which say the kind first (``categories.event_kind``), so such a file
reads back with the kinds its JSON had.
"""

from __future__ import annotations

from collections.abc import Sequence

from stepscope.trace.categories import event_kind
from stepscope.trace.kinds import EventKind
from stepscope.trace.op_names import TF_DATASET_PREFIX, TF_OP_EVENT


def xspace_kind(name: str, category: str) -> EventKind:
    kind = event_kind(name, category)
    if kind != EventKind.OTHER:
        return kind
    if name.startswith(TF_DATASET_PREFIX):
        return EventKind.INPUT_STAGE
    if ":" in name and TF_OP_EVENT.match(name):
        return EventKind.NAMED_OP
    return EventKind.OTHER


def xspace_kinds(event_names: Sequence[str], categories: Sequence[str]) -> list[EventKind]:
    return [xspace_kind(name, category) for name, category in zip(event_names, categories)]
