"""What pyproject.toml cannot say: the compiled extensions, both optional.

``optional=True``: where one cannot be built (no compiler, no Python headers) the install
goes on without it, and the pure-Python code stands in: ``stepscope.capture.annotations``
its classes for ``_spans``, ``stepscope.trace.kernels`` the Python loops for ``_kernels``.

``_kernels`` is built against Python's limited API (3.11's), so one abi3 binary serves
every CPython from 3.11 on.
"""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("stepscope.capture._spans", ["src/stepscope/capture/_spans.c"], optional=True, extra_compile_args=["-O2"]),
        Extension(
            "stepscope._kernels",
            sorted(glob("src/stepscope/kernels/*.c")),
            depends=sorted(glob("src/stepscope/kernels/*.h")),
            optional=True,
            py_limited_api=True,
            define_macros=[("Py_LIMITED_API", "0x030B0000")],
            extra_compile_args=["-O2"],
        ),
    ]
)
