"""trace_viewer: the timeline of every thread, stream and device.

Its registry entry is here, beside the other tools', so every list of tools (the CLI's,
the API's, the page's) has it in its place; what it produces is not a JSON result but an
index the dashboard builds with the viewer layer (``stepscope.viewer.build_index``) and
answers queries from, so the entry has no function and output ``INDEX``.
"""

from __future__ import annotations

from stepscope.analysis.registry import Output, ToolSpec, register

TOOL = "trace_viewer"

SPEC = register(
    ToolSpec(
        TOOL,
        title="Trace viewer",
        order=70,
        output=Output.INDEX,
        description="What exactly ran when, on which thread, stream and device: a timeline that stays smooth at tens of millions of events.",
    )
)
