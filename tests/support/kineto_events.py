"""Kineto JSON events built by the format's facts, for small hand-made traces: a complete
event, and a PyTorch op with the args torch.profiler(record_shapes=True) records."""

from __future__ import annotations


def complete(name, cat, ts, dur, tid=1, pid=100, **args) -> dict:
    """A complete ("X") event; times in microseconds."""
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def cpu_op(name, ts, dur, ext, dims, types, concrete=None) -> dict:
    """A ``cpu_op`` with its External id, "Input Dims", "Input type" and, where given,
    "Concrete Inputs"."""
    args = {"External id": ext, "Input Dims": dims, "Input type": types}
    if concrete is not None:
        args["Concrete Inputs"] = concrete
    return complete(name, "cpu_op", ts, dur, **args)
