"""The tools registry: one entry per tool, from which the CLI, the API, the page and the
TypeScript types all take what they know of it.

An entry (``ToolSpec``) carries the tool's name (XProf's, so users recognise them), its
place in the menu, its title, its options (typed, with defaults and ranges), its output
kind, and the type of its result, whose JSON Schema (``schema``) is the documented JSON
form. A tool registers itself where it is defined, with ``@tool(...)`` over a function
``function(stats: OpStats, **options) -> Result``; the result type is read from the
function's return annotation.

Output kinds: ``TABLES`` tools return a ``ToolResult`` (JSON, tables, summary lines), which
the CLI renders and the dashboard caches; the ``INDEX`` tool (the trace viewer) has no
function here: what it produces is an index built by the viewer layer, which the dashboard
builds for it (``dashboard.jobs.worker.PRODUCERS``, keyed by output kind). Both are one entry.

Input kinds: a ``ToolSpec`` takes one profile (``Inputs.ONE``). An analysis over several
profiles is an ``AnalysisSpec``, registered the same way (``register_analysis``) where its
result is defined: the diff takes a pair (``Inputs.PAIR``: a base run and a new one), the
distributed view a run of ranks (``Inputs.RUN``: every host of a run). How each is computed
differs (two runs' cached results, every rank's tables), so their entries carry no function;
what the CLI, the API and the page know of them (name, title, options, JSON Schema, where
they apply) comes from the entry as a tool's does. They are listed apart from the tools
(``analysis_specs``; ``ToolsAnswer.analyses``), since every tool runs on each profile alone.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict

import msgspec

from stepscope import jsonform
from stepscope.analysis.opstats import OpStats
from stepscope.analysis.tables import Table
from stepscope.errors import StepscopeError
from stepscope.trace.model import Profile


class ToolResult:
    """What a ``TABLES`` tool returns: a dataclass whose fields are its JSON form.

    ``to_json`` and the tool's JSON Schema are both derived from the fields' types, so the
    JSON, the schema and the TypeScript types generated from it cannot drift apart. State a
    result needs only for its tables is kept in attributes that are not fields.

    In a notebook a result shows its summary figures and tables (``repr``: a few lines;
    ``_repr_html_``: the summary and each table's first rows, from ``stepscope.render.display``).
    """

    tool: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every result keeps the short ``__repr__`` below: ``@dataclass`` writes a
        field-by-field one (74,000 characters for a GPU trace's kernel_stats) unless the
        class defines ``__repr__`` itself, and it runs after this hook."""
        super().__init_subclass__(**kwargs)
        cls.__repr__ = ToolResult.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        from stepscope.render import display  # presentation sits above analysis (tests/test_layers.py)

        return display.result_text(self)

    def _repr_html_(self) -> str:
        from stepscope.render import display

        return display.result_html(self)

    def to_json(self) -> dict[str, Any]:
        return typing.cast(dict[str, Any], jsonform.builtins(self))

    def tables(self) -> list[Table]:
        raise NotImplementedError

    def table(self, name: str) -> Table:
        """The table called ``name`` (``result.table("kernels").to_pandas()``)."""
        for table in self.tables():
            if table.name == name:
                return table
        known = ", ".join(table.name for table in self.tables()) or "none"
        raise StepscopeError(f"{self.tool} has no table {name!r} (its tables: {known})")

    def summary(self) -> list[str]:
        """A few lines a person reads first (the text renderer prints them above the tables)."""
        raise NotImplementedError


class Output(enum.StrEnum):
    TABLES = "tables"  # a ToolResult: JSON, tables, summary (CLI and dashboard)
    INDEX = "index"  # an index the dashboard builds and queries (the trace viewer)


class Inputs(enum.StrEnum):
    """What an entry analyses (see the module docstring)."""

    ONE = "one"  # one profile: a ToolSpec
    PAIR = "pair"  # two profiles, a base and a new one: the diff
    RUN = "run"  # every host of a run, each a rank: the distributed view


class OptionInfo(TypedDict):
    """An option as ``/api/tools`` and ``stepscope tools --format json`` list it."""

    name: str
    type: str  # "integer" | "string" | "boolean"
    default: int | str | bool
    help: str
    minimum: int | None
    choices: list[str]
    choices_from: str | None
    resets: list[str]


class ToolInfo(TypedDict):
    """A registry entry as ``/api/tools`` lists it (``ToolSpec.to_json``)."""

    name: str
    title: str
    output: str  # "tables" | "index"
    description: str
    options: list[OptionInfo]


class AnalysisInfo(ToolInfo):
    """An analysis over several profiles as ``/api/tools`` lists it (``AnalysisSpec.to_json``)."""

    inputs: str  # "pair" | "run"


class ToolsAnswer(TypedDict):
    """``GET /api/tools?run=&host=``: every tool, in menu order, then every analysis over
    several profiles, and which of them have nothing to show for the host's profile."""

    tools: list[ToolInfo]
    # The analyses over several profiles (the diff, the distributed view), in menu order.
    analyses: list[AnalysisInfo]
    # tool -> why it has nothing to show for this profile (one line), for those that have
    # not (``ToolSpec.why_not``; ``distributed``: the run's view); the others are absent.
    unavailable: dict[str, str]
    # Whether ``unavailable`` is known: false until the profile's analysis is done (the page
    # asks again once it is).
    checked: bool


@dataclass(frozen=True)
class Option:
    """A tool option, as ``report --option NAME=VALUE``, an API query parameter and a page
    control all take it. The values a page offers: ``choices`` (fixed ones) and the values
    of the result field ``choices_from`` names (op_profile's ``devices``: they depend on the
    profile). ``resets``: options a page control clears when this one changes, because their
    values only hold for this one's (graph_viewer's ``op`` names an instruction of one
    ``program``: a new program makes it an error)."""

    name: str
    type: type[int] | type[str] | type[bool]
    default: int | str | bool
    help: str
    minimum: int | None = None
    choices: tuple[str, ...] = ()
    choices_from: str | None = None
    resets: tuple[str, ...] = ()

    def parse(self, tool_name: str, text: str) -> Any:
        """The option's value from text (a query parameter, a CLI ``NAME=VALUE``)."""
        if self.type is bool:
            if text.lower() in ("1", "true", "yes"):
                return True
            if text.lower() in ("0", "false", "no"):
                return False
            raise OptionError(f"{tool_name}: option {self.name} must be true or false, not {text!r}")
        if self.type is int:
            try:
                value = int(text, 10)
            except ValueError:
                raise OptionError(f"{tool_name}: option {self.name} must be an integer, not {text[:40]!r}") from None
            if self.minimum is not None and value < self.minimum:
                raise OptionError(f"{tool_name}: option {self.name} must be at least {self.minimum}, not {value}")
            return value
        return text

    def to_json(self) -> OptionInfo:
        return OptionInfo(
            name=self.name,
            type={int: "integer", str: "string", bool: "boolean"}[self.type],
            default=self.default,
            help=self.help,
            minimum=self.minimum,
            choices=list(self.choices),
            choices_from=self.choices_from,
            resets=list(self.resets),
        )


class OptionError(StepscopeError):
    """An unknown option, or a value it cannot take."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool (see the module docstring); ``function`` and ``result`` are None for an
    ``INDEX`` tool, which has no report."""

    inputs: ClassVar[Inputs] = Inputs.ONE
    name: str
    title: str
    order: int
    output: Output
    description: str
    options: tuple[Option, ...] = ()
    function: Callable[..., ToolResult] | None = None
    result: type[ToolResult] | None = None
    # Whether the tool has something to show for a profile: "" or the reason it has not
    # (``analysis.applicability``); None: every profile has something for it.
    applies: Callable[[Profile], str] | None = None

    def why_not(self, profile: Profile) -> str:
        """Why the tool has nothing to show for ``profile`` (one line), or "" when it has."""
        return self.applies(profile) if self.applies is not None else ""

    def option(self, name: str) -> Option:
        for option in self.options:
            if option.name == name:
                return option
        known = ", ".join(option.name for option in self.options) or "none"
        raise OptionError(f"{self.name} has no option {name!r} (its options: {known})")

    def parse_options(self, values: Mapping[str, str]) -> dict[str, Any]:
        """Typed options from text values; only those that differ from their defaults."""
        parsed = {name: self.option(name).parse(self.name, text) for name, text in values.items()}
        return {name: value for name, value in parsed.items() if value != self.option(name).default}

    def run(self, source: Profile | OpStats, **options: Any) -> ToolResult:
        if self.function is None:
            raise StepscopeError(f"{self.name} makes an index for the dashboard, not a report (open it with stepscope serve)")
        for name in options:
            self.option(name)
        return self.function(OpStats.of(source), **options)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the tool's JSON form (``to_json``), from the result type.

        ``to_json`` writes every field of every object, and nothing else: every property
        is required (a field's default is how the tool starts a result, not something a
        reader sees) and no other is allowed.
        """
        if self.result is None:
            raise StepscopeError(f"{self.name} has no JSON result")
        return json_schema(self.result, self.name, self.description)

    def to_json(self) -> ToolInfo:
        return ToolInfo(
            name=self.name,
            title=self.title,
            output=self.output.value,
            description=self.description,
            options=[option.to_json() for option in self.options],
        )


@dataclass(frozen=True)
class AnalysisSpec:
    """An analysis over several profiles (see the module docstring): what a ``ToolSpec``
    says of a tool, less the function, plus what it takes (``inputs``). Its options are the
    query parameters the page keeps in its address and sends with its requests.
    ``result_description``: its JSON Schema's description (the routes and commands that
    answer it), where a tool's is its ``description``."""

    name: str
    title: str
    order: int
    inputs: Inputs
    description: str
    result: type[ToolResult]
    result_description: str
    options: tuple[Option, ...] = ()
    # Whether the analysis has something to show for a run of this profile alone: "" or the
    # reason it has not; None: not decided per profile.
    applies: Callable[[Profile], str] | None = None

    def why_not(self, profile: Profile) -> str:
        return self.applies(profile) if self.applies is not None else ""

    def schema(self) -> dict[str, Any]:
        return json_schema(self.result, self.name, self.result_description)

    def to_json(self) -> AnalysisInfo:
        return AnalysisInfo(
            name=self.name,
            title=self.title,
            output=Output.TABLES.value,
            description=self.description,
            options=[option.to_json() for option in self.options],
            inputs=self.inputs.value,
        )


SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
TOOLS: dict[str, ToolSpec] = {}
ANALYSES: dict[str, AnalysisSpec] = {}


def json_schema(kind: type, title: str, description: str) -> dict[str, Any]:
    """The JSON Schema of a typed JSON form (dataclasses and TypedDicts, via msgspec), with
    every property required and no other allowed (see ``ToolSpec.schema``)."""
    schema: dict[str, Any] = msgspec.json.schema(kind)
    for definition in schema["$defs"].values():
        properties = definition.get("properties", {})
        for value in properties.values():
            value.pop("default", None)
        definition["required"] = list(properties)
        definition["additionalProperties"] = False
    return {"$schema": SCHEMA_DIALECT, "title": title, "description": description, **schema}


Source = Profile | OpStats
Function = Callable[..., ToolResult]


def register(spec: ToolSpec) -> ToolSpec:
    if spec.name in TOOLS or spec.name in ANALYSES:
        raise ValueError(f"tool {spec.name!r} registered twice")
    TOOLS[spec.name] = spec
    return spec


def register_analysis(entry: AnalysisSpec) -> AnalysisSpec:
    """Registers an analysis over several profiles (as ``register`` does a tool)."""
    if entry.inputs is Inputs.ONE:
        raise ValueError(f"analysis {entry.name!r}: one profile is a tool's input (@tool)")
    if entry.name in TOOLS or entry.name in ANALYSES:
        raise ValueError(f"tool {entry.name!r} registered twice")
    ANALYSES[entry.name] = entry
    return entry


def tool(
    name: str,
    *,
    title: str,
    order: int,
    description: str,
    options: tuple[Option, ...] = (),
    applies: Callable[[Profile], str] | None = None,
) -> Callable[[Function], Function]:
    """Registers ``function(stats: OpStats, **options) -> Result`` as a ``TABLES`` tool;
    the registered (and returned) callable also takes a ``Profile`` in place of the
    ``OpStats``. ``Result`` (the return annotation) must be a ``ToolResult`` dataclass.
    ``applies``: the rule saying whether a profile has anything for it (``ToolSpec.applies``)."""

    def decorate(function: Function) -> Function:
        result = typing.get_type_hints(function)["return"]
        if not (isinstance(result, type) and issubclass(result, ToolResult) and dataclasses.is_dataclass(result)):
            raise TypeError(f"tool {name!r}: the return annotation must be a ToolResult dataclass, not {result!r}")
        result.tool = name
        spec = register(ToolSpec(name, title, order, Output.TABLES, description, options, function, result, applies))

        @functools.wraps(function)
        def run(source: Source, **values: Any) -> ToolResult:
            return spec.run(source, **values)

        return run

    return decorate


def spec(name: str) -> ToolSpec:
    try:
        return TOOLS[name]
    except KeyError:
        raise StepscopeError(f"unknown tool {name!r} (tools: {', '.join(tool_names())})") from None


def run_tool(name: str, source: Source, **options: Any) -> ToolResult:
    """Runs tool ``name`` on a profile, or on an ``OpStats`` shared by several tools."""
    return spec(name).run(source, **options)


def specs(output: Output | None = None) -> list[ToolSpec]:
    """The entries in menu order (of one output kind, or all)."""
    chosen = [entry for entry in TOOLS.values() if output is None or entry.output is output]
    return sorted(chosen, key=lambda entry: (entry.order, entry.name))


def analysis_specs(inputs: Inputs | None = None) -> list[AnalysisSpec]:
    """The analyses over several profiles in menu order (of one input kind, or all)."""
    chosen = [entry for entry in ANALYSES.values() if inputs is None or entry.inputs is inputs]
    return sorted(chosen, key=lambda entry: (entry.order, entry.name))


def analysis_spec(name: str) -> AnalysisSpec | None:
    """The analysis over several profiles called ``name``; None for a tool or an unknown name."""
    return ANALYSES.get(name)


def tool_names(output: Output | None = Output.TABLES) -> list[str]:
    """The names in menu order; by default the tools with a report (``TABLES``)."""
    return [entry.name for entry in specs(output)]
