"""The storage layout as code: where profiles live in a log directory, and how to find them.

Layouts understood:
- TensorBoard / XProf: ``<logdir>/[<tb_run>/]plugins/profile/<session>/<host>.xplane.pb``
  (also ``<host>.trace.json.gz`` where a session has no XSpace for that host). Runs are
  named as XProf names them: ``<tb_run>/<session>``, or ``<session>`` at the top level.
- torch's ``tensorboard_trace_handler``: ``<logdir>/<run>/<worker>.<ts>.pt.trace.json[.gz]``;
  the run is the folder, each file a host. Loose ``*.xplane.pb`` and ``*.trace.json[.gz]``
  files outside the TensorBoard layout are taken the same way.
- Any other ``*.json`` / ``*.json.gz`` (HTA's ``rank3.json.gz``, a renamed ``events.json``)
  is a host named by the file less that suffix, where and only where its structure says it
  is a Chrome/Kineto trace (:mod:`stepscope.trace.sniff`): a ``config.json`` or a tool
  cache never becomes a run.
- A single profile file given directly: one run named after the file, one host.

Only regular files are profiles: a FIFO, device or socket named like one is skipped by
discovery, and one given directly is an error (reading it could block or never end).
No file is dropped silently: every file discovery looked at and did not take is listed with
its reason (:class:`Skipped`; ``stepscope info`` and the dashboard's run list show them).

``make_path`` / ``parse_path`` are the only places that know these shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from stepscope.errors import ProfileFormatError
from stepscope.trace.files import is_regular_file, open_regular
from stepscope.trace.sniff import sniff_file

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


@dataclass(frozen=True)
class Skipped:
    """A file discovery looked at and did not take, and why."""

    path: Path
    why: str


@dataclass
class Discovery:
    """What a path holds: its runs, and the files left out of them."""

    runs: list[Run]
    skipped: list[Skipped]


NO_PROFILES = "contains no profiles (looked for plugins/profile/<session>/<host>.xplane.pb, *.pt.trace.json[.gz] and trace JSON by content)"


def discover(path: str | Path) -> list[Run]:
    """Runs under ``path`` (a log directory) or the single run that ``path`` (a file) is.

    Raises ProfileFormatError when the path does not exist or holds no profile (naming the
    files it skipped, and why).
    """
    found = find_profiles(path)
    if not found.runs:
        raise ProfileFormatError(path, NO_PROFILES + skipped_summary(Path(path), found.skipped))
    return found.runs


def find_profiles(path: str | Path) -> Discovery:
    """The runs under ``path`` (none in an empty log directory) and the files skipped.
    Raises ProfileFormatError when the path does not exist, or is neither a directory nor a
    regular file."""
    path = Path(path)
    if not path.exists():
        raise ProfileFormatError(path, "does not exist")
    if is_regular_file(path):
        return Discovery([Run(name=path.name, path=path, hosts=[Host(file_host(path), path)])], [])
    if not path.is_dir():  # a FIFO, a device, a socket: reading it could block or never end
        with open_regular(path):  # raises the error that says what it is
            pass
    runs: dict[str, Run] = {}
    files, skipped = _profile_files(path)
    for file in sorted(files):
        parsed = parse_path(path, file)
        if parsed is None:
            continue
        runs.setdefault(parsed.run, Run(parsed.run, file.parent)).hosts.append(Host(parsed.host, file))
    for run in runs.values():
        run.hosts = _prefer_xspace(run.hosts, skipped)
    return Discovery(sorted(runs.values(), key=lambda run: run.name), sorted(skipped, key=lambda entry: entry.path))


def skipped_summary(root: Path, skipped: list[Skipped], most: int = 3) -> str:
    """``; skipped: a.json (why), ...`` for an error line: the first ``most`` of them."""
    if not skipped:
        return ""
    shown = [f"{_relative(root, entry.path)} ({entry.why})" for entry in skipped[:most]]
    more = f" and {len(skipped) - most} more" if len(skipped) > most else ""
    return "; skipped: " + ", ".join(shown) + more


def _relative(root: Path, path: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _profile_files(root: Path) -> tuple[list[Path], list[Skipped]]:
    """Regular files named like profiles, and ``*.json[.gz]`` files that are traces by
    content; and the files so named that are not: FIFOs, devices and sockets (``load``
    would refuse them, and looking inside one could block), JSON that is no trace."""
    files: list[Path] = []
    skipped: list[Skipped] = []
    for candidate in root.rglob("*"):
        name = candidate.name
        if name.startswith(".") or not name.endswith((*PROFILE_SUFFIXES, *SNIFFED_SUFFIXES)) or candidate.is_dir():
            continue
        if not is_regular_file(candidate):
            skipped.append(Skipped(candidate, _not_regular(candidate)))
        elif name.endswith(PROFILE_SUFFIXES):
            files.append(candidate)
        else:
            sniffed = sniff_file(candidate)
            if sniffed.is_trace:
                files.append(candidate)
            else:
                skipped.append(Skipped(candidate, f"not a trace: {sniffed.why}"))
    return files, skipped


def _not_regular(path: Path) -> str:
    try:
        with open_regular(path):
            return "changed while discovery looked at it"
    except ProfileFormatError as error:
        return error.problem


def _prefer_xspace(hosts: list[Host], skipped: list[Skipped]) -> list[Host]:
    """One host per name; where a session has both XSpace and trace JSON, keep the XSpace
    (the other goes to ``skipped``)."""
    chosen: dict[str, Host] = {}
    for host in hosts:
        current = chosen.get(host.name)
        if current is None or (host.path.name.endswith(XPLANE_SUFFIX) and not current.path.name.endswith(XPLANE_SUFFIX)):
            chosen[host.name] = host
            if current is not None:
                skipped.append(Skipped(current.path, f"{host.path.name} of the same host is read instead"))
        else:
            skipped.append(Skipped(host.path, f"{current.path.name} of the same host is read instead"))
    return sorted(chosen.values(), key=lambda host: host.name)


def file_host(path: Path) -> str:
    stripped = _strip_suffix(path.name, (*LOOSE_SUFFIXES, *SNIFFED_SUFFIXES))
    return stripped or path.name
