"""Importing this module registers every tool, in the order users see them."""

from stepscope.analysis import overview  # noqa: F401  (overview_page)
from stepscope.analysis import input_pipeline  # noqa: F401  (input_pipeline_analyzer)
from stepscope.analysis import framework_op_stats  # noqa: F401
from stepscope.analysis import kernel_stats  # noqa: F401
from stepscope.analysis import op_profile  # noqa: F401
from stepscope.analysis import memory_profile  # noqa: F401
