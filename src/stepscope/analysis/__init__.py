"""The analysis tools: ``run_tool(name, profile)``; names as XProf's (see ``tool_names()``)."""

from stepscope.analysis.registry import TOOLS, run_tool, tool_names
from stepscope.analysis import tools  # noqa: F401  registers every tool (after the registry exists)

__all__ = ["TOOLS", "run_tool", "tool_names"]
