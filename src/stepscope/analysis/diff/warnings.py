"""What a diff says before its figures when two runs do not compare: different hardware or
different frameworks.

A diff subtracts step times, ops and kernels matched by name. Between an A100 running
PyTorch and a TPU running JAX the step times differ by orders of magnitude for reasons no
op explains, and no op or kernel name is shared, so every row is "added" or "removed": the
figures are right and mean nothing. The diff says so at its top (``warnings``), naming both
sides from what each run's overview already knows (its run environment: the chip the
profile names, else its device type, and the framework).

Runs differ in hardware when their device types differ ("GPU" against "TPU", a GPU run
against a CPU-only one), or when both profiles name their chip and the names differ
(two GPU models). They differ in framework when both frameworks are known and differ; an
unknown one ("": a trace of unknown origin) is not taken for a difference.
"""

from __future__ import annotations

from stepscope.analysis.tools.overview_page import Environment

CPU_ONLY = "CPU only"
UNKNOWN_FRAMEWORK = "framework unknown"
NOT_COMPARABLE = "step times are not comparable op by op"


def hardware(environment: Environment) -> str:
    """The chip as the profile names it, else the device type ("CPU" for a CPU-only run)."""
    if environment["device_kind"]:
        return environment["device_kind"]
    return "CPU" if environment["device_type"] == CPU_ONLY else environment["device_type"]


def side(environment: Environment) -> str:
    """One run as the warning names it: "NVIDIA A100-SXM4-80GB (PyTorch)"."""
    return f"{hardware(environment)} ({environment['framework'] or UNKNOWN_FRAMEWORK})"


def different_hardware(base: Environment, new: Environment) -> bool:
    if base["device_type"] != new["device_type"]:
        return True
    return bool(base["device_kind"] and new["device_kind"] and base["device_kind"] != new["device_kind"])


def different_framework(base: Environment, new: Environment) -> bool:
    return bool(base["framework"] and new["framework"] and base["framework"] != new["framework"])


def comparability_warnings(base: Environment, new: Environment) -> list[str]:
    """One line when the runs differ in hardware or framework (both sides named), else none."""
    hardware_differs, framework_differs = different_hardware(base, new), different_framework(base, new)
    if not (hardware_differs or framework_differs):
        return []
    what = " and ".join(word for word, differs in (("hardware", hardware_differs), ("frameworks", framework_differs)) if differs)
    return [f"{side(base)} vs {side(new)}: {NOT_COMPARABLE} (different {what})"]
