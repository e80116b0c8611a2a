"""Captures started from the page: each runs ``capture_remote`` in a thread, and the page
polls its state. The profiles land in the served logdir, so the new run simply appears."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepscope.capture.options import ProfilerOptions
from stepscope.errors import StepscopeError
from stepscope.trace.logdir import parse_path

RUNNING, DONE, FAILED = "running", "done", "failed"
# Captures at once from one server; more is almost certainly a mistake (double clicks).
MAX_RUNNING = 4
MAX_ADDRESSES = 64
# Finished captures kept for the page to read their outcome: the newest ones, none older
# than an hour (3,000 failed captures added 57 MB to a table never pruned).
KEPT_FINISHED = 100
KEPT_FINISHED_S = 3600.0
LIMITS = {  # field -> (default, lowest, highest)
    "duration_ms": (2000, 1, 3_600_000),
    "delay_ms": (0, 0, 600_000),
    "host_tracer_level": (2, 0, 3),
    "python_tracer_level": (0, 0, 1),
    "device_tracer_level": (1, 0, 1),
    "attempts": (3, 1, 20),
}


@dataclass(frozen=True)
class CaptureRequest:
    addresses: tuple[str, ...]
    duration_ms: int
    delay_ms: int
    host_tracer_level: int
    python_tracer_level: int
    device_tracer_level: int
    attempts: int

    @classmethod
    def from_json(cls, body: Any) -> CaptureRequest:
        """Validates the page's request body; StepscopeError says what is wrong."""
        if not isinstance(body, dict):
            raise StepscopeError("the capture request must be a JSON object")
        unknown = set(body) - set(LIMITS) - {"addresses"}
        if unknown:
            raise StepscopeError(f"unknown capture field(s): {', '.join(sorted(unknown))}")
        raw = body.get("addresses")
        if isinstance(raw, str):
            raw = raw.split(",")
        if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
            raise StepscopeError("addresses must be a list of host:port strings")
        addresses = tuple(a.strip() for a in raw if a.strip())
        if not addresses or len(addresses) > MAX_ADDRESSES:
            raise StepscopeError(f"give 1 to {MAX_ADDRESSES} addresses (host:port)")
        values = {}
        for name, (default, low, high) in LIMITS.items():
            value = body.get(name, default)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise StepscopeError(f"{name} must be an integer from {low} to {high}")
            values[name] = value
        return cls(addresses, **values)


@dataclass
class CaptureJob:
    id: str
    request: CaptureRequest
    started: float = field(default_factory=time.monotonic)
    state: str = RUNNING
    finished: float | None = None
    run: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        end = self.finished if self.finished is not None else time.monotonic()
        return {
            "id": self.id,
            "state": self.state,
            "elapsed_ms": round((end - self.started) * 1000),
            "duration_ms": self.request.duration_ms + self.request.delay_ms,
            "run": self.run,
            "results": self.results,
        }


class Captures:
    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self._jobs: dict[str, CaptureJob] = {}
        self._lock = threading.Lock()

    def start(self, request: CaptureRequest) -> CaptureJob:
        with self._lock:
            if sum(job.state == RUNNING for job in self._jobs.values()) >= MAX_RUNNING:
                raise StepscopeError(f"{MAX_RUNNING} captures are already running; wait for one to finish")
            self._prune()
            job = CaptureJob(secrets.token_hex(8), request)
            self._jobs[job.id] = job
        threading.Thread(target=self._run, args=(job,), name=f"capture-{job.id}", daemon=True).start()
        return job

    def _prune(self) -> None:
        """(Under the lock.) Forgets finished captures past ``KEPT_FINISHED`` (the oldest
        first) or ``KEPT_FINISHED_S`` old; running ones stay."""
        now = time.monotonic()
        finished = sorted((job for job in self._jobs.values() if job.finished is not None), key=lambda job: job.finished or 0.0)
        for number, job in enumerate(finished):
            if len(finished) - number > KEPT_FINISHED or now - (job.finished or now) > KEPT_FINISHED_S:
                del self._jobs[job.id]

    def get(self, job_id: str) -> CaptureJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def _run(self, job: CaptureJob) -> None:
        from stepscope.capture.client import capture_remote  # grpc only when capturing

        request = job.request
        options = ProfilerOptions(
            host_tracer_level=request.host_tracer_level,
            python_tracer_level=request.python_tracer_level,
            device_tracer_level=request.device_tracer_level,
        )
        try:
            results = capture_remote(list(request.addresses), self.logdir, request.duration_ms, request.delay_ms, options, request.attempts)
        except Exception as error:  # the server goes on; the page shows why
            job.results = [{"address": ", ".join(request.addresses), "ok": False, "host": None, "message": str(error), "attempts": 0}]
            job.state, job.finished = FAILED, time.monotonic()
            return
        rows, run = [], None
        for result in results:
            parsed = parse_path(self.logdir.resolve(), result.path.resolve()) if result.ok and result.path else None
            run = run or (parsed.run if parsed else None)
            message = "; ".join([result.message, *result.notes])  # the server's notes: what the capture missed
            rows.append({"address": result.address, "ok": result.ok, "host": parsed.host if parsed else None, "message": message, "attempts": result.attempts})
        job.results, job.run = rows, run
        job.state = DONE if run is not None else FAILED
        job.finished = time.monotonic()
