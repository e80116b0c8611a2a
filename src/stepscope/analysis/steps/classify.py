"""What each event is, for the step-time breakdown: device compute, a copy, a kernel launch...

Classification is by event type (metadata: name, kind, line), evaluated once per
distinct type and broadcast to the events, so it costs nothing per event. The rules read
the kinds the readers found (``trace.kinds.EventKind``: kernels, copies, Python frames...),
XSpace lines (XLA Ops on TPU/GPU device planes), and the names of launches (CUDA and ROCm),
data loading and compilation in PyTorch, TensorFlow and JAX.
"""

from __future__ import annotations

import enum
import re
from functools import lru_cache

import numpy as np

from stepscope.trace import names
from stepscope.trace.kinds import NOT_DEVICE_WORK, EventKind
from stepscope.trace.model import NO_ID, Plane
from stepscope.trace.op_names import HLO_INSTRUCTION, op_type_of
from stepscope.trace.steps import INPUT_WAIT


class Activity(enum.IntEnum):
    """Breakdown categories, in priority order: where several overlap, the lowest value
    claims the time (device work first, as XProf attributes a step)."""

    DEVICE_COMPUTE = 0
    DEVICE_COLLECTIVES = 1
    DEVICE_TO_DEVICE = 2
    HOST_TO_DEVICE = 3
    DEVICE_TO_HOST = 4
    INPUT = 5
    COMPILE = 6
    KERNEL_LAUNCH = 7
    HOST_COMPUTE = 8
    # Input work running beside the step (tf.data threads, DataLoader workers' stages): host
    # compute for the breakdown, but the input pipeline analyzer's to explain.
    INPUT_PIPELINE = 9
    # Python call stacks on host threads (Kineto's python_function, with_stack=True): spans
    # around whatever the thread does, so not step activity (a profile taken with stacks
    # must break down as the same run without them), but the input pipeline analyzer reads
    # the file reads among them.
    PYTHON_STACK = 10
    NONE = 99  # markers and wrappers: step annotations, profiler spans, module spans


DEVICE_ACTIVITIES = frozenset(
    {Activity.DEVICE_COMPUTE, Activity.DEVICE_COLLECTIVES, Activity.DEVICE_TO_DEVICE, Activity.HOST_TO_DEVICE, Activity.DEVICE_TO_HOST}
)

# The lookahead names the letters every alternative starts with: it matches exactly what the
# alternation alone would, but lets the regex engine skip other positions at once (a GPU
# kernel's name runs to 2,000 characters; the shared recsys trace's 199: 4.9 -> 2.6 ms).
COLLECTIVE = re.compile(
    r"(?=[nrcas])(?:nccl|rccl|all[-_]?reduce|all[-_]?gather|reduce[-_]?scatter|all[-_]?to[-_]?all|collective[-_]?permute|"
    r"collective[-_]?broadcast|SendRecv)",
    re.IGNORECASE,
)
STEP_MARKER = re.compile(r"^ProfilerStep#\d+$")
# The training loop waiting for the next batch (PyTorch DataLoader iteration, tf.data's
# GetNext, stepscope's instrumented iterables): the waits a step reaches back over.
INPUT = INPUT_WAIT
# Input work that may run on other threads while the step goes on: tf.data iterator
# stages and producers, stepscope's stage annotations.
INPUT_WORK = re.compile(r"^Iterator::|(?:Prefetch|ParallelMap|ParallelInterleave|MapAndBatch)Produce$|^" + re.escape(names.STEPSCOPE_INPUT_STAGE_PREFIX))
COMPILE = re.compile(
    r"Torch-Compiled Region|TorchDynamo|torch\._dynamo|CompileFunction|XlaCompile|backend_compile|"
    r"^compile$|jit_compile|pjit.*compile|_compile_and_|XlaCompilationCache",
    re.IGNORECASE,
)
LAUNCH = re.compile(r"^(cuda|hip)(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|ModuleLaunchKernel)|^cuLaunchKernel|^hipExtLaunchKernel")
MEMCPY_KIND = re.compile(r"\b(HtoD|DtoH|DtoD|PtoP|HtoH)\b")
_COPY_ACTIVITY = {
    "HtoD": Activity.HOST_TO_DEVICE,
    "DtoH": Activity.DEVICE_TO_HOST,
    "DtoD": Activity.DEVICE_TO_DEVICE,
    "PtoP": Activity.DEVICE_TO_DEVICE,
    "HtoH": Activity.HOST_COMPUTE,
}
# Device lines that are spans around work, not work: XSpace module / step lines.
DEVICE_WRAPPER_LINES = frozenset(
    {names.STEPS_LINE, names.XLA_MODULES_LINE, names.FRAMEWORK_OPS_LINE, names.FRAMEWORK_NAME_SCOPE_LINE, "Source code", "Launch Stats"}
)

# XLA instructions that move data rather than compute (0 FLOPs; the time is a transfer's):
# asynchronous copies, point-to-point send/recv and host transfers. On the shared TPU
# profile copy-start/copy-done (host offload) are 96.5% of op time; counted as compute they
# made it "device-bound". Generic async-start/-done wrap any computation and stay as they are.
XLA_HOST_TRANSFERS = {"infeed": Activity.HOST_TO_DEVICE, "outfeed": Activity.DEVICE_TO_HOST}
XLA_PEER_TRANSFERS = frozenset({"send", "send-done", "recv", "recv-done"})
XLA_ASYNC_COPIES = frozenset({"copy-start", "copy-done"})
_HLO_SHAPE = r"\w+\[[^\]]*\](?:\{[^}]*\})?"
# copy-start's result and copy-done's operand: the tuple (destination, source, context).
HLO_COPY_TUPLE = re.compile(rf"\(\s*({_HLO_SHAPE})\s*,\s*({_HLO_SHAPE})")
HLO_MEMORY_SPACE = re.compile(r"S\((\d+)\)")
# XLA's Layout::kHostMemorySpace: a buffer in host memory (``S(5)`` in a layout).
HOST_MEMORY_SPACE = 5


def _memory_space(shape: str) -> int:
    found = HLO_MEMORY_SPACE.search(shape[shape.find("{") :]) if "{" in shape else None
    return int(found.group(1)) if found else 0


def xla_transfer_activity(name: str, hlo_category: str) -> Activity | None:
    """The copy direction of an XLA data-movement instruction, None for any other op.

    The opcode is the ``hlo_category`` stat where XLA gave it, else read from the HLO text
    (or the bare name: ``copy-start.2``). An async copy's direction is in the memory spaces
    of its (destination, source) buffers: host memory (``S(5)``) on one side only makes it
    a host transfer; otherwise (another device memory space, or no layout recorded) it is a
    copy within the device. send/recv move data between devices, or to/from the host where
    ``is_host_transfer=true``."""
    found = HLO_INSTRUCTION.match(name)
    opcode = hlo_category or (found.group(2) if found else op_type_of(name.lstrip("%")))
    if opcode in XLA_HOST_TRANSFERS:
        return XLA_HOST_TRANSFERS[opcode]
    if opcode in XLA_PEER_TRANSFERS:
        if "is_host_transfer=true" in name:
            return Activity.DEVICE_TO_HOST if opcode.startswith("send") else Activity.HOST_TO_DEVICE
        return Activity.DEVICE_TO_DEVICE
    if opcode not in XLA_ASYNC_COPIES:
        return None
    pair = HLO_COPY_TUPLE.search(name)
    if pair is None:
        return Activity.DEVICE_TO_DEVICE
    to_host, from_host = (_memory_space(shape) == HOST_MEMORY_SPACE for shape in pair.groups())
    if from_host and not to_host:
        return Activity.HOST_TO_DEVICE
    if to_host and not from_host:
        return Activity.DEVICE_TO_HOST
    return Activity.DEVICE_TO_DEVICE


# Cached per (name, kind, hlo_category): a kernel's name can run to kilobytes of C++ template and
# the regexes cost ~17 us each on them; a process that analyses many ranks of one job (the
# distributed view's workers) meets the same names in every rank (15% of a rank's map).
@lru_cache(maxsize=1 << 16)
def _device_type_activity(name: str, kind: EventKind, hlo_category: str = "") -> Activity:
    # Host work misplaced on a device plane by its writer, and spans around work: no device time.
    if kind in NOT_DEVICE_WORK:
        return Activity.NONE
    transfer = xla_transfer_activity(name, hlo_category)
    if transfer is not None:
        return transfer
    if kind == EventKind.MEMCPY or name.startswith("Memcpy"):
        copy = MEMCPY_KIND.search(name)
        return _COPY_ACTIVITY.get(copy.group(1), Activity.DEVICE_TO_DEVICE) if copy else Activity.DEVICE_TO_DEVICE
    if kind == EventKind.MEMSET or name.startswith("Memset"):
        return Activity.DEVICE_TO_DEVICE
    if COLLECTIVE.search(name):
        return Activity.DEVICE_COLLECTIVES
    return Activity.DEVICE_COMPUTE


@lru_cache(maxsize=1 << 16)
def _host_type_activity(name: str, kind: EventKind) -> Activity:
    if STEP_MARKER.match(name) or kind == EventKind.PROFILER_SPAN:
        return Activity.NONE
    if kind == EventKind.PYTHON:
        return Activity.PYTHON_STACK
    if INPUT.search(name):
        return Activity.INPUT
    if INPUT_WORK.search(name):
        return Activity.INPUT_PIPELINE
    if COMPILE.search(name):
        return Activity.COMPILE
    if LAUNCH.search(name):
        return Activity.KERNEL_LAUNCH
    if kind == EventKind.MEMORY_DELTA:
        return Activity.NONE
    return Activity.HOST_COMPUTE


def event_activities(plane: Plane) -> np.ndarray:
    """The Activity of every event of ``plane`` (int8 array)."""
    meta = plane.metadata
    if plane.name != names.HOST_PLANE and not plane.is_device:
        # Profiler spans, metadata, the Python tracer's call tree: not step activity.
        return np.full(len(plane.events), Activity.NONE, dtype=np.int8)
    if plane.is_device:
        # XLA ops carry their opcode class as the hlo_category stat of their metadata.
        hlo = [next((str(s.value) for s in stats if s.name == names.HLO_CATEGORY), "") for stats in meta.stats]
        types = [_device_type_activity(name, EventKind(kind), category) for name, kind, category in zip(meta.names, meta.kinds.tolist(), hlo)]
    else:
        types = [_host_type_activity(name, EventKind(kind)) for name, kind in zip(meta.names, meta.kinds.tolist())]
    by_type = np.asarray(types, dtype=np.int8)
    activities = by_type[plane.events.metadata_id] if len(by_type) else np.zeros(0, dtype=np.int8)
    if plane.is_device:
        # Where XLA's ops have a line of their own (TPU, XLA on GPU), that line is the work;
        # modules, steps, async overlays and TraceMes are spans around or beside it.
        if plane.line_index(names.XLA_OPS_LINE) is not None:
            ignored = [i for i, line in enumerate(plane.lines) if line.name != names.XLA_OPS_LINE]
        else:
            ignored = [i for i, line in enumerate(plane.lines) if line.name in DEVICE_WRAPPER_LINES]
        activities[np.isin(plane.events.line, ignored)] = Activity.NONE
    else:
        # Step markers are spans around the step's work, whatever their name (stepscope.step,
        # JAX's StepTraceAnnotation, TensorFlow's Trace(step_num=...)): they carry step_num.
        activities[plane.events.step_num != NO_ID] = Activity.NONE
    return activities
