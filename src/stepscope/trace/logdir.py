"""The storage layout as code: where profiles live in a log directory, and how to find them.

Layouts understood:
- TensorBoard / XProf: ``<logdir>/[<tb_run>/]plugins/profile/<session>/<host>.xplane.pb``
  (also ``<host>.trace.json.gz`` where a session has no XSpace for that host). Runs are
  named as XProf names them: ``<tb_run>/<session>``, or ``<session>`` at the top level.
- torch's ``tensorboard_trace_handler``: ``<logdir>/<run>/<worker>.<ts>.pt.trace.json[.gz]``;
  the run is the folder, each file a host. Loose ``*.xplane.pb`` and ``*.trace.json[.gz]``
  files outside the TensorBoard layout are taken the same way.
- Any other ``*.json`` / ``*.json.gz`` (HTA's ``rank3.json.gz``, a renamed ``events.json``)
  is a host named by the file less that suffix, where and only where its first KiB say it
  is a Chrome/Kineto trace (:mod:`stepscope.trace.sniff`): a ``config.json`` or a tool
  cache never becomes a run.
- A single profile file given directly: one run named after the file, one host.

Only regular files are profiles: a FIFO, device or socket named like one is skipped by
discovery, and one given directly is an error (reading it could block or never end).

``make_path`` / ``parse_path`` are the only places that know these shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from stepscope.errors import ProfileFormatError
from stepscope.trace.files import is_regular_file, open_regular
from stepscope.trace.sniff import is_trace_json

PLUGIN_DIR = ("plugins", "profile")
XPLANE_SUFFIX = ".xplane.pb"
TRACE_JSON_SUFFIXES = (".trace.json.gz", ".trace.json")
TORCH_SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json")
LOOSE_SUFFIXES = (*TORCH_SUFFIXES, XPLANE_SUFFIX, XPLANE_SUFFIX + ".gz", *TRACE_JSON_SUFFIXES)
PROFILE_SUFFIXES = LOOSE_SUFFIXES
# Names that may be a trace or not: discovery looks inside (after the suffixes above).
SNIFFED_SUFFIXES = (".json.gz", ".json")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Host:
    name: str
    path: Path


@dataclass
class Run:
    """One capture session (or one torch run folder): hosts -> profile files."""

    name: str
    path: Path  # the folder holding the host files, or the file itself
    hosts: list[Host] = field(default_factory=list)

    def host(self, name: str) -> Host | None:
        return next((host for host in self.hosts if host.name == name), None)


def safe_host(host: str) -> str:
    """A host name usable as a file name (no separators, no leading dots)."""
    cleaned = _UNSAFE.sub("_", host).strip("._")
    return cleaned or "host"


def make_path(logdir: Path, session: str, host: str, tb_run: str | None = None) -> Path:
    """``<logdir>/[<tb_run>/]plugins/profile/<session>/<host>.xplane.pb``."""
    base = Path(logdir) / tb_run if tb_run else Path(logdir)
    return base.joinpath(*PLUGIN_DIR, session, safe_host(host) + XPLANE_SUFFIX)


@dataclass(frozen=True)
class ParsedPath:
    run: str
    host: str


def parse_path(logdir: Path, path: Path) -> ParsedPath | None:
    """The run and host a profile file belongs to, or None if its name is no profile's.

    By name only: a ``*.json[.gz]`` not named like a trace gets a run and host here too
    (its name less the suffix), and ``discover`` lists it only if its content is a trace.
    """
    relative = Path(path).relative_to(logdir)
    parts = relative.parts
    name = parts[-1]
    for index in range(len(parts) - 3):
        if parts[index : index + 2] == PLUGIN_DIR and index + 3 == len(parts) - 1:
            session = parts[index + 2]
            host = _strip_suffix(name, (XPLANE_SUFFIX, XPLANE_SUFFIX + ".gz", *TRACE_JSON_SUFFIXES, *SNIFFED_SUFFIXES))
            if host is None:
                return None
            tb_run = "/".join(parts[:index])
            return ParsedPath(f"{tb_run}/{session}" if tb_run else session, host)
    # torch's tensorboard_trace_handler layout, and loose profile files generally: the
    # folder is the run, each file a host.
    host = _strip_suffix(name, (*LOOSE_SUFFIXES, *SNIFFED_SUFFIXES))
    if host is None:
        return None
    folder = "/".join(parts[:-1])
    return ParsedPath(folder or Path(logdir).name or ".", host)


def _strip_suffix(name: str, suffixes: tuple[str, ...]) -> str | None:
    for suffix in suffixes:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def discover(path: str | Path) -> list[Run]:
    """Runs under ``path`` (a log directory) or the single run that ``path`` (a file) is.

    Raises ProfileFormatError when the path does not exist or holds no profile.
    """
    path = Path(path)
    if not path.exists():
        raise ProfileFormatError(path, "does not exist")
    if is_regular_file(path):
        return [Run(name=path.name, path=path, hosts=[Host(file_host(path), path)])]
    if not path.is_dir():  # a FIFO, a device, a socket: reading it could block or never end
        with open_regular(path):  # raises the error that says what it is
            pass
    runs: dict[str, Run] = {}
    for file in sorted(_profile_files(path)):
        parsed = parse_path(path, file)
        if parsed is None:
            continue
        runs.setdefault(parsed.run, Run(parsed.run, file.parent)).hosts.append(Host(parsed.host, file))
    for run in runs.values():
        run.hosts = _prefer_xspace(run.hosts)
    if not runs:
        raise ProfileFormatError(
            path,
            "contains no profiles (looked for plugins/profile/<session>/<host>.xplane.pb, *.pt.trace.json[.gz] and trace JSON by content)",
        )
    return sorted(runs.values(), key=lambda run: run.name)


def _profile_files(root: Path) -> list[Path]:
    """Regular files named like profiles, and ``*.json[.gz]`` files that are traces by
    content: FIFOs, devices and sockets so named are skipped (``stepscope.load`` would
    refuse them anyway, and looking inside one could block)."""
    return [candidate for candidate in root.rglob("*") if not candidate.name.startswith(".") and _is_profile(candidate)]


def _is_profile(path: Path) -> bool:
    if path.name.endswith(PROFILE_SUFFIXES):
        return is_regular_file(path)
    return path.name.endswith(SNIFFED_SUFFIXES) and is_regular_file(path) and is_trace_json(path)


def _prefer_xspace(hosts: list[Host]) -> list[Host]:
    """One host per name; where a session has both XSpace and trace JSON, keep the XSpace."""
    chosen: dict[str, Host] = {}
    for host in hosts:
        current = chosen.get(host.name)
        if current is None or (host.path.name.endswith(XPLANE_SUFFIX) and not current.path.name.endswith(XPLANE_SUFFIX)):
            chosen[host.name] = host
    return sorted(chosen.values(), key=lambda host: host.name)


def file_host(path: Path) -> str:
    stripped = _strip_suffix(path.name, (*LOOSE_SUFFIXES, *SNIFFED_SUFFIXES))
    return stripped or path.name
