"""The analysis tools: ``run_tool(name, profile)``; names as XProf's (see ``tool_names()``).

The modules imported below are the tools, and the analyses over several profiles (diff,
distributed): each registers its entry in ``registry`` where it is defined, so adding a
tool is a module and its line here.
"""

from stepscope.analysis import distributed  # noqa: F401  (registers the distributed view)
from stepscope.analysis.diff import compare  # noqa: F401  (registers the diff)
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
from stepscope.analysis.tools import (  # noqa: F401  (each registers its tool)
    critical_path,
    flame_graph,
    framework_op_stats,
    graph_viewer,
    hlo_stats,
    input_pipeline_analyzer,
    kernel_stats,
    memory_profile,
    memory_viewer,
    op_profile,
    overview_page,
    roofline_model,
    trace_viewer,
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
