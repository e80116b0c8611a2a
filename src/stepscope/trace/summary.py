"""What ``stepscope info`` reports about a profile: plain data, rendered by the CLI."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from stepscope.trace import names
from stepscope.trace.model import Profile


@dataclass(frozen=True)
class LineSummary:
    name: str
    id: int
    events: int


@dataclass(frozen=True)
class PlaneSummary:
    name: str
    events: int
    lines: list[LineSummary]


@dataclass(frozen=True)
class HostSummary:
    name: str
    path: str
    format: str
    start_ns: int
    span_ps: int
    events: int
    devices: list[str]
    planes: list[PlaneSummary]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunSummary:
    name: str
    hosts: list[HostSummary]


@dataclass(frozen=True)
class SkippedFile:
    """A file a log directory holds that is no profile read, and why."""

    path: str
    why: str


@dataclass(frozen=True)
class InfoReport:
    runs: list[RunSummary]
    errors: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)

    @property
    def span_ps(self) -> int:
        return max((host.span_ps for run in self.runs for host in run.hosts), default=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": [asdict(run) for run in self.runs],
            "span_ps": self.span_ps,
            "errors": self.errors,
            "skipped": [asdict(entry) for entry in self.skipped],
        }


def summarize(profile: Profile, host: str | None = None) -> HostSummary:
    planes = []
    for plane in profile.planes:
        counts = plane.line_event_counts().tolist()
        lines = [LineSummary(line.label, line.id, count) for line, count in zip(plane.lines, counts)]
        planes.append(PlaneSummary(plane.name, len(plane.events), lines))
    return HostSummary(
        name=host or profile.host,
        path=profile.source,
        format=profile.format,
        start_ns=profile.start_ns,
        span_ps=profile.span_ps,
        events=profile.event_count,
        devices=device_names(profile),
        planes=planes,
        warnings=list(profile.info.get("warnings", [])),
    )


def device_names(profile: Profile) -> list[str]:
    """Device planes, with the device's model where the source recorded it (Kineto's
    ``deviceProperties``), e.g. ``/device:GPU:0 (NVIDIA A100-PG509-200)``."""
    models: dict[int, str] = {}
    for device in profile.info.get("deviceProperties") or []:
        if isinstance(device, dict) and isinstance(device.get("id"), int) and device.get("name"):
            models[device["id"]] = str(device["name"])
    result = []
    for plane in profile.device_planes:
        ordinal = plane.name.removeprefix(names.GPU_PLANE_PREFIX)
        model = models.get(int(ordinal)) if plane.name.startswith(names.GPU_PLANE_PREFIX) and ordinal.isdigit() else None
        result.append(f"{plane.name} ({model})" if model else plane.name)
    return result
