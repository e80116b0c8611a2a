"""What pyproject.toml cannot say: the compiled extensions, and the dashboard's page.

Extensions: ``optional=True``, so that where one cannot be built (no compiler, no Python
headers) the install goes on without it and the pure-Python code stands in:
``stepscope.capture.annotations`` its classes for ``_spans``, ``stepscope.trace.kernels``
the Python loops for ``_kernels``. Both are written against Python 3.11's limited API, so
one wheel (tagged ``cp311-abi3``) serves every CPython from 3.11 on.

The page: ``web/`` (TypeScript) is built by Vite into ``src/stepscope/dashboard/static/``,
which the package serves, and the HTML report's script into ``src/stepscope/render/static/``.
An sdist carries both the sources and the built page and script, and a wheel the built ones, so that installing either never needs Node.js. Building an sdist or
a wheel (re)builds the page where it is missing or older than a web/ source, as ``make
web`` does (that needs npm, as a contributor's checkout has); where npm is missing, a page
that exists is used as it is, and a missing one fails the build with a clear message. An
editable install (``pip install -e .``) leaves it to ``make web``.
"""

from __future__ import annotations

import shutil
import subprocess
from glob import glob
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
WEB = ROOT / "web"
PAGE = ROOT / "src" / "stepscope" / "dashboard" / "static" / "index.html"
# The HTML report's script (``stepscope report --format html`` inlines it), built with the page.
REPORT_SCRIPT = ROOT / "src" / "stepscope" / "render" / "static" / "report.js"
BUILT = (PAGE, REPORT_SCRIPT)
# What they are built from (the Makefile's WEB_SOURCES).
WEB_SOURCES = ("src", "report", "scripts", "index.html", "package.json", "package-lock.json", "tsconfig.json", "vite.config.ts", "vite.report.config.ts")
LIMITED_API = ("Py_LIMITED_API", "0x030B0000")  # 3.11: the oldest Python stepscope supports


def _newest_source() -> float:
    paths = [WEB / name for name in WEB_SOURCES]
    files = [found for path in paths if path.exists() for found in ([path] if path.is_file() else path.rglob("*")) if found.is_file()]
    return max((found.stat().st_mtime for found in files), default=0.0)


def ensure_page() -> None:
    """Builds the page and the report's script (``npm ci && npm run build`` in web/) where
    either is missing or stale."""
    newest = _newest_source()
    if all(built.is_file() and built.stat().st_mtime >= newest for built in BUILT):
        return
    npm = shutil.which("npm")
    if npm is None or not (WEB / "package.json").is_file():
        missing = [built for built in BUILT if not built.is_file()]
        if not missing:
            print(f"stepscope: npm or web/ is missing: packaging {', '.join(str(built.relative_to(ROOT)) for built in BUILT)} as they are")
            return
        raise SystemExit(f"stepscope: {missing[0].relative_to(ROOT)} is not built, and building it from web/ needs npm and web/")
    for command in ([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], [npm, "run", "build"]):
        subprocess.run(command, cwd=WEB, check=True)


class BuildPyWithPage(build_py):
    """Copies the package with its page."""

    def run(self) -> None:
        if not self.editable_mode:
            ensure_page()
        super().run()


class SdistWithPage(sdist):
    """An sdist with the web/ sources and the page built from them."""

    def run(self) -> None:
        ensure_page()
        super().run()


def extension(name: str, sources: list[str], headers: list[str] | None = None) -> Extension:
    return Extension(name, sources, depends=headers or [], optional=True, py_limited_api=True, define_macros=[LIMITED_API], extra_compile_args=["-O2"])


setup(
    ext_modules=[
        extension("stepscope.capture._spans", ["src/stepscope/capture/_spans.c"]),
        extension("stepscope._kernels", sorted(glob("src/stepscope/kernels/*.c")), sorted(glob("src/stepscope/kernels/*.h"))),
    ],
    cmdclass={"build_py": BuildPyWithPage, "sdist": SdistWithPage},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
