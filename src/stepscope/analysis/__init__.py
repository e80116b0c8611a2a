"""The analysis tools: ``run_tool(name, profile)``; names as XProf's (see ``tool_names()``).

The modules imported below are the tools, and the analyses over several profiles (diff,
distributed): each registers its entry in ``registry`` where it is defined, so adding a
tool is a module and its line here.
"""

from stepscope.analysis import (  # noqa: F401  (each registers its tool)
    critical_path,
    diff,
    distributed,
    flame_graph,
    framework_op_stats,
    graph_viewer,
    hlo_stats,
    input_pipeline,
    kernel_stats,
    memory_profile,
    memory_viewer,
    op_profile,
    overview,
    roofline,
    trace_viewer,
)
from stepscope.analysis.registry import (
    TOOLS,
    AnalysisSpec,
    Inputs,
    Option,
    Output,
    ToolResult,
    ToolSpec,
    analysis_spec,
    analysis_specs,
    run_tool,
    spec,
    specs,
    tool_names,
)

__all__ = [
    "TOOLS",
    "AnalysisSpec",
    "Inputs",
    "Option",
    "Output",
    "ToolResult",
    "ToolSpec",
    "analysis_spec",
    "analysis_specs",
    "run_tool",
    "spec",
    "specs",
    "tool_names",
]
