"""ProfilerOptions: what a capture records, with the meanings TensorFlow gives the levels."""

from __future__ import annotations

from dataclasses import dataclass

from stepscope.errors import StepscopeError


@dataclass(frozen=True)
class ProfilerOptions:
    """What to record.

    - ``host_tracer_level``: 0 off; 1 user annotations and steps only (``stepscope.trace``,
      ``stepscope.step``); 2 plus framework ops (default); 3 verbose (everything the
      framework tracers offer, e.g. PyTorch shapes and stacks).
    - ``python_tracer_level``: 0 off (default); 1 traces Python function calls.
    - ``device_tracer_level``: 0 off; 1 turns on the frameworks' device tracers (CUDA
      kernels, XLA device ops) (default).
    - ``delay_ms``: start tracing that long after the call (None: at once).
    """

    host_tracer_level: int = 2
    python_tracer_level: int = 0
    device_tracer_level: int = 1
    delay_ms: int | None = None

    def __post_init__(self) -> None:
        for name, low, high in (("host_tracer_level", 0, 3), ("python_tracer_level", 0, 1), ("device_tracer_level", 0, 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise StepscopeError(f"ProfilerOptions.{name} must be an integer from {low} to {high}, not {value!r}")
        if self.delay_ms is not None and (not isinstance(self.delay_ms, int) or self.delay_ms < 0):
            raise StepscopeError(f"ProfilerOptions.delay_ms must be a non-negative integer or None, not {self.delay_ms!r}")
