"""The one thing pyproject.toml cannot say: the annotations' optional compiled fast path.

``optional=True``: where it cannot be built (no compiler, no Python headers) the install
goes on without it and ``stepscope.capture.annotations`` uses its pure-Python classes.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("stepscope.capture._spans", ["src/stepscope/capture/_spans.c"], optional=True, extra_compile_args=["-O2"])])
