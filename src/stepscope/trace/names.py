"""Well-known names of planes, lines, stats and event categories.

Every analysis and reader refers to these constants, never to string literals, so that a
rename is one edit. The XSpace names are the ones TensorFlow, JAX and XProf write (TSL's
``xplane_schema``); the Kineto names are the keys PyTorch's profiler writes in its trace
JSON, in today's schema and the 2021 one.
"""

from __future__ import annotations

from typing import Final

# --- XSpace planes -----------------------------------------------------------------------
HOST_PLANE: Final = "/host:CPU"
METADATA_PLANE: Final = "/host:metadata"
PYTHON_TRACER_PLANE: Final = "/host:python-tracer"
GPU_PLANE_PREFIX: Final = "/device:GPU:"
TPU_PLANE_PREFIX: Final = "/device:TPU:"
CUSTOM_PLANE_PREFIX: Final = "/device:CUSTOM:"
DEVICE_PLANE_PREFIX: Final = "/device:"
HOST_PLANE_PREFIX: Final = "/host:"
# Capture-wide facts TSL records after a session (profile_start_time...).
TASK_ENVIRONMENT_PLANE: Final = "Task Environment"
PROFILE_START_TIME: Final = "profile_start_time"
# Profile.info key holding the "Task Environment" plane's stats (name -> value).
TASK_ENVIRONMENT_INFO: Final = "task_environment"
# A process's place in a distributed job: Kineto's header ``distributedInfo`` (kept in
# Profile.info), and its rank and world size as Task Environment stats when the profile is
# written as XSpace (stepscope's names: TSL has none), so a conversion keeps the rank.
KINETO_DISTRIBUTED_INFO: Final = "distributedInfo"
DISTRIBUTED_RANK: Final = "distributed_rank"
DISTRIBUTED_WORLD_SIZE: Final = "distributed_world_size"
# Kineto's profiler spans ("PyTorch Profiler (0)") and window markers: kept, but out of the
# way of per-thread analyses.
TRACE_SPANS_PLANE: Final = "/host:trace-spans"


def gpu_plane(ordinal: int) -> str:
    return f"{GPU_PLANE_PREFIX}{ordinal}"


def is_device_plane(name: str) -> bool:
    return name.startswith(DEVICE_PLANE_PREFIX)


# --- XSpace lines --------------------------------------------------------------------------
STEPS_LINE: Final = "Steps"
XLA_OPS_LINE: Final = "XLA Ops"
XLA_MODULES_LINE: Final = "XLA Modules"
FRAMEWORK_OPS_LINE: Final = "Framework Ops"
FRAMEWORK_NAME_SCOPE_LINE: Final = "Framework Name Scope"
COUNTERS_LINE: Final = "_counters_"

# --- XSpace stats ---------------------------------------------------------------------------
CORRELATION_ID: Final = "correlation_id"
GROUP_ID: Final = "group_id"
STEP_NUM: Final = "step_num"
# What a step processed, as the user passes them to stepscope.step(n, tokens=..., samples=...):
# stats of the step marker, read by the overview for tokens/s and samples/s.
STEP_TOKENS: Final = "tokens"
STEP_SAMPLES: Final = "samples"
STEP_NAME: Final = "step_name"
FLOPS: Final = "flops"
BYTES_ACCESSED: Final = "bytes_accessed"
# A serialized MemoryAccessBreakdown (protos/op_metrics.proto) on an XLA op's metadata.
MEMORY_ACCESS_BREAKDOWN: Final = "memory_access_breakdown"
KERNEL_DETAILS: Final = "kernel_details"
MEMCPY_DETAILS: Final = "memcpy_details"
MEMSET_DETAILS: Final = "Memset_details"
MEMALLOC_DETAILS: Final = "memalloc_details"
DEVICE_ID: Final = "device_id"
CONTEXT_ID: Final = "context_id"
STREAM: Final = "stream"
FLOW: Final = "flow"
TF_OP: Final = "tf_op"
HLO_OP: Final = "hlo_op"
HLO_MODULE: Final = "hlo_module"
HLO_CATEGORY: Final = "hlo_category"
PROGRAM_ID: Final = "program_id"
# On the /host:metadata plane: each program's event metadata carries its XLA HloProto bytes.
HLO_PROTO: Final = "Hlo Proto"
BYTES_ALLOCATED: Final = "bytes_allocated"
BYTES_RESERVED: Final = "bytes_reserved"
REQUESTED_BYTES: Final = "requested_bytes"
ADDRESS: Final = "addr"
DEVICE_VENDOR: Final = "device_vendor"
# A TPU plane's chip ("TPU v6 Lite"); an XLA op's time by the device's own clock.
DEVICE_TYPE_STRING: Final = "device_type_string"
DEVICE_DURATION_PS: Final = "device_duration_ps"
DEV_CAP_CLOCK_RATE: Final = "clock_rate"
DEV_CAP_CORE_COUNT: Final = "core_count"
DEV_CAP_MEMORY_SIZE: Final = "memory_size"
DEV_CAP_COMPUTE_CAP_MAJOR: Final = "compute_cap_major"
DEV_CAP_COMPUTE_CAP_MINOR: Final = "compute_cap_minor"
# stepscope's own: the source's category of an event (Kineto `cat`, Chrome `cat`).
CATEGORY: Final = "category"
# stepscope's own metadata stat (1): the source recorded events of this type as instants
# (Chrome "i"/"I"/"n"/"R"), so exports write them back as instants, not zero-length slices.
INSTANT: Final = "instant"
# stepscope's own plane stat: the flow categories (Kineto's ac2g, fwdbwd...) as a JSON list;
# the `flow` stat's category bits (58-63) hold an index into it plus one (0: none).
FLOW_CATEGORIES: Final = "flow_categories"
# TraceMe 2.0's grouping stats (TSL's xplane_schema), which XProf's step grouping reads: a
# root event (``_r``: its root level) starts a step group; a producer (``_pt`` type, ``_p``
# id) makes the consumers of the same type and id (``_ct``, ``_c``) its children, across
# threads. XProf names a group's step ``step_name`` ("<root name> <step_num>").
IS_ROOT: Final = "_r"
PRODUCER_TYPE: Final = "_pt"
PRODUCER_ID: Final = "_p"
CONSUMER_TYPE: Final = "_ct"
CONSUMER_ID: Final = "_c"

# --- what stepscope writes into XSpace for XProf, and drops when it reads a file back -----
# Derived from the recorded events (formats/xspace/xprof_hints.py): a /host:CPU line of one
# root event per step, and grouping links and ``tf_op`` names on the recorded events.
# The line has this name and id; its events this event metadata id.
XPROF_STEPS_LINE: Final = "Steps (stepscope)"
XPROF_STEPS_ID: Final = 0x5354455053434F50  # "STEPSCOP": no thread, stream or writer's metadata id
# The description of the stat metadata of the stats derived on recorded events.
XPROF_HINT_DESCRIPTION: Final = "stepscope: derived for XProf from the recorded events; not part of the profile"

# --- stepscope's own stats on imported profiles --------------------------------------------
# Kineto's "External id": links a framework op to the runtime calls and kernels it caused.
EXTERNAL_ID: Final = "external_id"
# Kineto's memory events ([memory] instants): the signed allocation size in bytes.
ALLOCATION_BYTES: Final = "allocation_bytes"

# --- Kineto trace JSON ---------------------------------------------------------------------
# Device-side categories, today's names and the 2021 schema's.
KINETO_KERNEL_CATEGORIES: Final = frozenset({"kernel", "Kernel"})
KINETO_MEMCPY_CATEGORIES: Final = frozenset({"gpu_memcpy", "Memcpy"})
KINETO_MEMSET_CATEGORIES: Final = frozenset({"gpu_memset", "Memset"})
KINETO_DEVICE_CATEGORIES: Final = (
    KINETO_KERNEL_CATEGORIES | KINETO_MEMCPY_CATEGORIES | KINETO_MEMSET_CATEGORIES | frozenset({"gpu_user_annotation", "cuda_sync"})
)
# Python call stacks Kineto records with with_stack=True.
KINETO_PYTHON_CATEGORY: Final = "python_function"
KINETO_MEMORY_EVENT: Final = "[memory]"
KINETO_INPUT_DIMS: Final = "Input Dims"
KINETO_INPUT_TYPES: Final = "Input type"
KINETO_CONCRETE_INPUTS: Final = "Concrete Inputs"
# The flow category from a forward op to its backward op.
KINETO_FWDBWD_FLOW: Final = "fwdbwd"
# Kineto's CUDA synchronisation events (PyTorch >= 2.1 with CUDA sync events on): a stream's
# wait for an event recorded on another stream, and its args naming that stream and the
# record call's correlation id.
KINETO_CUDA_SYNC: Final = "cuda_sync"
KINETO_WAIT_EVENT: Final = "Wait Event"
KINETO_WAIT_ON_STREAM: Final = "wait_on_stream"
KINETO_WAIT_ON_RECORD: Final = "wait_on_cuda_event_record_corr_id"

# Kineto arg keys mapped to XSpace's stat names; other keys keep their own name.
KINETO_ARG_TO_STAT: Final = {
    "correlation": CORRELATION_ID,
    "External id": EXTERNAL_ID,
    "external id": EXTERNAL_ID,
    "device": DEVICE_ID,
    "context": CONTEXT_ID,
    "stream": STREAM,
    "Bytes": ALLOCATION_BYTES,
}

# --- stepscope's own annotations ----------------------------------------------------------------
# The training loop waiting on an instrumented iterable, and work inside a named input stage
# ("stepscope.data.read", ".decode", ".transform", ".collate", ".prefetch").
STEPSCOPE_STEP: Final = "stepscope.step"
STEPSCOPE_INPUT_WAIT: Final = "stepscope.data.wait"
STEPSCOPE_INPUT_STAGE_PREFIX: Final = "stepscope.data."
# The loader settings ``stepscope.data.instrument`` records on a pass's first recorded wait
# (a PyTorch DataLoader's attributes of the same names; absent where the iterable has none).
LOADER_NUM_WORKERS: Final = "num_workers"
LOADER_PREFETCH_FACTOR: Final = "prefetch_factor"
LOADER_PIN_MEMORY: Final = "pin_memory"
LOADER_PERSISTENT_WORKERS: Final = "persistent_workers"
LOADER_SETTINGS: Final = (LOADER_NUM_WORKERS, LOADER_PREFETCH_FACTOR, LOADER_PIN_MEMORY, LOADER_PERSISTENT_WORKERS)

# --- op details stats (XSpace) ----------------------------------------------------------------
PEAK_TERAFLOPS: Final = "peak_teraflops_per_second"
PEAK_HBM_BANDWIDTH: Final = "peak_hbm_bw_gigabytes_per_second"
LONG_NAME: Final = "long_name"
SHAPE_WITH_LAYOUT: Final = "shape_with_layout"

# --- memory events -------------------------------------------------------------------------------
# Kineto [memory] instant args (2021 schema: Bytes / Device Type / Device Id; newer: Addr, totals).
KINETO_MEMORY_BYTES: Final = "Bytes"
KINETO_MEMORY_DEVICE_TYPE: Final = "Device Type"
KINETO_MEMORY_DEVICE_ID: Final = "Device Id"
KINETO_MEMORY_ADDR: Final = "Addr"
KINETO_MEMORY_TOTAL_ALLOCATED: Final = "Total Allocated"
KINETO_MEMORY_TOTAL_RESERVED: Final = "Total Reserved"
MEMORY_ALLOCATION: Final = "MemoryAllocation"
MEMORY_DEALLOCATION: Final = "MemoryDeallocation"
ALLOCATOR_NAME: Final = "allocator_name"
PEAK_BYTES_IN_USE: Final = "peak_bytes_in_use"
DEVICE_ORDINAL: Final = "device_ordinal"
INDEX_ON_HOST: Final = "index_on_host"

# --- Chrome trace metadata events -----------------------------------------------------------
PROCESS_NAME: Final = "process_name"
PROCESS_LABELS: Final = "process_labels"
THREAD_NAME: Final = "thread_name"
PROCESS_SORT_INDEX: Final = "process_sort_index"
THREAD_SORT_INDEX: Final = "thread_sort_index"

# --- gRPC ------------------------------------------------------------------------------------
# The full service name TensorFlow, JAX and XProf register (see protos/profiler_service.proto).
PROFILER_SERVICE: Final = "tensorflow.ProfilerService"
# stepscope's own service beside it: a capture's progress (protos/capture_status.proto).
CAPTURE_STATUS_SERVICE: Final = "stepscope.CaptureStatus"
# Trailing metadata of a Profile answer: what the capture missed, and a write that failed.
CAPTURE_WARNING_KEY: Final = "stepscope-warning"
CAPTURE_WRITE_ERROR_KEY: Final = "stepscope-write-error"
