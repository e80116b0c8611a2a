"""The XLA (HLO) ops of a profile, one entry per execution, and their sums per HLO op:
what hlo_stats and roofline_model are made of (built once, ``OpStats.xla_ops``).

Which ops
    ``find_ops``'s entries that are XLA ops: on a device plane, the events of its
    ``XLA Ops`` line (TPU, XLA on GPU as XProf's converters write it) and device events
    carrying an ``hlo_op`` stat; on the host, events carrying ``hlo_op`` (the XLA CPU
    backend's thunks, as JAX on CPU records them). TensorFlow ops, Kineto kernels and
    everything else are not HLO ops and are left out.

Per op
    name        the HLO op's name: the event's label (``EventMetadata.labels``: XLA writes
                the HLO text as the name and ``fusion.3`` as its display name), else its
                ``hlo_op`` stat, else its name.
    expression  the HLO text where the source gives one (the event name beside a display
                name, or a ``long_name`` stat); "" otherwise.
    category    ``find_ops``'s type: the ``hlo_category`` stat, else the name without its
                numeric suffix.
    program     the HLO module: ``<hlo_module>(<program_id>)`` from the op's stats, else the
                enclosing event of its plane's ``XLA Modules`` line (named the same way by
                XLA, ``jit_step(1234)``); ``program_id`` alone when only that is known.
    time_ps     the ``device_duration_ps`` stat where the event carries one (the device's
                own clock: TPU ops' timeline durations are stretched or shrunk by up to
                hundreds of ms by the host clock alignment), else the event's duration.
    self_ps     time_ps minus the time_ps of the direct children that are XLA ops too, where
                the nesting is the timeline's own (host-clock ops, XLA on CPU: a while
                loop's thunk holds its body's); an op timed by the device's clock has no
                children (on the timeline some seem nested: an artefact of the alignment;
                a TPU core runs its HLO ops one after another), so its self time is its time.
    flops, bytes_accessed  XLA's cost analysis per execution (the op metadata's ``flops``
                and ``bytes_accessed`` stats); NaN where the source records none (XLA on CPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from stepscope.analysis.ops.ops import Ops, stat_column
from stepscope.trace import names
from stepscope.trace.model import NO_ID, Plane, Profile, distinct_indices

_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class XlaOps:
    """One entry per XLA op execution (columns as ``Ops``; strings as object arrays)."""

    plane: np.ndarray  # index into profile.planes
    row: np.ndarray
    name: np.ndarray
    expression: np.ndarray
    category: np.ndarray
    program: np.ndarray
    program_id: np.ndarray
    time_ps: np.ndarray
    self_ps: np.ndarray
    flops: np.ndarray
    bytes_accessed: np.ndarray
    plane_names: tuple[str, ...]  # profile.planes' names, by index
    # True where time_ps is the device's clock (``device_duration_ps``); None: nowhere (the
    # shape-estimated ops of torch_costs). op_profile takes these ops' times from here.
    device_clock: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.row)

    @cached_property
    def devices(self) -> list[str]:
        """The planes that ran XLA ops, devices in natural order (TPU:2 before TPU:10)."""
        used = {self.plane_names[i] for i in distinct_indices(self.plane)}
        return sorted(used, key=natural)

    def device_clock_self_ps(self, plane_index: int, events: int) -> np.ndarray:
        """Per event of one plane: the self time of the XLA op it is where that is timed by
        the device's clock, else -1 (what op_profile takes instead of the timeline's)."""
        out = np.full(events, -1, dtype=np.int64)
        if self.device_clock is not None:
            here = self.device_clock & (self.plane == plane_index)
            out[self.row[here]] = self.self_ps[here]
        return out

    def select(self, device: str) -> np.ndarray:
        """A mask: one plane's ops, or (``all``) every device plane's (the host's when no
        device ran XLA ops)."""
        if device == ALL:
            on_device = np.asarray([names.is_device_plane(n) for n in self.plane_names], dtype=bool)
            mask: np.ndarray = on_device[self.plane] if len(self.plane_names) else np.zeros(len(self), bool)
            return mask if mask.any() else np.ones(len(self), dtype=bool)
        index = self.plane_names.index(device) if device in self.plane_names else -1
        chosen: np.ndarray = self.plane == index
        return chosen


ALL = "all"


def natural(name: str) -> list[int | str]:
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(name)]


def find_xla_ops(profile: Profile, ops: Ops) -> XlaOps:
    parts = []
    for plane_index in distinct_indices(ops.plane):
        plane = profile.planes[plane_index]
        here = np.flatnonzero(ops.plane == plane_index)
        part = _plane_part(plane, plane_index, ops, here)
        if part is not None:
            parts.append(part)
    keys = ("plane", "row", "name", "expression", "category", "program", "program_id", "time_ps", "self_ps", "flops", "bytes_accessed", "device_clock")
    plane_names = tuple(plane.name for plane in profile.planes)
    if not parts:
        ints, floats = {"plane", "row", "time_ps", "self_ps"}, {"flops", "bytes_accessed"}
        kinds = {key: np.int64 if key in ints else np.float64 if key in floats else bool if key == "device_clock" else object for key in keys}
        return XlaOps(**{key: np.zeros(0, dtype=kind) for key, kind in kinds.items()}, plane_names=plane_names)
    columns = {key: np.concatenate([part[key] for part in parts]) for key in keys}
    return XlaOps(**columns, plane_names=plane_names)


def _plane_part(plane: Plane, plane_index: int, ops: Ops, here: np.ndarray) -> dict[str, np.ndarray] | None:
    events, meta = plane.events, plane.metadata
    rows = ops.row[here]
    hlo_rows, hlo_values = stat_column(plane, names.HLO_OP)
    hlo_op = np.full(len(events), None, dtype=object)
    if len(hlo_rows):
        hlo_op[hlo_rows] = np.asarray([str(v) for v in hlo_values], dtype=object)
    keep = hlo_op[rows] != None  # noqa: E711  (object array)
    line = plane.line_index(names.XLA_OPS_LINE)
    if plane.is_device and line is not None:
        keep |= events.line[rows] == line
    if not keep.any():
        return None
    here, rows = here[keep], rows[keep]
    metadata_id = events.metadata_id[rows]
    full = meta.name_array[metadata_id]
    label = np.asarray(meta.labels, dtype=object)[metadata_id]
    shortened = label != full  # a display name, or the instruction's name read from its HLO text
    own = hlo_op[rows]
    name = np.where(shortened, label, np.where(own != None, own, full))  # noqa: E711
    long_names = _stat_strings(plane, names.LONG_NAME)[rows]
    expression = np.where(shortened, full, np.where(long_names != None, long_names, ""))  # noqa: E711

    time = events.duration_ps.copy()
    device_clock = np.zeros(len(events), dtype=bool)
    duration_rows, durations = stat_column(plane, names.DEVICE_DURATION_PS)
    if len(duration_rows):
        values = np.asarray([int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else -1 for v in durations], dtype=np.int64)
        ok = values >= 0
        time[duration_rows[ok]] = values[ok]
        device_clock[duration_rows[ok]] = True
    # Nesting is read from the timeline, which is only trusted where the times are the
    # timeline's: a device-clock op that seems to lie inside another is an artefact of
    # the clock alignment (a core runs its HLO ops one after another).
    is_op = np.zeros(len(events), dtype=bool)
    is_op[rows] = True
    is_op &= ~device_clock
    children = np.flatnonzero(is_op & (events.parent != NO_ID))
    children = children[~device_clock[events.parent[children]]]
    child_time = np.bincount(events.parent[children], weights=time[children], minlength=len(events)).astype(np.int64)
    program, program_id = _programs(plane, rows)
    return {
        "plane": np.full(len(rows), plane_index, dtype=np.int64),
        "row": rows,
        "name": name.astype(object),
        "expression": expression.astype(object),
        "category": ops.type_codes.at(here),
        "program": program,
        "program_id": program_id,
        "time_ps": time[rows],
        "self_ps": time[rows] - child_time[rows],
        "flops": ops.flops[here],
        "bytes_accessed": ops.bytes_accessed[here],
        "device_clock": device_clock[rows],
    }


def _stat_strings(plane: Plane, stat: str) -> np.ndarray:
    """Per event: a string stat from the event, else from its metadata; None without."""
    by_type = np.asarray([next((str(s.value) for s in stats if s.name == stat), None) for stats in plane.metadata.stats], dtype=object)
    values = by_type[plane.events.metadata_id] if len(by_type) else np.full(len(plane.events), None, dtype=object)
    rows, own = stat_column(plane, stat)
    if len(rows):
        values[rows] = np.asarray([str(v) for v in own], dtype=object)
    return values


def _programs(plane: Plane, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per op: its program's label and program id (see the module docstring)."""
    module = _stat_strings(plane, names.HLO_MODULE)[rows]
    program_id = _stat_strings(plane, names.PROGRAM_ID)[rows]
    label = np.full(len(rows), "", dtype=object)
    line = plane.line_index(names.XLA_MODULES_LINE)
    events = plane.events
    if line is not None and len(rows):
        span = plane.line_slice(line)
        modules = np.arange(span.start, span.stop)[events.depth[span] == 0]
        modules = modules[events.duration_ps[modules] > 0]
        if len(modules):
            start = events.start_ps[modules]
            end = start + events.duration_ps[modules]
            at = np.searchsorted(start, events.start_ps[rows], "right") - 1
            inside = (at >= 0) & (events.start_ps[rows] < end[np.maximum(at, 0)])
            label[inside] = plane.metadata.name_array[events.metadata_id[modules[at[inside]]]]
    named = np.flatnonzero(module != None)  # noqa: E711
    if len(named):  # each distinct (module, id) pair formatted once: there can be millions of ops
        pairs = [(str(m), i) for m, i in zip(module[named].tolist(), program_id[named].tolist())]
        texts = {pair: f"{pair[0]}({pair[1]})" if pair[1] is not None else pair[0] for pair in dict.fromkeys(pairs)}
        label[named] = np.asarray([texts[pair] for pair in pairs], dtype=object)
    no_label = (label == "") & (program_id != None)  # noqa: E711
    label[no_label] = program_id[no_label]
    return label, np.where(program_id != None, program_id, "").astype(object)  # noqa: E711


@dataclass(frozen=True)
class OpGroups:
    """The XLA ops of a selection summed per (program, category, name): one entry per HLO op."""

    program: list[str]
    program_id: list[str]
    category: list[str]
    name: list[str]
    expression: list[str]
    occurrences: np.ndarray
    time_ps: np.ndarray  # int64
    self_ps: np.ndarray
    flops: np.ndarray  # float64, NaN where no execution records flops
    bytes_accessed: np.ndarray

    def __len__(self) -> int:
        return len(self.name)


def group(xla: XlaOps, mask: np.ndarray) -> OpGroups:
    """Sums per HLO op of the selected executions, most self time first (then program,
    category, name)."""
    selected = np.flatnonzero(mask)
    # Each column coded through a dict of its distinct strings, the three codes combined as
    # one integer, sorted once.
    columns = [_codes(column[selected]) for column in (xla.program, xla.category, xla.name)]
    combined = np.zeros(len(selected), dtype=np.int64)
    for codes_here, distinct_here in columns:
        combined = combined * max(len(distinct_here), 1) + codes_here
    by_code = np.argsort(combined, kind="stable")
    ordered = combined[by_code]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else np.zeros(0, dtype=np.int64)
    count = len(starts)
    first_seen = by_code[starts]  # stable: each key's first execution
    codes = np.empty(len(selected), dtype=np.int64)
    codes[by_code] = np.cumsum(np.r_[False, ordered[1:] != ordered[:-1]]) if len(ordered) else codes
    index = {
        (columns[0][1][columns[0][0][at]], columns[1][1][columns[1][0][at]], columns[2][1][columns[2][0][at]]): code
        for code, at in enumerate(first_seen.tolist())
    }
    first = first_seen
    occurrences = np.bincount(codes, minlength=count)
    time = _int_sums(by_code, starts, xla.time_ps[selected])
    self_time = _int_sums(by_code, starts, xla.self_ps[selected])
    flops = _nan_sums(codes, xla.flops[selected], count)
    accessed = _nan_sums(codes, xla.bytes_accessed[selected], count)
    distinct = list(index)
    order = sorted(range(count), key=lambda i: (-int(self_time[i]), distinct[i]))
    at = selected[first[order]] if count else np.zeros(0, dtype=np.int64)
    return OpGroups(
        program=[distinct[i][0] for i in order],
        program_id=[str(v) for v in xla.program_id[at].tolist()],
        category=[distinct[i][1] for i in order],
        name=[distinct[i][2] for i in order],
        expression=[str(v) for v in xla.expression[at].tolist()],
        occurrences=occurrences[order],
        time_ps=time[order],
        self_ps=self_time[order],
        flops=flops[order],
        bytes_accessed=accessed[order],
    )


def _codes(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Codes of an object array of strings into the list of its distinct values."""
    items = values.tolist()
    index = {item: code for code, item in enumerate(dict.fromkeys(items))}
    return np.fromiter(map(index.__getitem__, items), dtype=np.int64, count=len(items)), list(index)


def _int_sums(by_code: np.ndarray, starts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Exact integer sums per code (bincount's float weights would round past 2**53 ps,
    2.5 hours), from the executions sorted by code and where each code's run starts."""
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    return np.add.reduceat(values[by_code].astype(np.int64), starts)


def _nan_sums(codes: np.ndarray, values: np.ndarray, count: int) -> np.ndarray:
    """Sums per code of the known values; NaN for a code with none."""
    known = np.isfinite(values)
    sums = np.bincount(codes[known], weights=values[known], minlength=count)
    return np.where(np.bincount(codes[known], minlength=count) > 0, sums, np.nan)
