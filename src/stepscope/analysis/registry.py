"""The tools registry: tool name -> function ``Profile -> ToolResult``.

The server and the CLI both go through ``run_tool``; a tool registers itself with the
``@tool(NAME)`` decorator where it is defined. Names follow XProf's so users recognise them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

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


Tool = Callable[[Profile], ToolResult]
TOOLS: dict[str, Tool] = {}
# The order users see the tools in, as in XProf's tools menu.
ORDER = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "op_profile", "memory_profile")


def tool(name: str) -> Callable[[Tool], Tool]:
    def register(function: Tool) -> Tool:
        if name in TOOLS:
            raise ValueError(f"tool {name!r} registered twice")
        TOOLS[name] = function
        return function

    return register


def run_tool(name: str, profile: Profile) -> ToolResult:
    _load_tools()
    try:
        function = TOOLS[name]
    except KeyError:
        raise StepscopeError(f"unknown tool {name!r} (tools: {', '.join(tool_names())})") from None
    return function(profile)


def tool_names() -> list[str]:
    _load_tools()
    return sorted(TOOLS, key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name))


def _load_tools() -> None:
    """Importing the tool modules registers them (kept out of import time of this module)."""
    from stepscope.analysis import tools  # noqa: F401
