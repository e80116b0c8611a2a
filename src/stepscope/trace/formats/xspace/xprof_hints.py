"""What stepscope writes into an XSpace so that XProf finds the steps and framework ops
stepscope finds, and drops again when it reads the file back.

XProf (``xprof.convert``, with TSL's ``group_events``) reads neither the way stepscope does:

- Steps: XProf groups events. A root event (a ``_r`` stat, as ``jax.profiler.
  StepTraceAnnotation`` and ``tf.profiler.experimental.Trace(..., _r=1)`` write) starts a
  group, named "<root name> <step_num>"; the group takes the events nested in the root on
  its thread, and the consumers (``_ct``, ``_c``) of a producer (``_pt``, ``_p``) in it,
  and what is nested in those. A group is a step when it has a marker (the root) and, on a
  CPU-only profile, host compute (an event of the group other than a marker); its length
  is its longest marker's. ``stepscope.step`` markers carry no ``_r``, and a thread traced
  by two tracers is two lines (stepscope's annotations, the framework's ops), so XProf
  found no step in stepscope's captures.
- Framework ops: XProf lists a host event as an op when its name parses as a TensorFlow op
  (``name:Type``, TensorFlow's name and type grammar) or a tf.data stage
  (``Iterator::...``), or when it carries a ``tf_op`` stat (parsed by the same grammar,
  else listed under the whole value with no type). PyTorch's ops (``aten::linear``) and
  the XLA ops a CPU backend runs (``hlo_op``) are neither.

So the writer adds, on the ``/host:CPU`` plane of a profile without device planes (GPU and
TPU profiles are grouped by XProf through their device events, which this was not checked
against):

1. where stepscope finds steps from host markers (``trace.steps``) that are not all roots
   XProf groups by itself (JAX's and TensorFlow's step annotations are), and the file has
   no ``group_id`` (XProf regroups no file that has), a line
   :data:`names.XPROF_STEPS_LINE` holding one root event per step that spans stepscope's
   step window exactly (the input wait it reaches back over included), with ``_r``,
   ``step_num`` and a producer context;
2. on each event that is outermost work inside a step window (top-level on its line, or
   directly inside a step marker) and not a marker itself, or that is a root of its own
   (TensorFlow's ``FunctionRun``), the consumer context of that step: XProf's group then
   holds it and everything nested in it, which is stepscope's rule (work belongs to the
   step whose window it starts in, on any thread), and groups no root inside it apart
   (a root below another of its level is not grouped on its own);
3. a ``tf_op`` on the framework ops XProf does not list by their name (PyTorch's, XLA's on
   the CPU, TensorFlow ops whose names XProf's grammar rejects), whose value XProf parses
   back as stepscope's name, and type where its grammar can say it (XLA's: ``fusion.3``
   of type ``fusion``; never PyTorch's, whose names hold ``::``).

Their cost: about 50 bytes a step, 20 a linked event and 7 an op event (the PyTorch
README job's file grows by a fifth), and a few numpy passes over the host plane's events.

The stats of 2 and 3 are written under stat metadata of their own, marked with
:data:`names.XPROF_HINT_DESCRIPTION` (XProf reads stats by metadata id, so two entries of
one name both count), and the reader drops exactly those, the line (by id and name) and
its event metadata: a file stepscope wrote reads back as the profile it wrote. ``tf_op``
is added only to a plane without one of its own (XProf looks that stat up by its name,
which must then name one entry).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from stepscope.protos import xplane_pb2
from stepscope.trace import names
from stepscope.trace.formats.xspace.encode import encode_int_events
from stepscope.trace.formats.xspace.schema import KIND_REF
from stepscope.trace.model import NO_ID, Plane, Profile
from stepscope.trace.op_names import KINETO_OP_CATEGORIES, TF_OP_EVENT, op_type_of
from stepscope.trace.stat_entries import StatEntries
from stepscope.trace.stat_types import StatKind
from stepscope.trace.steps import PROFILER_STEP, PROFILER_STEP_SOURCE, STEP_NUM_SOURCE, Steps, find_steps

if TYPE_CHECKING:
    from stepscope.trace.formats.xspace.decode import DecodedPlane

# TSL's ContextType::kGeneric, and the ids of the step contexts: a tag in the high 32 bits
# that no TSL context id reaches (they count from small numbers), the step's index below.
_CONTEXT_TYPE = 0
_CONTEXT_BASE = 0x53545053 << 32  # "STPS"
# XProf's legacy root event (TensorFlow 1's TraceContext) groups like a ``_r`` event.
_LEGACY_ROOT = "TraceContext"
_ALLOCATOR_EVENTS = frozenset({names.MEMORY_ALLOCATION, names.MEMORY_DEALLOCATION})

# --- XProf's op-name grammar (TSL's ParseTfOpFullname), as facts about the format ----------
_TF_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*")
_TF_OP_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_JAX_OP_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")
_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
# A name starting with one of these (any case) is a copy of that type.
_MEMCPY_TYPES = {prefix.upper(): prefix for prefix in ("MemcpyHToD", "MemcpyDToH", "MemcpyDToD", "MemcpyHToH")}
UNKNOWN, TENSORFLOW, JAX, TF_DATA, MEMCPY = "unknown", "tensorflow", "jax", "tf_data", "memcpy"


def parse_op_fullname(fullname: str) -> tuple[str, str, str]:
    """(category, op name, op type) as XProf reads an event name or a ``tf_op`` value:
    ``name:Type`` with TensorFlow's grammar, ``name:type`` with JAX's lower-case types (the
    type without its ``[...]``), ``name:`` typed by the name less its scopes and ``_N``
    suffix, ``Iterator::...`` as tf.data; anything else is no op category, named by the
    whole value with no type."""
    head, colon, tail = fullname.partition(":")
    if not colon:
        copy = _MEMCPY_TYPES.get(fullname[:10].upper())
        return (MEMCPY, fullname, copy) if copy else (UNKNOWN, fullname, "")
    if head == "Iterator":
        return TF_DATA, fullname, "Dataset"
    if _TF_OP_NAME.fullmatch(head) and _TF_OP_TYPE.fullmatch(tail):
        return TENSORFLOW, head, tail
    op_type = tail or _derived_type(head)
    if _JAX_OP_TYPE.fullmatch(op_type):
        return JAX, head, op_type.partition("[")[0]
    if not tail:
        return TENSORFLOW, head, op_type
    return UNKNOWN, fullname, ""


def _derived_type(name: str) -> str:
    """The op name less its name scopes and a ``_<integer>`` suffix."""
    last = name.rsplit("/", 1)[-1]
    stem, underscore, suffix = last.rpartition("_")
    return stem if underscore and _INTEGER.fullmatch(suffix) else last


def xprof_tf_op(name: str, op_type: str) -> str | None:
    """The ``tf_op`` value XProf reads as op ``name`` of type ``op_type`` where its grammar
    can say so, else as ``name`` of no type; None if no value reads as ``name``."""
    if op_type:
        typed = f"{name}:{op_type}"
        if parse_op_fullname(typed)[1:] == (name, op_type):
            return typed
    return name if parse_op_fullname(name)[1] == name else None


# --- what the writer adds ---------------------------------------------------------------------


@dataclass(frozen=True)
class StepLinks:
    """The steps XProf is to find, and the events each groups (item 2 of the docstring)."""

    steps: Steps
    rows: np.ndarray  # host events linked to a step, ascending
    step: np.ndarray  # the index (in ``steps``) of each one's step


@dataclass(frozen=True)
class HostHints:
    """What is written for XProf on the host plane (index ``plane``): its ops' names, and
    ``steps`` (stepscope's, from host markers; None: none to write)."""

    plane: int
    steps: Steps | None


def host_hints(profile: Profile) -> HostHints | None:
    """The host plane's hints, as far as they are known before its stats are (see the
    module docstring)."""
    if any(plane.is_device for plane in profile.planes):
        return None
    index = next((i for i, plane in enumerate(profile.planes) if plane.name == names.HOST_PLANE), None)
    if index is None:
        return None
    steps = find_steps(profile)
    if steps.source not in (PROFILER_STEP_SOURCE, STEP_NUM_SOURCE) or np.any(profile.planes[index].events.group_id != NO_ID):
        return HostHints(index, None)  # (XProf does not regroup a file that has group ids)
    keep = steps.end_ps > steps.start_ps
    return HostHints(index, Steps(steps.number[keep], steps.start_ps[keep], steps.end_ps[keep], steps.source) if keep.any() else None)


def _markers(host: Plane) -> np.ndarray:
    """Which events are step markers: stepscope's own and the frameworks' (``step_num``),
    PyTorch's ``ProfilerStep#N``."""
    events = host.events
    markers: np.ndarray = events.step_num != NO_ID
    if len(host.metadata):
        named = np.asarray([bool(PROFILER_STEP.match(name)) for name in host.metadata.names], dtype=bool)
        markers |= named[events.metadata_id]
    return markers


def _links(host: Plane, own: StatEntries, steps: Steps) -> StepLinks | None:
    """The events each step groups; None when XProf finds the steps by itself (every
    marker is a root of its own: JAX's StepTraceAnnotation, TensorFlow's Trace with _r=1).

    A root XProf would group by itself inside a step window (TensorFlow's FunctionRun, a
    framework step marker under stepscope's) is linked too, or nested in a linked event:
    XProf then groups it as part of the step (a root below another of its level is not
    grouped on its own), not as a step of its own."""
    events = host.events
    roots = np.zeros(len(events), dtype=bool)
    codes = [code for code, name in enumerate(own.names) if name == names.IS_ROOT]
    if codes:
        roots[own.row[np.isin(own.key, codes)]] = True
    if len(host.metadata):
        roots |= np.asarray([name == _LEGACY_ROOT for name in host.metadata.names], dtype=bool)[events.metadata_id]
    markers = _markers(host)
    if not (markers & ~roots).any():
        return None
    parent = events.parent
    outermost = (parent == NO_ID) | (markers & ~roots)[np.maximum(parent, 0)]
    candidates = np.flatnonzero(outermost & (~markers | roots))
    starts = events.start_ps[candidates]
    step = np.searchsorted(steps.start_ps, starts, "right") - 1
    inside = (step >= 0) & (starts < steps.end_ps[np.maximum(step, 0)])
    return StepLinks(steps, candidates[inside], step[inside])


@dataclass(frozen=True)
class HintStats:
    """Stats to add to the plane's events: entry ``i`` is stat ``names[key[i]]`` of event
    ``row[i]``, an INT64 ``bits[i]`` or (``kind`` ``KIND_REF``, XStat's ``ref_value``: a
    string stored once, as the name of a stat metadata entry) the string ``refs[bits[i]]``.
    Sorted by row."""

    row: np.ndarray
    key: np.ndarray
    kind: np.ndarray
    bits: np.ndarray
    names: list[str]
    refs: list[str]
    links: StepLinks | None  # the steps to write as the line (None: none)


def hint_stats(plane: Plane, own: StatEntries, hints: HostHints) -> HintStats | None:
    """The stats to add, given the plane's own (``own``: every event's, as the encoder has
    them); None when there is nothing to add."""
    used = {own.names[code] for code in np.flatnonzero(np.bincount(own.key, minlength=len(own.names)))}
    links = _links(plane, own, hints.steps) if hints.steps is not None else None
    rows, keys, kinds, bits = [], [], [], []
    refs: list[str] = []
    if names.TF_OP not in used:
        op_rows, op_refs, refs = _op_hints(plane, own)
        if len(op_rows):
            rows.append(op_rows)
            keys.append(np.zeros(len(op_rows), dtype=np.int64))
            kinds.append(np.full(len(op_rows), KIND_REF, dtype=np.int8))
            bits.append(op_refs)
    if links is not None:
        count = len(links.rows)
        rows += [links.rows, links.rows]
        keys += [np.full(count, 1, dtype=np.int64), np.full(count, 2, dtype=np.int64)]
        kinds += [np.full(count, StatKind.INT64, dtype=np.int8)] * 2
        bits += [np.full(count, _CONTEXT_TYPE, dtype=np.int64), _CONTEXT_BASE + links.step.astype(np.int64)]
    if not rows and links is None:
        return None
    row = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    order = np.argsort(row, kind="stable")
    return HintStats(
        row=row[order],
        key=(np.concatenate(keys) if keys else row)[order],
        kind=(np.concatenate(kinds) if kinds else row.astype(np.int8))[order],
        bits=(np.concatenate(bits) if bits else row)[order],
        names=[names.TF_OP, names.CONSUMER_TYPE, names.CONSUMER_ID],
        refs=refs,
        links=links,
    )


def _op_hints(plane: Plane, own: StatEntries) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The events that get a ``tf_op``, and its value (an index into the returned values)."""
    meta = plane.metadata
    events = plane.events
    if not len(meta) or not len(events):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    values: dict[str, int] = {}
    # Per event type: XProf lists it by its name already (no hint), or the value it needs.
    listed = np.asarray([parse_op_fullname(name)[0] != UNKNOWN for name in meta.names], dtype=bool)
    never = np.asarray([bool(PROFILER_STEP.match(name)) or name in _ALLOCATOR_EVENTS for name in meta.names], dtype=bool)
    by_type = np.full(len(meta), -1, dtype=np.int64)
    for index, (name, category) in enumerate(zip(meta.names, meta.categories)):
        if listed[index] or never[index]:
            continue
        value = None
        if category in KINETO_OP_CATEGORIES:
            value = xprof_tf_op(name, "")
        else:
            match = TF_OP_EVENT.match(name)
            if match:  # a TensorFlow op whose name or type XProf's grammar rejects
                value = xprof_tf_op(match.group(1), match.group(2))
        if value is not None:
            by_type[index] = values.setdefault(value, len(values))
    kinds = events.metadata_id
    eligible = (events.step_num == NO_ID) & ~never[kinds] & ~listed[kinds]
    value_of = by_type[kinds]
    # XLA ops run on the CPU: named by their hlo_op (a per-event stat).
    if names.HLO_OP in own.names:
        codes = [code for code, name in enumerate(own.names) if name == names.HLO_OP]
        entries = np.flatnonzero(np.isin(own.key, codes) & (own.kind == StatKind.STR))
        numbers, which = np.unique(own.bits[entries], return_inverse=True)  # a value once per distinct text
        value_codes = []
        for number in numbers.tolist():
            hlo = own.text(number).decode("utf-8", "replace")
            value = xprof_tf_op(hlo, op_type_of(hlo))
            value_codes.append(-1 if value is None else values.setdefault(value, len(values)))
        value_of[own.row[entries]] = np.asarray(value_codes, dtype=np.int64)[which.reshape(-1)] if len(entries) else value_of[:0]
    rows = np.flatnonzero(eligible & (value_of >= 0))
    return rows, value_of[rows], list(values)


# The stats of a step root, in the order written.
STEP_ROOT_STATS = (names.IS_ROOT, names.STEP_NUM, names.PRODUCER_TYPE, names.PRODUCER_ID)


def steps_line(links: StepLinks, start_ns: int, stat_id: Callable[[str], int]) -> list[bytes | memoryview]:
    """The line of step roots (item 1 of the module docstring), serialised: its header,
    then its events encoded in bulk. ``start_ns`` is the profile's time 0 on the clock the
    plane's lines are written on; ``stat_id`` the plane's stat metadata id of a name."""
    header = xplane_pb2.XLine(id=names.XPROF_STEPS_ID, display_id=names.XPROF_STEPS_ID, name=names.XPROF_STEPS_LINE, timestamp_ns=start_ns)
    steps = links.steps
    count = len(steps)
    values = (np.ones(count, dtype=np.int64), steps.number, np.full(count, _CONTEXT_TYPE, dtype=np.int64), _CONTEXT_BASE + np.arange(count, dtype=np.int64))
    events = encode_int_events(
        np.full(count, names.XPROF_STEPS_ID, dtype=np.int64),
        steps.start_ps,
        steps.end_ps - steps.start_ps,
        [(stat_id(name), column) for name, column in zip(STEP_ROOT_STATS, values)],
    )
    return [header.SerializeToString(), events]


def add_steps_metadata(plane: xplane_pb2.XPlane) -> None:
    """The event metadata of the step roots (XProf names a group after its root)."""
    entry = plane.event_metadata[names.XPROF_STEPS_ID]
    entry.id = names.XPROF_STEPS_ID
    entry.name = names.STEPSCOPE_STEP


# --- what the reader drops --------------------------------------------------------------------


def strip_hints(plane: DecodedPlane) -> None:
    """Drops, in place, what :func:`hint_stats` and :func:`steps_line` added to a decoded
    plane: the stats under marked stat metadata, the steps line and its event metadata. A
    plane without them (any file stepscope did not write) is left as it is."""
    proto = plane.proto
    marked = [key for key, meta in proto.stat_metadata.items() if meta.description == names.XPROF_HINT_DESCRIPTION]
    line = next((i for i, entry in enumerate(plane.lines) if entry.id == names.XPROF_STEPS_ID and entry.name == names.XPROF_STEPS_LINE), None)
    if not marked and line is None:
        return
    columns = plane.columns
    keep = ~np.isin(columns.stat_metadata, marked) if marked else np.ones(len(columns.stat_event), dtype=bool)
    if line is not None:
        counts = columns.line_events
        first = int(counts[:line].sum())
        count = int(counts[line])
        event = columns.stat_event
        keep &= (event < first) | (event >= first + count)
        columns.stat_event = np.where(event >= first + count, event - count, event)
        for name in ("event_metadata", "event_offset", "event_duration", "event_line"):
            column = getattr(columns, name)
            setattr(columns, name, np.concatenate((column[:first], column[first + count :])))
        columns.event_line = np.where(columns.event_line > line, columns.event_line - 1, columns.event_line).astype(np.int32)
        columns.line_events = np.delete(counts, line)
        del plane.lines[line]
        if names.XPROF_STEPS_ID in proto.event_metadata:
            del proto.event_metadata[names.XPROF_STEPS_ID]
    if not keep.all():
        for name in ("stat_event", "stat_metadata", "stat_kind", "stat_bits"):
            setattr(columns, name, getattr(columns, name)[keep])
