"""The tools registry: tool name -> function ``OpStats -> ToolResult``.

The server and the CLI both go through ``run_tool``; a tool registers itself with the
``@tool(NAME)`` decorator where it is defined. Names follow XProf's so users recognise them.
A tool reads what it shares with the others (steps, breakdown, ops) from the profile's
``OpStats`` (``analysis.opstats``); called with a ``Profile``, it gets a fresh one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, Union

from stepscope.analysis.opstats import OpStats
from stepscope.analysis.tables import Table
from stepscope.errors import StepscopeError
from stepscope.trace.model import Profile


class ToolResult(Protocol):
    """What every tool returns: typed data with a JSON form and its tables."""

    tool: str

    def to_json(self) -> dict[str, Any]: ...

    def tables(self) -> list[Table]: ...

    def summary(self) -> list[str]:
        """A few lines a person reads first (the text renderer prints them above the tables)."""
        ...


Source = Union[Profile, OpStats]
Tool = Callable[..., ToolResult]
TOOLS: dict[str, Tool] = {}
# The order users see the tools in, as in XProf's tools menu.
ORDER = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "op_profile", "memory_profile")


def tool(name: str) -> Callable[[Tool], Tool]:
    """Registers ``function(stats: OpStats, **options)``; the registered (and returned)
    callable also takes a ``Profile`` in place of the ``OpStats``."""

    def register(function: Tool) -> Tool:
        if name in TOOLS:
            raise ValueError(f"tool {name!r} registered twice")

        @functools.wraps(function)
        def run(source: Source, **options: Any) -> ToolResult:
            return function(OpStats.of(source), **options)

        TOOLS[name] = run
        return run

    return register


def run_tool(name: str, source: Source) -> ToolResult:
    """Runs tool ``name`` on a profile, or on an ``OpStats`` shared by several tools."""
    try:
        function = TOOLS[name]
    except KeyError:
        raise StepscopeError(f"unknown tool {name!r} (tools: {', '.join(tool_names())})") from None
    return function(source)


def tool_names() -> list[str]:
    return sorted(TOOLS, key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name))
